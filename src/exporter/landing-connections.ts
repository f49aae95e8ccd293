/**
 * The landing page's Connections section (docs/connections.md): one row per RDMA connection the
 * kernel tracks, with the flow it carries, its process, addresses, state, and its packets per
 * second measured from PSNs beside the flow's prediction; plus why flows may be missing (no
 * ptrace access to maps, unreadable tables).
 */
import { type Connection, connectionUp, directionOf, qpStateUp } from '../model/connections.js';
import { formatDecimal } from '../input/units.js';
import { type Column, NONE, cell, esc, table } from './html.js';
import type { ExporterState } from './view.js';
import { connectionRate, predictedPackets, windowDirection } from './connections.js';

interface Row {
  readonly c: Connection;
  readonly state: ExporterState;
}

const pps = (n: number | undefined): string => (n === undefined ? NONE : esc(formatDecimal(n, 'pkt/s')));

/** The metrics' own rate and prediction of a connection (connections.ts): one computation for both. */
function measuredAndPredicted({ c, state }: Row): { readonly measured: number | undefined; readonly predicted: number | undefined } {
  const m = state.connections;
  const rate = m ? connectionRate(m, c) : undefined;
  const flowId = m?.ownerOf(c.key)?.carried?.flowId;
  const direction = rate?.direction ?? windowDirection(c);
  const predicted = flowId && direction ? predictedPackets(state, { flowId, device: c.obs.device, port: c.obs.port, direction }) : undefined;
  return { measured: rate?.packetsPerSecond, predicted };
}

const COLUMNS: readonly Column<Row>[] = [
  { header: 'flow', title: 'the MXL flow the connection carries (its process maps it); empty when unknown', cell: ({ c, state }) => {
    const id = state.connections?.ownerOf(c.key)?.carried?.flowId;
    return cell(id ? `<code>${esc(id)}</code>` : NONE);
  } },
  { header: 'process', cell: ({ c, state }) => {
    const o = state.connections?.ownerOf(c.key);
    const name = o?.process || c.obs.kernName || '';
    return cell(`${name ? esc(name) : NONE}<br><small>pid ${c.obs.pid === undefined ? '—' : esc(c.obs.pid)}${o?.container ? ` · ${esc(o.container.slice(0, 12))}` : ''}</small>`);
  } },
  { header: 'port', cell: ({ c }) => cell(esc(`${c.obs.device}/${c.obs.port}`)) },
  { header: 'local → peer', cell: ({ c }) => cell(`${esc(c.obs.local)} → ${c.obs.peer ? esc(c.obs.peer) : NONE}<br><small>${esc(c.obs.qpType)} QP ${esc(c.obs.qpn)}${directionOf(c) ? ` · ${esc(directionOf(c))}` : ''}</small>`) },
  { header: 'state', cell: ({ c }) => (c.present ? cell(esc(c.obs.state), qpStateUp(c.obs.state) ? 'ok' : 'bad') : cell('gone', 'bad')) },
  { header: 'measured vs predicted', title: 'packets per second from the PSNs over the last connections interval, and the flow\'s prediction', cell: (row) => {
    const { measured, predicted } = measuredAndPredicted(row);
    return cell(`${pps(measured)}<br><small>predicted ${pps(predicted)}</small>`);
  } },
];

export function connectionsSection(state: ExporterState): string {
  const m = state.connections;
  if (!m) return '';
  const notes: string[] = [];
  const s = m.lastStatus;
  if (s.error) notes.push(`Connections cannot be read: ${s.error}`);
  if (s.mapsDenied) {
    notes.push('Reading another user\'s /proc/PID/maps needs CAP_SYS_PTRACE (or the same uid): connections of such processes are shown without their MXL flow. ' +
      `First refusal: ${s.mapsDenied}`);
  }
  const unbound = state.domains?.unbound() ?? [];
  if (unbound.length > 0) {
    notes.push(`Flows in bind: auto domains that no connection carries yet: ${unbound.map((u) => u.flowId).join(', ')} (their state and grains are still measured).`);
  }
  const all = m.connections();
  const listed = shownConnections(all, (c) => m.ownerOf(c.key)?.carried !== undefined);
  if (listed.length < all.length) {
    notes.push(`${all.length - listed.length} of ${all.length} connections are not shown here: those carrying a flow and those down come first. ` +
      'The metrics count every one (connection_group_*), and `mxl-fabric-exporter connections` lists them all.');
  }
  const rows = listed.map((c) => ({ c, state }));
  // Unread tables say nothing about connections: the note says why, no "none is tracked" beside it.
  const shown = rows.length === 0 && s.error ? '' : table('connections', COLUMNS, rows, 'No RDMA connection is tracked by the kernel.');
  return `<h2>Connections</h2>
${notes.map((n) => `<p class="note">${esc(n)}</p>`).join('\n')}
${shown}`;
}

/** The most rows the page lists: a host with thousands of QPs gets a page, not megabytes. */
const LANDING_CONNECTIONS = 1000;

/** Up to LANDING_CONNECTIONS: those carrying a flow, then those down, then the rest, each in the tables' order. */
function shownConnections(all: readonly Connection[], carries: (c: Connection) => boolean): Connection[] {
  if (all.length <= LANDING_CONNECTIONS) return [...all];
  const rank = (c: Connection): number => (carries(c) ? 0 : !connectionUp(c) ? 1 : 2);
  return all.map((c, i) => ({ c, i, r: rank(c) })).sort((a, b) => a.r - b.r || a.i - b.i).slice(0, LANDING_CONNECTIONS).map((x) => x.c);
}
