/** After a load: one full GC and the C heap trimmed, without leaving gc() exposed to code that runs later. */
import { describe, it, expect } from 'vitest';
import { runInNewContext } from 'node:vm';
import { releaseLoadGarbage } from '../../src/exporter/memory.js';

describe('releaseLoadGarbage', () => {
  it('collects and trims (glibc), and new contexts still have no gc', async () => {
    expect(await releaseLoadGarbage()).toEqual({ gc: true, trimmed: true });
    expect(runInNewContext('typeof gc')).toBe('undefined');
    expect(await releaseLoadGarbage()).toEqual({ gc: true, trimmed: true }); // again, with the functions kept
  });
});
