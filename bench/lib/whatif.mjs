/**
 * What-if measurements behind the recommendations in bench/README.md: how much of a /metrics
 * render and of its memory would go away with caching, measured on the real daemon state
 * (dist/), not asserted. Nothing in src/ is changed; the prototypes live here.
 *
 *   node --expose-gc bench/lib/whatif.mjs CONFIG SYSFS_TREE SECONDS
 *
 * Prints one JSON object:
 *  - memory: heap and RSS (after full GCs) around config load, the first plans and the first
 *    render, and the RSS V8 keeps after the config load; how long the config's YAML and its flow
 *    files take to parse with the YAML parser, and the flow files with JSON.parse;
 *  - render: CPU ms per call of Metrics.render() as the daemon does it now, and of a prototype
 *    that keeps (a) the text of the per-flow families (static until a reload or an MTU change:
 *    the Planner already returns the same plan objects), (b) the label text of every counter series
 *    (static per sampled port), and renders everything else through prom-client as now;
 *  - perTick: a render of only what changes between sampling ticks (prom-client's process_* and
 *    nodejs_* families), i.e. the per-scrape cost if the mxl_fabric_ text were built once per tick.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import { Daemon } from '../../dist/exporter/daemon.js';
import { loadConfig } from '../../dist/config/load.js';
import { Planner } from '../../dist/predictions/plan.js';
import { attrsLookup, buildView } from '../../dist/exporter/view.js';
import { PREFIX } from '../../dist/exporter/metrics.js';
import { createLogger } from '../../dist/log.js';

const [configFile, sysfsRoot, secondsArg] = process.argv.slice(2);
const seconds = Number(secondsArg ?? 2);
const gc = globalThis.gc ?? (() => {});
const MB = 2 ** 20;
const mem = () => {
  gc();
  gc();
  const u = process.memoryUsage();
  return { heapUsedMB: +(u.heapUsed / MB).toFixed(1), heapTotalMB: +(u.heapTotal / MB).toFixed(1), rssMB: +(u.rss / MB).toFixed(1) };
};

// Memory, step by step, with a config and plans of our own.
const memory = { imports: mem() };
let t = process.hrtime.bigint();
const config = loadConfig(configFile);
memory.loadConfigMs = Number(process.hrtime.bigint() - t) / 1e6;
memory.configLoaded = mem();
// Where loadConfig's time goes: the config's own YAML, and the flow files (JSON here), which
// loadConfig parses with the YAML parser for positions (same options as src/input/problems.ts);
// JSON.parse is what they would cost.
t = process.hrtime.bigint();
parseDocument(fs.readFileSync(configFile, 'utf8'), { lineCounter: new LineCounter(), prettyErrors: false, uniqueKeys: true });
memory.configYamlParseMs = Number(process.hrtime.bigint() - t) / 1e6;
const flowDir = path.join(path.dirname(configFile), 'flows');
const flowFiles = fs.existsSync(flowDir) ? fs.readdirSync(flowDir).map((f) => path.join(flowDir, f)) : [];
t = process.hrtime.bigint();
for (const f of flowFiles) JSON.parse(fs.readFileSync(f, 'utf8'));
memory.flowFilesJsonParseMs = Number(process.hrtime.bigint() - t) / 1e6;
t = process.hrtime.bigint();
for (const f of flowFiles) parseDocument(fs.readFileSync(f, 'utf8'), { lineCounter: new LineCounter(), prettyErrors: false, uniqueKeys: true });
memory.flowFilesYamlParseMs = Number(process.hrtime.bigint() - t) / 1e6;
memory.flowFiles = flowFiles.length;
new Planner(config).plans(() => ({ activeIbMtu: 4096, rateBitsPerSecond: 100e9 }));
memory.plansBuilt = mem();

const daemon = new Daemon({ configFile, listenAddress: '127.0.0.1:0', telemetryPath: '/metrics', sysfsRoot, log: createLogger('warn', 'logfmt') });
await daemon.start();
// The daemon's Metrics is private in TypeScript only.
const metrics = daemon.metrics;
const registry = metrics.registry;
const body = await metrics.renderText();
memory.bodyMB = +(Buffer.byteLength(body) / MB).toFixed(2);
memory.daemonAfterRender = mem();

/** CPU ms per call of an async fn, called back to back for `secs` after 3 warm-up calls. */
async function cpuPerCall(fn, secs) {
  for (let i = 0; i < 3; i++) await fn();
  const c0 = process.cpuUsage();
  const end = Date.now() + secs * 1000;
  let n = 0;
  do {
    await fn();
    n++;
  } while (Date.now() < end);
  const c = process.cpuUsage(c0);
  return { calls: n, cpuMs: (c.user + c.system) / 1000 / n };
}

// ---------------------------------------------------------------------------------------------
// The prototype

