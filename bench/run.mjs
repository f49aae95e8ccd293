#!/usr/bin/env node
/**
 * `npm run bench`: the exporter against node_exporter and against a C floor, on generated
 * mlx5-like sysfs trees, in one run. See bench/README.md for what is measured and how.
 *
 *   node bench/run.mjs [--quick] [--no-build] [--no-profile] [--duration S] [--connections N]
 *                      [--ports 1,8,32] [--flows 10,100,1000,10000] [--quiet-budget S] [--out FILE]
 *                      [--steady S]
 *
 * Writes bench/results.json (or --out) and prints the tables. Traffic goes to 127.0.0.1 only.
 */
import { spawn, spawnSync, fork } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { generateConfigs, generateTree, GID_TABLE } from './lib/gen.mjs';
import { CLK_TCK, mean, percentile, procCpuTicks, procMemory, round } from './lib/stats.mjs';
import { summarizeProfile } from './lib/profile.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.dirname(HERE);
/** The Node.js flags `npm start` runs the exporter with: the exporter under test gets the same. */
const NODE_FLAGS = (() => {
  const start = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts?.start ?? '';
  const m = /^node\s+(.*?)\s*dist\/cli\/main\.js/.exec(start);
  return m?.[1] ? m[1].split(/\s+/).filter(Boolean) : [];
})();
const OUT = path.join(HERE, 'out');
const NODE_EXPORTER = '/usr/bin/prometheus-node-exporter';

// ---------------------------------------------------------------------------------------------
// Options

function parseArgs(argv) {
  const o = {
    quick: false, build: true, profile: true, duration: 5, connections: 10, idle: 5, sequential: 3, tickSeconds: 1,
    floorSeconds: 1, rounds: 3, quietBudgetSeconds: 60, ports: [1, 8, 32], flows: [10, 100, 1000, 10000], out: path.join(HERE, 'results.json'),
    steadySeconds: 60,
  };
  const list = (v) => v.split(',').map(Number).filter((n) => Number.isInteger(n) && n > 0);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => argv[++i];
    if (a === '--quick') Object.assign(o, { quick: true, duration: 1, idle: 2, sequential: 1, tickSeconds: 0.5, floorSeconds: 0.3, rounds: 1, steadySeconds: 16 });
    else if (a === '--no-build') o.build = false;
    else if (a === '--no-profile') o.profile = false;
    else if (a === '--duration') o.duration = Number(next());
    else if (a === '--quiet-budget') o.quietBudgetSeconds = Number(next());
    else if (a === '--connections') o.connections = Number(next());
    else if (a === '--ports') o.ports = list(next());
    else if (a === '--flows') o.flows = list(next());
    else if (a === '--out') o.out = path.resolve(next());
    else if (a === '--steady') o.steadySeconds = Number(next());
    else if (a === '--help' || a === '-h') {
      console.log(fs.readFileSync(fileURLToPath(import.meta.url), 'utf8').split('*/')[0]);
      process.exit(0);
    } else throw new Error(`unknown argument ${a} (see --help)`);
  }
  return o;
}

const opts = parseArgs(process.argv.slice(2));
const started = Date.now();
const log = (...a) => console.error(`[${((Date.now() - started) / 1000).toFixed(0).padStart(4)}s]`, ...a);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------
// The machine

function machine() {
  const cpuinfo = fs.readFileSync('/proc/cpuinfo', 'utf8');
  const meminfo = fs.readFileSync('/proc/meminfo', 'utf8');
  const osRelease = fs.existsSync('/etc/os-release') ? fs.readFileSync('/etc/os-release', 'utf8') : '';
  const ne = spawnSync(NODE_EXPORTER, ['--version'], { encoding: 'utf8' });
  const gcc = spawnSync('gcc', ['--version'], { encoding: 'utf8' });
  return {
    cpuModel: /^model name\s*:\s*(.*)$/m.exec(cpuinfo)?.[1] ?? 'unknown',
    cores: os.cpus().length,
    memoryBytes: Number(/^MemTotal:\s+(\d+) kB/m.exec(meminfo)?.[1] ?? 0) * 1024,
    node: process.version,
    kernel: `${os.type()} ${os.release()}`,
    os: /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(osRelease)?.[1] ?? os.platform(),
    revision: git(['describe', '--always', '--dirty']),
    nodeExporter: /version (\S+)/.exec(`${ne.stdout}${ne.stderr}`)?.[1] ?? 'unavailable',
    gcc: gcc.stdout?.split('\n')[0] ?? 'unavailable',
    autocannon: JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules/autocannon/package.json'), 'utf8')).version,
  };
}

