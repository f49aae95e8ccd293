/**
 * Reads every port's counters each interval and keeps the window that measured rates come from.
 * Monotonic clock only.
 *
 * The read path in one paragraph: every read is a read program (src/reads) that the sources
 * write (list ports, read a port's attributes, read a counter set); a tick hands them to the
 * bounded reader, which runs each round of them as one request on a native reader thread and
 * hands back typed outcomes, so the event loop never waits on the kernel and a read that
 * blocks costs its port, not the process. What comes back is parsed where it lands (one parse:
 * parseCounterBytes) and applied to the series each value belongs to, matched by counter name,
 * never by position.
 */
import { key } from '../keys.js';
import { SerialQueue } from '../serial.js';
import type {
  CounterMeaning, CounterSource, CounterSourceKind, CounterSpec, Direction, Layer, PortAttributes, PortCounterSet, PortInventory, PortState,
  PortRef, Quantity, SetRead,
} from '../sources/types.js';
import { goneError, portKey } from '../sources/types.js';
import type { ReadError } from '../reads/errors.js';
import { CounterSeries, SeriesBlock } from './series.js';
import { halves } from './counter.js';
import { BoundedReads, type Job, type Outcome, Pending } from '../reads/bounded.js';
import { type ReadProgram, runSync } from '../reads/program.js';

export interface SampledCounter {
  readonly source: CounterSourceKind;
  readonly series: CounterSeries;
}

export interface SampledPort {
  readonly ref: PortRef;
  attrs: PortAttributes;
  readonly sets: readonly PortCounterSet[];
  /** Every counter of every set, set by set (rebuilt when a set's list changes). */
  counters: readonly SampledCounter[];
}

export interface Measurement {
  readonly source: CounterSourceKind;
  readonly counter: string;
  readonly layer: Layer | undefined;
  /** Quantity per second, scaled (bytes or packets). */
  readonly rate: number;
}

interface SamplerEvents {
  portAdded?(port: SampledPort): void;
  portRemoved?(ref: PortRef): void;
  readError?(port: PortRef, source: CounterSourceKind, counter: string, error: ReadError): void;
  /** A read of this port did not return within the timeout; the port is skipped until it does. */
  readBlocked?(port: PortRef, info: { readonly timeoutMs: number; readonly blockedThreads: number }): void;
  /** A port whose read had blocked answered again. */
  readRecovered?(port: PortRef): void;
  /** A reader thread died; it is replaced and nobody is blamed. */
  readerThreadLost?(info: { readonly running: boolean }): void;
}

export interface SamplerOptions {
  readonly inventory: PortInventory;
  readonly sources: readonly CounterSource[];
  readonly intervalMs: number;
  readonly windowMs: number;
  readonly clock?: () => bigint;
  readonly events?: SamplerEvents;
  /** 'native' (default): reads on libmfe-reader's threads, bounded; 'direct': on the event loop. */
  readonly reads?: 'native' | 'direct';
  /** A read that makes no progress for this long is blocked; default interval/2 within 100..1000 ms. */
  readonly readTimeoutMs?: number;
  /** Reader threads that may exist at once, blocked ones included (default 4). */
  readonly maxReaderThreads?: number;
  /** Another build of libmfe-reader (tests). */
  readonly readerLibrary?: string;
  /** A reader shared with others (the daemon's); the sampler makes its own when absent. */
  readonly reader?: BoundedReads;
}

/** Default for SamplerOptions.readTimeoutMs. */
export const defaultReadTimeoutMs = (intervalMs: number): number => Math.min(1000, Math.max(100, Math.floor(intervalMs / 2)));

/**
 * Each port's full attributes (GID table, rate, MTU) once every this many ticks, and the port
 * list at the start of each such period. Every tick reads what they change with (the state, the
 * netdev MTU, the device list) and reads them again at once when it does, so this is a safety
 * net. The ports take turns (port i on the ticks where tick % 60 = i % 60): read all at once, the
 * GID scans of 32 ports held the event loop ~38 ms in one turn on the bench tree.
 */
const ATTRIBUTE_REFRESH_TICKS = 60;

