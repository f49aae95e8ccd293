#!/usr/bin/env node
/**
 * `npm run bench`: the exporter against node_exporter and against a C floor, on generated
 * mlx5-like sysfs trees, in one run. See bench/README.md for what is measured and how.
 *
 *   node bench/run.mjs [--quick] [--no-build] [--no-profile] [--duration S] [--connections N]
 *                      [--ports 1,8,32] [--flows 10,100,1000,10000] [--quiet-budget S] [--out FILE]
 *
 * Writes bench/results.json (or --out) and prints the tables. Traffic goes to 127.0.0.1 only.
 */
import { spawn, spawnSync, fork } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { generateConfigs, generateTree, GID_TABLE } from './lib/gen.mjs';
import { CLK_TCK, mean, percentile, procCpuTicks, procMemory, round } from './lib/stats.mjs';
import { summarizeProfile } from './lib/profile.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.dirname(HERE);
const OUT = path.join(HERE, 'out');
const NODE_EXPORTER = '/usr/bin/prometheus-node-exporter';

// ---------------------------------------------------------------------------------------------
// Options

function parseArgs(argv) {
  const o = {
    quick: false, build: true, profile: true, duration: 5, connections: 10, idle: 5, sequential: 3, tickSeconds: 1,
    floorSeconds: 1, rounds: 3, quietBudgetSeconds: 60, ports: [1, 8, 32], flows: [10, 100, 1000, 10000], out: path.join(HERE, 'results.json'),
  };
  const list = (v) => v.split(',').map(Number).filter((n) => Number.isInteger(n) && n > 0);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => argv[++i];
    if (a === '--quick') Object.assign(o, { quick: true, duration: 1, idle: 2, sequential: 1, tickSeconds: 0.5, floorSeconds: 0.3, rounds: 1 });
    else if (a === '--no-build') o.build = false;
    else if (a === '--no-profile') o.profile = false;
    else if (a === '--duration') o.duration = Number(next());
    else if (a === '--quiet-budget') o.quietBudgetSeconds = Number(next());
    else if (a === '--connections') o.connections = Number(next());
    else if (a === '--ports') o.ports = list(next());
    else if (a === '--flows') o.flows = list(next());
    else if (a === '--out') o.out = path.resolve(next());
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

/** One GET over a kept-alive connection (as Prometheus scrapes): latency ms, status, body. */
function get(port, p = '/metrics') {
  return new Promise((resolve, reject) => {
    const t = process.hrtime.bigint();
    const req = http.get({ host: '127.0.0.1', port, path: p, agent }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ ms: Number(process.hrtime.bigint() - t) / 1e6, status: res.statusCode, body: Buffer.concat(chunks) }));
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
      { url: `http://127.0.0.1:${port}${p}`, connections: opts.connections, ...mode, timeout: 120 },
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
      bytes: first.body.length, series: seriesIn(first.body),
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

function startHarness(config, tree, execArgv = []) {
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
      startMs: round(ready.startMs, 1), bytes: first.body.length, series: seriesIn(first.body),
      idleCpuMsPerSec: round(idleCpuMsPerSec, 3),
      sampling: { eventLoopDelayMs: roundAll(idle.eventLoopDelayMs), tickMs: roundAll(idle.tickMs), memory: idle.memory },
      scraping: { eventLoopDelayMs: roundAll(underLoad.eventLoopDelayMs), tickMs: roundAll(underLoad.tickMs), renderMs: roundAll(underLoad.renderMs), memory: underLoad.memory },
      ...load,
    };
  } catch (e) {
    throw new Error(`exporter on ${tree} with ${config}: ${e.message}\n${h.stderr()}`);
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

  results.targets = targets(results);

  // 4. What-if: the same daemon state rendered with cached text (bench/lib/whatif.mjs).
  results.whatIf = {};
  const big = Math.max(...opts.ports);
  for (const n of [...new Set([Math.min(...opts.flows), floorFlows, Math.max(...opts.flows)])]) {
    log(`what-if: render caching and memory, ${big} ports, ${n} flows`);
    results.whatIf[n] = runJson(process.execPath, ['--expose-gc', path.join(HERE, 'lib', 'whatif.mjs'), configs[n][big], trees[big], String(opts.tickSeconds * 2)], 'what-if');
  }

  // 5. Profiles of the worst cases, for the recommendations.
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

function targets(r) {
  const out = [];
  const add = (name, value, limit, unit, met, note) => out.push({ target: name, value: round(value), limit, unit, met, ...(note ? { note } : {}) });
  const ports = opts.ports;
  const big = Math.max(...ports);
  for (const p of ports) {
    const t = r.ticks[p];
    add(`counter reads per tick <= 3x C floor (${p} ports)`, ratio(t.exporter.readCounters.cpuNsPerCall, t.floor.pread.cpuNsPerTick), 3, 'x', ratio(t.exporter.readCounters.cpuNsPerCall, t.floor.pread.cpuNsPerTick) <= 3,
      'FileCounterSet.read() of every set: stat + pread + parse, vs floor pread + strtoull');
    add(`whole sampling tick <= 3x C floor (${p} ports)`, ratio(t.exporter.tick.cpuNsPerCall, t.floor.pread.cpuNsPerTick), 3, 'x', ratio(t.exporter.tick.cpuNsPerCall, t.floor.pread.cpuNsPerTick) <= 3,
      'Sampler.tick(): port discovery + attributes + reads + series');
  }
  const ne = r.nodeExporter[big];
  for (const n of opts.flows) {
    const e = r.exporter[big]?.[n];
    if (!e || !ne) continue;
    add(`scrape p99 < node_exporter's (${big} ports, ${n} flows, ${opts.connections} conns)`, e.concurrent.p99, round(ne.concurrent.p99), 'ms', e.concurrent.p99 < ne.concurrent.p99);
  }
  if (r.exporter[big]?.[1000]) add(`scrape p99 < 20 ms (1,000 flows, ${big} ports, ${opts.connections} conns)`, r.exporter[big][1000].concurrent.p99, 20, 'ms', r.exporter[big][1000].concurrent.p99 < 20);
  for (const p of ports) {
    const e = r.exporter[p]?.[10000];
    if (e) add(`peak RSS < 150 MB (10,000 flows, ${p} ports)`, e.memory.peakRssBytes / 2 ** 20, 150, 'MB', e.memory.peakRssBytes < 150 * 2 ** 20);
  }
  let worst;
  for (const p of ports) for (const n of opts.flows) {
    const e = r.exporter[p]?.[n];
    if (e && (!worst || e.sampling.eventLoopDelayMs.p99 > worst.v)) worst = { v: e.sampling.eventLoopDelayMs.p99, p, n, max: e.sampling.eventLoopDelayMs.max };
  }
  if (worst) add(`event-loop delay p99 < 10 ms while sampling (worst: ${worst.p} ports, ${worst.n} flows)`, worst.v, 10, 'ms', worst.v < 10, `max ${round(worst.max)} ms`);
  return out;
}

function print(r) {
  const out = [];
  const m = r.machine;
  out.push(`machine: ${m.cpuModel}, ${m.cores} cores, ${mb(m.memoryBytes)} MiB, ${m.os}, ${m.kernel}, node ${m.node}, node_exporter ${m.nodeExporter}`);
  out.push(`CPU busy before: ${f(r.cpuBusyBefore * 100, 0)} %; CPU seconds used by other processes during the run: ${r.otherCpuSeconds} of ${r.durationSeconds * m.cores}`);
  out.push('', 'Sampling tick (CPU ms per tick; floor = bench/floor.c)');
  out.push(table(
    ['ports', 'other CPU %', 'files', 'tick', 'tick (direct reads)', 'attributes', 'reads', 'node readSync only', 'stat/set', 'floor pread', 'floor open/read/close', 'tick/floor', 'reads/floor'],
    opts.ports.map((p) => {
      const t = r.ticks[p];
      const e = t.exporter;
      const fl = t.floor.pread.cpuNsPerTick;
      const ms = (x) => f(x === undefined ? undefined : x.cpuNsPerCall / 1e6, 3);
      return [p, f(t.otherCpuShare * 100, 0), t.floor.files, ms(e.tick), ms(e.tickDirect), ms(e.reconcile), ms(e.readCounters), ms(e.nodeReadSyncOnly), ms(e.statOnly), f(fl / 1e6, 3), f(t.floor.openread.cpuNsPerTick / 1e6, 3),
        f(ratio(e.tick.cpuNsPerCall, fl), 1), f(ratio(e.readCounters.cpuNsPerCall, fl), 1)];
    }),
  ));
  out.push('', `Scrapes: ${opts.connections} concurrent connections for ${opts.duration} s (autocannon; * = ${opts.connections * 2} requests, too slow for ${opts.duration} s); latency ms;`,
    'CPU ms per scrape net of idle sampling; seq = one connection back to back; ELD = event-loop delay ms while only sampling, and under the scrape load');
  const rows = [];
  for (const p of opts.ports) {
    const ne = r.nodeExporter[p];
    rows.push([`node_exporter p${p}`, '-', f(ne.otherCpuShare * 100, 0), ne.series, f(ne.concurrent.p50), f(ne.concurrent.p99), f(ne.sequential.p50), f(ne.concurrent.cpuMsPerScrape, 3), f(ne.sequential.cpuMsPerScrape, 3), '-', '-', '-', '-', '-', mb(ne.memory.peakRssBytes), '-', '-']);
    for (const n of opts.flows) {
      const e = r.exporter[p][n];
      rows.push([`exporter p${p}`, n, f(e.otherCpuShare * 100, 0), e.series, f(e.concurrent.p50), `${f(e.concurrent.p99)}${e.concurrent.mode.endsWith('requests') ? '*' : ''}`, f(e.sequential.p50), f(e.concurrent.cpuMsPerScrape, 3), f(e.sequential.cpuMsPerScrape, 3),
        f(e.sampling.tickMs.p50), f(e.sampling.eventLoopDelayMs.p99), f(e.sampling.eventLoopDelayMs.max), f(e.scraping.eventLoopDelayMs.p99), mb(e.sampling.memory.rss), mb(e.memory.peakRssBytes),
        f(ratio(e.concurrent.p99, ne.concurrent.p99), 1), f(ratio(e.sequential.cpuMsPerScrape, ne.sequential.cpuMsPerScrape), 1)]);
    }
  }
  out.push(table(['process', 'flows', 'other CPU %', 'series', 'p50', 'p99', 'seq p50', 'cpu/scrape', 'seq cpu/scrape', 'tick ms', 'ELD p99', 'ELD max', 'ELD p99 load', 'RSS idle', 'RSS peak', 'p99/NE', 'cpu/NE'], rows));
  if (r.exporter[Math.max(...opts.ports)]) {
    for (const [n, e] of Object.entries(r.exporter[Math.max(...opts.ports)])) {
      if (e.healthyConcurrent) out.push('', `HTTP floor: GET /-/healthy, same process and load (${Math.max(...opts.ports)} ports, ${n} flows): p50 ${f(e.healthyConcurrent.p50)} ms, p99 ${f(e.healthyConcurrent.p99)} ms`);
    }
  }
  if (r.whatIf) {
    out.push('', `What-if (bench/lib/whatif.mjs, ${Math.max(...opts.ports)} ports): CPU ms per /metrics render; memory after full GCs`);
    out.push(table(['flows', 'now', 'cached flow+counter text', 'speed-up', 'per-tick body', 'default families', 'series match', 'body MiB'],
      Object.entries(r.whatIf).map(([n, w]) => [n, f(w.render.current.cpuMs), f(w.render.cachedFlowAndCounterText.cpuMs), `${f(w.render.speedup, 1)}x`,
        f(w.render.perTickBody.cpuMs), f(w.render.defaultFamiliesOnly.cpuMs), w.render.seriesMatch ? 'yes' : 'NO', f(w.memory.bodyMB)])));
    out.push(table(['flows', 'loadConfig ms', 'its config YAML', 'flow files as YAML', 'flow files JSON.parse', 'RSS MiB after load+GC', 'heap MiB: config', 'heap MiB: plans'],
      Object.entries(r.whatIf).map(([n, w]) => [n, f(w.memory.loadConfigMs, 0), f(w.memory.configYamlParseMs, 0), f(w.memory.flowFilesYamlParseMs, 0), f(w.memory.flowFilesJsonParseMs, 0),
        f(w.memory.configLoaded.rssMB, 1), f(w.memory.configLoaded.heapUsedMB - w.memory.imports.heapUsedMB, 1), f(w.memory.plansBuilt.heapUsedMB - w.memory.configLoaded.heapUsedMB, 1)])));
  }
  out.push('', 'Targets');
  out.push(table(['target', 'measured', 'limit', 'result'], r.targets.map((t) => [t.target, `${f(t.value)} ${t.unit}`, `${t.limit} ${t.unit}`, t.met ? 'met' : 'NOT MET'])));
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
