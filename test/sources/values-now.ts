/** A counter set read here and now, one value per counter (a set that is gone: every value an error). */
import { runSync } from '../../src/reads/program.js';
import { type CounterValue, type PortCounterSet, valuesOf } from '../../src/sources/types.js';

export function valuesNow(set: PortCounterSet): CounterValue[] {
  return valuesOf(runSync(set.reads()), set.counters.length);
}
