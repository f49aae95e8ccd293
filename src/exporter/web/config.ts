/**
 * The web configuration file of Prometheus' exporter-toolkit (`--web.config.file`,
 * docs/web-configuration.md of prometheus/exporter-toolkit): TLS, basic auth with bcrypt
 * hashes, extra response headers and a rate limit, with the toolkit's keys, defaults and
 * checks. Problems are positioned (file:line:col: field: reason) like the exporter's config.
 * The parts live beside this file: tls.ts, basicauth.ts, ratelimit.ts, watcher.ts (reloads),
 * handler.ts (what runs before the routes).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { isMap, isScalar, isSeq } from 'yaml';
import { Fields, scalarText } from '../../input/fields.js';
import { InputError, type Problem, SourceText } from '../../input/problems.js';
import { parseGoDurationMs } from '../../input/units.js';
import { bcryptParts } from './basicauth.js';
import { readTls, type TlsSettings } from './tls.js';

/**
 * The only headers the toolkit lets a web config add, with their allowed values (none listed:
 * any value). Private on purpose there "to ensure consistency in the Prometheus ecosystem".
 */
const EXTRA_HEADERS: Readonly<Record<string, readonly string[] | undefined>> = {
  'Strict-Transport-Security': undefined,
  'X-Content-Type-Options': ['nosniff'],
  'X-Frame-Options': ['deny', 'sameorigin'],
  'X-XSS-Protection': undefined,
  'Content-Security-Policy': undefined,
};

const TOP_KEYS = ['tls_server_config', 'http_server_config', 'basic_auth_users', 'rate_limit'] as const;

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
    const user = isScalar(keyNode) && keyNode.value !== null ? scalarText(keyNode.value) : undefined;
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
    const parts = bcryptParts(hash);
    if (parts === undefined || parts.cost < 4 || parts.cost > 31) {
      root.problems.push(src.problem(value, field, 'not a bcrypt hash ($2y$10$ followed by 53 characters; make one with htpasswd -nBC 10 "" | tr -d \':\\n\')'));
      continue;
    }
    if (parts.version === '') {
      root.problems.push(src.problem(value, field, 'bcrypt version $2$ is not supported (its hashes never match here); make a $2y$ hash with htpasswd -nBC 10 "" | tr -d \':\\n\''));
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
    const ms = typeof raw === 'string' || typeof raw === 'number' ? parseGoDurationMs(String(raw)) : undefined;
    if (ms === undefined) r.report('interval', `"${scalarText(raw)}" is not a duration (examples: 1s, 100ms, 1m30s, 0 to disable)`);
    else intervalMs = ms;
  }
  const burst = r.integer('burst', { required: false, min: 0, max: 1_000_000 }) ?? 0;
  if (intervalMs === 0) return undefined;
  if (burst < 1) r.report('burst', 'burst must be at least 1 when interval is set (no request could pass)');
  return { intervalMs, burst };
}
