/**
 * The web config's TLS part (`tls_server_config`), as exporter-toolkit's tls_config.go: reading
 * and checking the settings, the options Node's TLS server takes from them, and the client
 * certificate policy checked on each finished handshake.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as tls from 'node:tls';
import { isScalar } from 'yaml';
import type { Fields } from '../../input/fields.js';

const CLIENT_AUTH_TYPES = [
  'NoClientCert', 'RequestClientCert', 'RequireAnyClientCert', 'VerifyClientCertIfGiven', 'RequireAndVerifyClientCert',
] as const;

type ClientAuthType = (typeof CLIENT_AUTH_TYPES)[number];

const TLS_VERSIONS: Readonly<Record<string, tls.SecureVersion>> = { TLS10: 'TLSv1', TLS11: 'TLSv1.1', TLS12: 'TLSv1.2', TLS13: 'TLSv1.3' };

const VERSION_ORDER: readonly tls.SecureVersion[] = ['TLSv1', 'TLSv1.1', 'TLSv1.2', 'TLSv1.3'];

/**
 * Go's crypto/tls CipherSuites() names (the ones the toolkit accepts) and their OpenSSL names.
 * As in Go, the list governs TLS 1.2 and below; TLS 1.3 suites are not configurable and stay on.
 */
const CIPHER_SUITES: Readonly<Record<string, string>> = {
  TLS_RSA_WITH_AES_128_CBC_SHA: 'AES128-SHA',
  TLS_RSA_WITH_AES_256_CBC_SHA: 'AES256-SHA',
  TLS_RSA_WITH_AES_128_GCM_SHA256: 'AES128-GCM-SHA256',
  TLS_RSA_WITH_AES_256_GCM_SHA384: 'AES256-GCM-SHA384',
  TLS_AES_128_GCM_SHA256: '',
  TLS_AES_256_GCM_SHA384: '',
  TLS_CHACHA20_POLY1305_SHA256: '',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: 'ECDHE-ECDSA-AES128-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: 'ECDHE-ECDSA-AES256-SHA',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: 'ECDHE-RSA-AES128-SHA',
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: 'ECDHE-RSA-AES256-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: 'ECDHE-ECDSA-AES128-GCM-SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: 'ECDHE-ECDSA-AES256-GCM-SHA384',
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: 'ECDHE-RSA-AES128-GCM-SHA256',
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: 'ECDHE-RSA-AES256-GCM-SHA384',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-ECDSA-CHACHA20-POLY1305',
};

const TLS13_SUITES = 'TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256';

const CURVES: Readonly<Record<string, string>> = { CurveP256: 'P-256', CurveP384: 'P-384', CurveP521: 'P-521', X25519: 'X25519' };

const TLS_KEYS = [
  'cert', 'key', 'client_ca', 'cert_file', 'key_file', 'client_auth_type', 'client_ca_file', 'client_allowed_sans',
  'min_version', 'max_version', 'cipher_suites', 'prefer_server_cipher_suites', 'curve_preferences',
] as const;

export interface TlsSettings {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly ca: Buffer | undefined;
  readonly clientAuth: ClientAuthType;
  readonly clientAllowedSans: readonly string[] | undefined;
  readonly minVersion: tls.SecureVersion;
  readonly maxVersion: tls.SecureVersion;
  /** OpenSSL cipher list, when cipher_suites is given. */
  readonly ciphers: string | undefined;
  readonly ecdhCurve: string | undefined;
  readonly honorCipherOrder: boolean;
}

