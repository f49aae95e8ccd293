/** One counter over time: a monotonic total and the rate over a window of valid intervals. */
import type { CounterSpec, CounterValue } from '../sources/types.js';
import { step } from './counter.js';

export type SeriesState = 'ok' | 'saturated' | 'error' | 'reset' | 'new';

interface Interval {
  readonly endNs: bigint;
  readonly durationNs: bigint;
  readonly delta: bigint;
}

export class CounterSeries {
  state: SeriesState = 'new';
  lastError: string | undefined;
  /** Raw value at the first read plus every valid delta since: never goes back. */
  total: bigint | undefined;
  resets = 0;
  private last: { readonly atNs: bigint; readonly raw: bigint } | undefined;
  private intervals: Interval[] = [];

  constructor(readonly spec: CounterSpec) {}

  update(atNs: bigint, value: CounterValue): void {
    if (!value.ok) {
      this.state = 'error';
      this.lastError = value.error;
      this.last = undefined;
      return;
    }
    this.lastError = undefined;
    if (this.last === undefined) {
      this.begin(atNs, value.value);
      return;
    }
    const s = step(this.spec, this.last.raw, value.value);
    if (s.kind === 'delta') {
      this.intervals.push({ endNs: atNs, durationNs: atNs - this.last.atNs, delta: s.delta });
      this.total = (this.total ?? 0n) + s.delta;
      this.state = 'ok';
    } else if (s.kind === 'reset') {
      this.resets++;
      this.state = 'reset';
    } else {
      this.state = 'saturated';
    }
    this.last = { atNs, raw: value.value };
  }

  private begin(atNs: bigint, raw: bigint): void {
    this.last = { atNs, raw };
    this.total ??= raw;
    const saturated = this.spec.bits === 32 && this.spec.overflow === 'saturate' && raw >= 0xffff_ffffn;
    this.state = saturated ? 'saturated' : 'new';
  }

  /** Forget intervals that ended before the window. */
  trim(nowNs: bigint, windowNs: bigint): void {
    const from = nowNs - windowNs;
    let i = 0;
    while (i < this.intervals.length && this.intervals[i]!.endNs - this.intervals[i]!.durationNs < from) i++;
    if (i > 0) this.intervals = this.intervals.slice(i);
  }

  /**
   * Raw units per second over the valid intervals in the window; undefined
   * when the counter is saturated or unreadable now, or has no interval yet.
   * Intervals spanning a reset are left out, time and count alike.
   */
  rate(): number | undefined {
    if (this.state === 'saturated' || this.state === 'error') return undefined;
    let ns = 0n;
    let delta = 0n;
    for (const iv of this.intervals) {
      ns += iv.durationNs;
      delta += iv.delta;
    }
    return ns === 0n ? undefined : (Number(delta) * 1e9) / Number(ns);
  }
}
