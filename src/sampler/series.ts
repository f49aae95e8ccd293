/**
 * Counters over time: a monotonic total and the rate over a window of valid intervals. Times are
 * nanoseconds as numbers (exact for 104 days of a clock; the sampler counts from its start).
 *
 * The state of a set's counters lives in one SeriesBlock: typed arrays indexed by counter (the
 * last value in 32-bit halves, the total, each counter's ring of intervals with running sums),
 * so a tick walks contiguous memory and allocates nothing; rates are taken at scrape time from
 * the ring. A CounterSeries is one counter's view of its block.
 */
import type { ReadError } from '../reads/errors.js';
import type { CounterReadings, CounterSpec, CounterValue } from '../sources/types.js';
import { carve } from '../typed-arrays.js';
import { type CounterKind, RESET, SATURATED, counterKind, halves, isSaturatedHalves, stepHalves } from './counter.js';

export type SeriesState = 'ok' | 'saturated' | 'error' | 'reset' | 'new';

const STATES: readonly SeriesState[] = ['new', 'ok', 'saturated', 'error', 'reset'];
const NEW = 0;
const OK = 1;
const SATURATED_STATE = 2;
const ERROR = 3;
const RESET_STATE = 4;

/** Three numbers per interval: end, duration, delta. */
const FIELDS = 3;
/** Intervals a ring starts with room for (a 10 s window at 1 s is 10); it doubles when full. */
const INITIAL_ROOM = 16;

export class SeriesBlock {
  readonly state: Uint8Array;
  /** Each counter's overflow rule (counterKind()). */
  private readonly kind: Uint8Array;
  /** 1 once a value was read and no error came since. */
  private readonly hasLast: Uint8Array;
  private readonly lastLow: Uint32Array;
  private readonly lastHigh: Uint32Array;
  private readonly lastAt: Float64Array;
  /** Raw value at the first read plus every valid delta since (NaN: never read). */
  readonly total: Float64Array;
  readonly resets: Uint32Array;
  readonly lastError: (ReadError | undefined)[];
  private room = INITIAL_ROOM;
  private ring: Float64Array;
  private readonly head: Uint32Array;
  private readonly count: Uint32Array;
  private readonly sumNs: Float64Array;
  private readonly sumDelta: Float64Array;
  /**
   * The time of the values being recorded and the start of the window, here rather than passed:
   * a double handed to a call V8 does not inline is boxed, one allocation per value per tick.
   */
  private readonly clock: Float64Array;
  /** A single value's halves (record()), read by the same path as a set's readings. */
  private readonly oneLow: Uint32Array;
  private readonly oneHigh: Uint32Array;

  constructor(readonly specs: readonly CounterSpec[]) {
    const n = specs.length;
    const a = carve({
      state: ['u8', n], kind: ['u8', n], hasLast: ['u8', n],
      lastLow: ['u32', n], lastHigh: ['u32', n], resets: ['u32', n], head: ['u32', n], count: ['u32', n], oneLow: ['u32', 1], oneHigh: ['u32', 1],
      lastAt: ['f64', n], total: ['f64', n], sumNs: ['f64', n], sumDelta: ['f64', n], clock: ['f64', 2],
    });
    ({
      state: this.state, kind: this.kind, hasLast: this.hasLast, lastLow: this.lastLow, lastHigh: this.lastHigh, resets: this.resets,
      head: this.head, count: this.count, oneLow: this.oneLow, oneHigh: this.oneHigh,
      lastAt: this.lastAt, total: this.total, sumNs: this.sumNs, sumDelta: this.sumDelta, clock: this.clock,
    } = a);
    specs.forEach((s, i) => (this.kind[i] = counterKind(s)));
    this.total.fill(NaN);
    this.lastError = new Array<ReadError | undefined>(n).fill(undefined);
    this.ring = new Float64Array(n * INITIAL_ROOM * FIELDS);
  }

  get length(): number {
    return this.specs.length;
  }

  /**
   * One read of every counter at `atNs`, then intervals older than `windowNs` forgotten; a
   * counter whose read failed is handed to `failed` after its state says so.
   */
  recordAll(atNs: number, windowNs: number, r: CounterReadings, failed: (i: number, error: ReadError) => void): void {
    const { low, high, errors } = r;
    this.clock[0] = atNs;
    this.clock[1] = atNs - windowNs;
    for (let i = 0; i < this.specs.length; i++) {
      const error = errors[i];
      if (error === undefined) this.take(i, low, high, i);
      else {
        this.fail(i, error);
        failed(i, error);
      }
      this.forget(i);
    }
  }

  /** Counter i read (high * 2^32 + low) at `atNs`. */
  record(i: number, atNs: number, low: number, high: number): void {
    this.clock[0] = atNs;
    this.oneLow[0] = low;
    this.oneHigh[0] = high;
    this.take(i, this.oneLow, this.oneHigh, 0);
  }

  /** Counter i's value, entry k of `lows`/`highs`, read at clock[0]. */
  private take(i: number, lows: Uint32Array, highs: Uint32Array, k: number): void {
    if (this.lastError[i] !== undefined) this.lastError[i] = undefined;
    const kind = this.kind[i]! as CounterKind;
    const low = lows[k]!;
    const high = highs[k]!;
    const at = this.clock[0]!;
    if (this.hasLast[i] === 0) {
      this.hasLast[i] = 1;
      this.lastLow[i] = low;
      this.lastHigh[i] = high;
      if (Number.isNaN(this.total[i]!)) this.total[i] = high * 2 ** 32 + low;
      this.state[i] = isSaturatedHalves(kind, low, high) ? SATURATED_STATE : NEW;
      this.lastAt[i] = at;
      return;
    }
    const d = stepHalves(kind, this.lastLow[i]!, this.lastHigh[i]!, low, high);
    this.lastLow[i] = low;
    this.lastHigh[i] = high;
    if (d >= 0) {
      this.pushAt(i, at - this.lastAt[i]!, d);
      this.total[i] = this.total[i]! + d;
      this.state[i] = OK;
    } else if (d === RESET) {
      this.resets[i] = this.resets[i]! + 1;
      this.state[i] = RESET_STATE;
    } else if (d === SATURATED) {
      this.state[i] = SATURATED_STATE;
    }
    this.lastAt[i] = at;
  }

