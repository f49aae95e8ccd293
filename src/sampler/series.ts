/**
 * One counter over time: a monotonic total and the rate over a window of valid intervals.
 * Times are nanoseconds as numbers (exact for 104 days of a clock; the sampler counts from its
 * start). The window is a ring of intervals with running sums, so an update allocates nothing.
 */
import type { CounterNumber, CounterSpec, CounterValue } from '../sources/types.js';
import { isSaturated, step } from './counter.js';

export type SeriesState = 'ok' | 'saturated' | 'error' | 'reset' | 'new';

/** Three numbers per interval: end, duration, delta. */
const FIELDS = 3;

export class CounterSeries {
  state: SeriesState = 'new';
  lastError: string | undefined;
  /** Raw value at the first read plus every valid delta since: never goes back. */
  total: number | undefined;
  resets = 0;
  private lastAt = 0;
  private lastRaw: CounterNumber | undefined;
  private ring = new Float64Array(16 * FIELDS);
  private head = 0;
  private count = 0;
  private sumNs = 0;
  private sumDelta = 0;

  constructor(readonly spec: CounterSpec) {}

  update(at: number | bigint, value: CounterValue): void {
    if (!value.ok) {
      this.state = 'error';
      this.lastError = value.error;
      this.lastRaw = undefined;
      return;
    }
    const atNs = Number(at);
    this.lastError = undefined;
    const last = this.lastRaw;
    this.lastRaw = value.value;
    if (last === undefined) {
      this.total ??= Number(value.value);
      this.state = isSaturated(this.spec, value.value) ? 'saturated' : 'new';
      this.lastAt = atNs;
      return;
    }
    const s = step(this.spec, last, value.value);
    if (s.kind === 'delta') {
      this.push(atNs, atNs - this.lastAt, s.delta);
      this.total = (this.total ?? 0) + s.delta;
      this.state = 'ok';
    } else if (s.kind === 'reset') {
      this.resets++;
      this.state = 'reset';
    } else {
      this.state = 'saturated';
    }
    this.lastAt = atNs;
  }

  /** Forget intervals that began before the window. */
  trim(now: number | bigint, window: number | bigint): void {
    const from = Number(now) - Number(window);
    const r = this.ring;
    const cap = r.length / FIELDS;
    while (this.count > 0) {
      const i = this.head * FIELDS;
      if (r[i]! - r[i + 1]! >= from) break;
      this.sumNs -= r[i + 1]!;
      this.sumDelta -= r[i + 2]!;
      this.head = (this.head + 1) % cap;
      this.count--;
    }
    if (this.count === 0) this.sumNs = this.sumDelta = 0; // no drift once empty
  }

  /**
   * Raw units per second over the valid intervals in the window; undefined
   * when the counter is saturated or unreadable now, or has no interval yet.
   * Intervals spanning a reset are left out, time and count alike.
   */
  rate(): number | undefined {
    if (this.state === 'saturated' || this.state === 'error') return undefined;
    return this.sumNs === 0 ? undefined : (this.sumDelta * 1e9) / this.sumNs;
  }

  private push(end: number, ns: number, delta: number): void {
    let cap = this.ring.length / FIELDS;
    if (this.count === cap) {
      const grown = new Float64Array(this.ring.length * 2);
      for (let k = 0; k < this.count; k++) grown.set(this.ring.subarray(((this.head + k) % cap) * FIELDS, ((this.head + k) % cap) * FIELDS + FIELDS), k * FIELDS);
      this.ring = grown;
      this.head = 0;
      cap *= 2;
    }
    const i = ((this.head + this.count) % cap) * FIELDS;
    this.ring[i] = end;
    this.ring[i + 1] = ns;
    this.ring[i + 2] = delta;
    this.count++;
    this.sumNs += ns;
    this.sumDelta += delta;
  }
}
