/**
 * The landing page at `/`: a small live status page, rendered on the server, that reloads itself
 * every sampling interval (at least every 2 s). Per port and direction: state, capacity,
 * predicted utilisation against headroom, predicted against measured with the drift coloured
 * against the tolerance, and the counter source drift comes from. Per flow: its prediction and,
 * for flows in an MXL domain, the measured grains and whether a writer holds it.
 * Rates are in bits per second (what broadcast engineers budget in); `?units=bytes` shows bytes
 * per second. Metrics stay in bytes.
 *
 * Per flow also its state from MXL domain evidence and its expectation.
 * Tables are lists of columns, so one more column is one more entry.
 */
import { toNumber } from '../model/index.js';
import { BUILD } from '../build-info.js';
import { formatDataRate, formatDecimal, frameRateLabel, type RateUnits } from '../input/units.js';
import type { FlowStatus } from '../predictions/expected.js';
import type { FlowPrediction } from '../predictions/plan.js';
import type { DirectionView, ExporterState, FlowMeasurementView, PortView } from './view.js';
import { connectionsSection } from './landing-connections.js';
import { type Column, NONE, cell, esc, table } from './html.js';

export interface LandingOptions {
  readonly telemetryPath: string;
  readonly units: RateUnits;
  /** What the page says about itself, for "updated at". */
  readonly now?: Date;
}

const pct = (r: number, signed = false): string => `${signed && r >= 0 ? '+' : ''}${(r * 100).toFixed(2)} %`;

// ---------------------------------------------------------------------------------------------
// Ports: one row per port and direction

interface PortRow {
  readonly view: PortView;
  readonly dir: DirectionView;
  readonly tolerance: number;
  readonly units: RateUnits;
}

const rate = (bytesPerSecond: number | undefined, units: RateUnits): string =>
  bytesPerSecond === undefined ? NONE : esc(formatDataRate(bytesPerSecond, units));

const PORT_COLUMNS: readonly Column<PortRow>[] = [
  {
    header: 'port',
    title: 'the RDMA port, its netdev and the provider profile its predictions use',
    cell: ({ view }) => {
      const small = [view.sampled?.attrs.netdev, view.plan?.port.provider.name].filter((x): x is string => Boolean(x)).map(esc).join(' · ');
      return cell(`<b>${esc(`${view.device}/${view.port}`)}</b>${small ? `<br><small>${small}</small>` : ''}`);
    },
  },
  { header: 'dir', cell: ({ dir }) => cell(esc(dir.direction)) },
  {
    header: 'state',
    cell: ({ view }) => {
      const attrs = view.sampled?.attrs;
      if (!attrs) return cell('not found', 'bad');
      return cell(esc(attrs.state), attrs.state === 'ACTIVE' ? 'ok' : 'bad');
    },
  },
  {
    header: 'capacity',
    title: 'configured capacity, or the link rate (capacity: auto)',
    cell: ({ view, units }) => {
      const cap = view.plan?.capacityBytesPerSecond;
      if (cap === undefined) return cell(NONE);
      const other = units === 'bits' ? 'bytes' : 'bits';
      return cell(`${esc(formatDataRate(cap, units))}<br><small>${esc(formatDataRate(cap, other))} · ${esc(view.plan!.capacityFrom === 'config' ? 'configured' : 'link rate')}</small>`);
    },
  },
  {
    header: 'utilisation',
    title: 'predicted wire / capacity, against the headroom',
    cell: ({ view, dir }) => {
      const t = view.plan?.totals[dir.direction];
      const cap = view.plan?.capacityBytesPerSecond;
      if (!t || !cap) return cell(NONE);
      const share = t.bytesPerSecond.wire / cap;
      const headroom = view.plan.port.headroom;
      return cell(`${pct(share)}<br><small>headroom ${pct(headroom)}</small>`, share > headroom ? 'bad' : 'ok');
    },
  },
  {
    header: 'predicted',
    title: 'the flows that count now (expected or live), at the layer drift compares with (the preferred counter\'s); the last line is their wire rate (with preamble, IFG and FCS). Utilisation counts every flow bound here at the wire',
    cell: ({ dir, units }) => {
      const t = dir.predicted;
      const layer = dir.bytes.find((m) => m.layer !== undefined)?.layer ?? 'l2';
      if (!t) return cell(NONE);
      const wire = layer === 'wire' ? '' : `<br><small>wire ${rate(t.bytesPerSecond.wire, units)}</small>`;
      return cell(`${rate(t.bytesPerSecond[layer], units)} <small>${esc(layer)}</small><br>${esc(formatDecimal(t.packetsPerSecond, 'pkt/s'))}${wire}`);
    },
  },
  {
    header: 'measured',
    cell: ({ dir, units }) => {
      const b = dir.bytes.find((m) => m.layer !== undefined) ?? dir.bytes[0];
      const p = dir.packets[0];
      if (!b && !p) return cell(NONE);
      return cell(`${b ? `${rate(b.rate, units)} <small>${esc(b.layer ?? '?')}</small>` : NONE}<br>${p ? esc(formatDecimal(p.rate, 'pkt/s')) : NONE}`);
    },
  },
  {
    header: 'drift',
    title: 'measured / predicted - 1; red outside the drift tolerance',
    cell: ({ dir, tolerance }) => {
      if (dir.drift.length === 0) return cell(NONE);
      const worst = Math.max(...dir.drift.map((d) => Math.abs(d.ratio)));
      const lines = dir.drift.map((d) => `${esc(d.quantity)} <span class="num">${pct(d.ratio, true)}</span>`).join('<br>');
      return cell(`${lines}<br><small>tolerance ±${pct(tolerance)}</small>`, worst > tolerance ? 'bad' : 'ok');
    },
  },
  {
    header: 'source',
    title: 'the counters drift is computed from (preferred source first)',
    cell: ({ dir }) => {
      const used = dir.drift.map((d) => `${esc(d.quantity)}: ${esc(d.source)}${d.layer ? ` (${esc(d.layer)})` : ''}`);
      return cell(used.length ? used.join('<br>') : NONE);
    },
  },
];

