/**
 * The truth about one counter between two reads: 64-bit counters only go
 * back on a reset (driver reload), 32-bit Q-counters wrap, 32-bit PMA
 * counters stop at all ones (IBA PortCounters; kernel
 * Documentation/ABI/stable/sysfs-class-infiniband).
 */
import type { CounterSpec } from '../sources/types.js';

export type Step =
  | { readonly kind: 'delta'; readonly delta: bigint }
  | { readonly kind: 'reset' }
  | { readonly kind: 'saturated' };

const MAX32 = 0xffff_ffffn;

export function step(spec: CounterSpec, previous: bigint, current: bigint): Step {
  if (spec.bits === 32 && spec.overflow === 'saturate' && current >= MAX32) return { kind: 'saturated' };
  if (current >= previous) return { kind: 'delta', delta: current - previous };
  if (spec.bits === 32 && spec.overflow === 'wrap') return { kind: 'delta', delta: current + MAX32 + 1n - previous };
  return { kind: 'reset' };
}
