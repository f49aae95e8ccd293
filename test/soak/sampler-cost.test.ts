/**
 * Both executors read the same: 32 ports through the native reader threads and on the sampler's
 * thread give the same counters and values. How fast is the benchmark's business (npm run bench),
 * never a timed test's.
 */
import { describe, it, expect } from 'vitest';
import { fixture32, measure } from './sampler-cost.js';

describe('sampler on 32 ports', () => {
  it('reads the same counters and values on the reader threads as on its own thread', async () => {
    const fx = fixture32();
    try {
      const direct = await measure(fx, 'direct', 20);
      const native = await measure(fx, 'native', 20);
      expect(native.ports).toBe(32);
      expect(native.counters).toBe(direct.counters);
      expect(native.totals).toEqual(direct.totals);
    } finally {
      fx.cleanup();
    }
  });
});
