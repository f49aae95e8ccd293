/**
 * The web configuration file of Prometheus' exporter-toolkit (`--web.config.file`,
 * docs/web-configuration.md of prometheus/exporter-toolkit): TLS, basic auth with bcrypt
 * hashes, extra response headers and a rate limit, with the toolkit's keys, defaults and
 * checks. Problems are positioned (file:line:col: field: reason) like the exporter's config.
 *
 * The toolkit re-reads the file on every request and TLS handshake; here a stat of the file
 * (and of the certificate files it names) on every request and connection decides whether to
 * read it again. A file that no longer loads is refused and the running one kept.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as tls from 'node:tls';
import bcrypt from 'bcryptjs';
import { isMap, isScalar, isSeq } from 'yaml';
import { Fields } from '../input/fields.js';
import { InputError, type Problem, SourceText, formatProblem } from '../input/problems.js';
import type { Logger } from '../log.js';

export const CLIENT_AUTH_TYPES = [
  'NoClientCert', 'RequestClientCert', 'RequireAnyClientCert', 'VerifyClientCertIfGiven', 'RequireAndVerifyClientCert',
] as const;
export type ClientAuthType = (typeof CLIENT_AUTH_TYPES)[number];

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

/**
 * The only headers the toolkit lets a web config add, with their allowed values (none listed:
 * any value). Private on purpose there "to ensure consistency in the Prometheus ecosystem".
 */
export const EXTRA_HEADERS: Readonly<Record<string, readonly string[] | undefined>> = {
  'Strict-Transport-Security': undefined,
  'X-Content-Type-Options': ['nosniff'],
  'X-Frame-Options': ['deny', 'sameorigin'],
  'X-XSS-Protection': undefined,
  'Content-Security-Policy': undefined,
};

const TOP_KEYS = ['tls_server_config', 'http_server_config', 'basic_auth_users', 'rate_limit'] as const;
const TLS_KEYS = [
  'cert', 'key', 'client_ca', 'cert_file', 'key_file', 'client_auth_type', 'client_ca_file', 'client_allowed_sans',
  'min_version', 'max_version', 'cipher_suites', 'prefer_server_cipher_suites', 'curve_preferences',
] as const;
const BCRYPT_HASH = /^\$2[abxy]?\$(\d\d)\$[./A-Za-z0-9]{53}$/;

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

export interface WebConfig {
  readonly file: string;
  /** Undefined: plain HTTP (no TLS key set, as the toolkit's TLSConfig.IsEnabled()). */
  readonly tls: TlsSettings | undefined;
  /** user name -> bcrypt hash; empty: no authentication. */
  readonly users: ReadonlyMap<string, string>;
  readonly headers: Readonly<Record<string, string>>;
  readonly rateLimit: { readonly intervalMs: number; readonly burst: number } | undefined;
  /** Accepted for compatibility; the exporter speaks HTTP/1.1 only. */
  readonly http2: boolean;
  /** Every file the config was made from (itself included): a change to any of them reloads it. */
  readonly files: readonly string[];
}

/** Reads and checks a web config file; throws InputError naming file:line:col and the field. */
export function loadWebConfig(file: string): WebConfig {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new InputError([{ file, line: 1, col: 1, field: '', reason: `cannot read web config: ${(e as Error).message}` }]);
  }
  return parseWebConfig(file, text);
}

/** Relative file names in it are taken from the web config's folder, as the toolkit does. */
export function parseWebConfig(file: string, text: string): WebConfig {
  const src = SourceText.parse(file, text);
  const problems: Problem[] = src.syntaxProblems();
  if (problems.length) throw new InputError(problems);
  const files = [path.resolve(file)];
  const empty: WebConfig = { file, tls: undefined, users: new Map(), headers: {}, rateLimit: undefined, http2: true, files };
  if (src.root() === null) return empty;
  const root = Fields.root(src, problems);
  if (!root) throw new InputError(problems);
  root.rejectUnknown(TOP_KEYS);
  const dir = path.dirname(path.resolve(file));
  const tlsFields = root.object('tls_server_config', false);
  const tlsSettings = tlsFields ? readTls(tlsFields, dir, files) : undefined;
  const http = root.object('http_server_config', false);
  http?.rejectUnknown(['http2', 'headers']);
  const http2 = http?.boolean('http2') ?? true;
  const headers = http ? readHeaders(http) : {};
  const users = readUsers(root);
  const rateLimit = readRateLimit(root);
  if (problems.length) throw new InputError(problems);
  return { file, tls: tlsSettings, users, headers, rateLimit, http2, files };
}

