/**
 * Case `config-load`: loading a config in a fresh process (cold, as at start) and again (warm,
 * as a reload), and a reload inside the running exporter with the longest event-loop stall it causes.
 */
import * as path from 'node:path';
import { sleep } from '../lib/machine.mjs';
import { runJson, startHarness } from '../lib/processes.mjs';
import { round } from '../lib/stats.mjs';
import { f, table } from '../lib/table.mjs';

export const name = 'config-load';
export const key = 'configLoad';

/** A reload of the running exporter (sampling as usual): how long, and the longest event-loop stall. */
async function reloadStall(ctx, tree, config) {
  const h = startHarness(ctx, config, tree);
  try {
    await h.ready;
    await sleep(1500);
    const rounds = [];
    for (let i = 0; i < Math.max(1, ctx.opts.rounds); i++) rounds.push(await h.ask('reload'));
    const worst = rounds.reduce((a, r) => (r.maxStallMs > a.maxStallMs ? r : a));
    return { ms: round(Math.max(...rounds.map((r) => r.ms)), 1), warmedMs: round(Math.max(...rounds.map((r) => r.warmedMs ?? r.ms)), 1), maxStallMs: round(worst.maxStallMs, 1), slices: worst.slices, ok: rounds.every((r) => r.ok), flows: rounds[0].flows, rounds: rounds.length };
  } finally {
    await h.stop();
  }
}

export async function run(ctx) {
  const { opts } = ctx;
  const big = Math.max(...opts.ports);
  const out = {};
  for (const n of opts.flows.filter((x) => x >= 1000)) {
    ctx.log(`config load, ${n} flows`);
    out[n] = await ctx.measured(() => ({
      ...runJson(ctx.root, process.execPath, [...ctx.nodeFlags, path.join(ctx.benchDir, 'lib', 'load.mjs'), ctx.configs[n][big], String(Math.max(3, opts.rounds + 1))], 'config load'),
      reload: undefined,
    }));
    ctx.log(`reload of the running exporter, ${big} ports, ${n} flows`);
    out[n].reload = await reloadStall(ctx, ctx.trees[big], ctx.configs[n][big]);
  }
  return out;
}

export function print(r, { opts }) {
  if (!r.configLoad) return [];
  return ['', `Config load (bench/lib/load.mjs: fresh process, then again; reload: the running exporter, ${Math.max(...opts.ports)} ports, until its exposition is gzipped and its garbage collected); ms,`,
    'stall = longest event-loop stall; cpu = the process\'s CPU time (every thread) during the load; own / run-queue: the reload\'s longest main-thread CPU time in one gap, longest wait for a CPU',
    table(['flows', 'first load', 'its cpu', 'its stall', 'again', 'its cpu', 'its stall', 'reload (running)', 'to warmed', 'its stall', 'own slice max', 'run-queue max'],
      Object.entries(r.configLoad).map(([n, l]) => [n, f(l.coldMs, 0), f(l.coldCpuMs, 0), f(l.coldMaxStallMs, 1), f(l.warmMs, 0), f(l.warmCpuMs, 0), f(l.warmMaxStallMs, 1), f(l.reload.ms, 0), f(l.reload.warmedMs, 0), f(l.reload.maxStallMs, 1),
        f(l.reload.slices?.maxOwnMs, 1), f(l.reload.slices?.maxRunQueueMs, 1)]))];
}
