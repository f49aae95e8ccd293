/**
 * Predictions per flow and per port: config -> flows -> model. A port's
 * `mtu: auto` and `capacity: auto` resolve from the port's attributes; plans
 * are cached per port until its MTU changes.
 */
import { type Mtu, type Prediction, type Rational, type ReversePrediction, LAYERS, type Layer, predict, toNumber, ZERO, add } from '../model/index.js';
import { mediaOf } from '../flows/definition.js';
import type { Config, FlowBinding, PortConfig } from '../config/types.js';
import { bindingKey, portKey } from '../config/types.js';
import type { Direction, PortAttributes } from '../sources/types.js';

export interface FlowPrediction {
  readonly binding: FlowBinding;
  readonly prediction: Prediction | undefined;
}

export interface DirectionTotals {
  readonly flows: number;
  readonly bytesPerSecond: Readonly<Record<Layer, number>>;
  readonly packetsPerSecond: number;
}

export interface PortPlan {
  readonly port: PortConfig;
  readonly mtu: Mtu | undefined;
  readonly mtuFrom: 'config' | 'port' | 'unknown';
  readonly capacityBytesPerSecond: number | undefined;
  readonly capacityFrom: 'config' | 'port' | 'unknown';
  readonly flows: readonly FlowPrediction[];
  /** Undefined for a direction when the MTU is unknown and so nothing can be predicted. */
  readonly totals: Readonly<Record<Direction, DirectionTotals | undefined>>;
}

export function resolveMtu(port: PortConfig, attrs: PortAttributes | undefined): Pick<PortPlan, 'mtu' | 'mtuFrom'> {
  if (port.mtu !== 'auto') return { mtu: port.mtu, mtuFrom: 'config' };
  if (attrs?.activeIbMtu !== undefined) return { mtu: { kind: 'ib', bytes: attrs.activeIbMtu }, mtuFrom: 'port' };
  return { mtu: undefined, mtuFrom: 'unknown' };
}

function resolveCapacity(port: PortConfig, attrs: PortAttributes | undefined): Pick<PortPlan, 'capacityBytesPerSecond' | 'capacityFrom'> {
  if (port.capacityBitsPerSecond !== 'auto') return { capacityBytesPerSecond: port.capacityBitsPerSecond / 8, capacityFrom: 'config' };
  if (attrs?.rateBitsPerSecond !== undefined) return { capacityBytesPerSecond: attrs.rateBitsPerSecond / 8, capacityFrom: 'port' };
  return { capacityBytesPerSecond: undefined, capacityFrom: 'unknown' };
}

/**
 * A direction of a port carries the flows bound to it in that direction and the
 * acknowledgements of the flows bound the other way (each prediction's `reverse`).
 */
export function totalsFor(flows: readonly FlowPrediction[], direction: Direction, mtuKnown: boolean): DirectionTotals | undefined {
  if (!mtuKnown) return undefined;
  const predicted = flows.filter((f) => f.prediction);
  const forward = predicted.filter((f) => f.binding.direction === direction).map((f) => f.prediction!);
  const reverse = predicted.filter((f) => f.binding.direction !== direction).map((f) => f.prediction!.reverse);
  const sum = <T>(items: readonly T[], pick: (t: T) => Rational): Rational => items.reduce((acc, t) => add(acc, pick(t)), ZERO);
  const both = (data: (p: Prediction) => Rational, acks: (r: ReversePrediction) => Rational): number =>
    toNumber(add(sum(forward, data), sum(reverse, acks)));
  const bytes = Object.fromEntries(LAYERS.map((l) => [l, both((p) => p.bytesPerSecond[l], (r) => r.bytesPerSecond[l])])) as Record<Layer, number>;
  return { flows: forward.length, bytesPerSecond: bytes, packetsPerSecond: both((p) => p.packetsPerSecond, (r) => r.packetsPerSecond) };
}

export function planPort(port: PortConfig, bindings: readonly FlowBinding[], attrs: PortAttributes | undefined): PortPlan {
  const { mtu, mtuFrom } = resolveMtu(port, attrs);
  const flows = bindings
    .filter((b) => b.device === port.device && b.port === port.port)
    .map((binding) => ({ binding, prediction: mtu ? predict(mediaOf(binding.flow, binding.grainDuration), binding.provider, mtu, binding.transfer) : undefined }));
  return {
    port, mtu, mtuFrom, ...resolveCapacity(port, attrs), flows,
    totals: { tx: totalsFor(flows, 'tx', mtu !== undefined), rx: totalsFor(flows, 'rx', mtu !== undefined) },
  };
}

/** Keeps one plan per port, rebuilt only when the port's MTU or capacity inputs or its flows change. */
export class Planner {
  private readonly cache = new Map<string, { readonly signature: string; readonly plan: PortPlan }>();
  private bindings: readonly FlowBinding[];
  /** Goes up whenever a plan is rebuilt: text made from plans can be kept while it stays. */
  version = 0;

  constructor(readonly config: Config) {
    this.bindings = config.flows;
  }

  /** Flows discovered in MXL domains join the configured ones; a configured binding wins. */
  setDiscovered(discovered: readonly FlowBinding[]): void {
    const configured = new Set(this.config.flows.map(bindingKey));
    this.bindings = [...this.config.flows, ...discovered.filter((b) => !configured.has(bindingKey(b)))];
    this.cache.clear();
    this.version++;
  }

  allBindings(): readonly FlowBinding[] {
    return this.bindings;
  }

  plans(attrsOf: (device: string, port: number) => PortAttributes | undefined): PortPlan[] {
    return this.config.ports.map((port) => {
      const attrs = attrsOf(port.device, port.port);
      const signature = `${attrs?.activeIbMtu ?? '-'} ${attrs?.rateBitsPerSecond ?? '-'}`;
      const hit = this.cache.get(portKey(port));
      if (hit && hit.signature === signature) return hit.plan;
      const plan = planPort(port, this.bindings, attrs);
      this.cache.set(portKey(port), { signature, plan });
      this.version++;
      return plan;
    });
  }
}