export function readTls(f: Fields, dir: string, files: string[]): TlsSettings | undefined {
  f.rejectUnknown(TLS_KEYS);
  const enabled = ['cert_file', 'cert', 'key_file', 'key', 'client_ca_file', 'client_ca', 'client_auth_type'].some((k) => {
    const v = f.scalar(k);
    return v !== undefined && v !== '';
  });
  const clientAuth = readClientAuth(f);
  const minVersion = readVersion(f, 'min_version') ?? 'TLSv1.2';
  const maxVersion = readVersion(f, 'max_version') ?? 'TLSv1.3';
  if (VERSION_ORDER.indexOf(minVersion) > VERSION_ORDER.indexOf(maxVersion)) f.report('max_version', 'max_version is below min_version');
  const ciphers = readNamed(f, 'cipher_suites', CIPHER_SUITES, 'cipher');
  const curves = readNamed(f, 'curve_preferences', CURVES, 'curve');
  const honorCipherOrder = f.boolean('prefer_server_cipher_suites') ?? true;
  const sans = readStringList(f, 'client_allowed_sans');
  const before = f.problems.length;
  const cert = readPem(f, 'cert_file', 'cert', dir, files, true, enabled);
  const key = readPem(f, 'key_file', 'key', dir, files, true, enabled);
  const ca = readPem(f, 'client_ca_file', 'client_ca', dir, files, false, enabled);
  if (!enabled) return undefined;
  if (ca && clientAuth === 'NoClientCert') {
    f.report(f.has('client_ca_file') ? 'client_ca_file' : 'client_ca', "client CA's have been configured without a Client Auth Policy (client_auth_type)");
  }
  if (sans && clientAuth !== 'RequireAnyClientCert' && clientAuth !== 'RequireAndVerifyClientCert') {
    f.report('client_allowed_sans', 'client_allowed_sans requires client_auth_type to be one of RequireAnyClientCert or RequireAndVerifyClientCert');
  }
  if (f.problems.length > before || !cert || !key || !clientAuth) return undefined;
  const settings: TlsSettings = {
    cert, key, ca, clientAuth, clientAllowedSans: sans, minVersion, maxVersion,
    ciphers: ciphers ? [...ciphers.filter((c) => c !== ''), ...TLS13_SUITES.split(':')].join(':') : undefined,
    ecdhCurve: curves?.join(':'), honorCipherOrder,
  };
  try {
    tls.createSecureContext(secureContextOptions(settings));
  } catch (e) {
    const what = /cipher/i.test((e as Error).message) && ciphers ? 'cipher_suites' : f.has('cert_file') ? 'cert_file' : 'cert';
    f.report(what, `cannot use the certificate, key and settings: ${(e as Error).message}`);
    return undefined;
  }
  return settings;
}

function readClientAuth(f: Fields): ClientAuthType | undefined {
  const v = f.string('client_auth_type', false);
  if (v === undefined || v === '') return 'NoClientCert';
  if (v === 'RequireClientCert') return 'RequireAnyClientCert'; // the toolkit's backwards-compatible name
  if ((CLIENT_AUTH_TYPES as readonly string[]).includes(v)) return v as ClientAuthType;
  f.report('client_auth_type', `"${v}" is not one of ${CLIENT_AUTH_TYPES.join(', ')}`);
  return undefined;
}

function readVersion(f: Fields, key: string): tls.SecureVersion | undefined {
  const v = f.string(key, false);
  if (v === undefined) return undefined;
  const version = TLS_VERSIONS[v];
  if (!version) f.report(key, `unknown TLS version: ${v} (use ${Object.keys(TLS_VERSIONS).join(', ')})`);
  return version;
}

function readStringList(f: Fields, key: string): string[] | undefined {
  const items = f.list(key, false);
  if (!items) return undefined;
  const out: string[] = [];
  for (const { node, path: p } of items) {
    if (isScalar(node) && typeof node.value === 'string') out.push(node.value);
    else f.problems.push(f.src.problem(node, p, 'expected a string'));
  }
  return out;
}

/**
 * A list of names mapped through `table`. Each item is reported at its own position: a list that
 * mixes types (`[123, NOT_A_CIPHER]`) names item 1 for the unknown name, not item 0.
 */
