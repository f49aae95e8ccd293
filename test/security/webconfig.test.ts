/**
 * --web.config.file: TLS with real certificates (openssl, in the test), client certificate
 * policies, basic auth with real bcrypt hashes, headers, reload, and refusal of bad files.
 */
import { describe, it, expect, beforeAll, afterAll, afterEach } from 'vitest';
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as path from 'node:path';
import bcrypt from 'bcryptjs';
import { startDaemon, stopDaemons, type Running } from '../exporter/harness.js';
import { makePki, type Pki } from './certs.js';
import { parseWebConfig, WebConfigWatcher } from '../../src/exporter/web/index.js';
import { InputError } from '../../src/input/problems.js';
import { runServe } from '../../src/cli/serve.js';

let pki: Pki;
const PASSWORD = 'correct horse battery staple';
let HASH: string;
/** What `htpasswd -nBC 10 "" | tr -d ':\n'` prints: the $2y$ spelling. */
let HTPASSWD_HASH: string;

beforeAll(() => {
  pki = makePki();
  HASH = bcrypt.hashSync(PASSWORD, 10);
  HTPASSWD_HASH = bcrypt.hashSync('other secret', 10).replace(/^\$2b\$/, '$2y$');
});
afterAll(() => pki.cleanup());

let run: Running | undefined;
afterEach(stopDaemons);

function webConfig(text: string, name = 'web.yml'): string {
  const file = path.join(pki.dir, name);
  fs.writeFileSync(file, text);
  return file;
}

async function serve(text: string): Promise<Running> {
  const file = webConfig(text);
  return startDaemon('empty', 'flows: []\n', undefined, () => ({ webConfigFile: file }));
}

interface Reply {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
  readonly peerCN: string | undefined;
}

interface Client {
  readonly cert?: string;
  readonly key?: string;
  readonly auth?: string;
  readonly maxVersion?: 'TLSv1.2' | 'TLSv1.3';
  readonly method?: string;
  readonly path?: string;
}

function request(r: Running, c: Client = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = https.request({
      host: '127.0.0.1', port: r.daemon.address().port, path: c.path ?? '/metrics', method: c.method ?? 'GET', agent: false,
      ca: pki.read(pki.caCert), ...(c.cert ? { cert: pki.read(c.cert), key: pki.read(c.key!) } : {}),
      ...(c.maxVersion ? { maxVersion: c.maxVersion } : {}),
      headers: c.auth ? { authorization: `Basic ${Buffer.from(c.auth).toString('base64')}` } : {},
    }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body, peerCN: (res.socket as import('node:tls').TLSSocket).getPeerCertificate?.()?.subject?.CN }));
    });
    req.on('error', reject);
    req.end();
  });
}

const TLS = (extra = ''): string => `tls_server_config:\n  cert_file: ${'server.crt'}\n  key_file: server.key\n${extra}`;

describe('TLS', () => {
  it('serves HTTPS with the configured certificate; plain HTTP on that port gets no answer', async () => {
    run = await serve(TLS());
    const r = await request(run);
    expect(r.status).toBe(200);
    expect(r.peerCN).toBe('localhost');
    expect(r.body).toContain('mxl_fabric_exporter_build_info');
    await expect(fetch(`http://127.0.0.1:${run.daemon.address().port}/metrics`)).rejects.toThrow();
    expect(run.logs.join('')).toMatch(/msg=listening .*tls=true/);
  });

  it('min_version TLS13 refuses a TLS 1.2 client', async () => {
    run = await serve(TLS('  min_version: TLS13\n'));
    await expect(request(run, { maxVersion: 'TLSv1.2' })).rejects.toThrow(/protocol|version|alert/i);
    expect((await request(run)).status).toBe(200);
  });

  it('RequireAndVerifyClientCert: refuses no certificate and a certificate the CA did not sign', async () => {
    run = await serve(TLS('  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n'));
    await expect(request(run)).rejects.toThrow();
    await expect(request(run, { cert: pki.rogueCert, key: pki.rogueKey })).rejects.toThrow();
    expect((await request(run, { cert: pki.clientCert, key: pki.clientKey })).status).toBe(200);
  });

  it('RequireAnyClientCert wants a certificate, any; VerifyClientCertIfGiven checks one only if sent', async () => {
    run = await serve(TLS('  client_auth_type: RequireAnyClientCert\n'));
    await expect(request(run)).rejects.toThrow();
    expect((await request(run, { cert: pki.rogueCert, key: pki.rogueKey })).status).toBe(200);
    await run.stop();
    run = await serve(TLS('  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: ca.crt\n'));
    expect((await request(run)).status).toBe(200);
    await expect(request(run, { cert: pki.rogueCert, key: pki.rogueKey })).rejects.toThrow();
    expect((await request(run, { cert: pki.clientCert, key: pki.clientKey })).status).toBe(200);
  });

  it('client_allowed_sans: only a verified certificate with a listed SAN gets in', async () => {
    run = await serve(TLS('  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n  client_allowed_sans: ["spiffe://test/prometheus"]\n'));
    expect((await request(run, { cert: pki.clientCert, key: pki.clientKey })).status).toBe(200);
    fs.writeFileSync(path.join(pki.dir, 'web.yml'), TLS('  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n  client_allowed_sans: ["someone.else"]\n'));
    await expect(request(run, { cert: pki.clientCert, key: pki.clientKey })).rejects.toThrow();
  });

  it('re-reads the file on change: a rotated certificate is served at the next handshake; a broken file keeps the old one', async () => {
    run = await serve(TLS());
    expect((await request(run)).peerCN).toBe('localhost');
    fs.writeFileSync(path.join(pki.dir, 'web.yml'), 'tls_server_config:\n  cert_file: server2.crt\n  key_file: server2.key\n');
    expect((await request(run)).peerCN).toBe('localhost-rotated');
    fs.writeFileSync(path.join(pki.dir, 'web.yml'), 'tls_server_config:\n  cert_file: server2.crt\n  key_file: server.key\n'); // key does not match
    const r = await request(run);
    expect(r.status).toBe(200);
    expect(r.peerCN).toBe('localhost-rotated');
    expect(run.logs.join('')).toMatch(/web config reload failed; keeping the running web config.*cert_file: cannot use the certificate/);
    fs.writeFileSync(path.join(pki.dir, 'web.yml'), 'basic_auth_users: {}\n'); // HTTPS -> HTTP needs a restart
    expect((await request(run)).status).toBe(200);
    expect(run.logs.join('')).toContain('switching between HTTP and HTTPS needs a restart');
  });
});

