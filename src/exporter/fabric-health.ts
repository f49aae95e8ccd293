/**
 * Fabric-health families (README "Fabric health"): congestion, pause, transport errors and
 * discards in one vocabulary across drivers, and the host assumptions the model relies on.
 * Each vocabulary series carries the driver's own counter name (`counter`) and its `source`.
 */
import { healthSeries, type HealthSeries } from '../health/vocabulary-series.js';
import type { HealthFamily } from '../sources/vocabulary/index.js';
import { portKey } from '../sources/types.js';
import type { Sample } from './exposition.js';
import type { ExporterState, PortView } from './view.js';

type Read = (views: readonly PortView[], state: ExporterState) => Sample[];
export type HealthFamilyDef = [name: string, help: string, type: 'gauge' | 'counter', read: Read];

const portLabels = (v: PortView): Record<string, string> => ({ device: v.device, port: String(v.port) });

function vocabulary(family: HealthFamily): Read {
  return (views) => views.flatMap((v) => (v.sampled ? healthSeries(v.sampled) : [])
    .filter((s: HealthSeries) => s.family === family)
    .map((s) => ({ labels: { ...portLabels(v), ...s.labels, source: s.source, counter: s.counter }, value: s.value })));
}

export const FABRIC_HEALTH_FAMILIES: readonly HealthFamilyDef[] = [
  ['port_ecn_marked_packets_total', 'RoCE packets received with an ECN congestion mark (CE), per driver counter.', 'counter', vocabulary('ecn_marked_packets')],
  ['port_cnp_sent_total', 'Congestion notification packets (CNPs) the port sent in answer to ECN-marked packets (notification point).', 'counter', vocabulary('cnp_sent')],
  ['port_cnp_handled_total', 'CNPs the port received and acted on by slowing the flow (reaction point).', 'counter', vocabulary('cnp_handled')],
  ['port_cnp_ignored_total', 'CNPs the port received and ignored; rising means the adapter\'s congestion reaction (ECN/DCQCN) is off.', 'counter', vocabulary('cnp_ignored')],
  ['port_pause_frames_total', 'Pause frames per direction and priority (0..7: PFC; global: 802.3x link pause); rx: the peer paused this port.', 'counter', vocabulary('pause_frames')],
  ['port_pause_duration_seconds_total', 'Time paused per direction and priority, where the driver counts it.', 'counter', vocabulary('pause_duration')],
  ['port_transport_errors_total', 'RDMA transport errors and retries by kind (README "Fabric health").', 'counter', vocabulary('transport_errors')],
  ['port_discards_total', 'Packets the port dropped, by direction and reason (README "Fabric health").', 'counter', vocabulary('discards')],
  ['port_pfc_enabled', 'Whether PFC is enabled on a priority of the port\'s netdev (DCB netlink, IEEE 802.1Qaz); absent when the netdev has no DCB.', 'gauge', (views, state) =>
    views.flatMap((v) => {
      const pfc = state.assumptions?.get(portKey(v))?.pfc;
      return pfc?.known ? pfc.enabled.map((on, p) => ({ labels: { ...portLabels(v), priority: String(p) }, value: on ? 1 : 0 })) : [];
    })],
  ['port_vlan_tagged', 'Whether the port\'s RoCE netdev is an 802.1Q VLAN device, so every frame carries 4 more bytes than an untagged one.', 'gauge', (views, state) =>
    views.flatMap((v) => {
      const vlan = state.assumptions?.get(portKey(v))?.vlan;
      return vlan === undefined ? [] : [{ labels: portLabels(v), value: vlan ? 1 : 0 }];
    })],
];
