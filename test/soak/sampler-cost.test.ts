/** Bounded reads must not make the common path much slower (figures: npx vite-node test/soak/sampler-cost.ts). */
import { describe, it, expect } from 'vitest';
import { fixture32, measure } from './sampler-cost.js';

describe('sampler cost on 32 ports', () => {
  it('reads in the worker cost about what reads on the sampler thread cost', () => {
    const fx = fixture32();
    try {
      const direct = measure(fx, 'direct', 60);
      const worker = measure(fx, 'worker', 60);
      console.log(`sampler cost: ${JSON.stringify(direct)} ${JSON.stringify(worker)}`);
      expect(worker.counters).toBe(direct.counters);
      expect(worker.ports).toBe(32);
      // Generous: the suite runs test files in parallel on small CI machines.
      expect(worker.meanTickMs).toBeLessThan(direct.meanTickMs * 2 + 5);
    } finally {
      fx.cleanup();
    }
  });
});
