/**
 * The truth about one counter between two reads: 64-bit counters only go
 * back on a reset (driver reload), 32-bit Q-counters wrap, 32-bit PMA
 * counters stop at all ones (IBA PortCounters; kernel
 * Documentation/ABI/stable/sysfs-class-infiniband).
 *
 * Values are u64s in 32-bit halves (high * 2^32 + low), as the reader hands them back: the
 * arithmetic is exact without a bigint, and nothing is allocated per value.
 */
import type { CounterNumber, CounterSpec } from '../sources/types.js';

export type Step =
  | { readonly kind: 'delta'; readonly delta: number }
  | { readonly kind: 'reset' }
  | { readonly kind: 'saturated' };

const MAX32 = 0xffff_ffff;
const TWO32 = 2 ** 32;
/** stepHalves() answers below 0: the value went back, or stopped at all ones. */
export const RESET = -1;
export const SATURATED = -2;

/** A counter's overflow rule as a number the sampler keeps per counter (SeriesBlock). */
export type CounterKind = typeof WIDE | typeof WRAP32 | typeof SATURATE32;
const WIDE = 0;
const WRAP32 = 1;
const SATURATE32 = 2;

export const counterKind = (spec: CounterSpec): CounterKind =>
  spec.bits === 64 ? WIDE : spec.overflow === 'wrap' ? WRAP32 : SATURATE32;

export const isSaturatedHalves = (kind: CounterKind, low: number, high: number): boolean =>
  kind === SATURATE32 && (high > 0 || low >= MAX32);

/**
 * The delta from (pLow, pHigh) to (low, high), or RESET / SATURATED. Deltas are exact below
 * 2^53 (between two reads of one counter they always are).
 */
export function stepHalves(kind: CounterKind, pLow: number, pHigh: number, low: number, high: number): number {
  if (isSaturatedHalves(kind, low, high)) return SATURATED;
  if (high > pHigh || (high === pHigh && low >= pLow)) return (high - pHigh) * TWO32 + (low - pLow);
  if (kind === WRAP32) return high * TWO32 + low + TWO32 - (pHigh * TWO32 + pLow);
  return RESET;
}

/** A CounterNumber's halves: [low, high]. */
export function halves(v: CounterNumber): readonly [number, number] {
  if (typeof v === 'bigint') return [Number(v & 0xffff_ffffn), Number((v >> 32n) & 0xffff_ffffn)];
  const high = Math.floor(v / TWO32);
  return [v - high * TWO32, high];
}

/** stepHalves() of two CounterNumbers, as a Step. */
export function step(spec: CounterSpec, previous: CounterNumber, current: CounterNumber): Step {
  const d = stepHalves(counterKind(spec), ...halves(previous), ...halves(current));
  return d === SATURATED ? { kind: 'saturated' } : d === RESET ? { kind: 'reset' } : { kind: 'delta', delta: d };
}
