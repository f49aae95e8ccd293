/**
 * Connection families (docs/connections.md): what the kernel's restrack tables show per RDMA
 * connection, and how much of each port's traffic the connections account for. Read from the
 * ConnectionMonitor in the exporter state; absent when connections are off or unreadable.
 */
import { type Connection, type DeviceReads, connectionUp, directionOf } from '../model/connections.js';
import type { ConnectionGroup } from '../model/connection-groups.js';
import type { ConnectionMonitor } from '../sources/restrack/monitor.js';
import { bindingVerdicts } from '../sources/restrack/mismatch.js';
import type { Labels, Sample } from './exposition.js';
import type { Family } from './family.js';
import { attrsLookup, type ExporterState } from './view.js';
import { toNumber } from '../model/index.js';
import { type PortTotals, type TickReadings, connectionDelta, headDelta, portDelta } from '../model/same-tick.js';
import { measureFlow } from '../domain/measure.js';
import type { Sampler } from '../sampler/sampler.js';
import { groupBy } from '../group.js';
import { key } from '../keys.js';
import { portKey } from '../sources/types.js';

interface Series {
  readonly c: Connection;
  /** device, port, local, peer, pid: the identity, as labels. */
  readonly labels: Labels;
}

const identity = (c: Connection): Labels => ({
  device: c.obs.device, port: String(c.obs.port), local: c.twinQpn === undefined ? c.obs.local : `${c.obs.local}#qpn:${c.twinQpn}`,
  peer: c.obs.peer, pid: c.obs.pid === undefined ? '' : String(c.obs.pid),
});

/**
 * Every connection with its identity labels. A second live QP of one identity carries `#qpn` on
 * `local` for its life (Connection.twinQpn), whatever the order of the table; identities the
 * labels cannot tell apart (an unknown pid beside a kernel QP on the same addresses) all get
 * their QP number, so that no series stands for one QP at one scrape and another at the next.
 */
function connectionSeries(monitor: ConnectionMonitor | undefined): Series[] {
  if (!monitor) return [];
  const all = monitor.connections().map((c) => ({ c, labels: identity(c) }));
  const text = (s: Series): string => JSON.stringify(s.labels);
  const counts = new Map<string, number>();
  for (const s of all) counts.set(text(s), (counts.get(text(s)) ?? 0) + 1);
  return all.map((s) => (counts.get(text(s))! > 1 ? { c: s.c, labels: { ...s.labels, local: `${s.labels.local}#qpn:${s.c.obs.qpn}` } } : s));
}

const present = (state: ExporterState): Series[] => perQp(state).filter((s) => s.c.present);

/**
 * 1 for each kept connection gone from the tables that the monitor marks (`marked`); with none
 * marked (`any`), as in the tables' normal course, no pass over the connections.
 */
function vanishedMarked(state: ExporterState, any: (m: ConnectionMonitor) => boolean, marked: (m: ConnectionMonitor, key: string) => boolean): Sample[] {
  const m = state.connections;
  if (!m || !any(m)) return [];
  return perQp(state).flatMap(({ c, labels }) => (!c.present && marked(m, c.key) ? [{ labels, value: 1 }] : []));
}

/** The per-connection series: with metrics.connection_series `qp` only (else the groups stand for them). */
function perQp(state: ExporterState): Series[] {
  return state.config.metrics.connectionSeries === 'qp' ? connectionSeries(state.connections) : [];
}

/** The connection groups' series (metrics.connection_series `flow` or `process`). */
function groupSeries(state: ExporterState, value: (g: ConnectionGroup) => number): Sample[] {
  if (state.config.metrics.connectionSeries === 'qp') return [];
  return (state.connections?.groups() ?? []).map((g) => ({
    labels: { device: g.labels.device, port: String(g.labels.port), direction: g.labels.direction, flow_id: g.labels.flowId, pid: g.labels.pid, process: g.labels.process },
    value: value(g),
  }));
}

/** Per device read so far, one value of its DeviceReads. */
function perDevice(state: ExporterState, value: (d: DeviceReads) => number | undefined): Sample[] {
  return [...(state.connections?.tracker.devices() ?? [])].flatMap(([device, d]) => {
    const v = value(d);
    return v === undefined ? [] : [{ labels: { device }, value: v }];
  });
}

/**
 * Per port and direction: the packets its connections moved / the packets its counters counted,
 * both between the same two ticks of the window (model/same-tick.ts), so that neither is a rate
 * over another stretch of time. A connection gone in the window counts what it moved before.
 */
