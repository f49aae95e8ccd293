/**
 * The exporter's own metric families (names are a contract: docs/metrics.md), in exposition
 * order. Every family is a view over the exporter's state; nothing is stored in label maps, so a
 * vanished port or flow simply stops being reported.
 */
import { LAYERS, type Prediction, toNumber } from '../model/index.js';
import type { SampledCounter } from '../sampler/sampler.js';
import type { Direction, Quantity } from '../sources/types.js';
import { key, keyParts } from '../keys.js';
import { formatLabels, type Labels, type Sample } from './exposition.js';
import { flatString } from '../flat-string.js';
import { type Family, type Read, portLabels } from './family.js';
import type { PortView } from './view.js';
import { FLOW_TRUTH_FAMILIES } from './flow-truth.js';
import { FABRIC_HEALTH_FAMILIES } from './fabric-health.js';
import { CONNECTION_FAMILIES, flowPacketDrift } from './connections.js';

/** An acknowledgement carries no media and no RDMA payload: only these layers are exported for it. */
const ACK_LAYERS = ['l3', 'l2', 'wire'] as const;

/**
 * The label text of a counter's series (device, port, source, counter), formatted once per
 * series: up to four families print it every tick for each of ~1,800 counters at 32 ports.
 */
const counterLabelText = new WeakMap<SampledCounter, string>();
function counterLabels(v: PortView, c: SampledCounter): string {
  let text = counterLabelText.get(c);
  if (text === undefined) counterLabelText.set(c, (text = flatString(formatLabels({ ...portLabels(v), source: c.source, counter: c.series.spec.name }))));
  return text;
}

