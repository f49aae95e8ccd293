import { describe, it, expect } from 'vitest';
import { carve } from '../../src/typed-arrays.js';

describe('carve', () => {
  it('makes every array of the layout a view of one ArrayBuffer, aligned, apart and zeroed', () => {
    const a = carve({ flags: ['u8', 3], low: ['u32', 5], at: ['f64', 3], status: ['i32', 2] });
    expect([a.flags, a.low, a.at, a.status].map((v) => v.constructor)).toEqual([Uint8Array, Uint32Array, Float64Array, Int32Array]);
    expect([a.flags.length, a.low.length, a.at.length, a.status.length]).toEqual([3, 5, 3, 2]);
    const buffer = a.at.buffer;
    for (const v of [a.flags, a.low, a.status]) expect(v.buffer).toBe(buffer);
    expect(buffer.byteLength).toBe(3 + 5 * 4 + 3 * 8 + 2 * 4);
    for (const v of [a.flags, a.low, a.at, a.status]) {
      expect(v.byteOffset % v.BYTES_PER_ELEMENT).toBe(0);
      expect([...v].every((x) => x === 0)).toBe(true);
    }
    a.at.fill(-1.5);
    a.low.fill(0xffffffff);
    a.status.fill(-7);
    a.flags.fill(9);
    expect([...a.at]).toEqual([-1.5, -1.5, -1.5]);
    expect([...a.low]).toEqual(Array(5).fill(0xffffffff));
    expect([...a.status]).toEqual([-7, -7]);
    expect([...a.flags]).toEqual([9, 9, 9]);
  });

  it('takes empty arrays (a set with no counters)', () => {
    const a = carve({ low: ['u32', 0], at: ['f64', 0] });
    expect([a.low.length, a.at.length, a.at.buffer.byteLength]).toEqual([0, 0, 0]);
  });
});
