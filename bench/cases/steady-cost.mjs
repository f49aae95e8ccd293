/**
 * Case `steady-cost` (issue 22): what the host pays for the daemon sampling, nobody scraping:
 * whole-process CPU per second and its per-thread split, beside the C pread floor (one pass over
 * the same files) and the stack floor's RSS.
 */
import { fork } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { sleep } from '../lib/machine.mjs';
import { runJson, startHarness } from '../lib/processes.mjs';
import { summarizeProfile } from '../lib/profile.mjs';
import { CLK_TCK, procCpuTicks, procMemoryOver, round, roundAll } from '../lib/stats.mjs';
import { f, mb, profileTables, ratio, table } from '../lib/table.mjs';

export const name = 'steady-cost';
export const key = 'steadyCost';

/** utime + stime (clock ticks, /proc/<pid>/task/<tid>/stat) and on-CPU ns (schedstat, when the kernel has it) of each thread. */
function threadCpu(pid) {
  const out = new Map();
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      let runNs;
      try {
        runNs = Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        runNs = undefined;
      }
      out.set(Number(tid), { comm, ticks: Number(fields[11]) + Number(fields[12]), runNs });
    } catch {
      // the thread ended
    }
  }
  return out;
}

/**
 * Per-thread CPU ms per second between two threadCpu() readings, grouped as the issue reports
 * them: the main thread (JavaScript, tid = pid), libmfe-reader's threads (named mfe-reader), and
 * Node's other threads (V8's platform workers, GC helpers and compilers, libuv; all named node).
 */
function threadSplit(pid, a, b, seconds) {
  const threads = [];
  for (const [tid, t1] of b) {
    const t0 = a.get(tid) ?? { ticks: 0, runNs: 0 };
    const ms = t1.runNs !== undefined && t0.runNs !== undefined ? (t1.runNs - t0.runNs) / 1e6 : ((t1.ticks - t0.ticks) * 1000) / CLK_TCK;
    threads.push({ tid, comm: t1.comm, role: tid === pid ? 'main' : t1.comm === 'mfe-reader' ? 'mfe-reader' : 'other', msPerSecond: round(ms / seconds, 3) });
  }
  const sum = (role) => round(threads.filter((t) => t.role === role).reduce((n, t) => n + t.msPerSecond, 0), 3);
  return { source: [...b.values()].every((t) => t.runNs !== undefined) ? 'schedstat' : 'stat', main: sum('main'), reader: sum('mfe-reader'), other: sum('other'), threads: threads.sort((x, y) => y.msPerSecond - x.msPerSecond) };
}

