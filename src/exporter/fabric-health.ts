/**
 * Fabric-health families (docs/fabric-health.md): congestion, pause, transport errors and
 * discards in one vocabulary across drivers, and the host assumptions the model relies on.
 * Each vocabulary series carries the driver's own counter name (`counter`) and its `source`.
 */
import { healthSeries, type HealthSeries } from '../health/vocabulary-series.js';
import type { HealthFamily } from '../sources/vocabulary/index.js';
import { portKey } from '../sources/types.js';
import { type Family, type Read, portLabels } from './family.js';

function vocabulary(family: HealthFamily): Read {
  return (views) => views.flatMap((v) => (v.sampled ? healthSeries(v.sampled) : [])
    .filter((s: HealthSeries) => s.family === family)
    .map((s) => ({ labels: { ...portLabels(v), ...s.labels, source: s.source, counter: s.counter }, value: s.value })));
}

export const FABRIC_HEALTH_FAMILIES: readonly Family[] = [
  { name: 'port_ecn_marked_packets_total', help: 'RoCE packets received with an ECN congestion mark (CE), per driver counter.', type: 'counter', labels: ['device', 'port', 'source', 'counter'], changes: 'tick', read: vocabulary('ecn_marked_packets') },
  { name: 'port_cnp_sent_total', help: 'Congestion notification packets (CNPs) the port sent in answer to ECN-marked packets (notification point).', type: 'counter', labels: ['device', 'port', 'source', 'counter'], changes: 'tick', read: vocabulary('cnp_sent') },
  { name: 'port_cnp_handled_total', help: 'CNPs the port received and acted on by slowing the flow (reaction point).', type: 'counter', labels: ['device', 'port', 'source', 'counter'], changes: 'tick', read: vocabulary('cnp_handled') },
  { name: 'port_cnp_ignored_total', help: 'CNPs the port received and ignored; rising means the adapter\'s congestion reaction (ECN/DCQCN) is off.', type: 'counter', labels: ['device', 'port', 'source', 'counter'], changes: 'tick', read: vocabulary('cnp_ignored') },
  { name: 'port_pause_frames_total', help: 'Pause frames per direction and priority (0..7: PFC; global: 802.3x link pause); rx: the peer paused this port.', type: 'counter', labels: ['device', 'port', 'direction', 'priority', 'source', 'counter'], changes: 'tick', read: vocabulary('pause_frames') },
  { name: 'port_pause_duration_seconds_total', help: 'Time paused per direction and priority, where the driver counts it.', type: 'counter', labels: ['device', 'port', 'direction', 'priority', 'source', 'counter'], changes: 'tick', read: vocabulary('pause_duration') },
  { name: 'port_transport_errors_total', help: 'RDMA transport errors and retries by kind (docs/fabric-health.md).', type: 'counter', labels: ['device', 'port', 'kind', 'source', 'counter'], changes: 'tick', read: vocabulary('transport_errors') },
  { name: 'port_discards_total', help: 'Packets the port dropped, by direction and reason (docs/fabric-health.md).', type: 'counter', labels: ['device', 'port', 'direction', 'reason', 'source', 'counter'], changes: 'tick', read: vocabulary('discards') },
  { name: 'port_pfc_enabled', help: 'Whether PFC is enabled on a priority of the port\'s netdev (DCB netlink, IEEE 802.1Qaz); absent when the netdev has no DCB.', type: 'gauge', labels: ['device', 'port', 'priority'], changes: 'tick', read: (views, state) =>
    views.flatMap((v) => {
      const pfc = state.assumptions?.get(portKey(v))?.pfc;
      return pfc?.known ? pfc.enabled.map((on, p) => ({ labels: { ...portLabels(v), priority: String(p) }, value: on ? 1 : 0 })) : [];
    }) },
  { name: 'port_vlan_tagged', help: 'Whether the port\'s RoCE netdev is an 802.1Q VLAN device, so every frame carries 4 more bytes than an untagged one.', type: 'gauge', labels: ['device', 'port'], changes: 'tick', read: (views, state) =>
    views.flatMap((v) => {
      const vlan = state.assumptions?.get(portKey(v))?.vlan;
      return vlan === undefined ? [] : [{ labels: portLabels(v), value: vlan ? 1 : 0 }];
    }) },
];
