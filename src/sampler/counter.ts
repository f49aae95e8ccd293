/**
 * The truth about one counter between two reads: 64-bit counters only go
 * back on a reset (driver reload), 32-bit Q-counters wrap, PMA counters stop at all ones of
 * their width, 4 to 32 bits (IBA PortCounters; kernel
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

const TWO32 = 2 ** 32;
/** stepHalves() answers below 0: the value went back, or stopped at all ones. */
export const RESET = -1;
export const SATURATED = -2;

/** A counter's overflow rule as a number the sampler keeps per counter (SeriesBlock). */
export type CounterKind = typeof WIDE | typeof WRAP32 | typeof SATURATE4 | typeof SATURATE8 | typeof SATURATE16 | typeof SATURATE32;
const WIDE = 0;
const WRAP32 = 1;
const SATURATE4 = 2;
const SATURATE8 = 3;
const SATURATE16 = 4;
const SATURATE32 = 5;
/** All ones of each saturating kind's width, by kind. */
const ALL_ONES: readonly number[] = [0, 0, 0xf, 0xff, 0xffff, 0xffff_ffff];
const SATURATING: Readonly<Record<Exclude<CounterSpec['bits'], 64>, CounterKind>> = { 4: SATURATE4, 8: SATURATE8, 16: SATURATE16, 32: SATURATE32 };

export function counterKind(spec: CounterSpec): CounterKind {
  if (spec.bits === 64) return WIDE;
  if (spec.overflow === 'saturate') return SATURATING[spec.bits];
  if (spec.bits === 32) return WRAP32;
  throw new RangeError(`counter ${spec.name}: a ${spec.bits}-bit counter that wraps is not one the exporter reads`);
}

export const isSaturatedHalves = (kind: CounterKind, low: number, high: number): boolean =>
  kind >= SATURATE4 && (high > 0 || low >= ALL_ONES[kind]!);

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
