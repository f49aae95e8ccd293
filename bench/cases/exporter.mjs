/**
 * Case `exporter`: the exporter per tree and flow count: sampling only, the same window traced,
 * then sequential and concurrent scrapes; printed beside node_exporter's case.
 */
import { CLK_TCK, procCpuTicks, round, roundAll } from '../lib/stats.mjs';
import { cannon, get, latencySummary, scrapeLoad, seriesIn } from '../lib/http.mjs';
import { sleep } from '../lib/machine.mjs';
import { startHarness } from '../lib/processes.mjs';
import { f, mb, ratio, table } from '../lib/table.mjs';

export const name = 'exporter';
export const key = 'exporter';

async function one(ctx, tree, config, httpFloor) {
  const { opts } = ctx;
  const h = startHarness(ctx, config, tree);
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
    const load = await scrapeLoad(h.child.pid, ready.port, idleCpuMsPerSec, opts);
    const underLoad = await h.ask('report');
    let healthy;
    if (httpFloor) {
      // The same process and load on a route that does no work: the HTTP + event-loop floor.
      const { lat } = await cannon(ready.port, opts, 0, '/-/healthy');
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

export async function run(ctx) {
  const { opts } = ctx;
  const out = {};
  const floorFlows = opts.flows.includes(1000) ? 1000 : Math.max(...opts.flows);
  const big = Math.max(...opts.ports);
  for (const p of opts.ports) {
    out[p] = {};
    for (const n of opts.flows) {
      ctx.log(`exporter, ${p} port(s), ${n} flows`);
      out[p][n] = await ctx.measured(() => one(ctx, ctx.trees[p], ctx.configs[n][p], p === big && n === floorFlows));
    }
  }
  return out;
}

/** The scrape table (node_exporter's rows and the exporter's, per tree, when both ran), then the HTTP floor. */
export function print(r, { opts }) {
  if (!r.exporter) return [];
  const out = r.nodeExporter ? scrapeTable(r, opts) : [];
  const big = Math.max(...opts.ports);
  for (const [n, e] of Object.entries(r.exporter[big] ?? {})) {
    if (e.healthyConcurrent) out.push('', `HTTP floor: GET /-/healthy, same process and load (${big} ports, ${n} flows): p50 ${f(e.healthyConcurrent.p50)} ms, p99 ${f(e.healthyConcurrent.p99)} ms`);
  }
  return out;
}

function scrapeTable(r, opts) {
  const out = ['', `Scrapes (gzip, as Prometheus asks): ${opts.connections} concurrent connections for ${opts.duration} s (autocannon; * = ${opts.connections * 2} requests, too slow for ${opts.duration} s); latency ms;`,
    'CPU ms per scrape net of idle sampling; seq = one connection back to back; ELD = event-loop delay ms while only sampling, and under the scrape load;',
    'traced = a second sampling-only window with every gap traced (lib/slices.mjs): own slice = most main-thread CPU time in one gap, run-queue = longest wait for a CPU'];
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
  if (rows.length) out.push(table(['process', 'flows', 'other CPU %', 'series', 'KB gz', 'p50', 'p99', 'seq p50', 'cpu/scrape', 'seq cpu/scrape', 'tick ms', 'ELD p99', 'ELD max', 'traced ELD max', 'own slice max', 'run-queue max', 'ELD p99 load', 'RSS idle', 'RSS peak', 'p99/NE', 'cpu/NE'], rows));
  return out;
}
