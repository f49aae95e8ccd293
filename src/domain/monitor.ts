/**
 * The configured MXL domains: discovery (flows to bind), per-flow measurement, and the evidence
 * each domain gives about a flow binding's state, one tick at a time. Domain entries that name
 * the same folder share one watcher, so a folder is read once per tick.
 */
import type { BoundDomainConfig, DomainConfig, FlowBinding, Placement } from '../config/types.js';
import { bindingKey } from '../config/types.js';
import type { FlowDefinition } from '../flows/definition.js';
import type { Logger } from '../log.js';
import type { FlowState } from './activity.js';
import type { FlowInfo } from './flowinfo.js';
import type { TransferOptions } from '../model/index.js';
import { DomainWatcher, type DomainClock, type DomainFlow, type SampleTiming, type WriterProbe } from './watcher.js';
import { type BoundedReads, Pending } from '../reads/bounded.js';
import { runSync } from '../reads/program.js';
import { readErrorText } from '../reads/errors.js';

export interface DomainMonitorOptions {
  readonly clock: DomainClock;
  readonly probe: WriterProbe | undefined;
  readonly log: Logger;
  /** Where the connections put a flow of a `bind: auto` domain (its path, the flow id); none: unbound. */
  readonly placements?: (path: string, flowId: string) => readonly Placement[];
}

const compiled = new Map<string, RegExp>();

/** `*` any run, `?` one character; everything else literal. Compiled once per glob. */
function globToRegExp(glob: string): RegExp {
  let re = compiled.get(glob);
  if (!re) {
    const body = glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
    re = new RegExp(`^${body}$`);
    if (compiled.size < 1024) compiled.set(glob, re);
  }
  return re;
}

/** Whether a domain entry's include/exclude globs select a flow (by label, id or group hint). */
function selects(domain: DomainConfig, def: FlowDefinition | undefined): boolean {
  if (!def) return false;
  const names = [def.label, def.id, ...def.groupHints];
  const hit = (globs: readonly string[]): boolean => globs.some((g) => names.some((n) => globToRegExp(g).test(n)));
  return (domain.include.length === 0 || hit(domain.include)) && !hit(domain.exclude);
}

/**
 * A domain entry covers a binding when it watches the binding's port and direction and selects
 * its flow; a `bind: auto` entry watches every port and direction it does not narrow to.
 */
function covers(domain: DomainConfig, b: FlowBinding): boolean {
  return placed(domain, b) && selects(domain, b.flow);
}

function placed(domain: DomainConfig, p: Placement): boolean {
  if (domain.bind === 'auto') {
    return (domain.device === undefined || (domain.device === p.device && domain.port === p.port)) && (domain.direction === undefined || domain.direction === p.direction);
  }
  return domain.device === p.device && domain.port === p.port && domain.direction === p.direction;
}

/** Several domains' evidence about one binding: any live wins, then stalled; unknown beats absent. */
const RANK: Readonly<Record<FlowState, number>> = { live: 3, stalled: 2, unknown: 1, absent: 0 };
export function combineStates(states: readonly FlowState[]): FlowState | undefined {
  return states.reduce<FlowState | undefined>((best, s) => (best === undefined || RANK[s] > RANK[best] ? s : best), undefined);
}

export interface DomainStatus {
  readonly path: string;
  readonly up: boolean;
  readonly error: string | undefined;
  readonly flows: number;
}

export interface DomainFlowEntry {
  readonly domain: string;
  readonly flow: DomainFlow;
}

export class DomainMonitor {
  private readonly watchers = new Map<string, DomainWatcher>();
  private bound: FlowBinding[] = [];
  /** Flows that left an `expect: always` domain: still bound (absent) until the next reload. */
  private readonly retained = new Map<string, FlowBinding>();
  /** Domains whose unreadability has been logged, with the reason logged. */
  private readonly failing = new Map<string, string>();
  private readonly coverage = new WeakMap<FlowBinding, readonly DomainConfig[]>();
  ticks = 0;