// ---------------------------------------------------------------------------------------------
// Flows: one row per flow binding

interface FlowRow {
  readonly fp: FlowPrediction;
  readonly measured: FlowMeasurementView | undefined;
  readonly status: FlowStatus | undefined;
  readonly tolerance: number;
  readonly units: RateUnits;
}

const yesNo = (v: boolean | undefined): string => (v === undefined ? NONE : v ? 'yes' : 'no');

const FLOW_COLUMNS: readonly Column<FlowRow>[] = [
  { header: 'flow', cell: ({ fp: { binding: b } }) => cell(`${esc(b.flow.label)}<br><small>${esc(b.flow.id)}</small>`) },
  { header: 'media type', cell: ({ fp: { binding: b } }) => cell(esc(b.flow.mediaType)) },
  { header: 'bound to', cell: ({ fp: { binding: b } }) => cell(`${esc(`${b.device}/${b.port}`)} ${esc(b.direction)}<br><small>${esc(b.origin)} · ${esc(b.provider.name)}</small>`) },
  {
    header: 'grain rate',
    cell: ({ fp: { prediction: p } }) => cell(p ? `${esc(`${p.eventRate.num}/${p.eventRate.den}`)}<br><small>${esc(frameRateLabel(p.eventRate))}/s</small>` : NONE),
  },
  {
    header: 'predicted',
    title: 'the model: wire rate and packets per second',
    cell: ({ fp: { prediction: p }, units }) => cell(p
      ? `${rate(toNumber(p.bytesPerSecond.wire), units)} <small>wire</small><br>${esc(formatDecimal(toNumber(p.packetsPerSecond), 'pkt/s'))}`
      : 'MTU unknown'),
  },
  {
    header: 'measured grains',
    title: "grains per second the flow's writer commits (MXL domain flows)",
    cell: ({ measured, tolerance }) => {
      const m = measured?.measurement;
      if (!m) return cell(NONE);
      const drift = m.predictedGrainsPerSecond > 0 ? m.grainsPerSecond / m.predictedGrainsPerSecond - 1 : undefined;
      const cls = drift === undefined ? '' : Math.abs(drift) > tolerance ? 'bad' : 'ok';
      return cell(`${esc(formatDecimal(m.grainsPerSecond, 'grains/s'))}${drift === undefined ? '' : `<br><small>drift <span class="num">${pct(drift, true)}</span></small>`}`, cls);
    },
  },
  {
    header: 'writer',
    title: 'whether a writer holds the flow (MXL domain flows)',
    cell: ({ measured }) => cell(yesNo(measured?.writerActive)),
  },
  {
    header: 'state',
    title: 'from MXL domain evidence (live, stalled, absent, unknown) and the expectation (expect:)',
    cell: ({ status }) => {
      if (!status) return cell(NONE);
      const cls = status.state === 'live' ? 'ok' : status.expect === 'always' && status.state !== 'unknown' ? 'bad' : '';
      return cell(`${esc(status.state)}<br><small>expect ${esc(status.expect)}${status.counted ? '' : ' · not in the prediction'}</small>`, cls);
    },
  },
];