function readTls(f: Fields, dir: string, files: string[]): TlsSettings | undefined {
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

function readNamed(f: Fields, key: string, table: Readonly<Record<string, string>>, what: string): string[] | undefined {
  const names = readStringList(f, key);
  if (!names) return undefined;
  const items = f.list(key, false) ?? [];
  const out: string[] = [];
  names.forEach((n, i) => {
    const mapped = Object.hasOwn(table, n) ? table[n] : undefined;
    if (mapped === undefined) f.problems.push(f.src.problem(items[i]?.node, [...f.path, key, i], `unknown ${what}: ${n} (known: ${Object.keys(table).join(', ')})`));
    else out.push(mapped);
  });
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

function readHeaders(http: Fields): Record<string, string> {
  const h = http.object('headers', false);
  if (!h) return {};
  const out: Record<string, string> = {};
  for (const k of h.keys()) {
    if (!Object.hasOwn(EXTRA_HEADERS, k)) {
      h.report(k, `HTTP header "${k}" can not be configured (allowed: ${Object.keys(EXTRA_HEADERS).join(', ')})`);
      continue;
    }
    const v = h.string(k, true);
    if (v === undefined) continue;
    const allowed = EXTRA_HEADERS[k];
    if (allowed && !allowed.includes(v)) {
      h.report(k, `invalid value for ${k}: expected one of ${allowed.map((a) => `"${a}"`).join(', ')}, got "${v}"`);
      continue;
    }
    if (/[\r\n\0]/.test(v)) {
      h.report(k, 'a header value cannot contain CR, LF or NUL');
      continue;
    }
    if (v !== '') out[k] = v;
  }
  return out;
}

function readUsers(root: Fields): Map<string, string> {
  const users = new Map<string, string>();
  const node = root.at('basic_auth_users');
  if (node === undefined) return users;
  if (!isMap(node)) {
    root.report('basic_auth_users', 'expected a mapping of user name to bcrypt hash');
    return users;
  }
  const src = root.src;
  for (const pair of node.items) {
    const keyNode = pair.key;
    const user = isScalar(keyNode) && keyNode.value !== null ? String(keyNode.value) : undefined;
    if (user === undefined || isSeq(keyNode) || isMap(keyNode)) {
      root.problems.push(src.problem(keyNode ?? node, ['basic_auth_users'], 'a user name must be a string'));
      continue;
    }
    const field = ['basic_auth_users', user];
    if (user.includes(':')) root.problems.push(src.problem(keyNode, field, 'a basic auth user name cannot contain ":"'));
    const value = pair.value;
    if (!isScalar(value) || typeof value.value !== 'string') {
      root.problems.push(src.problem(value ?? keyNode, field, 'expected a bcrypt hash (a string)'));
      continue;
    }
    const hash = value.value;
    const m = BCRYPT_HASH.exec(hash);
    const cost = m ? Number(m[1]) : NaN;
    if (!m || cost < 4 || cost > 31) {
      root.problems.push(src.problem(value, field, 'not a bcrypt hash ($2y$10$ followed by 53 characters; make one with htpasswd -nBC 10 "" | tr -d \':\\n\')'));
      continue;
    }
    users.set(user, hash);
  }
  return users;
}

function readRateLimit(root: Fields): WebConfig['rateLimit'] {
  const r = root.object('rate_limit', false);
  if (!r) return undefined;
  r.rejectUnknown(['interval', 'burst']);
  const raw = r.scalar('interval');
  let intervalMs = 0;
  if (raw !== undefined) {
    const ms = typeof raw === 'string' || typeof raw === 'number' ? goDurationMs(String(raw)) : undefined;
    if (ms === undefined) r.report('interval', `"${String(raw)}" is not a duration (examples: 1s, 100ms, 1m30s, 0 to disable)`);
    else intervalMs = ms;
  }
  const burst = r.integer('burst', { required: false, min: 0, max: 1_000_000 }) ?? 0;
  if (intervalMs === 0) return undefined;
  if (burst < 1) r.report('burst', 'burst must be at least 1 when interval is set (no request could pass)');
  return { intervalMs, burst };
}

/** Go's time.ParseDuration for non-negative values: "1s", "1m30s", "250ms", "0". */
export function goDurationMs(text: string): number | undefined {
  if (text === '0') return 0;
  const unit: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  if (!/^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/.test(text)) return undefined;
  let ms = 0;
  for (const m of text.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)) ms += Number(m[1]) * unit[m[2]!]!;
  return Number.isFinite(ms) ? ms : undefined;
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
export function parseSubjectAltNames(text: string): string[] {
  return text.split(/,\s*/).map((s) => s.slice(s.indexOf(':') + 1)).filter((s) => s !== '');
}

// ---------------------------------------------------------------------------------------------
// Basic auth

/** bcryptjs at cost 10 takes about 100 ms: cache verdicts like the toolkit (100 entries). */
const CACHE_SIZE = 100;

export class BasicAuth {
  private readonly cache = new Map<string, boolean>();
  private queue: Promise<unknown> = Promise.resolve();
  /** bcrypt comparisons run (cache misses), for tests and the curious. */
  comparisons = 0;

  /**
   * Whether the Authorization header names a configured user with the right password. Unknown
   * users cost a bcrypt comparison against a configured hash of the highest cost, so timing
   * does not tell whether a user exists. Comparisons run one at a time (the toolkit's mutex).
   */
  async verify(users: ReadonlyMap<string, string>, header: string | undefined): Promise<boolean> {
    const creds = parseBasicAuth(header);
    if (!creds || users.size === 0) return false;
    const known = users.get(creds.user);
    const hash = known ?? slowestHash(users);
    const key = createHash('sha256').update(creds.user).update('\0').update(hash).update('\0').update(creds.password).digest('base64');
    const cached = this.cache.get(key);
    if (cached !== undefined) return cached && known !== undefined;
    const match = await this.serialized(() => {
      this.comparisons++;
      return bcrypt.compare(creds.password, hash);
    });
    const ok = match && known !== undefined;
    this.remember(key, ok);
    return ok;
  }

  private serialized<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private remember(key: string, ok: boolean): void {
    if (this.cache.size >= CACHE_SIZE) {
      // Drop the oldest tenth at once, so eviction is not paid on every request.
      let n = Math.max(1, Math.floor(this.cache.size / 10));
      for (const k of this.cache.keys()) {
        if (n-- <= 0) break;
        this.cache.delete(k);
      }
    }
    this.cache.set(key, ok);
  }
}

function slowestHash(users: ReadonlyMap<string, string>): string {
  let best = '';
  let cost = -1;
  for (const h of users.values()) {
    const c = Number(h.slice(4, 6));
    if (c > cost) [best, cost] = [h, c];
  }
  return best;
}

export function parseBasicAuth(header: string | undefined): { user: string; password: string } | undefined {
  const m = header === undefined ? null : /^Basic +([A-Za-z0-9+/=]+) *$/i.exec(header);
  if (!m) return undefined;
  const text = Buffer.from(m[1]!, 'base64').toString('utf8');
  const i = text.indexOf(':');
  return i < 0 ? undefined : { user: text.slice(0, i), password: text.slice(i + 1) };
}

// ---------------------------------------------------------------------------------------------
// Rate limit (token bucket, as golang.org/x/time/rate with Every(interval) and burst)

export class RateLimiter {
  private tokens: number;
  private last = performance.now();

  constructor(private readonly limit: { readonly intervalMs: number; readonly burst: number }) {
    this.tokens = limit.burst;
  }

  allow(): boolean {
    const now = performance.now();
    this.tokens = Math.min(this.limit.burst, this.tokens + (now - this.last) / this.limit.intervalMs);
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

// ---------------------------------------------------------------------------------------------
// Watching

/**
 * The current web config, re-read when the file or a certificate it names changes (size,
 * mtime, inode or ctime). A file that does not load is logged once per change and ignored;
 * switching between HTTP and HTTPS needs a restart, as in the toolkit.
 */
export class WebConfigWatcher {
  private config: WebConfig;
  private signature: string;
  private refused: string | undefined;
  private limiter: RateLimiter | undefined;
  private readonly listeners: ((c: WebConfig) => void)[] = [];
  readonly auth = new BasicAuth();
  /** Successful reloads after the first load. */
  reloads = 0;

  constructor(readonly file: string, private readonly log: Logger) {
    this.config = loadWebConfig(file);
    this.signature = signatureOf(this.config.files);
    this.limiter = this.config.rateLimit ? new RateLimiter(this.config.rateLimit) : undefined;
  }

  get current(): WebConfig {
    return this.config;
  }

  get rateLimiter(): RateLimiter | undefined {
    return this.limiter;
  }

  onChange(fn: (c: WebConfig) => void): void {
    this.listeners.push(fn);
  }

  /** A stat per file; a reload only when something changed. */
  refresh(): WebConfig {
    const sig = signatureOf(this.config.files);
    if (sig === this.signature || sig === this.refused) return this.config;
    let next: WebConfig;
    try {
      next = loadWebConfig(this.file);
      if ((next.tls === undefined) !== (this.config.tls === undefined)) {
        throw new InputError([{ file: this.file, line: 1, col: 1, field: 'tls_server_config',
          reason: `switching between HTTP and HTTPS needs a restart (running ${this.config.tls ? 'HTTPS' : 'HTTP'})` }]);
      }
    } catch (e) {
      this.refused = sig;
      const error = e instanceof InputError ? e.problems.map(formatProblem).join('; ') : (e as Error).message;
      this.log.error({ err: error, file: this.file }, 'web config reload failed; keeping the running web config');
      return this.config;
    }
    this.config = next;
    this.signature = signatureOf(next.files);
    this.refused = undefined;
    this.limiter = next.rateLimit ? new RateLimiter(next.rateLimit) : undefined;
    this.reloads++;
    this.log.info({ file: this.file, tls: next.tls !== undefined, users: next.users.size }, 'web config reloaded');
    for (const fn of this.listeners) fn(next);
    return next;
  }
}

function signatureOf(files: readonly string[]): string {
  return files.map((f) => {
    try {
      const st = fs.statSync(f, { bigint: true });
      return `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
    } catch (e) {
      return `error:${(e as NodeJS.ErrnoException).code ?? 'unknown'}`;
    }
  }).join('|');
}
