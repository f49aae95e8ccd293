import { describe, expect, it } from 'vitest';
import { PSN_MODULUS, psnAdvance, psnBaseline, psnDistance, psnRebase } from '../../src/model/psn.js';

const walk = (psns: readonly number[]) => psns.slice(1).reduce(psnAdvance, psnBaseline(psns[0]!));

describe('packets from 24-bit PSNs', () => {
  it('sets the baseline on first sight: no packets invented', () => {
    expect(psnBaseline(8619382)).toEqual({ highest: 8619382, packets: 0, rewinds: 0 });
  });

  it('counts the forward distance between reads', () => {
    expect(walk([8_610_392, 8_619_382, 8_622_630])).toEqual({ highest: 8_622_630, packets: 12_238, rewinds: 0 });
  });

  it('counts across the wrap at 2^24 modulo 2^24', () => {
    expect(PSN_MODULUS).toBe(16_777_216);
    expect(walk([0xfffff0, 0x000010, 0x000020])).toEqual({ highest: 0x20, packets: 48, rewinds: 0 });
    expect(psnDistance(0xffffff, 0)).toBe(1);
  });

  it('counts a backwards move as a rewind, never as negative traffic, and resent packets once', () => {
    // A retry sets sq_psn back from 5000 to 4990; the next read is 10 past the highest seen.
    expect(walk([5000, 4990, 4995, 5010])).toEqual({ highest: 5010, packets: 10, rewinds: 2 });
    expect(walk([10, 0xfffffa])).toEqual({ highest: 10, packets: 0, rewinds: 1 });
  });

  it('takes a distance of 2^23 or more as backwards (the limit the README states)', () => {
    expect(psnDistance(0, 2 ** 23 - 1)).toBe(2 ** 23 - 1);
    expect(psnDistance(0, 2 ** 23)).toBe(-(2 ** 23));
  });

  it('does not move on an unchanged PSN', () => {
    const c = psnBaseline(7);
    expect(psnAdvance(c, 7)).toBe(c);
  });

  it('keeps the counts when a new QP brings its own PSN space', () => {
    expect(psnRebase({ highest: 150, packets: 50, rewinds: 1 }, 9000)).toEqual({ highest: 9000, packets: 50, rewinds: 1 });
  });
});