  constructor(
    private readonly domains: readonly DomainConfig[],
    private readonly opts: DomainMonitorOptions,
  ) {
    for (const d of domains) {
      if (!this.watchers.has(d.path)) this.watchers.set(d.path, new DomainWatcher(d.path, opts.clock, opts.probe, d.grainDuration));
    }
  }

  /**
   * Scans and samples every domain; true when the discovered bindings changed. Every read runs
   * on `reader` (bounded; each domain folder is its own group, blamed when one of its reads
   * blocks): first each domain's listing and new definitions, then the flows' headers. Without
   * a reader (the `check` command) they run here and now, and the tick is done when this
   * returns (the promise only carries the answer).
   */
  async tick(timing: SampleTiming, reader?: BoundedReads): Promise<boolean> {
    const watchers = [...this.watchers.values()];
    const scans = reader
      ? await reader.run(watchers.map((w) => ({ group: groupOf(w), program: w.scanReads() })))
      : watchers.map((w) => ({ kind: 'done', value: runSync(w.scanReads()) }) as const);
    let changed = false;
    watchers.forEach((watcher, i) => {
      const { added, removed } = watcher.applyOutcome(scans[i]!);
      this.logReadable(watcher);
      for (const f of added) this.logAdded(watcher.path, f);
      for (const f of removed) this.forget(watcher.path, f);
      changed ||= added.length > 0 || removed.length > 0;
    });
    const jobs = watchers.flatMap((w) => w.sampleJobs(timing, groupOf(w)));
    if (jobs.length > 0 && reader) await reader.run(jobs);
    else for (const j of jobs) runSync(j.program);
    this.ticks++;
    if (changed) this.rebind();
    return changed;
  }

  /** Flows found in the domains and selected there, plus the retained ones, each bound once. */
  bindings(): readonly FlowBinding[] {
    return this.bound;
  }

  /** Binds the `bind: auto` domains' flows again where the connections now put them; true when that changed. */
  rebindAuto(): boolean {
    if (!this.domains.some((d) => d.bind === 'auto')) return false;
    const before = this.bound.map(bindingKey).join('\n');
    this.rebind();
    return this.bound.map(bindingKey).join('\n') !== before;
  }

  /** Flows of `bind: auto` domains that no connection carries yet (their state and grains are still measured). */
  unbound(): { readonly domain: string; readonly flowId: string }[] {
    const out: { domain: string; flowId: string }[] = [];
    for (const d of this.domains) {
      if (d.bind !== 'auto') continue;
      for (const f of this.watchers.get(d.path)!.all()) {
        if (selects(d, f.def) && this.placementsOf(d, f).length === 0) out.push({ domain: d.path, flowId: f.id });
      }
    }
    return out;
  }

  private placementsOf(d: DomainConfig, f: DomainFlow): readonly Placement[] {
    return (this.opts.placements?.(d.path, f.id) ?? []).filter((p) => placed(d, p));
  }

  /**
   * Every flow's headIndex as it stands now, one job per domain folder (its group), for a read
   * that must go in the same request as others (the connections': model/same-tick.ts). Changes
   * no flow's state; keyed by headKey(domain, flow id).
   */
  headJobs(): Pending<ReadonlyMap<string, number>>[] {
    return [...this.watchers.values()].map((w) => new Pending(groupOf(w), w.headsReads()));
  }

  /** Every flow in every domain folder, with the folder it is in. */
  flows(): DomainFlowEntry[] {
    return [...this.watchers.values()].flatMap((w) => w.all().map((flow) => ({ domain: w.path, flow })));
  }

  /** One entry per domain folder: readable or not, and how many flow folders it holds. */
  status(): DomainStatus[] {
    return [...this.watchers.values()].map((w) => ({ path: w.path, up: w.error === undefined, error: w.error && readErrorText(w.error), flows: w.all().length }));
  }

  /** Domains that cannot be listed right now, with the reason. */
  errors(): { path: string; error: string }[] {
    return this.status().flatMap((s) => (s.error ? [{ path: s.path, error: s.error }] : []));
  }