function coverage(state: ExporterState): Sample[] {
  const m = state.connections;
  if (!m) return [];
  const out: Sample[] = [];
  for (const [k, cs] of groupBy(m.connections(), (c) => portKey(c.obs))) {
    const { device, port } = cs[0]!.obs;
    const span = m.span(device);
    if (!span) continue;
    for (const direction of ['tx', 'rx'] as const) {
      const counted = portDelta(span.oldest, span.newest, k, direction);
      if (counted === undefined || counted <= 0) continue;
      const moved = cs.reduce((sum, c) => sum + (connectionDelta(span.oldest, span.newest, c.key, direction) ?? 0), 0);
      out.push({ labels: { device, port: String(port), direction }, value: moved / counted });
    }
  }
  return out;
}

/**
 * Per flow, port and direction its connections run in, and per domain that counts its grains:
 * the packets those connections moved / the grains (audio: batches of the binding's grain
 * duration) the domain's headIndex advanced, both between the same two ticks. Absent where the
 * port's PSNs do not move and while the domain counted no grain.
 */
function packetsPerGrain(state: ExporterState): Sample[] {
  const m = state.connections;
  if (!m || !state.domains) return [];
  const moved = new Map<string, { flowId: string; device: string; port: number; direction: 'tx' | 'rx'; packets: number }>();
  for (const c of m.connections()) {
    const carried = m.ownerOf(c.key)?.carried;
    const direction = windowDirection(c);
    const span = m.span(c.obs.device);
    if (carried === undefined || direction === undefined || !span || m.psnLiveOf(c.obs.device, c.obs.port) === 0) continue;
    const d = connectionDelta(span.oldest, span.newest, c.key, direction);
    if (d === undefined) continue;
    const k = key(c.obs.device, c.obs.port, direction, carried.flowId);
    const had = moved.get(k);
    moved.set(k, { flowId: carried.flowId, device: c.obs.device, port: c.obs.port, direction, packets: (had?.packets ?? 0) + d });
  }
  const byFlow = groupBy([...moved.values()], (f) => f.flowId);
  const durations = new Map(state.planner.allBindings().map((b) => [b.flow.id, b.grainDuration]));
  const out: Sample[] = [];
  for (const { domain, flow } of state.domains.flows()) {
    if (flow.def === undefined) continue;
    for (const f of byFlow.get(flow.id) ?? []) {
      // The grains over the same two ticks as the packets: those of the connections' device's window.
      const span = m.span(f.device)!;
      const heads = headDelta(span.oldest, span.newest, domain, flow.id);
      if (heads === undefined || heads <= 0) continue;
      // measureFlow is linear in its rate: a headIndex advance gives the grains of that advance.
      const grains = measureFlow(flow.def, durations.get(flow.id) ?? flow.audioBatch, heads).grainsPerSecond;
      out.push({ labels: { flow_id: f.flowId, domain, device: f.device, port: String(f.port), direction: f.direction }, value: f.packets / grains });
    }
  }
  return out;
}

/** The ports' packet totals as the sampling tick read them, for the connections read that follows it. */
export function portTotals(sampler: Sampler | undefined): TickReadings['ports'] {
  const ports = new Map<string, PortTotals>();
  for (const [k, p] of sampler?.ports ?? []) {
    // The first packet counter of each direction, in the order measurements() prefers them.
    const counter = (direction: 'tx' | 'rx') => p.counters.find((x) => x.series.spec.meaning?.quantity === 'packets' && x.series.spec.meaning.direction === direction && x.series.total !== undefined);
    const [tx, rx] = [counter('tx'), counter('rx')];
    const total = (c: typeof tx): number | undefined => (c === undefined ? undefined : c.series.total! * c.series.spec.meaning!.scale);
    // 'new' and 'ok': read at this tick, every delta since the first read counted.
    const fine = (c: typeof tx): boolean => c !== undefined && (c.series.state === 'ok' || c.series.state === 'new');
    ports.set(k, { tx: total(tx), rx: total(rx), ...(fine(tx) && fine(rx) ? { unbroken: tx!.series.resets + rx!.series.resets } : {}) });
  }
  return ports;
}

function psnLive(state: ExporterState): Sample[] {
  const m = state.connections;
  if (!m) return [];
  return [...groupBy(m.connections(), (c) => portKey(c.obs)).values()].flatMap((cs) => {
    const { device, port } = cs[0]!.obs;
    const live = m.psnLiveOf(device, port);
    return live === undefined ? [] : [{ labels: { device, port: String(port) }, value: live }];
  });
}

