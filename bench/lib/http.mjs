/**
 * Scrapes as Prometheus makes them (gzip, a kept-alive connection), back to back or under
 * autocannon's concurrent load, and the CPU each costs the process that answers. 127.0.0.1 only.
 */
import * as http from 'node:http';
import * as net from 'node:net';
import * as zlib from 'node:zlib';
import autocannon from 'autocannon';
import { CLK_TCK, mean, percentile, procCpuTicks, procMemory, round } from './stats.mjs';
import { sleep } from './machine.mjs';

/**
 * A port free on 127.0.0.1 now. The bench's own: test/deploy/tools.ts has the tests' one, but it is
 * TypeScript under vitest, which plain `node bench/run.mjs` cannot import.
 */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

let keptAlive;
/** One kept-alive connection for every sequential scrape, made on first use. */
const agent = () => (keptAlive ??= new http.Agent({ keepAlive: true, maxSockets: 1 }));

/** Prometheus asks for gzip (and so do these scrapes): node_exporter and the exporter both compress. */
const SCRAPE_HEADERS = { 'accept-encoding': 'gzip' };

/** One GET over a kept-alive connection (as Prometheus scrapes): latency ms, status, body (decoded), bytes sent. */
export function get(port, p = '/metrics') {
  return new Promise((resolve, reject) => {
    const t = process.hrtime.bigint();
    const req = http.get({ host: '127.0.0.1', port, path: p, agent: agent(), headers: SCRAPE_HEADERS }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const ms = Number(process.hrtime.bigint() - t) / 1e6;
        const raw = Buffer.concat(chunks);
        const body = res.headers['content-encoding'] === 'gzip' ? zlib.gunzipSync(raw) : raw;
        resolve({ ms, status: res.statusCode, body, wireBytes: raw.length });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(30_000, () => req.destroy(new Error('timeout')));
  });
}

export async function waitForHttp(port, ms = 10_000) {
  const end = Date.now() + ms;
  for (;;) {
    try {
      const r = await get(port, '/metrics');
      if (r.status === 200) return r;
    } catch {
      // not listening yet
    }
    if (Date.now() > end) throw new Error(`nothing answered on 127.0.0.1:${port}`);
    await sleep(50);
  }
}

export const seriesIn = (body) => body.toString('utf8').split('\n').filter((l) => l && !l.startsWith('#')).length;

/** Back-to-back scrapes over one connection for `seconds` (at most `max`). */
export async function sequential(port, seconds, max = 5000) {
  const lat = [];
  const end = Date.now() + seconds * 1000;
  while (Date.now() < end && lat.length < max) {
    const r = await get(port);
    if (r.status !== 200) throw new Error(`scrape answered ${r.status}`);
    lat.push(r.ms);
  }
  return lat;
}

/**
 * autocannon against `path`; latencies are recorded at full resolution from its 'response' events
 * (its own histogram keeps whole milliseconds). autocannon drops the requests still in flight when
 * the duration ends, so a case whose scrapes are too slow for every connection to finish three in
 * the duration (`slowMs`: a sequential scrape's latency) runs a fixed two requests per connection.
 */
export function cannon(port, { connections, duration }, slowMs = 0, p = '/metrics') {
  const fixed = slowMs * connections * 3 > duration * 1000;
  const mode = fixed ? { amount: connections * 2 } : { duration };
  return new Promise((resolve, reject) => {
    const lat = [];
    const inst = autocannon(
      { url: `http://127.0.0.1:${port}${p}`, connections, ...mode, timeout: 120, headers: SCRAPE_HEADERS },
      (err, res) => (err ? reject(err) : resolve({ lat, res, mode: fixed ? `${mode.amount} requests` : `${duration} s` })),
    );
    inst.on('response', (_client, status, _bytes, ms) => {
      if (status === 200) lat.push(ms);
    });
  });
}

export const latencySummary = (lat) => ({ count: lat.length, p50: round(percentile(lat, 50)), p99: round(percentile(lat, 99)), max: round(lat.length ? Math.max(...lat) : undefined), mean: round(mean(lat)) });

/**
 * The scrape measurements common to both exporters, against a process we can see in /proc:
 * CPU per scrape net of what the process burns idle (the exporter samples every second).
 */
export async function scrapeLoad(pid, port, idleCpuMsPerSec, opts) {
  const cpuMs = () => (procCpuTicks(pid) * 1000) / CLK_TCK;
  let c0 = cpuMs();
  let t0 = Date.now();
  const seqLat = await sequential(port, opts.sequential);
  const seqWall = Date.now() - t0;
  const seqCpu = cpuMs() - c0 - (idleCpuMsPerSec * seqWall) / 1000;
  c0 = cpuMs();
  t0 = Date.now();
  const { lat, res, mode } = await cannon(port, opts, percentile(seqLat, 50));
  const acWall = Date.now() - t0;
  const acCpu = cpuMs() - c0 - (idleCpuMsPerSec * acWall) / 1000;
  return {
    sequential: { ...latencySummary(seqLat), cpuMsPerScrape: round(seqCpu / seqLat.length, 4) },
    concurrent: {
      connections: opts.connections, mode, wallSeconds: round(acWall / 1000, 1), ...latencySummary(lat), requestsPerSecond: round(lat.length / (acWall / 1000), 1),
      errors: res.errors, timeouts: res.timeouts, non2xx: res.non2xx, cpuMsPerScrape: round(acCpu / Math.max(1, lat.length), 4),
      cpuCoresUsed: round((acCpu + (idleCpuMsPerSec * acWall) / 1000) / acWall, 3),
    },
    memory: procMemory(pid),
  };
}
