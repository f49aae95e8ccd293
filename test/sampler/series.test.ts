import { describe, it, expect } from 'vitest';
import { step } from '../../src/sampler/counter.js';
import { CounterSeries } from '../../src/sampler/series.js';
import type { CounterSpec } from '../../src/sources/types.js';

const spec = (bits: CounterSpec['bits'], overflow: 'wrap' | 'saturate'): CounterSpec => ({ name: 'c', bits, overflow, meaning: undefined });
const S = 1_000_000_000n;

describe('counter steps', () => {
  it('64-bit: deltas, and a reset when the value goes back', () => {
    expect(step(spec(64, 'wrap'), 10n, 25n)).toEqual({ kind: 'delta', delta: 15 });
    expect(step(spec(64, 'wrap'), 10, 25)).toEqual({ kind: 'delta', delta: 15 });
    // Above 2^53 the delta is taken exactly in bigint before it becomes a number.
    expect(step(spec(64, 'wrap'), 2n ** 60n, 2n ** 60n + 3n)).toEqual({ kind: 'delta', delta: 3 });
    expect(step(spec(64, 'wrap'), 2 ** 52, 2n ** 53n + 1n)).toEqual({ kind: 'delta', delta: 2 ** 52 + 1 });
    expect(step(spec(64, 'wrap'), 2n ** 40n, 5n)).toEqual({ kind: 'reset' });
  });
  it('32-bit Q-counter: unwraps once past 2^32', () => {
    expect(step(spec(32, 'wrap'), 4_294_967_000n, 200n)).toEqual({ kind: 'delta', delta: 296 + 200 });
    expect(step(spec(32, 'wrap'), 4_294_967_000, 200)).toEqual({ kind: 'delta', delta: 296 + 200 });
  });
  it('32-bit PMA counter: all ones is saturation, not a rate', () => {
    expect(step(spec(32, 'saturate'), 4_294_967_000n, 4_294_967_295n)).toEqual({ kind: 'saturated' });
    expect(step(spec(32, 'saturate'), 1000n, 10n)).toEqual({ kind: 'reset' });
  });
  it('4-, 8- and 16-bit PMA counters saturate at all ones of their own width (issue 33)', () => {
    for (const [bits, max] of [[4, 15], [8, 255], [16, 65_535]] as const) {
      expect(step(spec(bits, 'saturate'), max - 5, max - 1)).toEqual({ kind: 'delta', delta: 4 });
      expect(step(spec(bits, 'saturate'), max - 5, max)).toEqual({ kind: 'saturated' });
      expect(step(spec(bits, 'saturate'), max, max)).toEqual({ kind: 'saturated' });
      const s = new CounterSeries(spec(bits, 'saturate'));
      s.update(0n, { ok: true, value: BigInt(max) });
      expect(s.state).toBe('saturated');
    }
  });
});

describe('counter series', () => {
  it('rates over the window leave out intervals that span a reset', () => {
    const s = new CounterSeries(spec(64, 'wrap'));
    s.update(0n, { ok: true, value: 1000n });
    s.update(1n * S, { ok: true, value: 1100n });
    s.update(2n * S, { ok: true, value: 50n }); // reset
    s.update(3n * S, { ok: true, value: 150n });
    expect(s.rate()).toBe(100);
    expect(s.total).toBe(1200);
    expect(s.resets).toBe(1);
  });
  it('forgets intervals older than the window', () => {
    const s = new CounterSeries(spec(64, 'wrap'));
    s.update(0n, { ok: true, value: 0n });
    s.update(1n * S, { ok: true, value: 1000n });
    s.update(2n * S, { ok: true, value: 1010n });
    s.trim(2n * S, 1n * S);
    expect(s.rate()).toBe(10);
  });
  it('an unreadable or saturated counter has no rate', () => {
    const s = new CounterSeries(spec(32, 'saturate'));
    s.update(0n, { ok: true, value: 10n });
    s.update(1n * S, { ok: true, value: 20n });
    expect(s.rate()).toBe(10);
    s.update(2n * S, { ok: true, value: 4_294_967_295n });
    expect(s.state).toBe('saturated');
    expect(s.rate()).toBeUndefined();
    s.update(3n * S, { ok: false, error: { code: 'EINVAL', op: 'read' } });
    expect(s.rate()).toBeUndefined();
    expect(s.lastError).toEqual({ code: 'EINVAL', op: 'read' });
  });
});
