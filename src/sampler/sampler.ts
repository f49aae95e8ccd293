/**
 * Reads every port's counters each interval, off the request path, and keeps
 * the window that measured rates come from. Monotonic clock only. File reads run
 * in a worker with a timeout (reader.ts), so a blocked read(2) cannot hang the process.
 */
import type {
  CounterMeaning, CounterSource, CounterSourceKind, CounterValue, Direction, Layer, PortAttributes, PortCounterSet, PortInventory, PortRef,
  Quantity,
} from '../sources/types.js';
import { portKey } from '../sources/types.js';
import { CounterSeries } from './series.js';
import { BoundedReader, type ReadJob } from './reader.js';
import { readPlanOf, toCounterValues } from './offload.js';

export interface SampledCounter {
  readonly source: CounterSourceKind;
  readonly series: CounterSeries;
}

export interface SampledPort {
  readonly ref: PortRef;
  attrs: PortAttributes;
  readonly sets: PortCounterSet[];
  readonly counters: SampledCounter[];
}

export interface Measurement {
  readonly source: CounterSourceKind;
  readonly counter: string;
  readonly layer: Layer | undefined;
  /** Quantity per second, scaled (bytes or packets). */
  readonly rate: number;
}

export interface SamplerEvents {
  portAdded?(port: SampledPort): void;
  portRemoved?(ref: PortRef): void;
  readError?(port: PortRef, source: CounterSourceKind, counter: string, error: string): void;
  /** A read of this port did not return within the timeout; its file-based counters are skipped for a while. */
  readBlocked?(port: PortRef, info: { readonly timeoutMs: number; readonly stuckWorkers: number }): void;
  /** A port whose read had blocked answered again. */
  readRecovered?(port: PortRef): void;
}

export interface SamplerOptions {
  readonly inventory: PortInventory;
  readonly sources: readonly CounterSource[];
  readonly intervalMs: number;
  readonly windowMs: number;
  readonly clock?: () => bigint;
  readonly events?: SamplerEvents;
  /**
   * 'worker' (default): descriptor reads run in a worker thread, bounded by `readTimeoutMs`
   * (src/sampler/reader.ts); 'direct': every set is read on this thread, unbounded.
   */
  readonly reads?: 'worker' | 'direct';
  /** A read that makes no progress for this long is blocked; default interval/2 within 100..1000 ms. */
  readonly readTimeoutMs?: number;
}

/** Default for SamplerOptions.readTimeoutMs. */
export const defaultReadTimeoutMs = (intervalMs: number): number => Math.min(1000, Math.max(100, Math.floor(intervalMs / 2)));

/** Full port attributes (GID table, rate, MTU) every this many ticks; the state every tick. */
export const ATTRIBUTE_REFRESH_TICKS = 10;


export class Sampler {
  readonly ports = new Map<string, SampledPort>();
  lastTickSeconds = 0;
  ticks = 0;
  readErrors = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private readonly clock: () => bigint;
  /** Undefined in 'direct' mode. */
  readonly reader: BoundedReader | undefined;

  constructor(private readonly opts: SamplerOptions) {
    this.clock = opts.clock ?? process.hrtime.bigint;
    if (opts.reads !== 'direct') {
      const byGroup = (g: string): PortRef | undefined => this.ports.get(g)?.ref;
      this.reader = new BoundedReader({
        readTimeoutMs: opts.readTimeoutMs ?? defaultReadTimeoutMs(opts.intervalMs),
        onBlocked: (g, info) => {
          const ref = byGroup(g);
          if (ref) opts.events?.readBlocked?.(ref, info);
        },
        onRecovered: (g) => {
          const ref = byGroup(g);
          if (ref) opts.events?.readRecovered?.(ref);
        },
      });
    }
  }