  /**
   * What the domains covering a binding say about it; undefined when none covers it. A covering
   * domain that cannot be read says `unknown`; one without the flow's folder says `absent`.
   */
  evidence(b: FlowBinding): FlowState | undefined {
    return combineStates(this.covering(b).map((d) => {
      const w = this.watchers.get(d.path)!;
      if (w.error !== undefined) return 'unknown';
      return w.get(b.flow.id)?.state ?? 'absent';
    }));
  }

  /** The domain entries covering a binding, first first (bindings are immutable: cached per object). */
  covering(b: FlowBinding): readonly DomainConfig[] {
    let c = this.coverage.get(b);
    if (!c) {
      c = this.domains.filter((d) => covers(d, b));
      this.coverage.set(b, c);
    }
    return c;
  }

  close(): void {
    for (const w of this.watchers.values()) w.close();
  }

  private rebind(): void {
    const found = new Map<string, FlowBinding>();
    for (const d of this.domains) {
      for (const f of this.watchers.get(d.path)!.all()) {
        if (!selects(d, f.def)) continue;
        const where = d.bind === 'auto' ? this.placementsOf(d, f) : [d];
        for (const p of where) {
          const b = bind(d, p, f);
          if (!found.has(bindingKey(b))) found.set(bindingKey(b), b);
        }
      }
    }
    for (const [k, b] of this.retained) if (!found.has(k)) found.set(k, b);
    this.bound = [...found.values()];
  }

  private forget(path: string, f: DomainFlow): void {
    this.opts.log.info({ domain: path, flow_id: f.id }, 'MXL flow removed from domain');
    for (const d of this.domains) {
      if (d.path !== path || d.expect !== 'always' || !selects(d, f.def)) continue;
      // A bind: auto flow that left is where its connection last put it, if anywhere.
      const where = d.bind === 'auto' ? this.bound.filter((b) => b.flow.id === f.id) : [d];
      for (const p of where) {
        const b = bind(d, p, f);
        this.retained.set(bindingKey(b), b);
      }
    }
  }

  private logReadable(w: DomainWatcher): void {
    const logged = this.failing.get(w.path);
    const error = w.error && readErrorText(w.error);
    if (error !== undefined && logged !== error) {
      this.failing.set(w.path, error);
      this.opts.log.warn({ domain: w.path, err: error }, 'MXL domain cannot be read; the flows it covers are unknown (logged once)');
    } else if (w.error === undefined && logged !== undefined) {
      this.failing.delete(w.path);
      this.opts.log.info({ domain: w.path }, 'MXL domain readable again');
    }
  }

  private logAdded(path: string, f: DomainFlow): void {
    if (f.defError) this.opts.log.warn({ domain: path, flow_id: f.id, err: f.defError }, 'MXL flow definition unusable; flow skipped');
    else {
      const selected = this.domains.some((d) => d.path === path && selects(d, f.def));
      this.opts.log.info({ domain: path, flow_id: f.id, label: f.def?.label, selected }, 'MXL flow found in domain');
    }
  }
}

/** The reader group of a domain folder's reads: named in the log when one of them blocks. */
const groupOf = (w: DomainWatcher): string => `domain ${w.path}`;

/** A flow found in a domain is bound there (or where its connection runs), with that domain's expectation (default `when_live`). */
function bind(domain: DomainConfig, at: BoundDomainConfig | Placement, f: DomainFlow): FlowBinding {
  return {
    flow: f.def!, device: at.device, port: at.port, direction: at.direction, provider: domain.provider,
    grainDuration: domain.grainDuration, origin: 'domain', expect: domain.expect ?? 'when_live',
    ...(f.info ? { transfer: transferOf(f.info) } : {}),
    ...(domain.peer ? { peer: domain.peer } : {}),
  };
}

/**
 * What the flow's header says about its writes: the ring length of an audio flow; for video and
 * data, the sync batch mxl-fabrics-demo sends per write (demo.cpp:405-418; whole grains unless
 * the writer set a smaller maxSyncBatchSizeHint).
 */
function transferOf(info: FlowInfo): TransferOptions {
  if (info.format === 'audio') return info.bufferLength ? { ringLengthSamples: BigInt(info.bufferLength) } : {};
  return info.syncBatchSize > 0 ? { slicesPerBatch: info.syncBatchSize } : {};
}