function ownerLabels(m: ConnectionMonitor | undefined, c: Connection): Labels {
  const o = m?.ownerOf(c.key);
  return { process: o?.process ?? c.obs.kernName ?? '', container: o?.container ?? '', flow_id: o?.carried?.flowId ?? '' };
}

interface FlowConnectionRate {
  readonly flowId: string;
  readonly domain: string;
  readonly device: string;
  readonly port: number;
  readonly direction: 'tx' | 'rx';
  /** Packets per second over the connections' last window. */
  readonly rate: number;
}

/** A connection's packets per second over its last window, in the direction they count in. */
export interface ConnectionRate {
  readonly direction: 'tx' | 'rx';
  readonly packetsPerSecond: number;
}

/**
 * The one rate of a connection, for the metrics and the landing page: its packets over its last
 * window in windowDirection(); none without a window (first sight, restart, unread, late), or
 * where the port's PSNs do not move (port_connection_psn_live 0).
 */
export function connectionRate(m: ConnectionMonitor, c: Connection): ConnectionRate | undefined {
  if (!c.present || c.window === undefined || c.window.ms <= 0 || m.psnLiveOf(c.obs.device, c.obs.port) === 0) return undefined;
  const direction = windowDirection(c);
  if (direction === undefined) return undefined;
  return { direction, packetsPerSecond: ((direction === 'tx' ? c.window.sent : c.window.received) * 1000) / c.window.ms };
}

/** Per flow, port and direction: the packets per second of the connections that carry it (connectionRate). */
function flowConnectionRates(m: ConnectionMonitor | undefined): FlowConnectionRate[] {
  const out = new Map<string, FlowConnectionRate>();
  for (const c of m?.connections() ?? []) {
    const carried = m!.ownerOf(c.key)?.carried;
    const r = carried === undefined ? undefined : connectionRate(m!, c);
    if (carried === undefined || r === undefined) continue;
    const k = key(c.obs.device, c.obs.port, r.direction, carried.flowId);
    const had = out.get(k);
    out.set(k, { flowId: carried.flowId, domain: carried.domain, device: c.obs.device, port: c.obs.port, direction: r.direction, rate: (had?.rate ?? 0) + r.packetsPerSecond });
  }
  return [...out.values()];
}

/** Where a flow's prediction is asked for: its id, and the port and direction of its connection. */
type FlowPlace = Pick<FlowConnectionRate, 'flowId' | 'device' | 'port' | 'direction'>;

/** The flow's predicted packets per second where it is bound on that port and direction, if it is. */
export function predictedPackets(state: ExporterState, f: FlowPlace): number | undefined {
  const plan = state.planner.plans(attrsLookup(state.sampler)).find((p) => p.port.device === f.device && p.port.port === f.port);
  const fp = plan?.flows.find((x) => x.binding.flow.id === f.flowId && x.binding.direction === f.direction);
  return fp?.prediction ? toNumber(fp.prediction.packetsPerSecond) : undefined;
}

/** The direction a carrying connection's packets count in: its own, or the busier side of `both`. */
export function windowDirection(c: Connection): 'tx' | 'rx' | undefined {
  const dir = directionOf(c);
  if (dir === 'tx' || dir === 'rx') return dir;
  return dir === 'both' && c.window ? (c.window.sent >= c.window.received ? 'tx' : 'rx') : undefined;
}

interface ProcessRate {
  readonly labels: Labels;
  /** Packets per second of its unpaired connections there; undefined without a window (or PSNs that do not move). */
  readonly measured: number | undefined;
  /** Sum of the predicted packets per second of its unpaired flows bound there; undefined when none is. */
  readonly predicted: number | undefined;
}

/**
 * Per process compared as a whole (assign.ts sharedByProcess), per port and direction its
 * unpaired connections run in: their packets per second against the predictions of its unpaired
 * flows bound on that port and direction.
 */
