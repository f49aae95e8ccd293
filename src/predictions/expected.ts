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

/** Without domains a plan's statuses never change: made once per plan's flows (every view asks, every tick). */
const unwatched = new WeakMap<readonly FlowPrediction[], readonly FlowStatus[]>();

export function flowStatuses(flows: readonly FlowPrediction[], evidence: FlowEvidence | undefined): readonly FlowStatus[] {
  if (evidence) return flows.map((f) => statusOf(f, evidence.covering(f.binding), evidence.evidence(f.binding) ?? 'unknown'));
  let made = unwatched.get(flows);
  if (!made) unwatched.set(flows, (made = flows.map((f) => statusOf(f, [], 'unknown'))));
  return made;
}

function statusOf({ binding, prediction }: FlowPrediction, covering: readonly DomainConfig[], state: FlowState): FlowStatus {
  const expect = resolveExpect(binding, covering);
  return { binding, prediction, state, covered: covering.length > 0, expect, counted: counts(expect, state) };
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
  const key = countedKey(statuses, direction);
  let seen = memo.get(plan);
  if (!seen) memo.set(plan, (seen = new Map<string, DirectionTotals | undefined>()));
  if (seen.has(key)) return seen.get(key);
  const totals = totalsFor(statuses.filter((s) => s.counted), direction, plan.mtu !== undefined);
  if (seen.size >= MEMO_LIMIT) seen.clear();
  seen.set(key, totals);
  return totals;
}

/** The direction and which of the plan's flows count: `all` when every one does (most ticks), else their indices. */
function countedKey(statuses: readonly FlowStatus[], direction: Direction): string {
  if (statuses.every((s) => s.counted)) return `${direction} all`;
  const counted: number[] = [];
  for (let i = 0; i < statuses.length; i++) if (statuses[i]!.counted) counted.push(i);
  return `${direction} ${counted.join(',')}`;
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
  const closer = (a: Candidate, b: Candidate): number => Math.abs(a.bytesPerSecond - target) - Math.abs(b.bytesPerSecond - target) || a.binding.flow.id.localeCompare(b.binding.flow.id);
  return firstN(pool.map((s) => ({ binding: s.binding, bytesPerSecond: toNumber(s.prediction!.bytesPerSecond[layer]) })), n, closer).map((c, i) => ({ rank: i + 1, ...c }));
}

type Candidate = Omit<Culprit, 'rank'>;

/** `xs.sort(order).slice(0, n)` (stable: equals keep their order) without sorting all of them: a port may carry thousands. */
function firstN<T>(xs: readonly T[], n: number, order: (a: T, b: T) => number): T[] {
  const best: T[] = [];
  for (const x of xs) {
    if (best.length === n && order(x, best[n - 1]!) >= 0) continue;
    let at = best.length;
    while (at > 0 && order(x, best[at - 1]!) < 0) at--;
    best.splice(at, 0, x);
    if (best.length > n) best.pop();
  }
  return best;
}
