/**
 * Predictions per flow and per port: config -> flows -> model. A port's
 * `mtu: auto` and `capacity: auto` resolve from the port's attributes; plans
 * are cached per port until its MTU changes.
 */
import { loopTurn } from '../event-loop.js';
import { flatString } from '../flat-string.js';
import { type Mtu, type Prediction, type ProviderProfile, type Rational, type ReversePrediction, LAYERS, type Layer, predict, toNumber, ZERO, add, scale } from '../model/index.js';
import { type FlowDefinition, mediaOf } from '../flows/definition.js';
import type { Config, FlowBinding, PortConfig } from '../config/types.js';
import { bindingKey, portKey } from '../config/types.js';

/** A port only a discovered binding names gets the top-level headroom; config/load.ts's default when none was read. */
const DEFAULT_HEADROOM = 0.9;
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

function resolveMtu(port: PortConfig, attrs: PortAttributes | undefined): Pick<PortPlan, 'mtu' | 'mtuFrom'> {
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
  // Flows of one format share one prediction (predictionFor): each is summed once, times its count.
  const forward = new Map<Prediction, number>();
  const reverse = new Map<ReversePrediction, number>();
  let n = 0;
  for (const f of flows) {
    if (!f.prediction) continue;
    if (f.binding.direction === direction) {
      forward.set(f.prediction, (forward.get(f.prediction) ?? 0) + 1);
      n++;
    } else {
      reverse.set(f.prediction.reverse, (reverse.get(f.prediction.reverse) ?? 0) + 1);
    }
  }
  const sum = <T>(counts: ReadonlyMap<T, number>, pick: (t: T) => Rational): Rational => {
    let acc = ZERO;
    for (const [t, k] of counts) acc = add(acc, scale(pick(t), k));
    return acc;
  };
  const both = (data: (p: Prediction) => Rational, acks: (r: ReversePrediction) => Rational): number =>
    toNumber(add(sum(forward, data), sum(reverse, acks)));
  const bytes = Object.fromEntries(LAYERS.map((l) => [l, both((p) => p.bytesPerSecond[l], (r) => r.bytesPerSecond[l])])) as Record<Layer, number>;
  return { flows: n, bytesPerSecond: bytes, packetsPerSecond: both((p) => p.packetsPerSecond, (r) => r.packetsPerSecond) };
}

/**
 * predict() is pure in (media, grain duration, provider, MTU, transfer options): flows that
 * share them share one prediction, so 10,000 flows of a few formats cost a few predictions on a
 * reload, not 10,000.
 */
const predictions = new WeakMap<ProviderProfile, Map<string, Prediction>>();
const mediaKeys = new WeakMap<FlowDefinition, string>();
const bigintText = (_k: string, v: unknown): unknown => (typeof v === 'bigint' ? `${v}n` : v);

function predictionFor(binding: FlowBinding, mtu: Mtu): Prediction {
  let byKey = predictions.get(binding.provider);
  if (byKey === undefined) predictions.set(binding.provider, (byKey = new Map<string, Prediction>()));
  let media = mediaKeys.get(binding.flow);
  if (media === undefined) mediaKeys.set(binding.flow, (media = flatString(JSON.stringify(binding.flow.media, bigintText))));
  const transfer = binding.transfer ? JSON.stringify(binding.transfer, bigintText) : '';
  const key = `${mtu.kind}:${mtu.bytes}|${binding.grainDuration.num}/${binding.grainDuration.den}|${transfer}|${media}`;
  let p = byKey.get(key);
  if (p === undefined) byKey.set(key, (p = predict(mediaOf(binding.flow, binding.grainDuration), binding.provider, mtu, binding.transfer)));
  return p;
}

export function planPort(port: PortConfig, bindings: readonly FlowBinding[], attrs: PortAttributes | undefined): PortPlan {
  const { mtu, mtuFrom } = resolveMtu(port, attrs);
  const flows = bindings
    .filter((b) => b.device === port.device && b.port === port.port)
    .map((binding) => ({ binding, prediction: mtu ? predictionFor(binding, mtu) : undefined }));
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

  /** The config's ports, and those only a discovered binding names (a `bind: auto` flow's connection). */
  private ports: readonly PortConfig[];

  constructor(readonly config: Config) {
    this.bindings = config.flows;
    this.ports = config.ports;
  }

  /** Flows discovered in MXL domains join the configured ones; a configured binding wins. */
  setDiscovered(discovered: readonly FlowBinding[]): void {
    const configured = new Set(this.config.flows.map(bindingKey));
    this.bindings = [...this.config.flows, ...discovered.filter((b) => !configured.has(bindingKey(b)))];
    const listed = new Set(this.config.ports.map(portKey));
    const implied = new Map<string, PortConfig>();
    for (const b of discovered) {
      if (listed.has(portKey(b)) || implied.has(portKey(b))) continue;
      implied.set(portKey(b), {
        device: b.device, port: b.port, provider: b.provider, mtu: 'auto', capacityBitsPerSecond: 'auto',
        headroom: this.config.headroom ?? DEFAULT_HEADROOM, declared: false,
      });
    }
    this.ports = [...this.config.ports, ...implied.values()];
    this.cache.clear();
    this.version++;
  }

  /** Every port planned: configured, implied by a flow, or where a connection put a discovered flow. */
  planned(): readonly PortConfig[] {
    return this.ports;
  }

  allBindings(): readonly FlowBinding[] {
    return this.bindings;
  }

  /** The bindings of one port, grouped once per set of bindings (not filtered per port). */
  private byPort: { readonly of: readonly FlowBinding[]; readonly map: Map<string, FlowBinding[]> } | undefined;
  private bindingsOf(port: PortConfig): readonly FlowBinding[] {
    if (this.byPort?.of !== this.bindings) {
      const map = new Map<string, FlowBinding[]>();
      for (const b of this.bindings) {
        const k = portKey(b);
        const list = map.get(k);
        if (list) list.push(b);
        else map.set(k, [b]);
      }
      this.byPort = { of: this.bindings, map };
    }
    return this.byPort.map.get(portKey(port)) ?? [];
  }

  /**
   * Builds the plans of every port now, one port per turn of the event loop, so the first
   * scrape after a reload of 10,000 flows finds them made (plans() would make them in one go).
   */
  async prepare(attrsOf: (device: string, port: number) => PortAttributes | undefined): Promise<void> {
    for (const port of this.ports) {
      this.planOf(port, attrsOf(port.device, port.port));
      await loopTurn();
    }
  }

  plans(attrsOf: (device: string, port: number) => PortAttributes | undefined): PortPlan[] {
    return this.ports.map((port) => this.planOf(port, attrsOf(port.device, port.port)));
  }

  private planOf(port: PortConfig, attrs: PortAttributes | undefined): PortPlan {
    const signature = `${attrs?.activeIbMtu ?? '-'} ${attrs?.rateBitsPerSecond ?? '-'}`;
    const hit = this.cache.get(portKey(port));
    if (hit && hit.signature === signature) return hit.plan;
    const plan = planPort(port, this.bindingsOf(port), attrs);
    this.cache.set(portKey(port), { signature, plan });
    this.version++;
    return plan;
  }
}