export const FAMILIES: readonly Family[] = [
  { name: 'flow_info', help: 'A configured MXL flow and where it is bound; always 1.', type: 'gauge', labels: ['flow_id', 'label', 'media_type', 'format', 'device', 'port', 'direction', 'provider', 'origin'], changes: 'plan', read: (views) =>
    views.flatMap((v) => (v.plan?.flows ?? []).map(({ binding: b }) => ({
      labels: {
        flow_id: b.flow.id, label: b.flow.label, media_type: b.flow.mediaType, format: b.flow.format, device: b.device,
        port: String(b.port), direction: b.direction, provider: b.provider.name, origin: b.origin,
      },
      value: 1,
    }))) },
  { name: 'flow_predicted_bytes_per_second', help: "The model's bytes per second for one flow, per layer (media, payload, l3, l2, wire; those of metrics.flow_layers).", type: 'gauge', labels: ['flow_id', 'device', 'port', 'direction', 'layer'], changes: 'plan', read: (views, state) =>
    views.flatMap((v) => (v.plan?.flows ?? []).flatMap(({ binding: b, prediction: p }) => p ? state.config.metrics.flowLayers.map((layer) => ({
      labels: { flow_id: b.flow.id, device: b.device, port: String(b.port), direction: b.direction, layer },
      value: toNumber(p.bytesPerSecond[layer]),
    })) : [])) },
  { name: 'flow_predicted_packets_per_second', help: "The model's packets per second for one flow.", type: 'gauge', labels: ['flow_id', 'device', 'port', 'direction'], changes: 'plan', read: (views) =>
    views.flatMap((v) => (v.plan?.flows ?? []).flatMap(({ binding: b, prediction: p }) => p ? [{
      labels: { flow_id: b.flow.id, device: b.device, port: String(b.port), direction: b.direction },
      value: toNumber(p.packetsPerSecond),
    }] : [])) },
  { name: 'port_predicted_bytes_per_second', help: 'Sum of the predictions of the flows that count now on a port and direction (expected or live), plus the ACKs of those bound the other way, per layer.', type: 'gauge', labels: ['device', 'port', 'direction', 'layer'], changes: 'tick', read: (views) =>
    views.flatMap((v) => v.directions.flatMap((d) => {
      const t = d.predicted;
      return t ? LAYERS.map((layer) => ({ labels: { ...portLabels(v), direction: d.direction, layer }, value: t.bytesPerSecond[layer] })) : [];
    })) },
  { name: 'port_predicted_packets_per_second', help: 'Sum of the predicted packets per second of the flows that count now on a port and direction (expected or live), plus the ACKs of those bound the other way.', type: 'gauge', labels: ['device', 'port', 'direction'], changes: 'tick', read: (views) =>
    views.flatMap((v) => v.directions.flatMap((d) => {
      const t = d.predicted;
      return t ? [{ labels: { ...portLabels(v), direction: d.direction }, value: t.packetsPerSecond }] : [];
    })) },
  { name: 'port_measured_bytes_per_second', help: "Bytes per second from a port's counters over the sampling window, by source and comparable layer.", type: 'gauge', labels: ['device', 'port', 'direction', 'source', 'layer'], changes: 'tick', read: (views) =>
    views.flatMap((v) => v.directions.flatMap((d) => firstPer(d.bytes, (m) => key(m.source, m.layer ?? '')).map((m) => ({
      labels: { ...portLabels(v), direction: d.direction, source: m.source, layer: m.layer ?? 'unknown' }, value: m.rate,
    })))) },
  { name: 'port_measured_packets_per_second', help: "Packets per second from a port's counters over the sampling window, by source.", type: 'gauge', labels: ['device', 'port', 'direction', 'source'], changes: 'tick', read: (views) =>
    views.flatMap((v) => v.directions.flatMap((d) => firstPer(d.packets, (m) => m.source).map((m) => ({
      labels: { ...portLabels(v), direction: d.direction, source: m.source }, value: m.rate,
    })))) },
  { name: 'port_drift_ratio', help: 'measured / predicted - 1 at the matching layer, from the preferred source; absent when nothing is predicted or measured.', type: 'gauge', labels: ['device', 'port', 'direction', 'quantity'], changes: 'tick', read: (views) =>
    views.flatMap((v) => v.directions.flatMap((d) => d.drift.map((x) => ({
      labels: { ...portLabels(v), direction: d.direction, quantity: x.quantity }, value: x.ratio,
    })))) },
  { name: 'port_transmitted_bytes_total', help: 'Bytes transmitted by a port, per source (32-bit wraps unwrapped, resets absorbed).', type: 'counter', labels: ['device', 'port', 'source', 'counter'], changes: 'tick', read: meaningTotals('tx', 'bytes') },
  { name: 'port_transmitted_packets_total', help: 'Packets transmitted by a port, per source (32-bit wraps unwrapped, resets absorbed).', type: 'counter', labels: ['device', 'port', 'source', 'counter'], changes: 'tick', read: meaningTotals('tx', 'packets') },
  { name: 'port_received_bytes_total', help: 'Bytes received by a port, per source (32-bit wraps unwrapped, resets absorbed).', type: 'counter', labels: ['device', 'port', 'source', 'counter'], changes: 'tick', read: meaningTotals('rx', 'bytes') },
  { name: 'port_received_packets_total', help: 'Packets received by a port, per source (32-bit wraps unwrapped, resets absorbed).', type: 'counter', labels: ['device', 'port', 'source', 'counter'], changes: 'tick', read: meaningTotals('rx', 'packets') },
  { name: 'port_stat_total', help: "Every counter a port's sources expose, by its driver name (raw units, 32-bit wraps unwrapped).", type: 'counter', labels: ['device', 'port', 'source', 'counter'], changes: 'tick', read: (views) =>
    views.flatMap((v) => (v.sampled?.counters ?? []).flatMap((c) => c.series.total === undefined ? [] : [{
      labels: counterLabels(v, c), value: Number(c.series.total),
    }])) },
  { name: 'port_stat_up', help: 'Whether the last read of a counter succeeded (1) or failed (0).', type: 'gauge', labels: ['device', 'port', 'source', 'counter'], changes: 'tick', read: (views) =>
    views.flatMap((v) => (v.sampled?.counters ?? []).map((c) => ({
      labels: counterLabels(v, c), value: c.series.state === 'error' ? 0 : 1,
    }))) },
  { name: 'port_stat_saturated', help: 'Whether a saturating PMA counter (IBA PortCounters: 4, 8, 16 or 32 bits) is stuck at all ones of its width (its rate is then unknown).', type: 'gauge', labels: ['device', 'port', 'source', 'counter'], changes: 'tick', read: (views) =>
    views.flatMap((v) => (v.sampled?.counters ?? []).filter((c) => c.series.spec.overflow === 'saturate').map((c) => ({
      labels: counterLabels(v, c), value: c.series.state === 'saturated' ? 1 : 0,
    }))) },
  { name: 'port_info', help: 'A port the host has, with its netdev, link layer and state; always 1.', type: 'gauge', labels: ['device', 'port', 'netdev', 'link_layer', 'state', 'attributes_source'], changes: 'tick', read: (views) =>
    views.flatMap((v) => v.sampled ? [{
      labels: { ...portLabels(v), netdev: v.sampled.attrs.netdev ?? '', link_layer: v.sampled.attrs.linkLayer, state: v.sampled.attrs.state, attributes_source: v.sampled.attrs.attributeSource },
      value: 1,
    }] : []) },
  { name: 'port_up', help: 'Whether the port is ACTIVE (1); 0 when down or when a configured port is missing.', type: 'gauge', labels: ['device', 'port'], changes: 'tick', read: (views) =>
    views.map((v) => ({ labels: portLabels(v), value: v.sampled?.attrs.state === 'ACTIVE' ? 1 : 0 })) },
  { name: 'port_present', help: 'Whether the host has the port (1); 0 for a port the config names that the host does not have.', type: 'gauge', labels: ['device', 'port'], changes: 'tick', read: (views) =>
    views.map((v) => ({ labels: portLabels(v), value: v.sampled ? 1 : 0 })) },
  { name: 'port_active_mtu_bytes', help: "The port's active IB MTU: RDMA payload bytes per packet.", type: 'gauge', labels: ['device', 'port'], changes: 'tick', read: (views) =>
    views.flatMap((v) => v.sampled?.attrs.activeIbMtu !== undefined ? [{ labels: portLabels(v), value: v.sampled.attrs.activeIbMtu }] : []) },
  { name: 'port_model_mtu_bytes', help: 'The L3 MTU the model uses for the port (configured, or active IB MTU + profile overhead).', type: 'gauge', labels: ['device', 'port', 'from'], changes: 'plan', read: (views) =>
    views.flatMap((v) => v.plan?.mtu ? [{ labels: { ...portLabels(v), from: v.plan.mtuFrom }, value: v.plan.mtu.kind === 'l3' ? v.plan.mtu.bytes : v.plan.mtu.bytes + v.plan.port.provider.mtuOverheadBytes }] : []) },
  { name: 'port_model_payload_bytes_per_packet', help: 'RDMA payload bytes per packet the model assumes for the port (L3 MTU - the profile\'s mtuOverheadBytes).', type: 'gauge', labels: ['device', 'port'], changes: 'plan', read: (views) =>
    views.flatMap((v) => v.plan?.mtu ? [{ labels: portLabels(v), value: v.plan.mtu.kind === 'ib' ? v.plan.mtu.bytes : v.plan.mtu.bytes - v.plan.port.provider.mtuOverheadBytes }] : []) },
  { name: 'port_capacity_bytes_per_second', help: 'Link capacity in bytes per second (configured, or the port rate).', type: 'gauge', labels: ['device', 'port'], changes: 'tick', read: (views) =>
    views.flatMap((v) => {
      const cap = v.plan?.capacityBytesPerSecond ?? (v.sampled?.attrs.rateBitsPerSecond !== undefined ? v.sampled.attrs.rateBitsPerSecond / 8 : undefined);
      return cap !== undefined ? [{ labels: portLabels(v), value: cap }] : [];
    }) },
  { name: 'port_predicted_utilization_ratio', help: 'Provisioned wire bytes per second (every flow bound there) / capacity, per direction.', type: 'gauge', labels: ['device', 'port', 'direction'], changes: 'plan', read: (views) =>
    views.flatMap((v) => v.directions.flatMap((d) => {
      const t = v.plan?.totals[d.direction];
      const cap = v.plan?.capacityBytesPerSecond;
      return t && cap ? [{ labels: { ...portLabels(v), direction: d.direction }, value: t.bytesPerSecond.wire / cap }] : [];
    })) },
  { name: 'port_headroom_ratio', help: 'Configured share of capacity the predicted wire rate may use.', type: 'gauge', labels: ['device', 'port'], changes: 'plan', read: (views) =>
    views.flatMap((v) => v.plan ? [{ labels: portLabels(v), value: v.plan.port.headroom }] : []) },
  { name: 'flow_measured_grains_per_second', help: "Grains per second a flow's writer commits, from headIndex in its MXL domain over the window.", type: 'gauge', labels: ['flow_id', 'domain'], changes: 'tick', read: (_v, _s, flows) =>
    flows.flatMap((f) => f.measurement ? [{ labels: { flow_id: f.flowId, domain: f.domain }, value: f.measurement.grainsPerSecond }] : []) },
  { name: 'flow_measured_bytes_per_second', help: 'Media bytes per second a flow\'s writer commits (layer media: the essence, no MXL headers).', type: 'gauge', labels: ['flow_id', 'domain', 'layer'], changes: 'tick', read: (_v, _s, flows) =>
    flows.flatMap((f) => f.measurement ? [{ labels: { flow_id: f.flowId, domain: f.domain, layer: 'media' }, value: f.measurement.mediaBytesPerSecond }] : []) },
  { name: 'flow_drift_ratio', help: 'Measured / predicted - 1 for a flow: quantity="grains" from its MXL domain, quantity="packets" from the connections that carry it (per port and direction).', type: 'gauge', labels: ['flow_id', 'domain', 'device', 'port', 'direction', 'quantity'], changes: 'tick', read: (_v, state, flows) => [
    ...flows.flatMap((f) => f.measurement && f.measurement.predictedGrainsPerSecond > 0
      ? [{ labels: { flow_id: f.flowId, domain: f.domain, quantity: 'grains' }, value: f.measurement.grainsPerSecond / f.measurement.predictedGrainsPerSecond - 1 }] : []),
    ...flowPacketDrift(state),
  ] },
  { name: 'flow_writer_active', help: 'Whether a writer holds the flow (MXL\'s own test: a non-blocking exclusive flock on data fails).', type: 'gauge', labels: ['flow_id', 'domain'], changes: 'tick', read: (_v, _s, flows) =>
    flows.flatMap((f) => f.writerActive === undefined ? [] : [{ labels: { flow_id: f.flowId, domain: f.domain }, value: f.writerActive ? 1 : 0 }]) },
  { name: 'flow_last_write_age_seconds', help: 'Seconds since the flow\'s last write (video, data: lastWriteTime, TAI; audio: since headIndex was seen to move).', type: 'gauge', labels: ['flow_id', 'domain'], changes: 'tick', read: (_v, _s, flows) =>
    flows.flatMap((f) => f.lastWriteAgeSeconds === undefined ? [] : [{ labels: { flow_id: f.flowId, domain: f.domain }, value: f.lastWriteAgeSeconds }]) },
  { name: 'domain_flow_definition_valid', help: 'Whether a flow folder in an MXL domain has a usable flow_def.json (0: see the log).', type: 'gauge', labels: ['domain', 'flow_id'], changes: 'tick', read: (_v, _s, flows) =>
    flows.map((f) => ({ labels: { domain: f.domain, flow_id: f.flowId }, value: f.definitionValid ? 1 : 0 })) },
  { name: 'drift_tolerance_ratio', help: 'Configured drift tolerance: |drift| above it is model drift.', type: 'gauge', labels: [], changes: 'plan', read: (_views, state) =>
    [{ labels: {}, value: state.config.driftTolerance }] },
  { name: 'exporter_rdma_ports', help: 'RDMA ports found on the host at the last sample.', type: 'gauge', labels: [], changes: 'tick', read: (_views, state) =>
    [{ labels: {}, value: state.sampler?.ports.size ?? 0 }] },
  { name: 'exporter_read_errors_total', help: 'Counter reads that failed, per port and source.', type: 'counter', labels: ['device', 'port', 'source'], changes: 'tick', read: (_views, state) =>
    [...(state.sampler?.readErrors ?? new Map<string, number>())].map(([k, n]) => {
      const [device, port, source] = keyParts(k);
      return { labels: { device: device!, port: port!, source: source! }, value: n };
    }) },
  { name: 'exporter_read_timeouts_total', help: 'Reads (of a port, or an MXL domain) that blocked past the read timeout and were given up.', type: 'counter', labels: [], changes: 'tick', read: (_views, state) =>
    state.sampler ? [{ labels: {}, value: state.sampler.reader.timeouts }] : [] },
  { name: 'exporter_blocked_reader_threads', help: 'Reader threads still inside a read that blocked (given up; at most 4 threads exist, and reads pause when all are blocked).', type: 'gauge', labels: [], changes: 'tick', read: (_views, state) =>
    state.sampler ? [{ labels: {}, value: state.sampler.reader.blockedThreads }] : [] },
  { name: 'exporter_reader_threads_lost_total', help: 'Reader threads that died and were replaced (no port is blamed for it).', type: 'counter', labels: [], changes: 'tick', read: (_views, state) =>
    state.sampler ? [{ labels: {}, value: state.sampler.reader.threadsLost }] : [] },
  { name: 'exporter_reads_bounded', help: 'Whether reads run on the native reader threads with a timeout (1), or on the event loop without one because libmfe-reader is missing (0).', type: 'gauge', labels: [], changes: 'tick', read: (_views, state) =>
    state.sampler ? [{ labels: {}, value: state.sampler.reader.mode === 'native' ? 1 : 0 }] : [] },
  { name: 'exporter_sample_duration_seconds', help: 'How long the last sampling tick took.', type: 'gauge', labels: [], changes: 'tick', read: (_views, state) =>
    state.sampler ? [{ labels: {}, value: state.sampler.lastTickSeconds }] : [] },
  { name: 'flow_predicted_ack_packets_per_second', help: "The model's acknowledgement packets per second a flow's RDMA writes draw, on the opposite direction of its port.", type: 'gauge', labels: ['flow_id', 'device', 'port', 'direction'], changes: 'plan', read: (views) =>
    ackSeries(views, (labels, p) => [{ labels, value: toNumber(p.reverse.packetsPerSecond) }]) },
  { name: 'flow_predicted_ack_bytes_per_second', help: "The model's acknowledgement bytes per second a flow's RDMA writes draw, on the opposite direction of its port, per layer.", type: 'gauge', labels: ['flow_id', 'device', 'port', 'direction', 'layer'], changes: 'plan', read: (views) =>
    ackSeries(views, (labels, p) => ACK_LAYERS.map((layer) => ({ labels: { ...labels, layer }, value: toNumber(p.reverse.bytesPerSecond[layer]) }))) },
  ...FLOW_TRUTH_FAMILIES,
  ...FABRIC_HEALTH_FAMILIES,
  ...CONNECTION_FAMILIES,
];

