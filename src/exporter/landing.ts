/** The landing page at `/`: flows and ports, predicted against measured. */
import { toNumber } from '../model/index.js';
import { BUILD } from '../build-info.js';
import type { ExporterState, PortView } from './view.js';

const esc = (s: string | number): string =>
  String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const rate = (v: number | undefined, unit: string): string => {
  if (v === undefined) return '—';
  const units = ['', 'k', 'M', 'G', 'T'];
  let x = v;
  let i = 0;
  while (x >= 1000 && i < units.length - 1) {
    x /= 1000;
    i++;
  }
  return `${x.toFixed(i === 0 ? 0 : 3)} ${units[i]}${unit}`;
};

const pct = (r: number): string => `${r >= 0 ? '+' : ''}${(r * 100).toFixed(2)} %`;

function flowRows(views: readonly PortView[]): string {
  const rows = views.flatMap((v) => (v.plan?.flows ?? []).map(({ binding: b, prediction: p }) => `<tr>
<td>${esc(b.flow.label)}<br><small>${esc(b.flow.id)}</small></td><td>${esc(b.flow.mediaType)}</td>
<td>${esc(`${b.device}/${b.port}`)} ${esc(b.direction)}</td><td>${esc(b.provider.name)}</td>
<td>${p ? esc(`${p.eventRate.num}/${p.eventRate.den}`) : '—'}</td><td>${p ? rate(toNumber(p.packetsPerSecond), 'pkt/s') : 'MTU unknown'}</td>
<td>${p ? rate(toNumber(p.bytesPerSecond.l2), 'B/s') : '—'}</td><td>${p ? rate(toNumber(p.bytesPerSecond.wire), 'B/s') : '—'}</td></tr>`));
  return rows.join('\n') || '<tr><td colspan="8">No flows configured.</td></tr>';
}

function portRows(views: readonly PortView[]): string {
  return views.flatMap((v) => v.directions.map((d) => {
    const t = v.plan?.totals[d.direction];
    const attrs = v.sampled?.attrs;
    const measured = d.bytes.map((m) => `${rate(m.rate, 'B/s')} <small>(${esc(m.source)}, ${esc(m.layer ?? '?')})</small>`).join('<br>') || '—';
    const drift = d.drift.map((x) => `${esc(x.quantity)} ${pct(x.ratio)}`).join('<br>') || '—';
    return `<tr><td>${esc(`${v.device}/${v.port}`)}</td><td>${esc(d.direction)}</td>
<td>${attrs ? esc(`${attrs.state}${attrs.netdev ? ` (${attrs.netdev})` : ''}`) : '<b>not found</b>'}</td>
<td>${v.plan?.mtu ? esc(`${v.plan.mtu.kind === 'ib' ? 'IB ' : 'L3 '}${v.plan.mtu.bytes} (${v.plan.mtuFrom})`) : 'unknown'}</td>
<td>${t ? rate(t.bytesPerSecond.l2, 'B/s') : '—'}</td><td>${t ? rate(t.packetsPerSecond, 'pkt/s') : '—'}</td>
<td>${measured}</td><td>${rate(d.packets[0]?.rate, 'pkt/s')}</td><td>${drift}</td></tr>`;
  })).join('\n') || '<tr><td colspan="9">No ports.</td></tr>';
}

export function landingPage(state: ExporterState, views: readonly PortView[], telemetryPath: string): string {
  const note = state.rdmaNote ? `<p class="note">${esc(state.rdmaNote)}</p>` : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>MXL Fabric Exporter</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}.note{background:#fff3cd;padding:8px;border:1px solid #e0c060}</style>
</head><body>
<h1>MXL Fabric Exporter</h1>
<p>Version ${esc(BUILD.version)} (${esc(BUILD.revision.slice(0, 12))}) · config <code>${esc(state.config.file)}</code></p>
<ul><li><a href="${esc(telemetryPath)}">Metrics</a></li><li><a href="/-/healthy">Health</a></li><li><a href="/-/ready">Readiness</a></li></ul>
${note}
<h2>Ports</h2>
<table><tr><th>port</th><th>dir</th><th>state</th><th>model MTU</th><th>predicted l2</th><th>predicted packets</th><th>measured bytes</th><th>measured packets</th><th>drift</th></tr>
${portRows(views)}</table>
<h2>Flows</h2>
<table><tr><th>flow</th><th>media type</th><th>bound to</th><th>provider</th><th>grain rate</th><th>packets</th><th>l2</th><th>wire</th></tr>
${flowRows(views)}</table>
</body></html>
`;
}