/** The group the port listing is blamed on when it blocks. */
const INVENTORY = 'inventory';

/** What the sampler knows of one set: its last counter list and the series of each counter. */
interface SetSeries {
  readonly specs: readonly CounterSpec[];
  /** The counters' state, in `specs` order; `series` are its views. */
  readonly block: SeriesBlock;
  readonly series: readonly CounterSeries[];
  /** Counts counter i's failed read (made once here, not per tick). */
  readonly onError: (i: number, error: ReadError) => void;
}

/**
 * A tick as steps of jobs: run bounded by tick(), or here and now by sampleOnce(). Each step's
 * outcomes are read through its jobs (Pending), never by position.
 */
type Steps<T = void> = Generator<readonly Job<unknown>[], T, unknown>;

/** One set's read as the sampler applies it. */
interface SetApply {
  readonly port: SampledPort;
  readonly set: PortCounterSet;
  readonly outcome: Outcome<SetRead>;
  /** Nanoseconds since the sampler's first tick. */
  readonly now: number;
}

export class Sampler {
  readonly ports = new Map<string, SampledPort>();
  lastTickSeconds = 0;
  ticks = 0;
  /** Failed counter reads per key(device, port, source). */
  readErrors = new Map<string, number>();
  readonly reader: BoundedReads;
  private readonly setSeries = new Map<PortCounterSet, SetSeries>();
  private timer: NodeJS.Timeout | undefined;
  private readonly clock: () => bigint;
  private origin: bigint | undefined;
  private readonly tickQueue = new SerialQueue();
  private stopped = false;
  private readonly ownsReader: boolean;
  private readonly unsubscribe: () => void;

  constructor(private readonly opts: SamplerOptions) {
    this.clock = opts.clock ?? (() => process.hrtime.bigint());
    this.ownsReader = opts.reader === undefined;
    this.reader = opts.reader ?? new BoundedReads({
      readTimeoutMs: opts.readTimeoutMs ?? defaultReadTimeoutMs(opts.intervalMs),
      ...(opts.maxReaderThreads !== undefined ? { maxThreads: opts.maxReaderThreads } : {}),
      ...(opts.readerLibrary !== undefined ? { library: opts.readerLibrary } : {}),
      mode: opts.reads ?? 'native',
    });
    const byGroup = (g: string): PortRef | undefined => this.ports.get(g)?.ref;
    this.unsubscribe = this.reader.subscribe({
      blocked: (g, info) => {
        const ref = byGroup(g);
        if (ref) opts.events?.readBlocked?.(ref, info);
      },
      recovered: (g) => {
        const ref = byGroup(g);
        if (ref) opts.events?.readRecovered?.(ref);
      },
      threadLost: (info) => opts.events?.readerThreadLost?.(info),
    });
  }