  /** Counter i could not be read: no rate until it is read twice again. */
  fail(i: number, error: ReadError): void {
    this.state[i] = ERROR;
    this.lastError[i] = error;
    this.hasLast[i] = 0;
  }

  /** Forget counter i's intervals that began before the window. */
  trim(i: number, now: number, window: number): void {
    this.clock[1] = now - window;
    this.forget(i);
  }

  /** trim() from the window start in clock[1]. */
  private forget(i: number): void {
    const from = this.clock[1]!;
    const r = this.ring;
    const room = this.room;
    const base = i * room;
    let head = this.head[i]!;
    let count = this.count[i]!;
    while (count > 0) {
      const at = (base + head) * FIELDS;
      if (r[at]! - r[at + 1]! >= from) break;
      this.sumNs[i] = this.sumNs[i]! - r[at + 1]!;
      this.sumDelta[i] = this.sumDelta[i]! - r[at + 2]!;
      head = (head + 1) % room;
      count--;
    }
    this.head[i] = head;
    this.count[i] = count;
    if (count === 0) this.sumNs[i] = this.sumDelta[i] = 0; // no drift once empty
  }

  /**
   * Raw units per second over counter i's valid intervals in the window; undefined when it is
   * saturated or unreadable now, or has no interval yet. Intervals spanning a reset are left
   * out, time and count alike.
   */
  rate(i: number): number | undefined {
    const s = this.state[i];
    if (s === SATURATED_STATE || s === ERROR) return undefined;
    return this.sumNs[i] === 0 ? undefined : (this.sumDelta[i]! * 1e9) / this.sumNs[i]!;
  }

  /** Counter j of this block takes over counter i of `from` (a set's list changed; netlink). */
  adopt(j: number, from: SeriesBlock, i: number): void {
    this.state[j] = from.state[i]!;
    this.hasLast[j] = from.hasLast[i]!;
    this.lastLow[j] = from.lastLow[i]!;
    this.lastHigh[j] = from.lastHigh[i]!;
    this.lastAt[j] = from.lastAt[i]!;
    this.total[j] = from.total[i]!;
    this.resets[j] = from.resets[i]!;
    this.lastError[j] = from.lastError[i];
    for (let k = 0; k < from.count[i]!; k++) {
      const at = (i * from.room + ((from.head[i]! + k) % from.room)) * FIELDS;
      this.clock[0] = from.ring[at]!;
      this.pushAt(j, from.ring[at + 1]!, from.ring[at + 2]!);
    }
  }

  /** An interval of `ns` ending at clock[0] in which counter i moved by `delta`. */
  private pushAt(i: number, ns: number, delta: number): void {
    if (this.count[i] === this.room) this.grow();
    const room = this.room;
    const at = (i * room + ((this.head[i]! + this.count[i]!) % room)) * FIELDS;
    this.ring[at] = this.clock[0]!;
    this.ring[at + 1] = ns;
    this.ring[at + 2] = delta;
    this.count[i] = this.count[i]! + 1;
    this.sumNs[i] = this.sumNs[i]! + ns;
    this.sumDelta[i] = this.sumDelta[i]! + delta;
  }

  /** Twice the room for every counter's ring, each ring laid out from its head. */
  private grow(): void {
    const old = this.ring;
    const room = this.room;
    const grown = new Float64Array(old.length * 2);
    for (let i = 0; i < this.specs.length; i++) {
      for (let k = 0; k < this.count[i]!; k++) {
        const from = (i * room + ((this.head[i]! + k) % room)) * FIELDS;
        grown.set(old.subarray(from, from + FIELDS), (i * room * 2 + k) * FIELDS);
      }
      this.head[i] = 0;
    }
    this.ring = grown;
    this.room = room * 2;
  }
}

/** One counter of a block, as the exporter and the CLI read it. */
export class CounterSeries {
  constructor(
    readonly spec: CounterSpec,
    readonly block: SeriesBlock = new SeriesBlock([spec]),
    readonly index = 0,
  ) {}

  get state(): SeriesState {
    return STATES[this.block.state[this.index]!]!;
  }

  get lastError(): ReadError | undefined {
    return this.block.lastError[this.index];
  }

  /** Raw value at the first read plus every valid delta since: never goes back. */
  get total(): number | undefined {
    const t = this.block.total[this.index]!;
    return Number.isNaN(t) ? undefined : t;
  }

  get resets(): number {
    return this.block.resets[this.index]!;
  }

  update(at: number | bigint, value: CounterValue): void {
    if (!value.ok) return this.fail(value.error);
    const [low, high] = halves(value.value);
    this.block.record(this.index, Number(at), low, high);
  }

  fail(error: ReadError): void {
    this.block.fail(this.index, error);
  }

  trim(now: number | bigint, window: number | bigint): void {
    this.block.trim(this.index, Number(now), Number(window));
  }

  rate(): number | undefined {
    return this.block.rate(this.index);
  }
}
