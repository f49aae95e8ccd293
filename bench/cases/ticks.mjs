/** Case `ticks`: the sampling tick against the C floor, per tree, in alternating rounds (medians). */
import * as path from 'node:path';
import { runJson } from '../lib/processes.mjs';
import { medianRounds } from '../lib/stats.mjs';
import { f, ratio, table } from '../lib/table.mjs';

export const name = 'ticks';
export const key = 'ticks';

export async function run(ctx) {
  const { opts } = ctx;
  const out = {};
  for (const p of opts.ports) {
    ctx.log(`sampling tick and C floor, ${p} port(s), ${opts.rounds} round(s)`);
    const list = path.join(ctx.outDir, `files-p${p}.txt`);
    const rounds = [];
    for (let i = 0; i < opts.rounds; i++) {
      rounds.push(await ctx.measured(() => ({
        exporter: runJson(ctx.root, process.execPath, [path.join(ctx.benchDir, 'lib', 'tick.mjs'), ctx.trees[p], String(opts.tickSeconds), list], 'tick bench'),
        floor: runJson(ctx.root, ctx.floorBin, [list, String(opts.floorSeconds)], 'floor'),
      })));
    }
    out[p] = medianRounds(rounds);
  }
  return out;
}

export function print(r, { opts }) {
  if (!r.ticks) return [];
  return ['', 'Sampling tick (CPU ms per tick, every thread; floor = bench/floor.c on the same files; spaced = 10 ms between ticks)', table(
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
  )];
}
