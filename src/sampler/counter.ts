/**
 * The truth about one counter between two reads: 64-bit counters only go
 * back on a reset (driver reload), 32-bit Q-counters wrap, 32-bit PMA
 * counters stop at all ones (IBA PortCounters; kernel
 * Documentation/ABI/stable/sysfs-class-infiniband).
 */
import type { CounterNumber, CounterSpec } from '../sources/types.js';

export type Step =
  | { readonly kind: 'delta'; readonly delta: number }
  | { readonly kind: 'reset' }
  | { readonly kind: 'saturated' };

const MAX32 = 0xffff_ffff;
const SATURATED: Step = { kind: 'saturated' };
const RESET: Step = { kind: 'reset' };

export const isSaturated = (spec: CounterSpec, v: CounterNumber): boolean =>
  spec.bits === 32 && spec.overflow === 'saturate' && v >= MAX32;

/** Deltas are exact below 2^53 (between two reads of one counter they always are). */
export function step(spec: CounterSpec, previous: CounterNumber, current: CounterNumber): Step {
  if (isSaturated(spec, current)) return SATURATED;
  if (current >= previous) return { kind: 'delta', delta: difference(current, previous) };
  if (spec.bits === 32 && spec.overflow === 'wrap') return { kind: 'delta', delta: Number(current) + MAX32 + 1 - Number(previous) };
  return RESET;
}

function difference(a: CounterNumber, b: CounterNumber): number {
  return typeof a === 'number' && typeof b === 'number' ? a - b : Number(BigInt(a) - BigInt(b));
}
