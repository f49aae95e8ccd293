/**
 * Expected against live: each flow binding's state (from the MXL domains that cover it), its
 * resolved expectation (`expect:`), and whether it counts in the port's prediction now.
 *
 * A flow counts when it is live, or when nothing shows its state (no domain covers it, or the
 * domain cannot be read) and it is expected `always`. A flow a domain shows absent or stalled
 * is not on the wire: it leaves the port's prediction, and the flow alerts (MxlFabricFlowMissing,
 * MxlFabricFlowStalled) name it instead of a vague port drift. `never` flows never count.
 */
import type { DomainConfig, Expect, FlowBinding } from '../config/types.js';
import type { FlowState } from '../domain/activity.js';
import { type Layer, toNumber } from '../model/index.js';
import type { Direction } from '../sources/types.js';
import { type DirectionTotals, type FlowPrediction, type PortPlan, totalsFor } from './plan.js';

/** What the MXL domains say about bindings (the DomainMonitor; absent without `domains:`). */
export interface FlowEvidence {
  /** Combined state over the covering domains; undefined when no domain covers the binding. */
  evidence(b: FlowBinding): FlowState | undefined;
  covering(b: FlowBinding): readonly DomainConfig[];
}

export interface FlowStatus extends FlowPrediction {
  /** `unknown` when no domain covers the binding or none can be read. */
  readonly state: FlowState;
  /** Whether some domain covers the binding. */
  readonly covered: boolean;
  readonly expect: Expect;
  /** In `port_predicted_*` now. */
  readonly counted: boolean;
}

/** The flow's own `expect:`, else its covering domain's, else `when_live` where a domain sees it and `always` elsewhere. */
export function resolveExpect(b: FlowBinding, covering: readonly DomainConfig[]): Expect {
  return b.expect ?? covering.find((d) => d.expect !== undefined)?.expect ?? (covering.length > 0 ? 'when_live' : 'always');
}

export function counts(expect: Expect, state: FlowState): boolean {
  if (expect === 'never') return false;
  return state === 'live' || (state === 'unknown' && expect === 'always');
}

export function flowStatuses(flows: readonly FlowPrediction[], evidence: FlowEvidence | undefined): FlowStatus[] {
  return flows.map((f) => {
    const covering = evidence?.covering(f.binding) ?? [];
    const state = evidence?.evidence(f.binding) ?? 'unknown';
    const expect = resolveExpect(f.binding, covering);
    return { ...f, state, covered: covering.length > 0, expect, counted: counts(expect, state) };
  });
}

/** Per plan, direction and counted set seen lately, the totals (exact sums are not free). */
const memo = new WeakMap<PortPlan, Map<string, DirectionTotals | undefined>>();
const MEMO_LIMIT = 64;

/**
 * The port's prediction now in one direction: the counted flows bound that way, and the ACKs of
 * the counted flows bound the other way (undefined: MTU unknown). `statuses` are
 * `flowStatuses(plan.flows, ...)`, in the plan's order.
 */
export function countedTotals(plan: PortPlan, statuses: readonly FlowStatus[], direction: Direction): DirectionTotals | undefined {
  const counted = statuses.filter((s) => s.counted);
  const key = `${direction} ${statuses.flatMap((s, i) => (s.counted ? [i] : [])).join(',')}`;
  let seen = memo.get(plan);
  if (!seen) memo.set(plan, (seen = new Map()));
  if (seen.has(key)) return seen.get(key);
  const totals = totalsFor(counted, direction, plan.mtu !== undefined);
  if (seen.size >= MEMO_LIMIT) seen.clear();
  seen.set(key, totals);
  return totals;
}

export interface Culprit {
  readonly rank: number;
  readonly binding: FlowBinding;
  /** The flow's predicted bytes per second at the layer of the unexplained rate. */
  readonly bytesPerSecond: number;
}

/**
 * The flows whose predicted rate is closest to the bytes per second the port's prediction does
 * not explain (measured - predicted): with too little traffic, a counted flow that is probably
 * not on the wire; with too much, a flow not counted that probably is. When that side has no
 * candidate, every flow of the direction is one.
 */
export function likelyCulprits(statuses: readonly FlowStatus[], direction: Direction, unexplained: number, layer: Layer, n = 3): Culprit[] {
  const mine = statuses.filter((s) => s.binding.direction === direction && s.prediction);
  const side = mine.filter((s) => s.counted === unexplained < 0);
  const pool = side.length > 0 ? side : mine;
  const target = Math.abs(unexplained);
  return pool
    .map((s) => ({ binding: s.binding, bytesPerSecond: toNumber(s.prediction!.bytesPerSecond[layer]) }))
    .sort((a, b) => Math.abs(a.bytesPerSecond - target) - Math.abs(b.bytesPerSecond - target) || a.binding.flow.id.localeCompare(b.binding.flow.id))
    .slice(0, n)
    .map((c, i) => ({ rank: i + 1, ...c }));
}