// ---------------------------------------------------------------------------------------------

const STYLE = `body{font-family:system-ui,sans-serif;margin:1.5em;color:#1b1b1b}
h1{margin:0 0 .2em}h2{margin-top:1.4em}
table{border-collapse:collapse;font-size:14px}th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top;white-space:nowrap}
th{background:#f2f2f2}small{color:#555}.none{color:#888}
td.ok{background:#dff0d8}td.bad{background:#f8d7da;color:#721c24;font-weight:600}
.note{background:#fff3cd;padding:8px;border:1px solid #e0c060}
.alarm{background:#f8d7da;color:#721c24;font-weight:600;padding:8px;border:1px solid #c66}.meta{color:#444}
nav>a{margin-right:1em}.units a.current{font-weight:bold;text-decoration:none;color:#1b1b1b}`;

/** An exporter without its bounded reader says so in red, first (docs/deploy.md, "Install"). */
function readerAlarm(state: ExporterState): string {
  const reader = state.sampler?.reader;
  if (!reader || reader.mode === 'native') return '';
  return `<p class="alarm" id="reader">Reads are not bounded: the native reader (native/build/libmfe-reader.so) is unavailable (${esc(reader.unavailable ?? 'unknown')}), ` +
    'so every read runs on the event loop with no timeout and one hung read stops the exporter. Build it (npm run build) and ship it beside dist/ (scripts/stage.sh).</p>\n';
}

/** Seconds between reloads: the sampling interval, at least 2 s. */
const refreshSeconds = (intervalMs: number): number => Math.max(2, Math.ceil(intervalMs / 1000));

export function landingPage(state: ExporterState, views: readonly PortView[], flows: readonly FlowMeasurementView[], opts: LandingOptions): string {
  const { units } = opts;
  const tolerance = state.config.driftTolerance;
  const refresh = refreshSeconds(state.config.sampling.intervalMs);
  const portRows = views.flatMap((view) => view.directions.map((dir) => ({ view, dir, tolerance, units })));
  // A flow can be in two domains (a sender's and a receiver's copy): take the one that covers the binding.
  const measuredFor = (b: FlowPrediction['binding']): FlowMeasurementView | undefined => {
    const paths = new Set((state.domains?.covering(b) ?? []).map((d) => d.path));
    const mine = flows.filter((f) => f.flowId === b.flow.id);
    return mine.find((f) => paths.has(f.domain)) ?? mine[0];
  };
  const flowRows = views.flatMap((v) => (v.plan?.flows ?? []).map((fp, i) => ({ fp, measured: measuredFor(fp.binding), status: v.flows[i], tolerance, units })));
  const toggle = (['bits', 'bytes'] as const).map((u) => `<a href="?units=${u}"${u === units ? ' class="current"' : ''}>${u}</a>`).join(' · ');
  const note = readerAlarm(state) + (state.rdmaNote ? `<p class="note">${esc(state.rdmaNote)}</p>` : '');
  const now = (opts.now ?? new Date()).toISOString().replace(/\.\d+Z$/, 'Z');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="${refresh}">
<title>MXL Fabric Exporter</title><style>${STYLE}</style></head><body>
<h1>MXL Fabric Exporter</h1>
<p class="meta">Version ${esc(BUILD.version)}${BUILD.revision === 'unknown' ? '' : ` (${esc(BUILD.revision.slice(0, 12))})`} · config <code>${esc(state.config.file)}</code> ·
sampling every ${esc(formatDecimal(state.config.sampling.intervalMs / 1000, 's'))}, window ${esc(formatDecimal(state.config.sampling.windowMs / 1000, 's'))} ·
drift tolerance ±${pct(tolerance)} · updated <time id="updated">${now}</time>, refreshes every ${refresh} s</p>
<nav><a href="${esc(opts.telemetryPath)}">Metrics</a><a href="/-/healthy">Health</a><a href="/-/ready">Readiness</a>
<span class="units">Rates in: ${toggle}</span></nav>
${note}
<h2>Ports</h2>
${table('ports', PORT_COLUMNS, portRows, 'No ports configured or found.')}
<h2>Flows</h2>
${table('flows', FLOW_COLUMNS, flowRows, 'No flows configured or found.')}
${connectionsSection(state)}
</body></html>
`;
}
