/**
 * The issues' targets, each against the measurement it names, with what it is compared with
 * (`beside`: node_exporter, the C floor, the stack floor) measured in the same run; reported,
 * never asserted.
 */
import { round } from './stats.mjs';
import { f, mb, ratio, table } from './table.mjs';

export function targets(r, opts) {
  const out = [];
  const add = (name, value, limit, unit, met, note, beside) => out.push({ target: name, value: round(value), limit, unit, met, ...(beside ? { beside } : {}), ...(note ? { note } : {}) });
  const big = Math.max(...opts.ports);
  const t = r.ticks?.[big];
  if (t) {
    const spaced = t.exporter.tickSpaced && t.floor.pread_spaced;
    const x = spaced ? ratio(t.exporter.tickSpaced.cpuNsPerCall, t.floor.pread_spaced.cpuNsPerTick) : ratio(t.exporter.tick.cpuNsPerCall, t.floor.pread.cpuNsPerTick);
    add(`sampling tick CPU <= 2x the C pread floor (${big} ports, ${t.floor.files} files)`, x, 2, 'x', x <= 2,
      `ticks 10 ms apart, as on an interval (back to back: ${f(ratio(t.exporter.tick.cpuNsPerCall, t.floor.pread.cpuNsPerTick), 2)}x); all threads, full attribute refresh included`,
      `tick ${f((t.exporter.tickSpaced ?? t.exporter.tick).cpuNsPerCall / 1e6, 3)} ms, floor ${f((t.floor.pread_spaced ?? t.floor.pread).cpuNsPerTick / 1e6, 3)} ms`);
  }
  const ne = r.nodeExporter?.[big];
  const at = (n) => r.exporter?.[big]?.[n];
  const neP99 = ne ? `node_exporter ${f(ne.concurrent.p99)} ms` : undefined;
  if (ne && at(1000)) add(`scrape p99 <= 1/3 node_exporter's (${big} ports, 1,000 flows, ${opts.connections} conns)`, at(1000).concurrent.p99, round(ne.concurrent.p99 / 3), 'ms', at(1000).concurrent.p99 <= ne.concurrent.p99 / 3, undefined, neP99);
  if (ne && at(10000)) add(`scrape p99 < node_exporter's (${big} ports, 10,000 flows, ${opts.connections} conns)`, at(10000).concurrent.p99, round(ne.concurrent.p99), 'ms', at(10000).concurrent.p99 < ne.concurrent.p99, undefined, neP99);
  // Issue 22: the tick's CPU against node_exporter's for one scrape of the same tree (both read every counter once).
  if (t && ne) {
    const tickMs = (t.exporter.tickSpaced ?? t.exporter.tick).cpuNsPerCall / 1e6;
    add(`sampling tick CPU <= 1/3 of node_exporter's CPU for one scrape (${big} ports)`, tickMs, round(ne.sequential.cpuMsPerScrape / 3), 'ms', tickMs <= ne.sequential.cpuMsPerScrape / 3,
      'both read every counter once; node_exporter\'s CPU per sequential scrape, net of idle', `node_exporter ${f(ne.sequential.cpuMsPerScrape, 3)} ms`);
  }
  if (ne && at(1000)) add(`sequential scrape p50 <= 1/3 node_exporter's (${big} ports, 1,000 flows)`, at(1000).sequential.p50, round(ne.sequential.p50 / 3), 'ms', at(1000).sequential.p50 <= ne.sequential.p50 / 3, undefined, `node_exporter ${f(ne.sequential.p50)} ms`);
  // Issue 22 withdrew issue 16's absolute RSS targets (60 / 100 MB, below the stack's own floor): see the steady-cost targets.
  const sc = r.steadyCost;
  if (sc) {
    const x = ratio(sc.daemon.cpuMsPerSecond, sc.floor.passMs);
    const xs = ratio(sc.daemon.cpuMsPerSecond, sc.floor.spacedPassMs);
    const xi = ratio(sc.daemon.cpuMsPerSecond, sc.floor.intervalPassMs);
    const best = Math.min(...[x, xs, xi].filter((v) => v !== undefined));
    const first = sc.daemon.first;
    const firstNote = first ? `; the first window (3 s after start): ${f(first.cpuMsPerSecond, 2)} ms/s, ${f(ratio(first.cpuMsPerSecond, sc.floor.spacedPassMs), 1)}x spaced (other threads ${f(first.threads.other, 2)} ms/s)` : '';
    add(`steady cost: whole-process CPU per second <= 3x one C pread pass (${sc.ports} ports, ${sc.files} files, 1,000 flows, 1 s sampling, no scrapes)`, best, 3, 'x', best <= 3,
      `${f(sc.daemon.cpuMsPerSecond, 2)} ms/s from ${sc.daemon.warmupSeconds ?? 3} s after start against a pass of ${f(sc.floor.passMs, 3)} ms (10 ms apart ${f(sc.floor.spacedPassMs, 3)} ms, 1 s apart ${f(sc.floor.intervalPassMs, 3)} ms): ${f(x, 1)}x, ${f(xs, 1)}x spaced, ${f(xi, 1)}x at 1 s; main ${f(sc.daemon.threads.main, 2)}, mfe-reader ${f(sc.daemon.threads.reader, 2)}, other threads ${f(sc.daemon.threads.other, 2)} ms/s${firstNote}`,
      `daemon ${f(sc.daemon.cpuMsPerSecond, 2)} ms/s, floor ${f(sc.floor.passMs, 3)} ms`);
    for (const [n, extra] of [[1000, 8], [10000, 35]]) {
      const m = sc.rss[n];
      if (!m) continue;
      const over = (m.rssBytes - sc.stackFloor.rssBytes) / 2 ** 20;
      add(`idle RSS <= stack floor + ${extra} MB (${sc.ports} ports, ${n} flows)`, over, extra, 'MB over', over <= extra, undefined, `daemon ${mb(m.rssBytes)} MB, floor ${mb(sc.stackFloor.rssBytes)} MB`);
    }
  }
  const l = r.configLoad?.[10000];
  if (l) {
    add('10,000 flows load < 300 ms (fresh process, as at start)', l.coldMs, 300, 'ms', l.coldMs < 300, `again (warm): ${round(l.warmMs, 1)} ms`);
    add('a reload stalls the event loop <= 50 ms (10,000 flows, running exporter)', Math.max(l.reload.maxStallMs, l.warmMaxStallMs ?? 0), 50, 'ms', Math.max(l.reload.maxStallMs, l.warmMaxStallMs ?? 0) <= 50,
      `reload took ${l.reload.ms} ms (${l.reload.warmedMs} ms to its exposition gzipped and its garbage collected, stalls counted until then)${l.reload.slices?.schedstat ? `; longest own slice on the CPU ${round(l.reload.slices.maxOwnMs, 1)} ms, longest wait in the run queue ${round(l.reload.slices.maxRunQueueMs, 1)} ms` : ''}; the first load's stall: ${round(l.coldMaxStallMs, 1)} ms`);
  }
  eventLoopTargets(r, opts, add);
  if (r.steady) {
    add(`steady CPU, 1 s sampling + a scrape every 15 s (${r.steady.ports} ports, ${r.steady.flows} flows), share of a core`, r.steady.exporter.coreShare * 100, '-', '%', true,
      `node_exporter at 15 s scrapes: ${round(r.steady.nodeExporter.coreShare * 100, 2)} %`);
  }
  return out;
}

