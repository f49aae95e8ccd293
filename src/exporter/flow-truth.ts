/**
 * Metric families for flow state and expectation (docs/metrics.md, docs/flows-and-domains.md): which flows
 * are live, which are expected, what each port's prediction counts now and what it leaves
 * unexplained. Appended to the exporter's families in families.ts.
 */
import { LAYERS } from '../model/index.js';
import type { Labels } from './exposition.js';
import { type Family, portLabels } from './family.js';
import type { PortView } from './view.js';

const bindingLabels = (v: PortView, flowId: string, direction: string): Labels => ({ flow_id: flowId, ...portLabels(v), direction });

export const FLOW_TRUTH_FAMILIES: readonly Family[] = [
  { name: 'port_provisioned_bytes_per_second', help: 'Sum of the predictions of every flow bound to a port and direction, whatever its state (provisioning), per layer.', type: 'gauge', labels: ['device', 'port', 'direction', 'layer'], changes: 'plan', read: (views) =>
    views.flatMap((v) => v.directions.flatMap((d) => {
      const t = v.plan?.totals[d.direction];
      return t ? LAYERS.map((layer) => ({ labels: { ...portLabels(v), direction: d.direction, layer }, value: t.bytesPerSecond[layer] })) : [];
    })) },
  { name: 'port_provisioned_packets_per_second', help: 'Sum of the predicted packets per second of every flow bound to a port and direction, whatever its state.', type: 'gauge', labels: ['device', 'port', 'direction'], changes: 'plan', read: (views) =>
    views.flatMap((v) => v.directions.flatMap((d) => {
      const t = v.plan?.totals[d.direction];
      return t ? [{ labels: { ...portLabels(v), direction: d.direction }, value: t.packetsPerSecond }] : [];
    })) },
  { name: 'port_idle', help: 'Whether no flow counts on a port and direction now (nothing expected or live): 1 idle, no drift is computed.', type: 'gauge', labels: ['device', 'port', 'direction'], changes: 'tick', read: (views) =>
    views.flatMap((v) => v.plan ? v.directions.map((d) => ({ labels: { ...portLabels(v), direction: d.direction }, value: d.idle ? 1 : 0 })) : []) },
  { name: 'port_unexplained_bytes_per_second', help: 'Measured - predicted bytes per second at the layer and source port drift uses (negative: traffic missing).', type: 'gauge', labels: ['device', 'port', 'direction', 'layer'], changes: 'tick', read: (views) =>
    views.flatMap((v) => v.directions.flatMap((d) => d.unexplained ? [{
      labels: { ...portLabels(v), direction: d.direction, layer: d.unexplained.layer }, value: d.unexplained.bytesPerSecond,
    }] : [])) },
  { name: 'port_drift_culprit_bytes_per_second', help: 'While bytes drift is beyond the tolerance: the flows whose predicted bytes/s (at the drift layer) is closest to the unexplained bytes/s, rank 1 closest.', type: 'gauge', labels: ['device', 'port', 'direction', 'rank', 'flow_id', 'label'], changes: 'tick', read: (views) =>
    views.flatMap((v) => v.directions.flatMap((d) => d.culprits.map((c) => ({
      labels: { ...portLabels(v), direction: d.direction, rank: String(c.rank), flow_id: c.binding.flow.id, label: c.binding.flow.label },
      value: c.bytesPerSecond,
    })))) },
  // flow_expected and flow_state only for bindings a domain covers: elsewhere the state is unknown
  // by definition, and a 1,000-flow host without domains would send 2,000 lines of it per scrape.
  { name: 'flow_expected', help: 'Whether a flow binding an MXL domain covers must be on the wire (1: expect always); the expect label says always, when_live or never.', type: 'gauge', labels: ['flow_id', 'device', 'port', 'direction', 'expect'], changes: 'plan', read: (views) =>
    views.flatMap((v) => v.flows.filter((f) => f.covered).map((f) => ({
      labels: { ...bindingLabels(v, f.binding.flow.id, f.binding.direction), expect: f.expect }, value: f.expect === 'always' ? 1 : 0,
    }))) },
  { name: 'flow_live', help: 'Whether an MXL domain shows the flow binding live (1) or not (0: stalled or absent); absent when its state is unknown.', type: 'gauge', labels: ['flow_id', 'device', 'port', 'direction'], changes: 'tick', read: (views) =>
    views.flatMap((v) => v.flows.flatMap((f) => f.state === 'unknown' ? [] : [{
      labels: bindingLabels(v, f.binding.flow.id, f.binding.direction), value: f.state === 'live' ? 1 : 0,
    }])) },
  // One series per binding, for its current state only (not 0/1 for each of the four).
  { name: 'flow_state', help: 'The state of a flow binding an MXL domain covers (live, stalled, absent, unknown), in the state label; always 1.', type: 'gauge', labels: ['flow_id', 'device', 'port', 'direction', 'state'], changes: 'tick', read: (views) =>
    views.flatMap((v) => v.flows.filter((f) => f.covered).map((f) => ({
      labels: { ...bindingLabels(v, f.binding.flow.id, f.binding.direction), state: f.state }, value: 1,
    }))) },
  { name: 'domain_up', help: 'Whether a configured MXL domain folder can be read (0: see the log for the reason).', type: 'gauge', labels: ['domain'], changes: 'tick', read: (_views, state) =>
    (state.domains?.status() ?? []).map((s) => ({ labels: { domain: s.path }, value: s.up ? 1 : 0 })) },
];
