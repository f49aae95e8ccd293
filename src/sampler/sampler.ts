/**
 * Reads every port's counters each interval, off the request path, and keeps
 * the window that measured rates come from. Monotonic clock only.
 */
import type {
  CounterMeaning, CounterSource, CounterSourceKind, Direction, Layer, PortAttributes, PortCounterSet, PortInventory, PortRef, Quantity,
} from '../sources/types.js';
import { CounterSeries } from './series.js';

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
}

export interface SamplerOptions {
  readonly inventory: PortInventory;
  readonly sources: readonly CounterSource[];
  readonly intervalMs: number;
  readonly windowMs: number;
  readonly clock?: () => bigint;
  readonly events?: SamplerEvents;
}

const key = (r: PortRef): string => `${r.device}/${r.port}`;

export class Sampler {
  readonly ports = new Map<string, SampledPort>();
  lastTickSeconds = 0;
  ticks = 0;
  readErrors = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private readonly clock: () => bigint;

  constructor(private readonly opts: SamplerOptions) {
    this.clock = opts.clock ?? process.hrtime.bigint;
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
    for (const p of this.ports.values()) for (const s of p.sets) s.close();
    this.ports.clear();
  }

  tick(): void {
    const started = process.hrtime.bigint();
    this.reconcile();
    const now = this.clock();
    const windowNs = BigInt(this.opts.windowMs) * 1_000_000n;
    for (const port of this.ports.values()) this.readPort(port, now, windowNs);
    this.ticks++;
    this.lastTickSeconds = Number(process.hrtime.bigint() - started) / 1e9;
  }

  /** Adds ports that appeared, drops ports that vanished, refreshes attributes. */
  private reconcile(): void {
    const seen = new Set<string>();
    for (const ref of this.opts.inventory.listPorts()) {
      const attrs = this.opts.inventory.readAttributes(ref);
      if (!attrs) continue;
      seen.add(key(ref));
      const known = this.ports.get(key(ref));
      if (known) known.attrs = attrs;
      else this.addPort(ref, attrs);
    }
    for (const [k, port] of this.ports) {
      if (seen.has(k)) continue;
      for (const s of port.sets) s.close();
      this.ports.delete(k);
      this.opts.events?.portRemoved?.(port.ref);
    }
  }

  private addPort(ref: PortRef, attrs: PortAttributes): void {
    const sets = this.opts.sources.flatMap((src) => src.open(attrs) ?? []);
    const counters = sets.flatMap((set) => set.counters.map((spec) => ({ source: set.kind, series: new CounterSeries(spec) })));
    const port: SampledPort = { ref, attrs, sets, counters };
    this.ports.set(key(ref), port);
    this.opts.events?.portAdded?.(port);
  }

  private readPort(port: SampledPort, now: bigint, windowNs: bigint): void {
    let i = 0;
    let stale = false;
    for (const set of port.sets) {
      const values = set.read();
      for (const value of values) {
        const c = port.counters[i++];
        if (!c) break;
        if (!value.ok && value.error.startsWith('ESTALE')) stale = true;
        c.series.update(now, value);
        c.series.trim(now, windowNs);
        if (!value.ok) this.countError(port.ref, c.source, c.series.spec.name, value.error);
      }
    }
    if (stale) this.reopen(port);
  }

  /** The port's files were re-created (driver reload): open them again; the next tick starts afresh. */
  private reopen(port: SampledPort): void {
    for (const s of port.sets) s.close();
    this.ports.delete(key(port.ref));
    this.opts.events?.portRemoved?.(port.ref);
    this.addPort(port.ref, port.attrs);
  }

  private countError(ref: PortRef, source: CounterSourceKind, counter: string, error: string): void {
    const k = `${ref.device}\0${ref.port}\0${source}`;
    this.readErrors.set(k, (this.readErrors.get(k) ?? 0) + 1);
    this.opts.events?.readError?.(ref, source, counter, error);
  }

  /** Every source's rate for one quantity of one port and direction, preferred source first. */
  measurements(ref: PortRef, direction: Direction, quantity: Quantity): Measurement[] {
    const port = this.ports.get(key(ref));
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

const matches = (m: CounterMeaning | undefined, d: Direction, q: Quantity): boolean =>
  m !== undefined && m.direction === d && m.quantity === q;
