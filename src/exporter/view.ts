/** What the exporter knows right now, per port and direction: predictions, measurements, drift. */
import type { Config } from '../config/types.js';
import type { ConnectionMonitor } from '../sources/restrack/monitor.js';
import type { PortAssumptions } from '../health/assumptions.js';
import type { DomainMonitor } from '../domain/monitor.js';
import { measureFlow, type FlowMeasurement } from '../domain/measure.js';
import { type Culprit, type FlowStatus, countedTotals, flowStatuses, likelyCulprits } from '../predictions/expected.js';
import type { DirectionTotals, Planner, PortPlan } from '../predictions/plan.js';
import type { Measurement, Sampler, SampledPort } from '../sampler/sampler.js';
import { DIRECTIONS, type Direction, type Layer, type PortAttributes, type Quantity, portKey } from '../sources/types.js';

interface Drift {
  readonly quantity: Quantity;
  readonly ratio: number;
  readonly source: string;
  readonly layer: string | undefined;
}

/** Measured - predicted bytes per second at the layer (and from the source) drift uses. */
interface Unexplained {
  readonly bytesPerSecond: number;
  readonly layer: Layer;
}

export interface DirectionView {
  readonly direction: Direction;
  /** Sum over the flows that count now (expected or live); drift compares with this. */
  readonly predicted: DirectionTotals | undefined;
  /** Nothing counts in this direction now (no flow, no ACKs of a flow the other way): no drift. */
  readonly idle: boolean;
  readonly bytes: readonly Measurement[];
  readonly packets: readonly Measurement[];
  readonly drift: readonly Drift[];
  readonly unexplained: Unexplained | undefined;
  /** Flows closest to the unexplained bytes/s, while bytes drift is beyond the tolerance. */
  readonly culprits: readonly Culprit[];
}

export interface PortView {
  readonly device: string;
  readonly port: number;
  readonly plan: PortPlan | undefined;
  readonly sampled: SampledPort | undefined;
  /** Every flow bound to the port with its state and expectation, in the plan's order. */
  readonly flows: readonly FlowStatus[];
  readonly directions: readonly DirectionView[];
}

export interface ExporterState {
  readonly config: Config;
  readonly planner: Planner;
  readonly sampler: Sampler | undefined;
  readonly domains: DomainMonitor | undefined;
  /** Said on / and in the log when the host shows no RDMA port. */
  readonly rdmaNote: string | undefined;
  /** Host assumptions per port ("device/port"): VLAN, PFC (docs/fabric-health.md). */
  readonly assumptions?: ReadonlyMap<string, PortAssumptions>;
  /** RDMA connections from restrack (docs/connections.md); absent when `connections.enabled` is false. */
  readonly connections?: ConnectionMonitor;
}

export function attrsLookup(sampler: Sampler | undefined): (device: string, port: number) => PortAttributes | undefined {
  return (device, port) => sampler?.ports.get(portKey({ device, port }))?.attrs;
}

export function buildView(state: ExporterState): PortView[] {
  const plans = state.planner.plans(attrsLookup(state.sampler));
  const byKey = new Map<string, PortView>();
  const keys = new Set([...plans.map((p) => portKey(p.port)), ...(state.sampler?.ports.keys() ?? [])]);
  for (const k of [...keys].sort()) {
    const plan = plans.find((p) => portKey(p.port) === k);
    const sampled = state.sampler?.ports.get(k);
    const ref = sampled?.ref ?? { device: plan!.port.device, port: plan!.port.port };
    const flows = plan ? flowStatuses(plan.flows, state.domains) : [];
    const directions = DIRECTIONS.map((direction) => directionView(state, ref, direction, plan, flows));
    byKey.set(k, { device: ref.device, port: ref.port, plan, sampled, flows, directions });
  }
  return [...byKey.values()];
}

function directionView(
  state: ExporterState, ref: { device: string; port: number }, direction: Direction, plan: PortPlan | undefined, flows: readonly FlowStatus[],
): DirectionView {
  const bytes = state.sampler?.measurements(ref, direction, 'bytes') ?? [];
  const packets = state.sampler?.measurements(ref, direction, 'packets') ?? [];
  const totals = plan ? countedTotals(plan, flows, direction) : undefined;
  // A counted flow bound the other way still sends its ACKs this way (when it has any).
  const comesThisWay = (f: FlowStatus): boolean =>
    f.binding.direction === direction || f.prediction === undefined || f.prediction.reverse.packetsPerSecond.num > 0n;
  const idle = !flows.some((f) => f.counted && comesThisWay(f));
  const drift: Drift[] = [];
  const b = bytes.find((m) => m.layer !== undefined);
  const layer = b?.layer;
  if (b && layer && totals && totals.bytesPerSecond[layer] > 0) {
    drift.push({ quantity: 'bytes', ratio: b.rate / totals.bytesPerSecond[layer] - 1, source: b.source, layer });
  }
  const p = packets[0];
  if (p && totals && totals.packetsPerSecond > 0) {
    drift.push({ quantity: 'packets', ratio: p.rate / totals.packetsPerSecond - 1, source: p.source, layer: undefined });
  }
  const unexplained = b && layer && totals ? { bytesPerSecond: b.rate - totals.bytesPerSecond[layer], layer } : undefined;
  const bytesDrift = drift.find((d) => d.quantity === 'bytes');
  const culprits = unexplained && bytesDrift && Math.abs(bytesDrift.ratio) > state.config.driftTolerance
    ? likelyCulprits(flows, direction, unexplained.bytesPerSecond, unexplained.layer) : [];
  return { direction, predicted: totals, idle, bytes, packets, drift, unexplained, culprits };
}

export interface FlowMeasurementView {
  readonly flowId: string;
  readonly domain: string;
  readonly measurement: FlowMeasurement | undefined;
  readonly writerActive: boolean | undefined;
  readonly lastWriteAgeSeconds: number | undefined;
  readonly definitionValid: boolean;
}

/**
 * Per-flow measurements from the MXL domains, one per flow folder: the sender's and the
 * receiver's copy of a flow (same id, two domains) are two entries.
 */
export function flowMeasurements(state: ExporterState): FlowMeasurementView[] {
  if (!state.domains) return [];
  const durations = new Map(state.planner.allBindings().map((b) => [b.flow.id, b.grainDuration]));
  return state.domains.flows().map(({ domain, flow: f }) => {
    const rate = f.headIndex.rate();
    const def = f.def;
    return {
      flowId: f.id,
      domain,
      measurement: def && rate !== undefined ? measureFlow(def, durations.get(f.id) ?? f.audioBatch, rate) : undefined,
      writerActive: f.writerActive,
      lastWriteAgeSeconds: f.lastWriteAgeSeconds,
      definitionValid: def !== undefined,
    };
  });
}
