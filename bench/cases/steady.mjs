/**
 * Case `steady`: what the exporter costs on a host over time: sampling every second and one
 * scrape every 15 s (Prometheus' default interval), as a share of one core; node_exporter with
 * the same scrapes.
 */
import { freePort, get, waitForHttp } from '../lib/http.mjs';
import { sleep } from '../lib/machine.mjs';
import { startHarness, startNodeExporter, stopChild } from '../lib/processes.mjs';
import { CLK_TCK, procCpuTicks, round } from '../lib/stats.mjs';
import { f, table } from '../lib/table.mjs';

export const name = 'steady';
export const key = 'steady';

async function steadyCpu(pid, port, seconds) {
  const c0 = procCpuTicks(pid);
  const t0 = Date.now();
  const end = t0 + seconds * 1000;
  for (let next = t0; next < end; next += 15_000) {
    await sleep(Math.max(0, next - Date.now()));
    await get(port);
  }
  await sleep(Math.max(0, end - Date.now()));
  const cpuMs = ((procCpuTicks(pid) - c0) * 1000) / CLK_TCK;
  return { seconds: round((Date.now() - t0) / 1000, 1), scrapes: Math.ceil(seconds / 15), cpuMs: round(cpuMs, 1), coreShare: round(cpuMs / (Date.now() - t0), 4) };
}

async function exporter(ctx, tree, config) {
  const h = startHarness(ctx, config, tree);
  try {
    const ready = await h.ready;
    await sleep(2000); // past start-up
    return await steadyCpu(h.child.pid, ready.port, ctx.opts.steadySeconds);
  } finally {
    await h.stop();
  }
}

async function nodeExporter(ctx, tree) {
  const port = await freePort();
  const child = startNodeExporter(tree, port, 'ignore');
  try {
    await waitForHttp(port);
    await sleep(2000);
    return await steadyCpu(child.pid, port, ctx.opts.steadySeconds);
  } finally {
    await stopChild(child);
  }
}

export async function run(ctx) {
  const { opts } = ctx;
  const big = Math.max(...opts.ports);
  const flows = opts.flows.includes(1000) ? 1000 : Math.max(...opts.flows);
  ctx.log(`steady CPU over ${opts.steadySeconds} s: exporter (${big} ports, ${flows} flows) and node_exporter`);
  return {
    ports: big, flows,
    exporter: await ctx.measured(() => exporter(ctx, ctx.trees[big], ctx.configs[flows][big])),
    nodeExporter: await ctx.measured(() => nodeExporter(ctx, ctx.trees[big])),
  };
}

export function print(r, { opts }) {
  if (!r.steady) return [];
  return ['', `Steady CPU over ${opts.steadySeconds} s, sampling every 1 s and a scrape every 15 s (${r.steady.ports} ports): share of one core`,
    table(['process', 'flows', 'other CPU %', 'CPU ms', 'share of a core %'], [
      ['exporter', r.steady.flows, f(r.steady.exporter.otherCpuShare * 100, 0), f(r.steady.exporter.cpuMs, 0), f(r.steady.exporter.coreShare * 100, 3)],
      ['node_exporter', '-', f(r.steady.nodeExporter.otherCpuShare * 100, 0), f(r.steady.nodeExporter.cpuMs, 0), f(r.steady.nodeExporter.coreShare * 100, 3)],
    ])];
}