/** Read-only git queries (the benchmarked tree may have uncommitted work: `--dirty`). */
function git(args) {
  const r = spawnSync('git', args, { cwd: ROOT, encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : 'unknown';
}

const loadavg = () => fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number);

/** Busy jiffies of the whole machine, and of this process plus its reaped children (/proc/stat, /proc/self/stat). */
function jiffies() {
  const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const self = fs.readFileSync('/proc/self/stat', 'utf8');
  const g = self.slice(self.lastIndexOf(')') + 2).split(' ').map(Number);
  return { machine: f.reduce((a, b) => a + b, 0) - f[3] - f[4], ours: g[11] + g[12] + g[13] + g[14] };
}

/** Share of all CPUs busy over `ms` (from /proc/stat): other work on the machine skews every number. */
async function cpuBusy(ms = 1000) {
  const read = () => {
    const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    return { idle: f[3] + f[4], total: f.reduce((a, b) => a + b, 0) };
  };
  const a = read();
  await sleep(ms);
  const b = read();
  return round(1 - (b.idle - a.idle) / Math.max(1, b.total - a.total), 3);
}

/**
 * Other work on this (shared, 2-core) machine skews every number. Before each case, wait while
 * the CPUs are busy without us (at most `quietBudgetSeconds` over the whole run); during each
 * case, record the share of the machine's CPU that other processes took (`otherCpuShare`).
 */
let quietBudgetMs = 0;
async function waitQuiet() {
  let busy = await cpuBusy(500);
  if (busy > 0.15 && quietBudgetMs > 0) log(`  ${Math.round(busy * 100)} % of the CPUs busy with other work; waiting (budget left ${Math.round(quietBudgetMs / 1000)} s)`);
  while (busy > 0.15 && quietBudgetMs > 0) {
    const t = Date.now();
    await sleep(2000);
    busy = await cpuBusy(500);
    quietBudgetMs -= Date.now() - t;
  }
  return busy;
}

async function measured(fn) {
  const busyBefore = await waitQuiet();
  const j0 = jiffies();
  const t0 = Date.now();
  const r = await fn();
  const j1 = jiffies();
  const others = (j1.machine - j0.machine) - (j1.ours - j0.ours);
  const share = others / CLK_TCK / (((Date.now() - t0) / 1000) * os.cpus().length);
  return { ...r, otherCpuShare: round(Math.max(0, share), 3), otherCpuBusyBefore: busyBefore };
}

// ---------------------------------------------------------------------------------------------
// Children

function runJson(cmd, args, what) {
  const r = spawnSync(cmd, args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`${what} failed (${r.status}): ${r.stderr || r.stdout}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

/** Prometheus asks for gzip (and so do these scrapes): node_exporter and the exporter both compress. */
const SCRAPE_HEADERS = { 'accept-encoding': 'gzip' };

/** One GET over a kept-alive connection (as Prometheus scrapes): latency ms, status, body (decoded), bytes sent. */
function get(port, p = '/metrics') {
  return new Promise((resolve, reject) => {
    const t = process.hrtime.bigint();
    const req = http.get({ host: '127.0.0.1', port, path: p, agent, headers: SCRAPE_HEADERS }, (res) => {
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

async function waitForHttp(port, ms = 10_000) {
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

const seriesIn = (body) => body.toString('utf8').split('\n').filter((l) => l && !l.startsWith('#')).length;

/** Back-to-back scrapes over one connection for `seconds` (at most `max`). */
async function sequential(port, seconds, max = 5000) {
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
function cannon(port, slowMs = 0, p = '/metrics') {
  const fixed = slowMs * opts.connections * 3 > opts.duration * 1000;
  const mode = fixed ? { amount: opts.connections * 2 } : { duration: opts.duration };
  return new Promise((resolve, reject) => {
    const lat = [];
    const inst = autocannon(
      { url: `http://127.0.0.1:${port}${p}`, connections: opts.connections, ...mode, timeout: 120, headers: SCRAPE_HEADERS },
      (err, res) => (err ? reject(err) : resolve({ lat, res, mode: fixed ? `${mode.amount} requests` : `${opts.duration} s` })),
    );
    inst.on('response', (_client, status, _bytes, ms) => {
      if (status === 200) lat.push(ms);
    });
  });
}

const latencySummary = (lat) => ({ count: lat.length, p50: round(percentile(lat, 50)), p99: round(percentile(lat, 99)), max: round(lat.length ? Math.max(...lat) : undefined), mean: round(mean(lat)) });

/**
 * The scrape measurements common to both exporters, against a process we can see in /proc:
 * CPU per scrape net of what the process burns idle (the exporter samples every second).
 */