  /** Samples now and then every interval; `manual` leaves the ticking to the caller (tests). */
  start(manual = false): void {
    this.tick();
    if (manual) return;
    this.timer = setInterval(() => this.tick(), this.opts.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.reader?.close();
    for (const p of this.ports.values()) for (const s of p.sets) s.close();
    this.ports.clear();
  }

  tick(): void {
    const started = process.hrtime.bigint();
    this.reconcile();
    const now = this.clock();
    const windowNs = BigInt(this.opts.windowMs) * 1_000_000n;
    const ports = [...this.ports.values()];
    const values = this.readAll(ports);
    for (const port of ports) this.applyPort(port, values, now, windowNs);
    this.ticks++;
    this.lastTickSeconds = Number(process.hrtime.bigint() - started) / 1e9;
  }

  /**
   * Every set's values for this tick. File-based sets are read together in the reader's worker
   * (bounded); the others with their own read(). A set missing from the result was deferred.
   */
  private readAll(ports: readonly SampledPort[]): Map<PortCounterSet, Read> {
    const out = new Map<PortCounterSet, Read>();
    const jobs: ReadJob[] = [];
    const jobSets: PortCounterSet[] = [];
    for (const port of ports) {
      for (const set of port.sets) {
        const plan = this.reader ? readPlanOf(set) : undefined;
        if (plan) {
          jobs.push({ group: portKey(port.ref), plan });
          jobSets.push(set);
        } else {
          out.set(set, { values: set.read(), counted: true });
        }
      }
    }
    if (jobs.length === 0) return out;
    const outcomes = this.reader!.run(jobs);
    outcomes.forEach((o, i) => {
      const set = jobSets[i]!;
      const n = set.counters.length;
      switch (o.kind) {
        case 'done':
          out.set(set, { values: toCounterValues(n, o.gone, o.values), counted: true });
          return;
        case 'timeout':
          out.set(set, { values: Array.from({ length: n }, () => ({ ok: false, error: o.error })), counted: o.fresh, silent: true });
          return;
        case 'unavailable':
          out.set(set, { values: set.read(), counted: true });
          return;
        case 'deferred':
          return;
      }
    });
    return out;
  }

  /** Adds ports that appeared, drops ports that vanished, refreshes attributes. */
  private reconcile(): void {
    const seen = new Set<string>();
    const full = this.ticks % ATTRIBUTE_REFRESH_TICKS === 0;
    for (const ref of this.opts.inventory.listPorts()) {
      const known = this.ports.get(portKey(ref));
      const attrs = known && !full ? this.refreshState(known) : this.opts.inventory.readAttributes(ref);
      if (!attrs) continue;
      seen.add(portKey(ref));
      if (known) known.attrs = attrs;
      else this.addPort(ref, attrs);
    }
    for (const [k, port] of this.ports) {
      if (seen.has(k)) continue;
      for (const s of port.sets) s.close();
      this.ports.delete(k);
      this.reader?.forget(k);
      this.opts.events?.portRemoved?.(port.ref);
    }
  }

  /** State only; the full attributes again when the state changed (a flap can change rate or MTU). */
  private refreshState(port: SampledPort): PortAttributes | undefined {
    const inv = this.opts.inventory;
    if (!inv.readState) return inv.readAttributes(port.ref);
    const now = inv.readState(port.ref);
    if (!now) return undefined;
    if (now.state === port.attrs.state && now.physState === port.attrs.physState) return port.attrs;
    return inv.readAttributes(port.ref);
  }

  private addPort(ref: PortRef, attrs: PortAttributes): void {
    const sets = this.opts.sources.flatMap((src) => src.open(attrs) ?? []);
    const counters = sets.flatMap((set) => set.counters.map((spec) => ({ source: set.kind, series: new CounterSeries(spec) })));
    const port: SampledPort = { ref, attrs, sets, counters };
    this.ports.set(portKey(ref), port);
    this.opts.events?.portAdded?.(port);
  }

  private applyPort(port: SampledPort, reads: Map<PortCounterSet, Read>, now: bigint, windowNs: bigint): void {
    let offset = 0;
    let stale = false;
    for (const set of port.sets) {
      const read = reads.get(set);
      let i = offset;
      offset += set.counters.length;
      if (!read) continue; // deferred: the series keep their window until the next tick
      for (const value of read.values) {
        const c = port.counters[i++];
        if (!c || i > offset) break;
        if (!value.ok && value.error.startsWith('ESTALE')) stale = true;
        c.series.update(now, value);
        c.series.trim(now, windowNs);
        if (!value.ok && read.counted) this.countError(port.ref, c.source, c.series.spec.name, value.error, read.silent);
      }
    }
    if (stale) this.reopen(port);
  }

  /** The port's files were re-created (driver reload): open them again; the next tick starts afresh. */
  private reopen(port: SampledPort): void {
    for (const s of port.sets) s.close();
    this.ports.delete(portKey(port.ref));
    this.opts.events?.portRemoved?.(port.ref);
    this.addPort(port.ref, port.attrs);
  }

  private countError(ref: PortRef, source: CounterSourceKind, counter: string, error: string, silent = false): void {
    const k = `${ref.device}\0${ref.port}\0${source}`;
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

/** One set's values this tick; `counted` adds failures to readErrors, `silent` skips the per-counter event. */
interface Read {
  readonly values: readonly CounterValue[];
  readonly counted: boolean;
  readonly silent?: boolean;
}

const matches = (m: CounterMeaning | undefined, d: Direction, q: Quantity): boolean =>
  m !== undefined && m.direction === d && m.quantity === q;