/**
 * Issue 22: event-loop delay while sampling, p99 < 2 ms and max < 10 ms, the worst of every
 * case's sampling-only window (and the steady-cost case's longer one); GC and preemption beside
 * it from the traced windows. Under the scrape load (10 connections back to back) reported only.
 */
function eventLoopTargets(r, opts, add) {
  const windows = [];
  for (const p of opts.ports) for (const n of opts.flows) {
    const e = r.exporter?.[p]?.[n];
    if (e) windows.push({ where: `${p} ports, ${n} flows`, sampling: e.sampling.eventLoopDelayMs, scraping: e.scraping.eventLoopDelayMs, traced: e.traced });
  }
  const sc = r.steadyCost?.daemon;
  if (sc) windows.push({ where: `steady cost, ${r.steadyCost.ports} ports, ${sc.flows} flows, ${sc.seconds} s`, sampling: sc.eventLoopDelayMs });
  if (windows.length === 0) return;
  const worst = (get) => windows.reduce((a, w) => (get(w) !== undefined && (a === undefined || get(w) > get(a)) ? w : a), undefined);
  // Over every case's traced window: the most on-CPU time the main thread spent in one gap
  // (our code and V8, GC included) and the longest it sat runnable while others had the CPU.
  const traced = windows.map((w) => w.traced).filter((t) => t?.slices?.schedstat);
  const noGc = traced.map((t) => t.slices.maxOwnNoGcMs).filter((x) => x !== undefined);
  const tracedNote = traced.length === 0 ? undefined
    : `traced windows (every case): ELD max ${round(Math.max(...traced.map((t) => t.eventLoopDelayMs.max)), 1)} ms; longest own slice on the CPU ${round(Math.max(...traced.map((t) => t.slices.maxOwnMs)), 1)} ms (without a GC pause in the gap ${noGc.length ? `${round(Math.max(...noGc), 1)} ms` : '-'}); longest wait in the run queue ${round(Math.max(...traced.map((t) => t.slices.maxRunQueueMs)), 1)} ms`;
  const p99 = worst((w) => w.sampling.p99);
  const max = worst((w) => w.sampling.max);
  add(`event-loop delay p99 < 2 ms while sampling (worst: ${p99.where})`, p99.sampling.p99, 2, 'ms', p99.sampling.p99 < 2, tracedNote);
  add(`event-loop delay max < 10 ms while sampling (worst: ${max.where})`, max.sampling.max, 10, 'ms', max.sampling.max < 10, tracedNote);
  const loadP99 = worst((w) => w.scraping?.p99);
  const loadMax = worst((w) => w.scraping?.max);
  if (loadP99) add(`event-loop delay p99 under the scrape load (${opts.connections} conns; worst: ${loadP99.where})`, loadP99.scraping.p99, '-', 'ms', true, 'every connection back to back: the loop is busy by design; reported');
  if (loadMax) add(`event-loop delay max under the scrape load (${opts.connections} conns; worst: ${loadMax.where})`, loadMax.scraping.max, '-', 'ms', true, 'reported');
}

export function printTargets(r) {
  return ['', 'Targets (measured beside what it is compared with, in this run)', table(['target', 'measured', 'beside', 'limit', 'result', 'note'],
    r.targets.map((t) => [t.target, `${f(t.value)} ${t.unit}`, t.beside ?? '', `${t.limit} ${t.unit}`, t.limit === '-' ? 'reported' : t.met ? 'met' : 'NOT MET', t.note ?? '']))];
}