/** RSS of the stack floor (lib/stack-floor.mjs) over the `windowMs` up to `settleMs` after it is ready, as the daemon's is read. */
async function stackFloorRss(ctx, settleMs, windowMs) {
  const child = fork(path.join(ctx.benchDir, 'lib', 'stack-floor.mjs'), [], { cwd: ctx.root, execArgv: ctx.nodeFlags, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  try {
    await new Promise((resolve, reject) => {
      child.once('message', resolve);
      child.once('exit', (code) => reject(new Error(`stack floor exited (${code})`)));
    });
    await sleep(settleMs - windowMs);
    return await procMemoryOver(child.pid, windowMs / 1000);
  } finally {
    await new Promise((resolve) => {
      child.once('exit', resolve);
      child.send({ cmd: 'stop' });
    });
  }
}

/** The daemon's RSS over the `windowMs` up to `settleMs` after it is ready (sampling every second, no scrape). */
async function daemonRss(ctx, tree, config, settleMs, windowMs) {
  const h = startHarness(ctx, config, tree);
  try {
    const ready = await h.ready;
    await sleep(settleMs - windowMs);
    const memory = await procMemoryOver(h.child.pid, windowMs / 1000);
    const report = await h.ask('report');
    return { ...memory, startMs: round(ready.startMs, 1), flows: report.flows, ports: report.sampledPorts };
  } finally {
    await h.stop();
  }
}

/** Whole-process and per-thread CPU of `pid` over the next `seconds`, and its RSS over them (procMemoryOver()). */
async function cpuWindow(pid, seconds) {
  const c0 = procCpuTicks(pid);
  const th0 = threadCpu(pid);
  const t0 = Date.now();
  const memory = await procMemoryOver(pid, seconds);
  const c1 = procCpuTicks(pid);
  const th1 = threadCpu(pid);
  const s = (Date.now() - t0) / 1000;
  return { seconds: round(s, 1), cpuMsPerSecond: round((((c1 - c0) * 1000) / CLK_TCK) / s, 3), threads: threadSplit(pid, th0, th1, s), memory };
}

/** When the steady window starts, after the daemon is ready: the warm-up, or the end of the first window. */
const steadyStartMs = (opts) => Math.max(opts.steadyWarmupSeconds, 3 + opts.steadyCostSeconds) * 1000;

/**
 * The daemon on the tree, sampling every second, nobody scraping, as an operator measures it
 * with /proc/<pid>/stat: its first window (3 s after start: V8 still compiling and tiering up),
 * then the steady window after the warm-up (`--steady-warmup`), whole-process CPU per second and
 * the per-thread split in each, and its RSS at the end of the steady window. Neither window runs
 * the harness's event-loop delay monitor (100 wake-ups a second of its own); the delay is
 * measured in a third window of the same length. Then (with --profile) a CPU profile of 10 s more.
 */
async function daemon(ctx, tree, config) {
  const { opts } = ctx;
  const h = startHarness(ctx, config, tree);
  try {
    const ready = await h.ready;
    const readyAt = Date.now();
    const pid = h.child.pid;
    await h.ask('reset', { eld: false });
    await sleep(3000);
    const first = await cpuWindow(pid, opts.steadyCostSeconds);
    await sleep(Math.max(0, readyAt + steadyStartMs(opts) - Date.now()));
    await h.ask('reset', { eld: false });
    const { memory, ...steady } = await cpuWindow(pid, opts.steadyCostSeconds);
    const report = await h.ask('report');
    await h.ask('reset');
    await sleep(opts.steadyCostSeconds * 1000);
    const eld = await h.ask('report');
    const result = {
      ...steady, ticks: report.tickMs.count, flows: report.flows, ports: report.sampledPorts, startMs: round(ready.startMs, 1),
      warmupSeconds: round(steadyStartMs(opts) / 1000, 1), first,
      tickMs: roundAll(report.tickMs), eventLoopDelayMs: roundAll(eld.eventLoopDelayMs), memory,
    };
    if (opts.profile) {
      const dir = path.join(ctx.outDir, 'prof');
      fs.mkdirSync(dir, { recursive: true });
      const file = path.join(dir, 'steady-cost.cpuprofile');
      await h.ask('profile-start');
      await sleep(10_000);
      await h.ask('profile-stop', { file });
      result.profile = { file: path.relative(ctx.root, file), ...summarizeProfile(file, ctx.root) };
    }
    return result;
  } finally {
    await h.stop();
  }
}

export async function run(ctx) {
  const { opts } = ctx;
  const big = Math.max(...opts.ports);
  if (!ctx.configs[1000]) throw new Error('the steady-cost case needs the 1,000-flow config (--flows with 1000)');
  const many = ctx.configs[10000]?.[big];
  ctx.log(`steady cost over ${opts.steadyCostSeconds} s: the daemon (${big} ports, 1,000 flows, no scrapes), the C floor, the stack floor's RSS, the daemon's RSS at 1,000${many ? ' and 10,000' : ''} flows`);
  const tree = ctx.trees[big];
  const list = path.join(ctx.outDir, `files-p${big}.txt`);
  if (!fs.existsSync(list)) runJson(ctx.root, process.execPath, [path.join(ctx.benchDir, 'lib', 'tick.mjs'), tree, '0.2', list], 'file list');
  const floor = runJson(ctx.root, ctx.floorBin, [list, String(Math.max(1, opts.floorSeconds))], 'floor');
  // The same pass 1 s apart, as the daemon samples: cold caches and a wake-up every tick.
  const atInterval = runJson(ctx.root, ctx.floorBin, [list, String(opts.steadyCostSeconds), '1000'], 'floor at 1 s');
  const d = await ctx.measured(() => daemon(ctx, tree, ctx.configs[1000][big]));
  // Every RSS is read over the same stretch after its process is ready: the daemon's steady window.
  const windowMs = opts.steadyCostSeconds * 1000;
  const settleMs = steadyStartMs(opts) + windowMs;
  const stack = await ctx.measured(() => stackFloorRss(ctx, settleMs, windowMs));
  const rss = { 1000: d.memory };
  if (many) rss[10000] = await ctx.measured(() => daemonRss(ctx, tree, many, settleMs, windowMs));
  return { ports: big, files: floor.files, floor: { passMs: round(floor.pread.cpuNsPerTick / 1e6, 4), spacedPassMs: round(floor.pread_spaced?.cpuNsPerTick / 1e6, 4), intervalPassMs: round(atInterval.pread_interval.cpuNsPerTick / 1e6, 4) }, daemon: d, stackFloor: stack, rss };
}

export function print(r, { opts }) {
  if (!r.steadyCost) return [];
  const sc = r.steadyCost;
  const d = sc.daemon;
  const warm = d.warmupSeconds ?? 3;
  const out = ['', `Steady cost (issue 22): the daemon sampling every 1 s, no scrapes, ${sc.ports} ports (${sc.files} counter files), ${d.flows} flows; whole-process CPU from /proc/<pid>/stat over ${d.seconds} s,`,
    `steady: from ${warm} s after start (${d.ticks} ticks); first: from 3 s after start (V8 still compiling); per thread from /proc/<pid>/task/*/${d.threads.source}; no event-loop monitor in either window,`,
    `ELD from a third window of the same length; floor = bench/floor.c, one pread pass over the same files (back to back, 10 ms apart, 1 s apart as the daemon samples); RSS: the median of one reading a second from ${f(warm, 0)} to ${f(warm + d.seconds, 0)} s after each process was ready`];
  const row = (name, w, withTick) => [name, f(d.otherCpuShare * 100, 0), f(w.cpuMsPerSecond, 2), f(sc.floor.passMs, 3), f(ratio(w.cpuMsPerSecond, sc.floor.passMs), 1), f(ratio(w.cpuMsPerSecond, sc.floor.spacedPassMs), 1),
    f(sc.floor.intervalPassMs, 3), f(ratio(w.cpuMsPerSecond, sc.floor.intervalPassMs), 1), f(w.threads.main, 2), f(w.threads.reader, 2), f(w.threads.other, 2), withTick ? f(d.tickMs.p50) : '', withTick ? f(d.eventLoopDelayMs.p99) : '', withTick ? f(d.eventLoopDelayMs.max) : ''];
  out.push(table(['', 'other CPU %', 'CPU ms/s', 'floor pass ms', 'x floor', 'x spaced floor', '1 s floor pass ms', 'x 1 s floor', 'main ms/s', 'mfe-reader ms/s', 'other threads ms/s', 'tick ms p50', 'ELD p99', 'ELD max'],
    [row('daemon, steady', d, true), ...(d.first ? [row('daemon, first window', d.first, false)] : [])]));
  const range = (m) => (m.rssMinBytes === undefined ? '-' : `${mb(m.rssMinBytes)}-${mb(m.rssMaxBytes)}`);
  out.push(table(['RSS', 'MB', 'min-max MB', 'over the floor MB'], [
    ['stack floor (node + express, prom-client, pino, yaml, koffi)', mb(sc.stackFloor.rssBytes), range(sc.stackFloor), '-'],
    ...Object.entries(sc.rss).map(([n, m]) => [`daemon, ${n} flows`, mb(m.rssBytes), range(m), mb(m.rssBytes - sc.stackFloor.rssBytes)]),
  ]));
  if (d.profile) out.push(...profileTables(`Profile: steady cost, 10 s of sampling (${d.profile.file}); self time by file, top functions`, d.profile));
  return out;
}