async function scrapeLoad(pid, port, idleCpuMsPerSec) {
  const cpuMs = () => (procCpuTicks(pid) * 1000) / CLK_TCK;
  let c0 = cpuMs();
  let t0 = Date.now();
  const seqLat = await sequential(port, opts.sequential);
  const seqWall = Date.now() - t0;
  const seqCpu = cpuMs() - c0 - (idleCpuMsPerSec * seqWall) / 1000;
  c0 = cpuMs();
  t0 = Date.now();
  const { lat, res, mode } = await cannon(port, percentile(seqLat, 50));
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

// ---------------------------------------------------------------------------------------------
// node_exporter

async function benchNodeExporter(tree) {
  const port = await freePort();
  const child = spawn(NODE_EXPORTER, [
    '--collector.disable-defaults', '--collector.infiniband', `--path.sysfs=${tree}`, `--web.listen-address=127.0.0.1:${port}`,
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
  try {
    const first = await waitForHttp(port);
    for (let i = 0; i < 20; i++) await get(port);
    const i0 = procCpuTicks(child.pid);
    await sleep(2000);
    const idleCpuMsPerSec = ((procCpuTicks(child.pid) - i0) * 1000) / CLK_TCK / 2;
    const load = await scrapeLoad(child.pid, port, idleCpuMsPerSec);
    const body = first.body.toString('utf8');
    return {
      bytes: first.body.length, gzipBytes: first.wireBytes, series: seriesIn(first.body),
      infinibandSeries: body.split('\n').filter((l) => l.startsWith('node_infiniband_')).length,
      idleCpuMsPerSec: round(idleCpuMsPerSec, 3), ...load,
    };
  } catch (e) {
    throw new Error(`node_exporter on ${tree}: ${e.message}\n${stderr}`);
  } finally {
    // Reaped before returning, so its CPU counts as ours (see measured()).
    await new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', resolve);
      child.kill('SIGTERM');
    });
  }
}

// ---------------------------------------------------------------------------------------------
// The exporter

function startHarness(config, tree, execArgv = NODE_FLAGS) {
  const child = fork(path.join(HERE, 'lib', 'daemon-harness.mjs'), [config, tree], { cwd: ROOT, execArgv, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
  const waiters = [];
  child.on('message', (m) => waiters.shift()?.(m));
  const next = () => new Promise((resolve, reject) => {
    waiters.push(resolve);
    child.once('exit', (code) => reject(new Error(`exporter harness exited (${code}): ${stderr}`)));
  });
  const ask = (cmd, extra = {}) => {
    const p = next();
    child.send({ cmd, ...extra });
    return p;
  };
  const stop = () => new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => (clearTimeout(timer), resolve()));
    child.send({ cmd: 'stop' });
  });
  return { child, ready: next(), ask, stop, stderr: () => stderr };
}

async function benchExporter(tree, config, httpFloor = false) {
  const h = startHarness(config, tree);
  try {
    const ready = await h.ready;
    const first = await get(ready.port);
    const warmEnd = Date.now() + 1500;
    for (let i = 0; i < 20 && Date.now() < warmEnd; i++) await get(ready.port);
    // Sampling only: the daemon ticks every second and nobody scrapes.
    await h.ask('reset');
    const i0 = procCpuTicks(h.child.pid);
    const w0 = Date.now();
    await sleep(opts.idle * 1000);
    const idle = await h.ask('report');
    const idleCpuMsPerSec = (((procCpuTicks(h.child.pid) - i0) * 1000) / CLK_TCK / (Date.now() - w0)) * 1000;
    // Sampling only again, with every event-loop gap traced (lib/slices.mjs): own work or preemption.
    await h.ask('reset', { trace: true });
    await sleep(opts.idle * 1000);
    const traced = await h.ask('report');
    // Scrapes (sequential, then concurrent) while sampling goes on.
    await h.ask('reset');
    const load = await scrapeLoad(h.child.pid, ready.port, idleCpuMsPerSec);
    const underLoad = await h.ask('report');
    let healthy;
    if (httpFloor) {
      // The same process and load on a route that does no work: the HTTP + event-loop floor.
      const { lat } = await cannon(ready.port, 0, '/-/healthy');
      healthy = latencySummary(lat);
    }
    return {
      ...(healthy ? { healthyConcurrent: healthy } : {}),
      startMs: round(ready.startMs, 1), bytes: first.body.length, gzipBytes: first.wireBytes, series: seriesIn(first.body),
      idleCpuMsPerSec: round(idleCpuMsPerSec, 3),
      sampling: { eventLoopDelayMs: roundAll(idle.eventLoopDelayMs), tickMs: roundAll(idle.tickMs), memory: idle.memory },
      // The same sampling-only window again with every gap traced: our own slices vs preemption.
      traced: { eventLoopDelayMs: roundAll(traced.eventLoopDelayMs), slices: traced.slices },
      scraping: { eventLoopDelayMs: roundAll(underLoad.eventLoopDelayMs), tickMs: roundAll(underLoad.tickMs), renderMs: roundAll(underLoad.renderMs), memory: underLoad.memory },
      ...load,
    };
  } catch (e) {
    throw new Error(`exporter on ${tree} with ${config}: ${e.message}\n${h.stderr()}`);
  } finally {
    await h.stop();
  }
}

/**
 * What the exporter costs on a host over time: sampling every second and one scrape every 15 s
 * (Prometheus' default interval), as a share of one core; node_exporter with the same scrapes.
 */