function processRates(state: ExporterState): ProcessRate[] {
  const m = state.connections;
  if (!m) return [];
  const now = new Map(m.connections().map((c) => [c.key, c]));
  const out: ProcessRate[] = [];
  for (const share of m.processShares()) {
    const byPlace = new Map<string, { device: string; port: number; direction: 'tx' | 'rx'; rate: number | undefined; process: string }>();
    for (const old of share.connections) {
      const c = now.get(old.key);
      const direction = c?.present ? windowDirection(c) : undefined;
      if (c === undefined || direction === undefined) continue;
      const k = key(c.obs.device, c.obs.port, direction);
      const had = byPlace.get(k) ?? { device: c.obs.device, port: c.obs.port, direction, rate: undefined, process: m.ownerOf(c.key)?.process ?? '' };
      const rate = connectionRate(m, c)?.packetsPerSecond;
      byPlace.set(k, { ...had, rate: rate === undefined ? had.rate : (had.rate ?? 0) + rate });
    }
    for (const p of byPlace.values()) {
      const predictions = [...share.flows].flatMap(([flowId]) => {
        const v = predictedPackets(state, { flowId, device: p.device, port: p.port, direction: p.direction });
        return v === undefined ? [] : [v];
      });
      out.push({
        labels: { pid: String(share.pid), process: p.process, device: p.device, port: String(p.port), direction: p.direction },
        measured: p.rate,
        predicted: predictions.length === 0 ? undefined : predictions.reduce((a, b) => a + b, 0),
      });
    }
  }
  return out;
}

/** flow_drift_ratio's packets series: measured (connections) / predicted - 1; absent while either is unknown. */
export function flowPacketDrift(state: ExporterState): Sample[] {
  return flowConnectionRates(state.connections).flatMap((f) => {
    const predicted = predictedPackets(state, f);
    if (predicted === undefined || predicted <= 0) return [];
    return [{
      labels: { flow_id: f.flowId, domain: f.domain, device: f.device, port: String(f.port), direction: f.direction, quantity: 'packets' },
      value: f.rate / predicted - 1,
    }];
  });
}

/** flow_binding_mismatch: each binding of a flow whose carrying connection runs elsewhere, once per place it runs. */
function bindingMismatches(state: ExporterState): Sample[] {
  const m = state.connections;
  if (!m) return [];
  const out = new Map<string, Sample>();
  for (const v of bindingVerdicts(m.connections(), (k) => m.ownerOf(k), state.planner.allBindings())) {
    if (v.agrees) continue;
    const labels = {
      flow_id: v.binding.flow.id, device: v.binding.device, port: String(v.binding.port), direction: v.binding.direction,
      connection_device: v.connection.obs.device, connection_port: String(v.connection.obs.port), connection_direction: v.direction,
    };
    out.set(JSON.stringify(labels), { labels, value: 1 });
  }
  return [...out.values()];
}

/** The labels of every connection_group_* family: a group's place, and its flow or its process. */
const GROUP_LABELS = ['device', 'port', 'direction', 'flow_id', 'pid', 'process'] as const;