const STATIC_FAMILIES = new Set(['flow_info', 'flow_predicted_bytes_per_second', 'flow_predicted_packets_per_second'].map((n) => PREFIX + n));
const COUNTER_FAMILIES = [
  ['port_stat_total', (c) => (c.series.total === undefined ? undefined : Number(c.series.total))],
  ['port_stat_up', (c) => (c.series.state === 'error' ? 0 : 1)],
  ['port_stat_saturated', (c) => (c.series.spec.overflow !== 'saturate' ? undefined : c.series.state === 'saturated' ? 1 : 0)],
  ...['tx', 'rx'].flatMap((direction) => ['bytes', 'packets'].map((quantity) => [
    `port_${direction === 'tx' ? 'transmitted' : 'received'}_${quantity}_total`,
    (c) => {
      const m = c.series.spec.meaning;
      if (!m || m.direction !== direction || m.quantity !== quantity || c.series.total === undefined) return undefined;
      return Number(c.series.total) * m.scale;
    },
  ])),
];
const COUNTER_NAMES = new Set(COUNTER_FAMILIES.map(([n]) => PREFIX + n));
const esc = (v) => String(v).replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
const fmt = (v) => (Number.isNaN(v) ? 'NaN' : v === Infinity ? '+Inf' : v === -Infinity ? '-Inf' : String(v));

let staticCache;
const portCache = new WeakMap();
const others = registry.getMetricsAsArray().filter((m) => !STATIC_FAMILIES.has(m.name) && !COUNTER_NAMES.has(m.name));
const headerOf = new Map(registry.getMetricsAsArray().map((m) => [m.name, `# HELP ${m.name} ${m.help}\n# TYPE ${m.name} ${m.type ?? 'gauge'}`]));

async function prototypeRender() {
  const state = daemon.state();
  // (a) per-flow families: valid while the planner hands back the same plan objects.
  const plans = state.planner.plans(attrsLookup(state.sampler));
  if (!staticCache || staticCache.plans.length !== plans.length || staticCache.plans.some((p, i) => p !== plans[i])) {
    const text = [];
    for (const m of registry.getMetricsAsArray()) if (STATIC_FAMILIES.has(m.name)) text.push(await registry.getMetricsAsString(m));
    staticCache = { plans, text: text.join('\n\n') };
  }
  // (b) counter families: label text cached per sampled port, values formatted per scrape.
  const views = buildView(state);
  const blocks = COUNTER_FAMILIES.map(([name]) => [headerOf.get(PREFIX + name)]);
  for (const v of views) {
    const sp = v.sampled;
    if (!sp) continue;
    let prefixes = portCache.get(sp);
    if (!prefixes) {
      prefixes = sp.counters.map((c) => `{device="${esc(v.device)}",port="${v.port}",source="${esc(c.source)}",counter="${esc(c.series.spec.name)}"} `);
      portCache.set(sp, prefixes);
    }
    COUNTER_FAMILIES.forEach(([name, value], k) => {
      const metricName = PREFIX + name;
      const out = blocks[k];
      sp.counters.forEach((c, i) => {
        const x = value(c);
        if (x !== undefined) out.push(`${metricName}${prefixes[i]}${fmt(x)}`);
      });
    });
  }
  // Everything else exactly as now.
  const rest = await Promise.all(others.map((m) => registry.getMetricsAsString(m)));
  return `${[staticCache.text, ...blocks.map((b) => b.join('\n')), ...rest].join('\n\n')}\n`;
}

/** The part of a scrape that changes between ticks: prom-client's default families. */
const defaults = registry.getMetricsAsArray().filter((m) => !m.name.startsWith(PREFIX));
let tickCache;
async function perTickRender() {
  const ticks = daemon.state().sampler?.ticks;
  if (!tickCache || tickCache.ticks !== ticks) tickCache = { ticks, text: (await metrics.renderText()).split('\n\n').filter((b) => b.includes(`# HELP ${PREFIX}`)).join('\n\n') };
  const rest = await Promise.all(defaults.map((m) => registry.getMetricsAsString(m)));
  return `${[tickCache.text, ...rest].join('\n\n')}\n`;
}

// The prototype must produce the same series as the daemon (values of the same counters may
// differ by a tick; compare the series names and labels only).
const series = (text) => new Set(text.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => l.slice(0, l.lastIndexOf(' '))).filter((k) => k.startsWith(PREFIX)));
const now = series(await metrics.renderText());
const proto = series(await prototypeRender());
const same = now.size === proto.size && [...now].every((k) => proto.has(k));

const result = {
  config: configFile,
  memory,
  render: {
    seriesMatch: same,
    current: await cpuPerCall(() => metrics.renderText(), seconds),
    cachedFlowAndCounterText: await cpuPerCall(prototypeRender, seconds),
    perTickBody: await cpuPerCall(perTickRender, seconds / 2),
    defaultFamiliesOnly: await cpuPerCall(() => Promise.all(defaults.map((m) => registry.getMetricsAsString(m))), seconds / 2),
  },
  memoryAfter: mem(),
};
result.render.speedup = +(result.render.current.cpuMs / result.render.cachedFlowAndCounterText.cpuMs).toFixed(1);
await daemon.stop();
process.stdout.write(`${JSON.stringify(result)}\n`);