async function steadyCpu(pid, port) {
  const c0 = procCpuTicks(pid);
  const t0 = Date.now();
  const end = t0 + opts.steadySeconds * 1000;
  for (let next = t0; next < end; next += 15_000) {
    await sleep(Math.max(0, next - Date.now()));
    await get(port);
  }
  await sleep(Math.max(0, end - Date.now()));
  const cpuMs = ((procCpuTicks(pid) - c0) * 1000) / CLK_TCK;
  return { seconds: round((Date.now() - t0) / 1000, 1), scrapes: Math.ceil(opts.steadySeconds / 15), cpuMs: round(cpuMs, 1), coreShare: round(cpuMs / (Date.now() - t0), 4) };
}

async function steadyExporter(tree, config) {
  const h = startHarness(config, tree);
  try {
    const ready = await h.ready;
    await sleep(2000); // past start-up
    return await steadyCpu(h.child.pid, ready.port);
  } finally {
    await h.stop();
  }
}

async function steadyNodeExporter(tree) {
  const port = await freePort();
  const child = spawn(NODE_EXPORTER, ['--collector.disable-defaults', '--collector.infiniband', `--path.sysfs=${tree}`, `--web.listen-address=127.0.0.1:${port}`], { stdio: 'ignore' });
  try {
    await waitForHttp(port);
    await sleep(2000);
    return await steadyCpu(child.pid, port);
  } finally {
    await new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', resolve);
      child.kill('SIGTERM');
    });
  }
}

/** A reload of the running exporter (sampling as usual): how long, and the longest event-loop stall. */
async function reloadStall(tree, config) {
  const h = startHarness(config, tree);
  try {
    await h.ready;
    await sleep(1500);
    const rounds = [];
    for (let i = 0; i < Math.max(1, opts.rounds); i++) rounds.push(await h.ask('reload'));
    const worst = rounds.reduce((a, r) => (r.maxStallMs > a.maxStallMs ? r : a));
    return { ms: round(Math.max(...rounds.map((r) => r.ms)), 1), warmedMs: round(Math.max(...rounds.map((r) => r.warmedMs ?? r.ms)), 1), maxStallMs: round(worst.maxStallMs, 1), slices: worst.slices, ok: rounds.every((r) => r.ok), flows: rounds[0].flows, rounds: rounds.length };
  } finally {
    await h.stop();
  }
}

/** Element-wise median of the numbers of several rounds of the same JSON shape. */
function medianRounds(rounds) {
  const merge = (xs) => {
    if (typeof xs[0] === 'number') return percentile(xs, 50);
    if (xs[0] && typeof xs[0] === 'object' && !Array.isArray(xs[0])) return Object.fromEntries(Object.keys(xs[0]).map((k) => [k, merge(xs.map((x) => x[k]))]));
    return xs[0];
  };
  return { ...merge(rounds), rounds: rounds.length };
}

const roundAll = (o) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, typeof v === 'number' ? round(v) : v]));

// ---------------------------------------------------------------------------------------------
// Profiles (why, when a target is missed)

/** A CPU profile of the exporter under the same scrape load as the measurements (start-up excluded). */
async function profileScrapes(tree, config, dir, name) {
  fs.mkdirSync(dir, { recursive: true });
  const h = startHarness(config, tree);
  try {
    const ready = await h.ready;
    for (let i = 0; i < 5; i++) await get(ready.port);
    await h.ask('profile-start');
    await sequential(ready.port, Math.max(1, opts.sequential));
    await cannon(ready.port);
    const file = path.join(dir, `${name}.cpuprofile`);
    await h.ask('profile-stop', { file });
    return { file: path.relative(ROOT, file), ...summarizeProfile(file, ROOT) };
  } finally {
    await h.stop();
  }
}