describe('basic auth', () => {
  const users = (): string => `basic_auth_users:\n  prometheus: ${HASH}\n  htpasswd-user: ${HTPASSWD_HASH}\n`;

  it('refuses a missing, wrong or unknown login with 401 and accepts the right one (bcrypt, $2b$ and $2y$)', async () => {
    run = await serve(`${TLS()}${users()}`);
    const none = await request(run);
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toBe('Basic');
    expect((await request(run, { auth: 'prometheus:wrong' })).status).toBe(401);
    expect((await request(run, { auth: `nobody:${PASSWORD}` })).status).toBe(401);
    expect((await request(run, { auth: `prometheus:${PASSWORD}` })).status).toBe(200);
    expect((await request(run, { auth: 'htpasswd-user:other secret' })).status).toBe(200);
    expect((await request(run, { auth: `prometheus:${PASSWORD}`, path: '/-/healthy' })).body).toBe('Healthy\n');
  });

  it('caches verdicts: a scrape with known credentials does not pay bcrypt again; unknown users pay it', async () => {
    const file = webConfig(users());
    const w = new WebConfigWatcher(file, { error: () => undefined, info: () => undefined } as never);
    const u = w.current.users;
    const hdr = (s: string): string => `Basic ${Buffer.from(s).toString('base64')}`;
    expect(await w.auth.verify(u, hdr(`prometheus:${PASSWORD}`))).toBe(true);
    expect(await w.auth.verify(u, hdr(`prometheus:${PASSWORD}`))).toBe(true);
    expect(w.auth.comparisons).toBe(1);
    // An unknown user is compared against a real hash, so it costs what a known one costs: one
    // bcrypt comparison each (counted, not timed: timings on a shared machine are noise).
    expect(await w.auth.verify(u, hdr('mallory:x'))).toBe(false);
    expect(w.auth.comparisons).toBe(2);
    expect(await w.auth.verify(u, hdr('prometheus:y'))).toBe(false);
    expect(w.auth.comparisons).toBe(3);
    // A user whose password matches another user's hash is still not that user.
    expect(await w.auth.verify(u, hdr(`mallory:${PASSWORD}`))).toBe(false);
  });

  it('works over plain HTTP too, with the configured headers on every answer', async () => {
    run = await serve(`${users()}http_server_config:\n  headers:\n    X-Frame-Options: deny\n    X-Content-Type-Options: nosniff\n    Strict-Transport-Security: max-age=31536000\n`);
    const anon = await run.get('/metrics');
    expect(anon.status).toBe(401);
    expect(anon.headers.get('x-frame-options')).toBe('deny');
    const ok = await run.get('/metrics', { headers: { authorization: `Basic ${Buffer.from(`prometheus:${PASSWORD}`).toString('base64')}` } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('x-content-type-options')).toBe('nosniff');
    expect(ok.headers.get('strict-transport-security')).toBe('max-age=31536000');
    // Users are re-read on change.
    fs.writeFileSync(path.join(pki.dir, 'web.yml'), `basic_auth_users:\n  other: ${HASH}\n`);
    expect((await run.get('/metrics', { headers: { authorization: `Basic ${Buffer.from(`prometheus:${PASSWORD}`).toString('base64')}` } })).status).toBe(401);
    expect((await run.get('/metrics', { headers: { authorization: `Basic ${Buffer.from(`other:${PASSWORD}`).toString('base64')}` } })).status).toBe(200);
  });

  it('rate_limit answers 429 beyond the burst', async () => {
    run = await serve('rate_limit:\n  interval: 1m\n  burst: 2\n');
    expect((await run.get('/-/healthy')).status).toBe(200);
    expect((await run.get('/-/healthy')).status).toBe(200);
    expect((await run.get('/-/healthy')).status).toBe(429);
  });
});

describe('refusing bad web configs', () => {
  const problems = (text: string): string[] => {
    try {
      parseWebConfig(path.join(pki.dir, 'web.yml'), text);
    } catch (e) {
      if (e instanceof InputError) return e.problems.map((p) => `${p.line}:${p.col}: ${p.field}: ${p.reason}`);
      throw e;
    }
    return [];
  };

  it('names line, column and field for each problem', () => {
    expect(problems('tls_server_confg: {}\n')[0]).toMatch(/^1:1: tls_server_confg: unknown field \(did you mean "tls_server_config"\?\)/);
    expect(problems(TLS('  client_auth_type: RequireClientCerts\n'))[0]).toMatch(/^4:21: tls_server_config.client_auth_type: "RequireClientCerts" is not one of NoClientCert/);
    expect(problems(TLS('  min_version: TLS14\n'))[0]).toMatch(/^4:16: tls_server_config.min_version: unknown TLS version: TLS14/);
    expect(problems(TLS('  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_RSA_WITH_RC4_128_SHA]\n'))[0])
      .toMatch(/^4:58: tls_server_config.cipher_suites\[1\]: unknown cipher: TLS_RSA_WITH_RC4_128_SHA/);
    expect(problems('tls_server_config:\n  key_file: server.key\n')[0]).toMatch(/^2:3: tls_server_config: missing one of cert or cert_file/);
    expect(problems('tls_server_config:\n  cert_file: nope.crt\n  key_file: server.key\n')[0])
      .toMatch(/^2:14: tls_server_config.cert_file: failed to read cert_file \(.*nope.crt\): ENOENT/);
    expect(problems(TLS('  client_ca_file: ca.crt\n'))[0]).toMatch(/^4:19: tls_server_config.client_ca_file: client CA's have been configured without a Client Auth Policy/);
    expect(problems(TLS('  client_allowed_sans: [a]\n  client_auth_type: VerifyClientCertIfGiven\n'))[0]).toMatch(/client_allowed_sans requires client_auth_type/);
    expect(problems('http_server_config:\n  headers:\n    Server: nginx\n')[0]).toMatch(/^3:13: http_server_config.headers.Server: HTTP header "Server" can not be configured/);
    expect(problems('http_server_config:\n  headers:\n    X-Frame-Options: allow\n')[0]).toMatch(/^3:22: .*X-Frame-Options: invalid value for X-Frame-Options: expected one of "deny", "sameorigin", got "allow"/);
    expect(problems('basic_auth_users:\n  alice: hunter2\n')[0]).toMatch(/^2:10: basic_auth_users.alice: not a bcrypt hash/);
    expect(problems('basic_auth_users: [alice]\n')[0]).toMatch(/^1:19: basic_auth_users: expected a mapping/);
    expect(problems('tls_server_config: [\n')[0]).toMatch(/^\d+:\d+: : /);
    expect(problems('')).toEqual([]);
  });

  it('refuses a $2$ hash: bcryptjs never verifies one, so its user could never log in (issue 33)', () => {
    const legacy = `$2$10$${'a'.repeat(53)}`;
    expect(problems(`basic_auth_users:\n  alice: "${legacy}"\n`)).toEqual([
      '2:10: basic_auth_users.alice: bcrypt version $2$ is not supported (its hashes never match here); make a $2y$ hash with htpasswd -nBC 10 "" | tr -d \':\\n\'',
    ]);
  });

  it('points at the right item of a list that mixes types (it named item 0, line 5)', () => {
    expect(problems(TLS('  cipher_suites:\n    - 123\n    - NOT_A_CIPHER\n'))).toEqual([
      '5:7: tls_server_config.cipher_suites[0]: expected a string',
      expect.stringMatching(/^6:7: tls_server_config.cipher_suites\[1\]: unknown cipher: NOT_A_CIPHER \(known: /),
    ]);
  });

  it('serve exits 2 with the positioned error when the web config is invalid at start', async () => {
    const file = webConfig('basic_auth_users:\n  alice: hunter2\n', 'bad.yml');
    const dir = fs.mkdtempSync(path.join(pki.dir, 'cfg-'));
    fs.writeFileSync(path.join(dir, 'config.yaml'), 'flows: []\n');
    let err = '';
    const code = await runServe(
      ['--config.file', path.join(dir, 'config.yaml'), '--web.config.file', file, '--web.listen-address', '127.0.0.1:0', '--path.sysfs', dir, '--log.level', 'fatal'],
      { stdout: () => undefined, stderr: (t) => void (err += t) },
    );
    expect(code).toBe(2);
    expect(err).toContain(`${file}:2:10: basic_auth_users.alice: not a bcrypt hash`);
  });
});
