import { describe, expect, it } from 'vitest';
import { PSN_MODULUS, psnAdvance, psnBaseline, psnDistance, psnRebase, psnSetIn } from '../../src/model/psn.js';

const walk = (psns: readonly number[]) => psns.slice(1).reduce((c, p) => psnAdvance(c, p), psnBaseline(psns[0]!));

describe('packets from 24-bit PSNs', () => {
  it('sets the baseline on first sight: no packets invented', () => {
    expect(psnBaseline(8619382)).toEqual({ highest: 8619382, started: true, packets: 0, rewinds: 0 });
  });

  it('counts the forward distance between reads', () => {
    expect(walk([8_610_392, 8_619_382, 8_622_630])).toEqual({ highest: 8_622_630, started: true, packets: 12_238, rewinds: 0 });
  });

  it('counts across the wrap at 2^24 modulo 2^24', () => {
    expect(PSN_MODULUS).toBe(16_777_216);
    expect(walk([0xfffff0, 0x000010, 0x000020])).toEqual({ highest: 0x20, started: true, packets: 48, rewinds: 0 });
    expect(psnDistance(0xffffff, 0)).toBe(1);
  });

  it('counts a backwards move as a rewind, never as negative traffic, and resent packets once', () => {
    // A retry sets sq_psn back from 5000 to 4990; the next read is 10 past the highest seen.
    expect(walk([5000, 4990, 4995, 5010])).toEqual({ highest: 5010, started: true, packets: 10, rewinds: 2 });
    expect(walk([10, 0xfffffa])).toEqual({ highest: 10, started: true, packets: 0, rewinds: 1 });
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
    expect(psnRebase({ highest: 150, started: true, packets: 50, rewinds: 1 }, 9000)).toEqual({ highest: 9000, started: true, packets: 50, rewinds: 1 });
  });

  it('knows which QP states have set each PSN (IBA 11.2.4.2: rq_psn at INIT->RTR, sq_psn at RTR->RTS)', () => {
    expect(['RESET', 'INIT', 'RTR', 'RTS', 'SQD', 'SQE', 'ERR'].map((s) => [s, psnSetIn(s, 'sq'), psnSetIn(s, 'rq')])).toEqual([
      ['RESET', false, false], ['INIT', false, false], ['RTR', false, true], ['RTS', true, true],
      ['SQD', true, true], ['SQE', true, true], ['ERR', true, true],
    ]);
  });

  it('counts nothing from a PSN its QP state has not set, and starts from the first one it has', () => {
    // rdma_cm: the QP reads 0 in INIT, then the random start rdma_cm gave (here 0x9a3c10, more
    // than 2^23 ahead: read as a PSN it was a rewind, and every later packet behind the highest).
    const unset = psnBaseline(0, false);
    expect(psnAdvance(unset, 0, false)).toBe(unset);
    const started = psnAdvance(unset, 0x9a3c10, true);
    expect(started).toEqual({ highest: 0x9a3c10, started: true, packets: 0, rewinds: 0 });
    expect(psnAdvance(started, 0x9a3c10 + 42, true)).toEqual({ highest: 0x9a3c10 + 42, started: true, packets: 42, rewinds: 0 });
    expect(psnAdvance(psnBaseline(0, false), 0x1234, true)).toMatchObject({ packets: 0, rewinds: 0 });
  });
});