export const CONNECTION_FAMILIES: readonly Family[] = [
  { name: 'flow_measured_packets_per_second', help: 'Packets per second of the RDMA connections that carry a flow, from their PSNs over the last connections interval (source="connection").', type: 'gauge', labels: ['flow_id', 'device', 'port', 'direction', 'source'], changes: 'tick', read: (_v, state) =>
    flowConnectionRates(state.connections).map((f) => ({
      labels: { flow_id: f.flowId, device: f.device, port: String(f.port), direction: f.direction, source: 'connection' }, value: f.rate,
    })) },
  { name: 'connection_info', help: 'An RDMA connection the kernel tracks (a QP, with its cm_id when it has one); always 1. process, container and flow_id are empty when unknown.', type: 'gauge', labels: ['device', 'port', 'local', 'peer', 'pid', 'direction', 'qp_type', 'process', 'container', 'flow_id'], changes: 'tick', read: (_v, state) =>
    present(state).map(({ c, labels }) => ({
      labels: { ...labels, direction: directionOf(c), qp_type: c.obs.qpType, ...ownerLabels(state.connections, c) },
      value: 1,
    })) },
  { name: 'connection_up', help: 'Whether the connection works (1): its QP is in RTS, or in RTR (it receives; a QP that only receives never needs RTS); 0 in any other state, or once it vanished (kept for a while).', type: 'gauge', labels: ['device', 'port', 'local', 'peer', 'pid'], changes: 'tick', read: (_v, state) =>
    perQp(state).map(({ c, labels }) => ({ labels, value: connectionUp(c) ? 1 : 0 })) },
  { name: 'connection_process_exited', help: 'A connection gone from the kernel\'s tables (connection_up 0, kept for a while) whose process has exited since: its pid is gone from /proc, a zombie, or another process now; always 1. Absent otherwise (a process the exporter may not read counts as running).', type: 'gauge', labels: ['device', 'port', 'local', 'peer', 'pid'], changes: 'tick', read: (_v, state) =>
    vanishedMarked(state, (m) => m.anyProcessExited(), (m, k) => m.processExited(k)) },
  { name: 'connection_superseded', help: 'A connection gone from the kernel\'s tables (connection_up 0, kept for a while) whose flow another connection has carried since on the same device, port and direction while up (QP in RTS or RTR); always 1. Absent otherwise.', type: 'gauge', labels: ['device', 'port', 'local', 'peer', 'pid'], changes: 'tick', read: (_v, state) =>
    vanishedMarked(state, (m) => m.anySuperseded(), (m, k) => m.superseded(k)) },
  { name: 'connection_state', help: 'The connection\'s QP state (RESET, INIT, RTR, RTS, SQD, SQE, ERR); 1 for the current one.', type: 'gauge', labels: ['device', 'port', 'local', 'peer', 'pid', 'state'], changes: 'tick', read: (_v, state) =>
    present(state).map(({ c, labels }) => ({ labels: { ...labels, state: c.obs.state }, value: 1 })) },
  { name: 'connection_sent_packets_total', help: 'Packets the connection sent, from its sq_psn (24-bit, counted modulo 2^24 from the highest seen; from first sight).', type: 'counter', labels: ['device', 'port', 'local', 'peer', 'pid'], changes: 'tick', read: (_v, state) =>
    perQp(state).map(({ c, labels }) => ({ labels, value: c.sent.packets })) },
  { name: 'connection_received_packets_total', help: 'Packets the connection received, from its rq_psn (RC/UC QPs only).', type: 'counter', labels: ['device', 'port', 'local', 'peer', 'pid'], changes: 'tick', read: (_v, state) =>
    perQp(state).flatMap(({ c, labels }) => (c.received ? [{ labels, value: c.received.packets }] : [])) },
  { name: 'connection_psn_rewinds_total', help: 'Reads that found a PSN (send or receive) behind the highest seen: retries, counted, never negative traffic.', type: 'counter', labels: ['device', 'port', 'local', 'peer', 'pid'], changes: 'tick', read: (_v, state) =>
    perQp(state).map(({ c, labels }) => ({ labels, value: c.sent.rewinds + (c.received?.rewinds ?? 0) })) },
  { name: 'connection_restarts_total', help: 'Times the connection came back with a new QP number under the same identity (an endpoint restart).', type: 'counter', labels: ['device', 'port', 'local', 'peer', 'pid'], changes: 'tick', read: (_v, state) =>
    perQp(state).map(({ c, labels }) => ({ labels, value: c.restarts })) },
  { name: 'process_measured_packets_per_second', help: 'Packets per second of a process\'s RDMA connections that no flow could be paired with (several flows, several connections one way), from their PSNs.', type: 'gauge', labels: ['pid', 'process', 'device', 'port', 'direction'], changes: 'tick', read: (_v, state) =>
    processRates(state).flatMap((p) => (p.measured === undefined ? [] : [{ labels: p.labels, value: p.measured }])) },
  { name: 'process_predicted_packets_per_second', help: 'Sum of the predicted packets per second of the flows such a process maps and no connection carries, where they are bound on the port and direction of its connections.', type: 'gauge', labels: ['pid', 'process', 'device', 'port', 'direction'], changes: 'tick', read: (_v, state) =>
    processRates(state).flatMap((p) => (p.predicted === undefined ? [] : [{ labels: p.labels, value: p.predicted }])) },
  { name: 'process_drift_ratio', help: 'process_measured_packets_per_second / process_predicted_packets_per_second - 1; absent while either is unknown.', type: 'gauge', labels: ['pid', 'process', 'device', 'port', 'direction'], changes: 'tick', read: (_v, state) =>
    processRates(state).flatMap((p) => (p.measured === undefined || p.predicted === undefined || p.predicted <= 0 ? [] : [{ labels: p.labels, value: p.measured / p.predicted - 1 }])) },
  { name: 'flow_binding_mismatch', help: 'A configured flow binding whose connection (the one that carries the flow) runs on another port or in the other direction; always 1, with where the connection runs.', type: 'gauge', labels: ['flow_id', 'device', 'port', 'direction', 'connection_device', 'connection_port', 'connection_direction'], changes: 'tick', read: (_v, state) =>
    bindingMismatches(state) },
  { name: 'port_connection_coverage_ratio', help: 'Packets the port\'s connections moved (PSNs) / the packets its counters counted, both between the same two ticks over the sampling window.', type: 'gauge', labels: ['device', 'port', 'direction'], changes: 'tick', read: (_v, state) =>
    coverage(state) },
  { name: 'flow_connection_packets_per_grain', help: 'Packets the connections carrying a flow moved (PSNs) per grain the domain counted (headIndex; audio: per batch), both between the same two ticks over the sampling window.', type: 'gauge', labels: ['flow_id', 'domain', 'device', 'port', 'direction'], changes: 'tick', read: (_v, state) =>
    packetsPerGrain(state) },
  { name: 'connection_group_connections', help: 'Connections of a group (metrics.connection_series flow: a flow\'s connections on a port and direction, or a process\'s carrying no flow; process: a process\'s) in the kernel\'s tables now.', type: 'gauge', labels: GROUP_LABELS, changes: 'tick', read: (_v, state) =>
    groupSeries(state, (g) => g.connections) },
  { name: 'connection_group_up', help: 'Of a group\'s connections, those that work (QP in RTS, or RTR: it receives); 0 with connections that left RTS or vanished (kept for a while).', type: 'gauge', labels: GROUP_LABELS, changes: 'tick', read: (_v, state) =>
    groupSeries(state, (g) => g.up) },
  { name: 'connection_group_sent_packets_total', help: 'Packets a group\'s connections sent while in it, from their sq_psn (24-bit, counted modulo 2^24 from the highest seen).', type: 'counter', labels: GROUP_LABELS, changes: 'tick', read: (_v, state) =>
    groupSeries(state, (g) => g.sent) },
  { name: 'connection_group_received_packets_total', help: 'Packets a group\'s connections received while in it, from their rq_psn (RC/UC QPs only).', type: 'counter', labels: GROUP_LABELS, changes: 'tick', read: (_v, state) =>
    groupSeries(state, (g) => g.received) },
  { name: 'connection_group_psn_rewinds_total', help: 'Reads that found a PSN of one of a group\'s connections behind the highest seen: retries, counted, never negative traffic.', type: 'counter', labels: GROUP_LABELS, changes: 'tick', read: (_v, state) =>
    groupSeries(state, (g) => g.rewinds) },
  { name: 'connection_group_restarts_total', help: 'Times a connection of the group came back with a new QP number under the same identity (an endpoint restart).', type: 'counter', labels: GROUP_LABELS, changes: 'tick', read: (_v, state) =>
    groupSeries(state, (g) => g.restarts) },
  { name: 'connections_late_reads_total', help: 'Reads of the device\'s connection tables that came too late for the PSNs (further apart than its fastest port can send 2^23 packets in, at its link rate and MTU): nothing is counted from them.', type: 'counter', labels: ['device'], changes: 'tick', read: (_v, state) =>
    perDevice(state, (d) => d.lateReads) },
  { name: 'connections_read_interval_seconds', help: 'How far apart the device\'s connection tables are read: connections.interval, stretched on a driver that answers each QP with a firmware command (mlx5) to keep within connections.qp_queries_per_second, never past its fastest port\'s PSN wrap limit.', type: 'gauge', labels: ['device'], changes: 'tick', read: (_v, state) =>
    perDevice(state, (d) => (d.readIntervalMs === undefined ? undefined : d.readIntervalMs / 1000)) },
  { name: 'connections_last_read_timestamp_seconds', help: 'Unix time the device\'s connection tables were last read in full, taken as the read was asked for: the connection series show the tables as the kernel gave them at this time or just after.', type: 'gauge', labels: ['device'], changes: 'tick', read: (_v, state) =>
    perDevice(state, (d) => (d.lastReadUnixMs === undefined ? undefined : d.lastReadUnixMs / 1000)) },
  { name: 'connections_qp_queries_total', help: 'QPs read from the device\'s tables, each one query its driver answered (mlx5: one QUERY_QP firmware command); rate() is QPs read per second.', type: 'counter', labels: ['device'], changes: 'tick', read: (_v, state) =>
    perDevice(state, (d) => d.qpQueries) },
  { name: 'port_connection_psn_live', help: 'Whether the port\'s connections\' PSNs move with traffic (1), or stand still while the port counts packets (0: irdma); absent until known.', type: 'gauge', labels: ['device', 'port'], changes: 'tick', read: (_v, state) =>
    psnLive(state) },
];