/** `node --cpu-prof` over the tick benchmark (start-up is a few ms of its seconds of ticks). */
function profileTicks(tree, dir) {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const name = 'tick.cpuprofile';
  const r = spawnSync(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-name=${name}`, '--cpu-prof-interval=100',
    path.join(HERE, 'lib', 'tick.mjs'), tree, String(opts.tickSeconds)], { cwd: ROOT });
  if (r.status !== 0) throw new Error(`tick profile failed: ${r.stderr}`);
  const file = path.join(dir, name);
  return { file: path.relative(ROOT, file), ...summarizeProfile(file, ROOT) };
}

// ---------------------------------------------------------------------------------------------
// Tables

function table(headers, rows) {
  const cells = rows.map((r) => r.map((c) => (c === undefined || c === null ? '-' : String(c))));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i].length)));
  const line = (r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.map(line)].join('\n');
}

const f = (x, d = 2) => (x === undefined || x === null || !Number.isFinite(x) ? '-' : x.toFixed(d));
const mb = (b) => f(b / 2 ** 20, 1);
const ratio = (a, b) => (a !== undefined && b ? a / b : undefined);

// ---------------------------------------------------------------------------------------------
// Main

async function main() {
  // Wait (up to 30 s) for other work on the machine to finish: it skews every number.
  let busy = await cpuBusy();
  for (let waited = 0; busy > 0.2 && waited < 30; waited += 5) {
    if (waited === 0) log(`${Math.round(busy * 100)} % of the CPUs are busy; waiting up to 30 s for a quiet machine`);
    await sleep(4000);
    busy = await cpuBusy();
  }
  quietBudgetMs = opts.quietBudgetSeconds * 1000;
  const results = { generatedAt: new Date().toISOString(), machine: machine(), loadavgBefore: loadavg(), cpuBusyBefore: busy, options: { ...opts, out: undefined } };
  const j0 = jiffies();
  if (results.cpuBusyBefore > 0.1) log(`warning: ${Math.round(results.cpuBusyBefore * 100)} % of the CPUs were busy before the run; other work on this machine skews the numbers`);

  if (opts.build) {
    log('building dist/ (npm run build)');
    const b = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
    if (b.status !== 0) throw new Error('npm run build failed');
  }
  fs.mkdirSync(OUT, { recursive: true });
  const floorBin = path.join(OUT, 'floor');
  const cc = spawnSync('gcc', ['-O2', '-Wall', '-Wextra', '-o', floorBin, path.join(HERE, 'floor.c')], { encoding: 'utf8' });
  if (cc.status !== 0) throw new Error(`gcc failed: ${cc.stderr}`);

  log(`generating trees (${opts.ports.join(', ')} ports) and configs (${opts.flows.join(', ')} flows) under ${path.relative(ROOT, OUT)}/`);
  const trees = Object.fromEntries(opts.ports.map((p) => [p, generateTree(path.join(OUT, 'trees', `p${p}`), p)]));
  const configs = Object.fromEntries(opts.flows.map((n) => [n, generateConfigs(path.join(OUT, 'configs', `f${n}`), n, opts.ports)]));
  results.inputs = {
    trees: Object.fromEntries(opts.ports.map((p) => [p, path.relative(ROOT, trees[p])])),
    gidTableEntries: GID_TABLE,
    configs: Object.fromEntries(opts.flows.map((n) => [n, Object.fromEntries(opts.ports.map((p) => [p, path.relative(ROOT, configs[n][p])]))])),
  };

  // 1. Sampling tick vs the floor, per tree: alternating rounds, medians (this machine is a VM).
  results.ticks = {};
  for (const p of opts.ports) {
    log(`sampling tick and C floor, ${p} port(s), ${opts.rounds} round(s)`);
    const list = path.join(OUT, `files-p${p}.txt`);
    const rounds = [];
    for (let i = 0; i < opts.rounds; i++) {
      rounds.push(await measured(() => ({
        exporter: runJson(process.execPath, [path.join(HERE, 'lib', 'tick.mjs'), trees[p], String(opts.tickSeconds), list], 'tick bench'),
        floor: runJson(floorBin, [list, String(opts.floorSeconds)], 'floor'),
      })));
    }
    results.ticks[p] = medianRounds(rounds);
  }

  // 2. node_exporter, per tree.
  results.nodeExporter = {};
  for (const p of opts.ports) {
    log(`node_exporter, ${p} port(s)`);
    results.nodeExporter[p] = await measured(() => benchNodeExporter(trees[p]));
  }

  // 3. The exporter, per tree and flow count.
  results.exporter = {};
  const floorFlows = opts.flows.includes(1000) ? 1000 : Math.max(...opts.flows);
  for (const p of opts.ports) {
    results.exporter[p] = {};
    for (const n of opts.flows) {
      log(`exporter, ${p} port(s), ${n} flows`);
      results.exporter[p][n] = await measured(() => benchExporter(trees[p], configs[n][p], p === Math.max(...opts.ports) && n === floorFlows));
    }
  }

  // 4. Loading a config: in a fresh process (cold, as at start) and again (warm, as a reload);
  //    a reload inside the running exporter, with the longest event-loop stall it causes.
  const big = Math.max(...opts.ports);
  results.configLoad = {};
  for (const n of opts.flows.filter((x) => x >= 1000)) {
    log(`config load, ${n} flows`);
    results.configLoad[n] = await measured(() => ({
      ...runJson(process.execPath, [...NODE_FLAGS, path.join(HERE, 'lib', 'load.mjs'), configs[n][big], String(Math.max(3, opts.rounds + 1))], 'config load'),
      reload: undefined,
    }));
    log(`reload of the running exporter, ${big} ports, ${n} flows`);
    results.configLoad[n].reload = await reloadStall(trees[big], configs[n][big]);
  }

  // 5. Steady CPU: 1 s sampling, one scrape every 15 s.
  const steadyFlows = opts.flows.includes(1000) ? 1000 : Math.max(...opts.flows);
  log(`steady CPU over ${opts.steadySeconds} s: exporter (${big} ports, ${steadyFlows} flows) and node_exporter`);
  results.steady = {
    ports: big, flows: steadyFlows,
    exporter: await measured(() => steadyExporter(trees[big], configs[steadyFlows][big])),
    nodeExporter: await measured(() => steadyNodeExporter(trees[big])),
  };
  results.targets = targets(results);

  // 6. Profiles of the worst cases, for the recommendations.
  if (opts.profile) {
    const p = Math.max(...opts.ports);
    const n = Math.max(...opts.flows);
    const few = Math.min(...opts.flows);
    log(`profiling: ${p}-port tick; scrapes with ${few} and ${n} flows on ${p} ports`);
    results.profiles = {
      tick: { ports: p, ...profileTicks(trees[p], path.join(OUT, 'prof')) },
      [`scrape_p${p}_f${few}`]: { ports: p, flows: few, ...(await profileScrapes(trees[p], configs[few][p], path.join(OUT, 'prof'), `scrape-p${p}-f${few}`)) },
      [`scrape_p${p}_f${n}`]: { ports: p, flows: n, ...(await profileScrapes(trees[p], configs[n][p], path.join(OUT, 'prof'), `scrape-p${p}-f${n}`)) },
    };
  }

  const j1 = jiffies();
  // CPU seconds other processes used while this ran (steal not counted): the contention indicator.
  results.otherCpuSeconds = round(((j1.machine - j0.machine) - (j1.ours - j0.ours)) / CLK_TCK, 1);
  results.loadavgAfter = loadavg();
  results.cpuBusyAfter = await cpuBusy();
  results.durationSeconds = Math.round((Date.now() - started) / 1000);
  fs.writeFileSync(opts.out, `${JSON.stringify(results, null, 2)}\n`);
  print(results);
  log(`wrote ${path.relative(process.cwd(), opts.out)} in ${results.durationSeconds} s`);
}

/** Issue 16's targets, each against the measurement it names. */
function targets(r) {
  const out = [];
  const add = (name, value, limit, unit, met, note) => out.push({ target: name, value: round(value), limit, unit, met, ...(note ? { note } : {}) });
  const big = Math.max(...opts.ports);
  const t = r.ticks[big];
  if (t) {
    const spaced = t.exporter.tickSpaced && t.floor.pread_spaced;
    const x = spaced ? ratio(t.exporter.tickSpaced.cpuNsPerCall, t.floor.pread_spaced.cpuNsPerTick) : ratio(t.exporter.tick.cpuNsPerCall, t.floor.pread.cpuNsPerTick);
    add(`sampling tick CPU <= 2x the C pread floor (${big} ports, ${t.floor.files} files)`, x, 2, 'x', x <= 2,
      `ticks 10 ms apart, as on an interval (back to back: ${f(ratio(t.exporter.tick.cpuNsPerCall, t.floor.pread.cpuNsPerTick), 2)}x); all threads, full attribute refresh included`);
  }
  const ne = r.nodeExporter[big];
  const at = (n) => r.exporter[big]?.[n];
  if (ne && at(1000)) add(`scrape p99 <= 1/3 node_exporter's (${big} ports, 1,000 flows, ${opts.connections} conns)`, at(1000).concurrent.p99, round(ne.concurrent.p99 / 3), 'ms', at(1000).concurrent.p99 <= ne.concurrent.p99 / 3);
  if (ne && at(10000)) add(`scrape p99 < node_exporter's (${big} ports, 10,000 flows, ${opts.connections} conns)`, at(10000).concurrent.p99, round(ne.concurrent.p99), 'ms', at(10000).concurrent.p99 < ne.concurrent.p99);
  for (const [n, limit] of [[1000, 60], [10000, 100]]) {
    const e = at(n);
    if (e) add(`idle RSS <= ${limit} MB (${big} ports, ${n} flows)`, e.sampling.memory.rss / 2 ** 20, limit, 'MB', e.sampling.memory.rss <= limit * 2 ** 20);
  }
  const l = r.configLoad?.[10000];
  if (l) {
    add('10,000 flows load < 300 ms (fresh process, as at start)', l.coldMs, 300, 'ms', l.coldMs < 300, `again (warm): ${round(l.warmMs, 1)} ms`);
    add('a reload stalls the event loop <= 50 ms (10,000 flows, running exporter)', Math.max(l.reload.maxStallMs, l.warmMaxStallMs ?? 0), 50, 'ms', Math.max(l.reload.maxStallMs, l.warmMaxStallMs ?? 0) <= 50,
      `reload took ${l.reload.ms} ms (${l.reload.warmedMs} ms to its exposition gzipped and its garbage collected, stalls counted until then)${l.reload.slices?.schedstat ? `; longest own slice on the CPU ${round(l.reload.slices.maxOwnMs, 1)} ms, longest wait in the run queue ${round(l.reload.slices.maxRunQueueMs, 1)} ms` : ''}; the first load's stall: ${round(l.coldMaxStallMs, 1)} ms`);
  }
  let worst;
  for (const p of opts.ports) for (const n of opts.flows) {
    const e = r.exporter[p]?.[n];
    if (e && (!worst || e.sampling.eventLoopDelayMs.max > worst.v)) worst = { v: e.sampling.eventLoopDelayMs.max, p, n };
  }
  if (worst) {
    // Over every case's traced window: the most on-CPU time the main thread spent in one gap
    // (our code and V8, GC included) and the longest it sat runnable while others had the CPU.
    const traced = opts.ports.flatMap((p) => opts.flows.map((n) => r.exporter[p]?.[n]?.traced?.slices)).filter((x) => x?.schedstat);
    const own = traced.length ? Math.max(...traced.map((x) => x.maxOwnMs)) : undefined;
    const queued = traced.length ? Math.max(...traced.map((x) => x.maxRunQueueMs)) : undefined;
    const tracedMax = Math.max(...opts.ports.flatMap((p) => opts.flows.map((n) => r.exporter[p]?.[n]?.traced?.eventLoopDelayMs.max ?? 0)));
    add(`event-loop delay max < 5 ms while sampling (worst: ${worst.p} ports, ${worst.n} flows)`, worst.v, 5, 'ms', worst.v < 5,
      own === undefined ? undefined : `traced windows (every case): ELD max ${round(tracedMax, 1)} ms; longest own slice on the CPU ${round(own, 1)} ms; longest wait in the run queue ${round(queued, 1)} ms`);
  }
  if (r.steady) {
    add(`steady CPU, 1 s sampling + a scrape every 15 s (${r.steady.ports} ports, ${r.steady.flows} flows), share of a core`, r.steady.exporter.coreShare * 100, '-', '%', true,
      `node_exporter at 15 s scrapes: ${round(r.steady.nodeExporter.coreShare * 100, 2)} %`);
  }
  return out;
}

function print(r) {
  const out = [];
  const m = r.machine;
  out.push(`exporter run as: node ${NODE_FLAGS.join(' ')} (the flags of npm start)`);
  out.push(`machine: ${m.cpuModel}, ${m.cores} cores, ${mb(m.memoryBytes)} MiB, ${m.os}, ${m.kernel}, node ${m.node}, node_exporter ${m.nodeExporter}`);
  out.push(`CPU busy before: ${f(r.cpuBusyBefore * 100, 0)} %; CPU seconds used by other processes during the run: ${r.otherCpuSeconds} of ${r.durationSeconds * m.cores}`);
  out.push('', 'Sampling tick (CPU ms per tick, every thread; floor = bench/floor.c on the same files; spaced = 10 ms between ticks)');
  out.push(table(
    ['ports', 'other CPU %', 'files', 'tick', 'tick spaced', 'tick (direct reads)', 'attributes', 'reads (reader)', 'reads (direct)', 'node readSync only', 'floor pread', 'floor spaced', 'floor open/read/close', 'tick/floor', 'spaced/floor', 'reads/floor'],
    opts.ports.map((p) => {
      const t = r.ticks[p];
      const e = t.exporter;
      const fl = t.floor.pread.cpuNsPerTick;
      const ms = (x) => f(x === undefined ? undefined : x.cpuNsPerCall / 1e6, 3);
      const reads = e.readCountersBounded ?? e.readCounters;
      return [p, f(t.otherCpuShare * 100, 0), t.floor.files, ms(e.tick), ms(e.tickSpaced), ms(e.tickDirect), ms(e.reconcile), ms(e.readCountersBounded), ms(e.readCounters), ms(e.nodeReadSyncOnly),
        f(fl / 1e6, 3), f(t.floor.pread_spaced?.cpuNsPerTick / 1e6, 3), f(t.floor.openread.cpuNsPerTick / 1e6, 3),
        f(ratio(e.tick.cpuNsPerCall, fl), 2), f(ratio(e.tickSpaced?.cpuNsPerCall, t.floor.pread_spaced?.cpuNsPerTick), 2), f(ratio(reads.cpuNsPerCall, fl), 2)];
    }),
  ));
  out.push('', `Scrapes (gzip, as Prometheus asks): ${opts.connections} concurrent connections for ${opts.duration} s (autocannon; * = ${opts.connections * 2} requests, too slow for ${opts.duration} s); latency ms;`,
    'CPU ms per scrape net of idle sampling; seq = one connection back to back; ELD = event-loop delay ms while only sampling, and under the scrape load;',
    'traced = a second sampling-only window with every gap traced (lib/slices.mjs): own slice = most main-thread CPU time in one gap, run-queue = longest wait for a CPU');
  const rows = [];
  for (const p of opts.ports) {
    const ne = r.nodeExporter[p];
    rows.push([`node_exporter p${p}`, '-', f(ne.otherCpuShare * 100, 0), ne.series, f(ne.gzipBytes / 1024, 0), f(ne.concurrent.p50), f(ne.concurrent.p99), f(ne.sequential.p50), f(ne.concurrent.cpuMsPerScrape, 3), f(ne.sequential.cpuMsPerScrape, 3), '-', '-', '-', '-', '-', '-', '-', '-', mb(ne.memory.peakRssBytes), '-', '-']);
    for (const n of opts.flows) {
      const e = r.exporter[p][n];
      rows.push([`exporter p${p}`, n, f(e.otherCpuShare * 100, 0), e.series, f(e.gzipBytes / 1024, 0), f(e.concurrent.p50), `${f(e.concurrent.p99)}${e.concurrent.mode.endsWith('requests') ? '*' : ''}`, f(e.sequential.p50), f(e.concurrent.cpuMsPerScrape, 3), f(e.sequential.cpuMsPerScrape, 3),
        f(e.sampling.tickMs.p50), f(e.sampling.eventLoopDelayMs.p99), f(e.sampling.eventLoopDelayMs.max), f(e.traced?.eventLoopDelayMs.max), f(e.traced?.slices?.maxOwnMs), f(e.traced?.slices?.maxRunQueueMs), f(e.scraping.eventLoopDelayMs.p99), mb(e.sampling.memory.rss), mb(e.memory.peakRssBytes),
        f(ratio(e.concurrent.p99, ne.concurrent.p99), 1), f(ratio(e.sequential.cpuMsPerScrape, ne.sequential.cpuMsPerScrape), 1)]);
    }
  }
  out.push(table(['process', 'flows', 'other CPU %', 'series', 'KB gz', 'p50', 'p99', 'seq p50', 'cpu/scrape', 'seq cpu/scrape', 'tick ms', 'ELD p99', 'ELD max', 'traced ELD max', 'own slice max', 'run-queue max', 'ELD p99 load', 'RSS idle', 'RSS peak', 'p99/NE', 'cpu/NE'], rows));
  if (r.exporter[Math.max(...opts.ports)]) {
    for (const [n, e] of Object.entries(r.exporter[Math.max(...opts.ports)])) {
      if (e.healthyConcurrent) out.push('', `HTTP floor: GET /-/healthy, same process and load (${Math.max(...opts.ports)} ports, ${n} flows): p50 ${f(e.healthyConcurrent.p50)} ms, p99 ${f(e.healthyConcurrent.p99)} ms`);
    }
  }
  if (r.configLoad) {
    out.push('', `Config load (bench/lib/load.mjs: fresh process, then again; reload: the running exporter, ${Math.max(...opts.ports)} ports, until its exposition is gzipped and its garbage collected); ms,`,
      'stall = longest event-loop stall; cpu = the process\'s CPU time (every thread) during the load; own / run-queue: the reload\'s longest main-thread CPU time in one gap, longest wait for a CPU');
    out.push(table(['flows', 'first load', 'its cpu', 'its stall', 'again', 'its cpu', 'its stall', 'reload (running)', 'to warmed', 'its stall', 'own slice max', 'run-queue max'],
      Object.entries(r.configLoad).map(([n, l]) => [n, f(l.coldMs, 0), f(l.coldCpuMs, 0), f(l.coldMaxStallMs, 1), f(l.warmMs, 0), f(l.warmCpuMs, 0), f(l.warmMaxStallMs, 1), f(l.reload.ms, 0), f(l.reload.warmedMs, 0), f(l.reload.maxStallMs, 1),
        f(l.reload.slices?.maxOwnMs, 1), f(l.reload.slices?.maxRunQueueMs, 1)])));
  }
  if (r.steady) {
    out.push('', `Steady CPU over ${opts.steadySeconds} s, sampling every 1 s and a scrape every 15 s (${r.steady.ports} ports): share of one core`);
    out.push(table(['process', 'flows', 'other CPU %', 'CPU ms', 'share of a core %'], [
      ['exporter', r.steady.flows, f(r.steady.exporter.otherCpuShare * 100, 0), f(r.steady.exporter.cpuMs, 0), f(r.steady.exporter.coreShare * 100, 3)],
      ['node_exporter', '-', f(r.steady.nodeExporter.otherCpuShare * 100, 0), f(r.steady.nodeExporter.cpuMs, 0), f(r.steady.nodeExporter.coreShare * 100, 3)],
    ]));
  }
  out.push('', 'Targets');
  out.push(table(['target', 'measured', 'limit', 'result', 'note'], r.targets.map((t) => [t.target, `${f(t.value)} ${t.unit}`, `${t.limit} ${t.unit}`, t.limit === '-' ? 'reported' : t.met ? 'met' : 'NOT MET', t.note ?? ''])));
  if (r.profiles) {
    for (const [k, pr] of Object.entries(r.profiles)) {
      out.push('', `Profile: ${k} (${pr.file}); self time by file, top functions`);
      out.push(table(['file', 'self %'], pr.byFile.slice(0, 6).map((x) => [x.file, f(x.percent, 1)])));
      out.push(table(['function', 'self %'], pr.topFunctions.slice(0, 10).map((x) => [x.function, f(x.percent, 1)])));
    }
  }
  console.log(out.join('\n'));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
