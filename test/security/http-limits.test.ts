/** HTTP answers only documented routes and methods, within size and time limits. */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import * as http from 'node:http';
import * as net from 'node:net';
import { startDaemon, type Running } from '../exporter/harness.js';
import { MAX_BODY_BYTES } from '../../src/exporter/http.js';

let run: Running;
beforeAll(async () => {
  run = await startDaemon('empty', 'flows: []\n', undefined, () => ({ enableLifecycle: true }));
});
afterAll(async () => run.stop());

function raw(request: string | ((s: net.Socket) => void), waitMs = 3000): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(run.daemon.address().port, '127.0.0.1');
    let out = '';
    const timer = setTimeout(() => {
      s.destroy();
      resolve(out);
    }, waitMs);
    s.on('data', (d) => (out += d.toString('latin1')));
    s.on('close', () => {
      clearTimeout(timer);
      resolve(out);
    });
    s.on('error', reject);
    s.on('connect', () => (typeof request === 'string' ? s.write(request) : request(s)));
  });
}

function post(path: string, body: Buffer | string[], headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: run.daemon.address().port, path, method: 'POST', headers, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on('error', reject);
    if (Array.isArray(body)) for (const chunk of body) req.write(chunk);
    else req.write(body);
    req.end();
  });
}

describe('request limits', () => {
  it('POST /-/reload with a body over 1 KiB is refused with 413; a small one is fine', async () => {
    expect(MAX_BODY_BYTES).toBe(1024);
    expect(await post('/-/reload', Buffer.alloc(2048, 'a'), { 'content-type': 'text/plain' })).toBe(413);
    expect(await post('/-/reload', Buffer.alloc(100, 'a'))).toBe(200);
    expect(await post('/-/reload', Buffer.alloc(1024, 'a'))).toBe(200);
  });

  it('a chunked body that grows past 1 KiB is cut off with 413', async () => {
    expect(await post('/-/reload', ['a'.repeat(600), 'b'.repeat(600), 'c'.repeat(600)], { 'transfer-encoding': 'chunked' })).toBe(413);
    expect(await post('/-/reload', ['a'.repeat(100), 'b'.repeat(100)], { 'transfer-encoding': 'chunked' })).toBe(200);
  });

  it('a declared Content-Length over the limit is refused before the body is read', async () => {
    const reply = await raw('POST /-/reload HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n');
    expect(reply).toMatch(/^HTTP\/1\.1 413 /);
    expect(reply).toMatch(/connection: close/i);
  });

  it('headers over 16 KiB get 431', async () => {
    const reply = await raw(`GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`);
    expect(reply).toMatch(/^HTTP\/1\.1 431 /);
  });

  it('a client that never finishes its headers is disconnected (headersTimeout 5 s)', async () => {
    const t0 = Date.now();
    const reply = await raw((s) => s.write('GET /metrics HTTP/1.1\r\nHost: x\r\n'), 15_000);
    expect(Date.now() - t0).toBeLessThan(12_000);
    expect(reply).toMatch(/^HTTP\/1\.1 408 |^$/);
  }, 20_000);

  it('a kept-alive connection idle past the old 5 s (and the extra 1 s Node gives it) is still served (a scraper still reading its last body, or between scrapes)', async () => {
    const req = 'GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n';
    const reply = await raw((s) => {
      s.write(req);
      setTimeout(() => s.write(req), 7_500); // Node closes at keepAliveTimeout + 1 s
    }, 9_500);
    expect(reply.match(/^HTTP\/1\.1 200 /gm)?.length).toBe(2);
  }, 15_000);

  it('only documented routes and methods: other methods 405, other paths 404, traversal is just a path', async () => {
    const status = async (method: string, path: string): Promise<number> => (await fetch(`${run.base}${path}`, { method })).status;
    expect(await status('DELETE', '/metrics')).toBe(405);
    expect(await status('PUT', '/')).toBe(405);
    expect(await status('PATCH', '/-/healthy')).toBe(405);
    expect(await status('OPTIONS', '/metrics')).toBe(405);
    expect(await status('GET', '/-/reload')).toBe(405);
    expect(await status('HEAD', '/metrics')).toBe(200);
    expect(await status('GET', '/metrics/../../etc/passwd')).toBe(404);
    expect(await raw('GET /%2e%2e/%2e%2e/etc/passwd HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')).toMatch(/^HTTP\/1\.1 404 /);
    expect(await raw('GET /metrics/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')).toMatch(/^HTTP\/1\.1 (200|404) /);
    expect(await raw('TRACE / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')).toMatch(/^HTTP\/1\.1 405 /);
    expect(await raw('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', 1000)).not.toMatch(/^HTTP\/1\.1 200/);
  });
});
