/**
 * Which counter sets the sampler can read in its worker, and how their raw reads become
 * CounterValues exactly as the set's own read() would have said them.
 */
import { parseCounterText } from '../sources/sysfs/parse.js';
import type { CounterValue, PortCounterSet, ReadPlan } from '../sources/types.js';
import type { RawValue } from './reader.js';

/** The plan for a set, or undefined when it must be read with its own read() (netlink: a socket round trip with its own timeout). */
export function readPlanOf(set: PortCounterSet): ReadPlan | undefined {
  return set.readPlan?.();
}

/** Raw texts to values, as FileCounterSet.readOne() parses them. */
export function toCounterValues(count: number, gone: string | undefined, values: readonly RawValue[]): CounterValue[] {
  if (gone !== undefined) return Array.from({ length: count }, () => ({ ok: false, error: gone }));
  const out: CounterValue[] = new Array<CounterValue>(count);
  for (let i = 0; i < count; i++) {
    const v = values[i];
    if (v === undefined) out[i] = { ok: false, error: 'no value read' };
    else if (typeof v !== 'string') out[i] = { ok: false, error: v.error };
    else {
      const value = parseCounterText(v);
      out[i] = value === undefined ? { ok: false, error: `not a counter: ${JSON.stringify(v.trim())}` } : { ok: true, value };
    }
  }
  return out;
}