  /** Samples now and then every interval; `manual` leaves the ticking to the caller (tests). */
  async start(manual = false): Promise<void> {
    await this.tick();
    if (manual || this.stopped) return;
    // A tick still running when the next is due (reads waiting out a timeout) is not doubled.
    this.timer = setInterval(() => {
      if (!this.tickQueue.busy) void this.tick();
    }, this.opts.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.unsubscribe();
    if (this.ownsReader) this.reader.close();
    for (const p of this.ports.values()) this.dropPort(p);
    this.ports.clear();
  }

  /** Resolves once the ticks asked for so far have run. */
  idle(): Promise<void> {
    return this.tickQueue.idle();
  }

  /** Whether a tick is running or queued. */
  get busy(): boolean {
    return this.tickQueue.busy;
  }

  /**
   * One sample at the clock's time now; ticks asked for while one runs follow it in order, each
   * with the time it was asked for.
   */
  tick(): Promise<void> {
    const at = this.clock();
    return this.tickQueue.run(() => this.sample(at));
  }

  /** One sample with every read on this thread (the CLI's one-shot look at the ports). */
  sampleOnce(): void {
    const started = process.hrtime.bigint();
    const steps = this.steps(this.clock());
    let step = steps.next();
    while (!step.done) {
      for (const j of step.value) j.settle?.({ kind: 'done', value: runSync(j.program) });
      step = steps.next();
    }
    this.lastTickSeconds = Number(process.hrtime.bigint() - started) / 1e9;
  }

  private async sample(at: bigint): Promise<void> {
    const started = process.hrtime.bigint();
    const steps = this.steps(at);
    let step = steps.next();
    while (!step.done) {
      await this.reader.run(step.value);
      step = this.stopped ? steps.return() : steps.next();
    }
    this.lastTickSeconds = Number(process.hrtime.bigint() - started) / 1e9;
  }

  private *steps(at: bigint): Steps {
    if (this.stopped) return;
    this.origin ??= at;
    const now = Number(at - this.origin);
    const first = this.ticks === 0;
    const phase = this.ticks % ATTRIBUTE_REFRESH_TICKS;
    if (first) yield* this.reconcile();
    else if (phase === 0) yield* this.reconcile(false);
    const ports = [...this.ports.values()];
    if (yield* this.readPorts(ports, now, !first)) {
      // A device came or went: the full listing now, and the new ports read in this tick.
      const before = new Set(this.ports.values());
      yield* this.reconcile(false);
      const added = [...this.ports.values()].filter((p) => !before.has(p));
      if (added.length > 0) yield* this.readPorts(added, now, false);
    }
    // In rounds of their own: the counters' request stays the same tick after tick (its encoding is kept).
    const due = first ? [] : ports.filter((p, i) => i % ATTRIBUTE_REFRESH_TICKS === phase && this.isLive(p));
    if (due.length > 0) yield* this.refreshAttributes(due);
    this.ticks++;
  }

  /**
   * One round for every port: its counter sets and, after the first tick (`withStateAndListing`), its state
   * and whether the port list changed. Returns whether it did.
   */
  private *readPorts(ports: readonly SampledPort[], now: number, withStateAndListing: boolean): Steps<boolean> {
    const jobs: Job<unknown>[] = [];
    const listed = withStateAndListing ? new Pending(INVENTORY, this.opts.inventory.listChangedReads(ports.map((p) => p.ref))) : undefined;
    if (listed) jobs.push(listed);
    const reads = ports.map((p) => {
      const group = portKey(p.ref);
      const state = withStateAndListing ? new Pending(group, this.opts.inventory.stateReads(p.ref)) : undefined;
      if (state) jobs.push(state);
      const sets = p.sets.map((set) => new Pending(group, set.reads()));
      jobs.push(...sets);
      return { port: p, state, sets };
    });
    if (jobs.length === 0) return false;
    yield jobs;
    const changed: SampledPort[] = [];
    const stale = new Set<SampledPort>();
    const gone: SampledPort[] = [];
    for (const { port: p, state, sets } of reads) {
      const o = state?.outcome;
      if (o?.kind === 'done') {
        const st = o.value;
        if (st === undefined) gone.push(p);
        else if (st.recreated) stale.add(p);
        else if (attributesChanged(st, p.attrs)) changed.push(p);
      }
      sets.forEach((read, i) => {
        if (this.applySet({ port: p, set: p.sets[i]!, outcome: read.outcome, now })) stale.add(p);
      });
    }
    for (const p of gone) this.removePort(p);
    // A flap can change rate or MTU: the full attributes again for a port whose state changed
    // (or whose MTU did, without a flap).
    if (changed.length > 0) yield* this.refreshAttributes(changed.filter((p) => this.isLive(p)));
    if (stale.size > 0) yield* this.reopen([...stale].filter((p) => this.isLive(p)));
    const l = listed?.outcome;
    return l?.kind === 'done' && l.value;
  }

  /**
   * Lists ports, reads their attributes (the known ports' too unless `refreshKnown` is false:
   * they keep their turn), adds ports that appeared and drops ports that vanished.
   */
  private *reconcile(refreshKnown = true): Steps {
    const listing = new Pending(INVENTORY, this.opts.inventory.listReads());
    yield [listing];
    const listed = listing.outcome;
    if (listed.kind !== 'done') return; // blocked or paused: keep what we know
    // Known ports that keep their turn are seen without a read.
    const seen = new Set<string>(refreshKnown ? [] : listed.value.map(portKey).filter((k) => this.ports.has(k)));
    const reads = listed.value.filter((ref) => !seen.has(portKey(ref))).map((ref) => new Pending(portKey(ref), this.opts.inventory.attributeReads(ref)));
    if (reads.length > 0) yield reads;
    const added: PortAttributes[] = [];
    for (const read of reads) {
      const o = read.outcome;
      const known = this.ports.get(read.group);
      if (o.kind !== 'done') {
        if (known) seen.add(read.group); // its reads block: it is still there
        continue;
      }
      if (o.value === undefined) continue;
      seen.add(read.group);
      if (known) known.attrs = o.value;
      else added.push(o.value);
    }
    for (const [k, p] of this.ports) if (!seen.has(k)) this.removePort(p);
    if (added.length > 0) yield* this.addPorts(added);
  }

  /** Whether `p` is still the sampler's port (not removed or reopened meanwhile). */
  private isLive(p: SampledPort): boolean {
    return this.ports.get(portKey(p.ref)) === p;
  }

  private *refreshAttributes(ports: readonly SampledPort[]): Steps {
    const reads = ports.map((p) => ({ port: p, read: new Pending(portKey(p.ref), this.opts.inventory.attributeReads(p.ref)) }));
    yield reads.map((r) => r.read);
    for (const { port: p, read } of reads) {
      const o = read.outcome;
      if (o.kind !== 'done') continue;
      if (o.value === undefined) this.removePort(p);
      else p.attrs = o.value;
    }
  }

  private *addPorts(ports: readonly PortAttributes[]): Steps {
    const opens = ports.map((attrs) => ({ attrs, open: new Pending(portKey(attrs), this.openPort(attrs)) }));
    yield opens.map((o) => o.open);
    for (const { attrs, open } of opens) {
      const o = open.outcome;
      if (o.kind !== 'done') continue; // blocked: tried again at the next full refresh
      const ref = { device: attrs.device, port: attrs.port };
      const port: SampledPort = { ref, attrs, sets: o.value, counters: [] };
      this.ports.set(portKey(ref), port);
      for (const set of o.value) this.seriesOf(port, set, set.counters);
      this.opts.events?.portAdded?.(port);
    }
  }

  /** Opens the port's sets, source by source; a source covered by an opened one is skipped. */
  private *openPort(attrs: PortAttributes): ReadProgram<PortCounterSet[]> {
    const sets: PortCounterSet[] = [];
    const covered = new Set<CounterSourceKind>();
    let complete = false;
    try {
      for (const src of this.opts.sources) {
        if (covered.has(src.kind)) continue;
        const set = yield* src.openReads(attrs);
        if (set === undefined) continue;
        sets.push(set);
        for (const k of src.covers ?? []) covered.add(k);
      }
      complete = true;
      return sets;
    } finally {
      if (!complete) for (const s of sets) s.close();
    }
  }

  /** The port's files were re-created (driver reload): open them again; the series start afresh. */
  private *reopen(ports: readonly SampledPort[]): Steps {
    for (const p of ports) {
      this.dropPort(p);
      this.ports.delete(portKey(p.ref));
      this.opts.events?.portRemoved?.(p.ref);
    }
    yield* this.addPorts(ports.map((p) => p.attrs));
  }

  private removePort(p: SampledPort): void {
    this.dropPort(p);
    this.ports.delete(portKey(p.ref));
    this.opts.events?.portRemoved?.(p.ref);
  }

  private dropPort(p: SampledPort): void {
    for (const s of p.sets) {
      s.close();
      this.setSeries.delete(s);
    }
    this.opts.inventory.forget(p.ref);
    this.reader.forget(portKey(p.ref));
  }

  /** Applies one set's outcome; true when the set's files were re-created (or its list changed) and must be reopened. */
  private applySet(a: SetApply): boolean {
    const { port, set, outcome: o, now } = a;
    const window = this.opts.windowMs * 1e6;
    if (o.kind === 'deferred') return false; // the series keep their window until the next tick
    const read = o.kind === 'done' ? o.value : undefined;
    if (read?.kind === 'readings') {
      const { block, onError } = this.seriesOf(port, set, read.counters);
      block.recordAll(now, window, read.readings, onError);
      return false;
    }
    if (read?.kind === 'values') {
      const { block } = this.seriesOf(port, set, read.counters);
      read.values.forEach((v, i) => {
        if (v.ok) block.record(i, now, ...halves(v.value));
        else this.failed(a, block, i, v.error, true, false);
        block.trim(i, now, window);
      });
      return false;
    }
    const { block } = this.seriesOf(port, set, set.counters);
    // The set is gone, or its read did not end: every counter fails alike.
    const error = read !== undefined ? goneError(read) : o.kind !== 'done' ? o.error : undefined;
    if (error === undefined) return false; // not reached: a done read is values, readings or gone
    const counted = read !== undefined || o.kind === 'failed' || (o.kind === 'blocked' && o.fresh);
    const silent = read === undefined && o.kind !== 'failed';
    for (let i = 0; i < block.length; i++) {
      this.failed(a, block, i, error, counted, silent);
      block.trim(i, now, window);
    }
    return read !== undefined && read.reason !== 'vanished';
  }

  private failed(a: SetApply, block: SeriesBlock, i: number, error: ReadError, counted: boolean, silent: boolean): void {
    block.fail(i, error);
    if (counted) this.countError(a.port.ref, a.set.kind, block.specs[i]!.name, error, silent);
  }

  /** The block and series of each counter in `specs`, kept by name across list changes (netlink). */
  private seriesOf(port: SampledPort, set: PortCounterSet, specs: readonly CounterSpec[]): SetSeries {
    const b = this.setSeries.get(set);
    if (b && b.specs === specs) return b;
    const block = new SeriesBlock(specs);
    const old = new Map((b?.series ?? []).map((s) => [s.spec.name, s]));
    specs.forEach((spec, j) => {
      const s = old.get(spec.name);
      if (s !== undefined && sameSpec(s.spec, spec)) block.adopt(j, s.block, s.index);
    });
    const onError = (i: number, error: ReadError): void => this.countError(port.ref, set.kind, block.specs[i]!.name, error, false);
    const made = { specs, block, series: specs.map((spec, j) => new CounterSeries(spec, block, j)), onError };
    this.setSeries.set(set, made);
    port.counters = port.sets.flatMap((st) => (this.setSeries.get(st)?.series ?? []).map((s) => ({ source: st.kind, series: s })));
    return made;
  }

  private countError(ref: PortRef, source: CounterSourceKind, counter: string, error: ReadError, silent: boolean): void {
    const k = key(ref.device, ref.port, source);
    this.readErrors.set(k, (this.readErrors.get(k) ?? 0) + 1);
    if (!silent) this.opts.events?.readError?.(ref, source, counter, error);
  }

  /** Every source's rate for one quantity of one port and direction, preferred source first. */
  measurements(ref: PortRef, direction: Direction, quantity: Quantity): Measurement[] {
    const port = this.ports.get(portKey(ref));
    if (!port) return [];
    const out: Measurement[] = [];
    for (const c of port.counters) {
      const m = c.series.spec.meaning;
      if (!matches(m, direction, quantity)) continue;
      const raw = c.series.rate();
      if (raw === undefined) continue;
      out.push({ source: c.source, counter: c.series.spec.name, layer: m!.layer, rate: raw * m!.scale });
    }
    return out;
  }
}

const sameSpec = (a: CounterSpec, b: CounterSpec): boolean => a.bits === b.bits && a.overflow === b.overflow;

const matches = (m: CounterMeaning | undefined, d: Direction, q: Quantity): boolean =>
  m !== undefined && m.direction === d && m.quantity === q;

/** Whether a port's state read says its full attributes are out of date. */
function attributesChanged(st: PortState, attrs: PortAttributes): boolean {
  return st.state !== attrs.state || st.physState !== attrs.physState || st.attributesStale === true
    || (st.activeIbMtu !== undefined && st.activeIbMtu !== attrs.activeIbMtu);
}
