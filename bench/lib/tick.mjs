/**
 * CPU and wall time of one sampling tick, in a process of its own: the built Sampler and sysfs
 * sources from dist/, wired as the daemon wires them for a --path.sysfs tree, ticked back to
 * back. Prints one JSON object on stdout.
 *
 *   node bench/lib/tick.mjs TREE SECONDS [FILELIST]
 *
 * FILELIST, when given, receives every counter file the sampler reads (one path a line), so the
 * C floor reads exactly the same files.
 *
 * Only public interfaces are used for the numbers that matter (Sampler.tick(), PortInventory,
 * PortCounterSet.read()), so the benchmark keeps working while src/ changes. The breakdown
 * rows that need a private field (FileCounterSet's descriptors) are left out when it is gone.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Sampler } from '../../dist/sampler/sampler.js';
import { selectSources } from '../../dist/sources/select.js';
import { valuesOf } from '../../dist/sources/types.js';
import { runSync } from '../../dist/reads/program.js';
import { mean, percentile } from './stats.mjs';

const [treeArg, secondsArg, fileList] = process.argv.slice(2);
const tree = path.resolve(treeArg);
const seconds = Number(secondsArg ?? 1);

/**
 * Ticks run back to back here, so each sampler's clock advances one interval per reading: every
 * series then holds the 10 intervals of a 10 s window as it does in the daemon, not hundreds.
 */
async function sampler(reads) {
  const measurement = selectSources({ sysfsRoot: tree, sysfsOnly: true });
  let fakeNs = 0n;
  const clock = () => (fakeNs += 1_000_000_000n);
  const s = new Sampler({ inventory: measurement.inventory, sources: measurement.sources, intervalMs: 1000, windowMs: 10_000, clock, reads });
  await s.start(true);
  return { s, measurement };
}

/**
 * Runs fn (sync or async) back to back for `secs` after a warm-up; wall ns per call (each timed)
 * and CPU ns per call (process.cpuUsage(): every thread, the reader threads included).
 */
async function measure(fn, secs) {
  const warmEnd = process.hrtime.bigint() + 1_000_000_000n; // the JIT settles
  while (process.hrtime.bigint() < warmEnd) await fn();
  const wall = [];
  const cpu0 = process.cpuUsage();
  const end = process.hrtime.bigint() + BigInt(Math.round(secs * 1e9));
  let t = process.hrtime.bigint();
  while (t < end) {
    await fn();
    const t2 = process.hrtime.bigint();
    wall.push(Number(t2 - t));
    t = t2;
  }
  const c = process.cpuUsage(cpu0);
  return {
    calls: wall.length,
    wallNsMedian: percentile(wall, 50),
    wallNsP99: percentile(wall, 99),
    wallNsMean: mean(wall),
    cpuNsPerCall: ((c.user + c.system) * 1000) / wall.length,
    userNsPerCall: (c.user * 1000) / wall.length,
    systemNsPerCall: (c.system * 1000) / wall.length,
  };
}

/** Where a set's counters live, from what every PortCounterSet says publicly. */
function filesOf(set, attrs) {
  const port = path.join(tree, 'class', 'infiniband', attrs.device, 'ports', String(attrs.port));
  const dir = {
    sysfs_counters: path.join(port, 'counters'),
    sysfs_hw_counters: path.join(port, 'hw_counters'),
    netdev: attrs.netdev ? path.join(tree, 'class', 'net', attrs.netdev, 'statistics') : undefined,
  }[set.kind];
  return dir ? set.counters.map((c) => path.join(dir, c.name)) : [];
}

const result = { tree };

// The daemon's sampler as it runs by default (reads on the native reader threads when built).
{
  const { s, measurement } = await sampler(undefined);
  const ports = [...s.ports.values()];
  const sets = ports.flatMap((p) => p.sets.map((set) => ({ set, attrs: p.attrs })));
  const files = sets.flatMap(({ set, attrs }) => filesOf(set, attrs));
  if (fileList) fs.writeFileSync(fileList, `${files.join('\n')}\n`);
  Object.assign(result, {
    ports: s.ports.size,
    counterFiles: files.length,
    missingFiles: files.filter((f) => !fs.existsSync(f)).length,
    counters: ports.reduce((n, p) => n + p.counters.length, 0),
    readerMode: s.reader?.mode ?? 'worker',
    workerReads: s.reader !== undefined,
    tick: await measure(() => s.tick(), seconds),
    // The parts of a tick, through public interfaces only:
    // port discovery and attributes (what a full refresh asks the inventory for),
    reconcile: await measure(() => { for (const ref of runSync(measurement.inventory.listReads())) runSync(measurement.inventory.attributeReads(ref)); }, seconds / 2),
    // every set's reads on this thread (stat + pread + parse of each file),
    readCounters: await measure(() => { for (const { set } of sets) valuesOf(runSync(set.reads()), set.counters.length); }, seconds / 2),
  });
  // and every set's read as one request on the reader threads (what a tick does, minus the series).
  if (typeof s.reader?.run === 'function' && typeof sets[0]?.set.reads === 'function') {
    result.readCountersBounded = await measure(() => s.reader.run(sets.map(({ set }) => ({ group: 'g', program: set.reads() }))), seconds / 2);
  }
  // Node's own cost of the same preads (no stat, no parse, no result objects), and the one stat
  // per set per tick that notices a vanished port: both need FileCounterSet's private fields.
  const fds = sets.flatMap(({ set }) => (Array.isArray(set.handles) ? set.handles.filter((h) => 'fd' in h).map((h) => h.fd) : []));
  if (fds.length === files.length) {
    const buf = Buffer.alloc(64);
    result.nodeReadSyncOnly = await measure(() => { for (const fd of fds) fs.readSync(fd, buf, 0, 64, 0); }, seconds / 4);
  }
  const dirs = sets.map(({ set }) => set.watchDir).filter((d) => typeof d === 'string');
  if (dirs.length === sets.length) result.statOnly = await measure(() => { for (const d of dirs) fs.statSync(d, { throwIfNoEntry: false }); }, seconds / 4);
  result.readErrors = Object.fromEntries(s.readErrors);
  s.stop();
}

// Ticks with 10 ms between them (as bench/floor.c's pread_spaced): a sampler ticks on an
// interval, so what it reads is no longer hot in the caches from the tick before.
{
  const { s } = await sampler(undefined);
  const spaced = async () => {
    await new Promise((r) => setTimeout(r, 10));
    await s.tick();
  };
  result.tickSpaced = await measure(spaced, seconds);
  s.stop();
}

// The same tick with every read on the sampler's thread, when src/ offers the choice.
{
  const { s } = await sampler('direct');
  if (s.reader?.mode === 'direct' || (s.reader === undefined && result.workerReads)) result.tickDirect = await measure(() => s.tick(), seconds / 2);
  s.stop();
}

process.stdout.write(`${JSON.stringify(result)}\n`);