function readNamed(f: Fields, key: string, table: Readonly<Record<string, string>>, what: string): string[] | undefined {
  const items = f.list(key, false);
  if (!items) return undefined;
  const out: string[] = [];
  for (const { node, path: p } of items) {
    if (!isScalar(node) || typeof node.value !== 'string') {
      f.problems.push(f.src.problem(node, p, 'expected a string'));
      continue;
    }
    const name = node.value;
    const mapped = Object.hasOwn(table, name) ? table[name] : undefined;
    if (mapped === undefined) f.problems.push(f.src.problem(node, p, `unknown ${what}: ${name} (known: ${Object.keys(table).join(', ')})`));
    else out.push(mapped);
  }
  return out;
}

/** A PEM from `fileKey` (read now) or inline `inlineKey`; reports a missing required one. */
function readPem(
  f: Fields, fileKey: string, inlineKey: string, dir: string, files: string[], required: boolean, enabled: boolean,
): Buffer | undefined {
  const name = f.string(fileKey, false);
  const inline = f.string(inlineKey, false);
  if (name && inline) {
    f.report(inlineKey, `give ${fileKey} or ${inlineKey}, not both`);
    return undefined;
  }
  if (inline) return Buffer.from(inline);
  if (!name) {
    if (required && enabled) f.report(undefined, `missing one of ${inlineKey} or ${fileKey}`);
    return undefined;
  }
  if (name.includes('\0')) {
    f.report(fileKey, 'a file name cannot contain NUL');
    return undefined;
  }
  const full = path.resolve(dir, name);
  files.push(full);
  try {
    return fs.readFileSync(full);
  } catch (e) {
    f.report(fileKey, `failed to read ${fileKey} (${full}): ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    return undefined;
  }
}

/** What tls.createSecureContext / https.createServer take from the settings. */
export function secureContextOptions(t: TlsSettings): tls.SecureContextOptions {
  return {
    cert: t.cert, key: t.key, ...(t.ca ? { ca: t.ca } : {}), minVersion: t.minVersion, maxVersion: t.maxVersion,
    ...(t.ciphers ? { ciphers: t.ciphers } : {}), ...(t.ecdhCurve ? { ecdhCurve: t.ecdhCurve } : {}), honorCipherOrder: t.honorCipherOrder,
  };
}

/** The server-side verification flags for a client auth policy (the rest is checked per connection). */
export function verifyFlags(t: TlsSettings | undefined): { requestCert: boolean; rejectUnauthorized: boolean } {
  if (!t || t.clientAuth === 'NoClientCert') return { requestCert: false, rejectUnauthorized: false };
  return { requestCert: true, rejectUnauthorized: t.clientAuth === 'RequireAndVerifyClientCert' };
}

/**
 * The policy checks OpenSSL's verify flags leave to us, on a finished handshake. Undefined:
 * accepted; otherwise the reason the connection is refused.
 */
export function checkClientCertificate(t: TlsSettings | undefined, socket: tls.TLSSocket): string | undefined {
  if (!t || t.clientAuth === 'NoClientCert' || t.clientAuth === 'RequestClientCert') return undefined;
  const cert = socket.getPeerCertificate();
  const given = cert !== null && Object.keys(cert).length > 0;
  if (t.clientAuth === 'RequireAnyClientCert' && !given) return 'client certificate required';
  if ((t.clientAuth === 'VerifyClientCertIfGiven' && given) || t.clientAuth === 'RequireAndVerifyClientCert') {
    if (!given) return 'client certificate required';
    if (!socket.authorized) return `client certificate not verified: ${String(socket.authorizationError)}`;
  }
  if (t.clientAllowedSans) {
    const sans = parseSubjectAltNames(cert.subjectaltname ?? '');
    if (!sans.some((s) => t.clientAllowedSans!.includes(s))) return 'client certificate has no allowed SAN';
  }
  return undefined;
}

/** "DNS:a, IP Address:10.0.0.1, email:x@y, URI:spiffe://..." -> the values. */
function parseSubjectAltNames(text: string): string[] {
  return text.split(/,\s*/).map((s) => s.slice(s.indexOf(':') + 1)).filter((s) => s !== '');
}
