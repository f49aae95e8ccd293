/** What the exporter knows right now, per port and direction: predictions, measurements, drift. */
import type { Config } from '../config/types.js';
import type { PortAssumptions } from '../health/assumptions.js';
import type { DomainMonitor } from '../domain/monitor.js';
import { measureFlow, type FlowMeasurement } from '../domain/measure.js';
import { DEFAULT_AUDIO_GRAIN_DURATION } from '../model/index.js';
import type { Planner, PortPlan } from '../predictions/plan.js';
import type { Measurement, Sampler, SampledPort } from '../sampler/sampler.js';
import { DIRECTIONS, type Direction, type PortAttributes, type Quantity, portKey } from '../sources/types.js';

export interface Drift {
  readonly quantity: Quantity;
  readonly ratio: number;
  readonly source: string;
  readonly layer: string | undefined;
}

export interface DirectionView {
  readonly direction: Direction;
  readonly bytes: readonly Measurement[];
  readonly packets: readonly Measurement[];
  readonly drift: readonly Drift[];
}

export interface PortView {
  readonly device: string;
  readonly port: number;
  readonly plan: PortPlan | undefined;
  readonly sampled: SampledPort | undefined;
  readonly directions: readonly DirectionView[];
}

export interface ExporterState {
  readonly config: Config;
  readonly planner: Planner;
  readonly sampler: Sampler | undefined;
  readonly domains: DomainMonitor | undefined;
  /** Said on / and in the log when the host shows no RDMA port. */
  readonly rdmaNote: string | undefined;
  /** Host assumptions per port ("device/port"): VLAN, PFC (README "Fabric health"). */
  readonly assumptions?: ReadonlyMap<string, PortAssumptions>;
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
    const directions = DIRECTIONS.map((direction) => directionView(state.sampler, ref, direction, plan));
    byKey.set(k, { device: ref.device, port: ref.port, plan, sampled, directions });
  }
  return [...byKey.values()];
}

function directionView(
  sampler: Sampler | undefined, ref: { device: string; port: number }, direction: Direction, plan: PortPlan | undefined,
): DirectionView {
  const bytes = sampler?.measurements(ref, direction, 'bytes') ?? [];
  const packets = sampler?.measurements(ref, direction, 'packets') ?? [];
  const totals = plan?.totals[direction];
  const drift: Drift[] = [];
  const b = bytes.find((m) => m.layer !== undefined);
  if (b && totals && totals.bytesPerSecond[b.layer!] > 0) {
    drift.push({ quantity: 'bytes', ratio: b.rate / totals.bytesPerSecond[b.layer!] - 1, source: b.source, layer: b.layer });
  }
  const p = packets[0];
  if (p && totals && totals.packetsPerSecond > 0) {
    drift.push({ quantity: 'packets', ratio: p.rate / totals.packetsPerSecond - 1, source: p.source, layer: undefined });
  }
  return { direction, bytes, packets, drift };
}

export interface FlowMeasurementView {
  readonly flowId: string;
  readonly domain: string;
  readonly measurement: FlowMeasurement | undefined;
  readonly writerActive: boolean | undefined;
  readonly lastWriteAgeSeconds: number | undefined;
  readonly definitionValid: boolean;
}

/** Per-flow measurements from the MXL domains; a flow bound twice is measured once. */
export function flowMeasurements(state: ExporterState): FlowMeasurementView[] {
  if (!state.domains) return [];
  const durations = new Map(state.planner.allBindings().map((b) => [b.flow.id, b.grainDuration]));
  return state.domains.flows().map((f) => {
    const rate = f.headIndex.rate();
    const def = f.def;
    return {
      flowId: f.id,
      domain: f.dir.slice(0, f.dir.lastIndexOf('/')),
      measurement: def && rate !== undefined ? measureFlow(def, durations.get(f.id) ?? DEFAULT_AUDIO_GRAIN_DURATION, rate) : undefined,
      writerActive: f.writerActive,
      lastWriteAgeSeconds: f.lastWriteAgeSeconds,
      definitionValid: def !== undefined,
    };
  });
}
