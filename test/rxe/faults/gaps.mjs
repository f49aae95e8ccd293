// The faults report's series-gap check (issue 32): over the whole run, every exporter's `up` and one
// measured rate series per port and direction must have a sample every scrape, and `up` must be 1.
// Allowed: the exporter-restarted fault (the exporter is gone), the Prometheus restart of
// prometheus-restarted (nothing scrapes), and for the rate series rxe-deleted (the port is gone)
// and link-down (its undo creates rxe0 again: guest.sh link_back).
// `findGaps` is pure; `seriesGaps` reads the raw samples from Prometheus.

/**
 * Why a window may hold gaps: the faults whose windows excuse every series or only port series,
 * from `before` s before the window to `after` s after it. A gap between samples starts at the
 * last sample before it, up to a scrape interval before the injection, which itself came before
 * the window's `from` (host.mjs: when the guest's answer came); 5 s as for the Prometheus restart.
 */
const EXCUSES = {
  'exporter-restarted': { all: true, before: 5, after: 20 },
  'rxe-deleted': { all: false, before: 5, after: 30 },
  'link-down': { all: false, before: 5, after: 30 },
};

/**
 * Gaps in one series' samples: [{ from, to }] in ms where consecutive samples are more than
 * `maxGapMs` apart, or where `up` reads 0 (then each run of zeros is one gap). With `until` (the
 * end of the run, ms), a series whose last sample is more than `maxGapMs` before it has a gap
 * from that sample to `until`: a series that stopped is a gap too.
 * @param {[number, number][]} samples [ms, value], sorted
 * @param {number} maxGapMs
 * @param {{ zeroIsGap?: boolean, until?: number }} [options]
 */
export function findGaps(samples, maxGapMs, { zeroIsGap = false, until } = {}) {
  const gaps = [];
  let zeroFrom;
  for (let i = 0; i < samples.length; i++) {
    const [t, v] = samples[i];
    if (i > 0 && t - samples[i - 1][0] > maxGapMs) gaps.push({ from: samples[i - 1][0], to: t });
    if (zeroIsGap) {
      if (v === 0) zeroFrom ??= t;
      else if (zeroFrom !== undefined) { gaps.push({ from: zeroFrom, to: t }); zeroFrom = undefined; }
    }
  }
  if (zeroFrom !== undefined) gaps.push({ from: zeroFrom, to: samples[samples.length - 1][0] });
  const last = samples.at(-1)?.[0];
  if (until !== undefined && last !== undefined && until - last > maxGapMs) gaps.push({ from: last, to: until });
  return gaps;
}

/**
 * Splits gaps into excused (inside a fault window that allows them) and outside.
 * @param {{ series: string, kind: 'up' | 'port', from: number, to: number }[]} gaps
 * @param {{ name: string, from: number, to: number, restartedAt?: number }[]} windows
 */
export function classifyGaps(gaps, windows) {
  const spans = [];
  for (const w of windows) {
    const e = EXCUSES[w.name];
    if (e) spans.push({ name: w.name, all: e.all, from: w.from - e.before * 1000, to: w.to + e.after * 1000 });
    if (typeof w.restartedAt === 'number') spans.push({ name: `${w.name} (Prometheus restart)`, all: true, from: w.restartedAt - 5000, to: w.restartedAt + 30_000 });
  }
  const excused = [];
  const outside = [];
  for (const g of gaps) {
    const span = spans.find((s) => (s.all || g.kind === 'port') && g.from >= s.from && g.to <= s.to);
    (span ? excused : outside).push(span ? { ...g, excused_by: span.name } : g);
  }
  return { excused, outside };
}

const seriesName = (labels) => `${labels.__name__}{${Object.entries(labels).filter(([k]) => k !== '__name__').map(([k, v]) => `${k}="${v}"`).join(',')}}`;

async function raw(base, q, at) {
  const r = await (await fetch(`${base}/api/v1/query?query=${encodeURIComponent(q)}&time=${at / 1000}`)).json();
  if (r.status !== 'success') throw new Error(`query ${q}: ${r.error}`);
  return r.data.result.map((s) => ({ labels: s.metric, samples: s.values.map(([t, v]) => [Math.round(Number(t) * 1000), Number(v)]) }));
}

/** Every gap of the run, with the seconds into it, split into excused and outside. */
export async function seriesGaps(prom, { from, to, step, windows, instances }) {
  const range = `${Math.ceil((to - from) / 1000)}s`;
  const inst = instances.map((i) => i.replace(/[.]/g, '\\\\.')).join('|');
  const maxGap = (2 * step + 1) * 1000;
  const found = [];
  for (const s of await raw(prom.base, `up{job="mxl-fabric-exporter",instance=~"${inst}"}[${range}]`, to)) {
    for (const g of findGaps(s.samples, maxGap, { zeroIsGap: true, until: to })) found.push({ series: seriesName(s.labels), kind: 'up', ...g });
  }
  // One series per port and direction: the layer the port counters measure.
  const rates = await raw(prom.base, `mxl_fabric_port_measured_bytes_per_second{instance=~"${inst}"}[${range}]`, to);
  const perPort = new Map();
  for (const s of rates) {
    const key = `${s.labels.instance} ${s.labels.device}/${s.labels.port} ${s.labels.direction}`;
    if (!perPort.has(key)) perPort.set(key, s);
  }
  for (const s of perPort.values()) {
    for (const g of findGaps(s.samples, maxGap, { until: to })) found.push({ series: seriesName(s.labels), kind: 'port', ...g });
  }
  const at = (ms) => Math.round((ms - from) / 100) / 10;
  const { excused, outside } = classifyGaps(found, windows);
  const show = (g) => ({ ...g, from_s: at(g.from), to_s: at(g.to) });
  return { checked: { up: instances, ports: [...perPort.keys()] }, excused: excused.map(show), outside: outside.map(show) };
}