function firstPer<T>(items: readonly T[], key: (t: T) => string): T[] {
  const seen = new Set<string>();
  return items.filter((t) => (seen.has(key(t)) ? false : (seen.add(key(t)), true)));
}

/** A port's totals of the counters that mean `quantity` in `direction`, scaled to it. */
function meaningTotals(direction: Direction, quantity: Quantity): Read {
  return (views) => views.flatMap((v) => (v.sampled?.counters ?? []).flatMap((c) => {
    const m = c.series.spec.meaning;
    if (!m || m.direction !== direction || m.quantity !== quantity || c.series.total === undefined) return [];
    return [{ labels: counterLabels(v, c), value: Number(c.series.total) * m.scale }];
  }));
}

/** The acknowledgement series of each predicted flow that draws ACKs, labelled with the port's other direction. */
function ackSeries(views: readonly PortView[], series: (labels: Labels, p: Prediction) => Sample[]): Sample[] {
  return views.flatMap((v) => (v.plan?.flows ?? []).flatMap(({ binding: b, prediction: p }) => {
    if (!p || p.reverse.packetsPerSecond.num === 0n) return [];
    return series({ flow_id: b.flow.id, device: b.device, port: String(b.port), direction: b.direction === 'tx' ? 'rx' : 'tx' }, p);
  }));
}
