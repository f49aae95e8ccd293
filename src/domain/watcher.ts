/**
 * Follows one MXL domain (usually /dev/shm/mxl) live: `<uuid>.mxl-flow` folders that appear
 * and disappear, each flow's definition (flow_def.json) and its runtime header (`data`).
 * Read-only: files are opened O_RDONLY, nothing is written, and the only lock taken is
 * MXL's own non-blocking writer test, released at once.
 *
 * Every read is a read program (src/reads), run on the daemon's bounded reader in the domain's
 * group: the listing with a stat per flow folder and the definitions of new folders
 * (`DomainWatcher.scanReads`), then each flow's header (`DomainFlow.sample`). A domain on a
 * filesystem that stops answering costs one read timeout, not the event loop.
 */
import { closeSync, constants } from 'node:fs';
import { join } from 'node:path';
import { type FlowDefinition, parseFlowText } from '../flows/definition.js';
import { InputError, formatProblem } from '../input/problems.js';
import { type Rational } from '../model/index.js';
import { headKey } from '../model/same-tick.js';
import { CounterSeries } from '../sampler/series.js';
import type { CounterSpec } from '../sources/types.js';
import { type FlowObservation, type FlowState, flowState, lastWriteAgeNs, stallAfterNs } from './activity.js';
import { FLOW_INFO_READ_BYTES, type FlowInfo, FlowInfoError, decodeFlowInfo } from './flowinfo.js';
import { type ReadProgram, all, namesOf, read, readText, runSync } from '../reads/program.js';
import { isDirectoryMode } from '../reads/ops.js';
import type { Job, Outcome } from '../reads/bounded.js';
import { type ReadError, readErrorText } from '../reads/errors.js';

/** Flow folders are named by the flow's UUID (MXL PathUtils: `<domain>/<uuid>.mxl-flow`). */
const FLOW_DIR = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.mxl-flow$/i;

const HEAD_INDEX: CounterSpec = { name: 'headIndex', bits: 64, overflow: 'wrap', meaning: undefined };

export interface DomainClock {
  monotonicNs(): bigint;
  taiNs(): bigint;
}

export interface WriterProbe {
  writerHoldsLock(fd: number): boolean;
}

interface FlowDir {
  readonly name: string;
  readonly inode: number;
}

/**
 * A domain folder's listing: room for ~1,400 flow folder names (`<uuid>.mxl-flow`, 46 bytes with
 * its NUL); a larger folder is read again with room for any (namesOf). Small, as the reader's
 * output buffer follows the largest request of a tick.
 */
const LISTING_BYTES = 64 * 1024;
/** An NMOS flow definition is a KB or two of JSON; a larger one is read again whole, up to the cap. */
const DEFINITION_FIRST_BYTES = 16 * 1024;
const DEFINITION_MAX_BYTES = 1024 * 1024;

export type Listing = { readonly ok: true; readonly dirs: Map<string, FlowDir> } | { readonly ok: false; readonly error: ReadError };
export type DefinitionRead = { readonly def: FlowDefinition; readonly error?: undefined } | { readonly def?: undefined; readonly error: string };

/** The domain's reads, as read programs: the daemon runs them on its bounded reader. */
export const domainReads = {
  /** Flow id (lower case) -> its folder; `.mxl-tmp-*` folders (flows being built) never match. */
  *listFlowDirs(path: string): ReadProgram<Listing> {
    const r = yield* read([{ kind: 'readDir', path, max: LISTING_BYTES }]);
    const failed = r.ok(0) ? undefined : r.failure(0, 'scandir', path);
    const names = yield* namesOf(r, 0, path);
    if (names === undefined) return { ok: false, error: failed ?? { code: 'UNLISTED', op: 'scandir', path, detail: `cannot list '${path}'` } };
    const flows = names.flatMap((name) => {
      const id = FLOW_DIR.exec(name)?.[1]?.toLowerCase();
      return id === undefined ? [] : [{ id, name }];
    });
    const dirs = new Map<string, FlowDir>();
    if (flows.length === 0) return { ok: true, dirs };
    const st = yield* read(flows.map(({ name }) => ({ kind: 'stat', path: join(path, name) })));
    flows.forEach(({ id, name }, i) => {
      const s = st.stat(i); // undefined: removed between readdir and stat
      if (s && isDirectoryMode(s.mode)) dirs.set(id, { name, inode: s.ino });
    });
    return { ok: true, dirs };
  },
  /** A flow folder's flow_def.json, parsed. */
  *definition(dir: string): ReadProgram<DefinitionRead> {
    const file = join(dir, 'flow_def.json');
    const t = yield* readText(file, DEFINITION_FIRST_BYTES, DEFINITION_MAX_BYTES);
    if (!t.ok) return { error: formatProblem({ file, line: 1, col: 1, field: '', reason: `cannot read flow definition: ${readErrorText(t.error)}` }) };
    try {
      return { def: parseFlowText(file, t.text) };
    } catch (e) {
      if (!(e instanceof InputError)) throw e;
      return { error: e.problems.map(formatProblem).join('; ') };
    }
  },
  close(fd: number): void {
    closeSync(fd);
  },
};

/** What one scan read: the flow folders, and the definitions of those not followed yet. */
export type Scan =
  | { readonly ok: true; readonly dirs: Map<string, FlowDir>; readonly defs: ReadonlyMap<string, DefinitionRead> }
  | { readonly ok: false; readonly error: ReadError };

export interface SampleTiming {
  readonly windowNs: bigint;
  /** The sampling interval: with the grain period it sets how long a flow may look idle. */
  readonly intervalNs: bigint;
}

/** Nanoseconds per grain at `rate` grains per second. */
const periodNs = (rate: Rational): bigint => (rate.den * 1_000_000_000n) / rate.num;
/** Nanoseconds in `duration` seconds. */
const durationNs = (duration: Rational): bigint => (duration.num * 1_000_000_000n) / duration.den;

export class DomainFlow {
  info: FlowInfo | undefined;
  headerError: string | undefined;
  writerActive: boolean | undefined;
  lastWriteAgeSeconds: number | undefined;
  state: FlowState = 'unknown';
  readonly headIndex = new CounterSeries(HEAD_INDEX);
  private fd: number | undefined;
  private samples = 0;
  private firstSeenNs: bigint | undefined;
  private lastHead: bigint | undefined;
  private headChangedNs: bigint | undefined;

  constructor(
    readonly id: string,
    readonly dir: string,
    readonly inode: number,
    readonly def: FlowDefinition | undefined,
    readonly defError: string | undefined,
    /** Audio commits come in batches of this duration (the domain's `ptime`). */
    readonly audioBatch: Rational,
  ) {}

  /** The header read is a read program (src/reads): the daemon runs it on the bounded reader. */
  *sample(clock: DomainClock, probe: WriterProbe | undefined, timing: SampleTiming): ReadProgram<void> {
    const now = clock.monotonicNs();
    this.firstSeenNs ??= now;
    try {
      const data = join(this.dir, 'data');
      if (this.fd === undefined) {
        const o = yield* read([{ kind: 'open', path: data, flags: constants.O_RDONLY | constants.O_NOFOLLOW }]);
        if (!o.ok(0)) throw new Error(`${o.error(0, 'open')} '${data}'`);
        this.fd = o.status(0);
      }
      const r = yield* read([{ kind: 'pread', fd: this.fd, offset: 0, max: FLOW_INFO_READ_BYTES }]);
      if (!r.ok(0)) throw new Error(`${r.error(0, 'read')} '${data}'`);
      this.info = decodeFlowInfo(r.bytes(0));
      this.headerError = undefined;
      this.samples++;
      // Until the first commit a flow's headIndex is 0 (MXL FlowManager initFlowRuntimeInfo); the
      // first commit jumps to a TAI-aligned index, which is not grains: the rate starts there.
      if (this.info.headIndex !== 0n) {
        this.headIndex.update(now, { ok: true, value: this.info.headIndex });
        this.headIndex.trim(now, timing.windowNs);
      }
      if (this.lastHead !== undefined && this.info.headIndex !== this.lastHead) this.headChangedNs = now;
      this.lastHead = this.info.headIndex;
      this.writerActive = probe?.writerHoldsLock(this.fd);
    } catch (e) {
      this.headerError = e instanceof FlowInfoError ? e.message : (e as Error).message;
      this.headIndex.update(now, { ok: false, error: { code: 'SOURCE', op: 'read', path: join(this.dir, 'data'), detail: this.headerError } });
      this.info = undefined;
    }
    const o = this.observe(now, clock, timing.intervalNs);
    this.state = flowState(o);
    const age = lastWriteAgeNs(o);
    this.lastWriteAgeSeconds = age === undefined ? undefined : Math.max(0, Number(age) / 1e9);
  }

  /**
   * headIndex as it stands now, read apart from sample(): nothing of the flow's state changes.
   * Undefined before the flow's data file is open, before its first commit, or when unreadable.
   * The connections read runs it in the same request as the restrack dumps (model/same-tick.ts).
   */
  *headRead(): ReadProgram<number | undefined> {
    if (this.fd === undefined) return undefined;
    const r = yield* read([{ kind: 'pread', fd: this.fd, offset: 0, max: FLOW_INFO_READ_BYTES }]);
    if (!r.ok(0)) return undefined;
    try {
      const head = decodeFlowInfo(r.bytes(0)).headIndex;
      return head === 0n ? undefined : Number(head);
    } catch (e) {
      if (e instanceof FlowInfoError) return undefined;
      throw e;
    }
  }

  private discrete(): boolean {
    return this.info?.format === 'video' || this.info?.format === 'data';
  }

  private observe(now: bigint, clock: DomainClock, intervalNs: bigint): FlowObservation {
    const info = this.info;
    const discrete = this.discrete();
    const grain = discrete ? (info?.rate ? periodNs(info.rate) : undefined) : durationNs(this.audioBatch);
    return {
      present: true,
      headerOk: info !== undefined,
      writer: this.writerActive,
      sinceHeadChangeNs: this.headChangedNs === undefined ? undefined : now - this.headChangedNs,
      // MXL stamps lastWriteTime when it creates a flow too: it means a write only once headIndex moved off 0
      sinceLastWriteNs: discrete && info && info.headIndex !== 0n && info.lastWriteTime > 0n ? clock.taiNs() - info.lastWriteTime : undefined,
      sinceFirstSeenNs: now - this.firstSeenNs!,
      samples: this.samples,
      stallAfterNs: stallAfterNs(intervalNs, grain),
    };
  }

  close(): void {
    if (this.fd !== undefined) domainReads.close(this.fd);
    this.fd = undefined;
  }
}

export interface DomainChanges {
  readonly added: readonly DomainFlow[];
  readonly removed: readonly DomainFlow[];
}

export class DomainWatcher {
  private readonly flows = new Map<string, DomainFlow>();
  /** Why the domain cannot be listed now; undefined while it can. */
  error: ReadError | undefined;

  constructor(
    readonly path: string,
    private readonly clock: DomainClock,
    private readonly probe: WriterProbe | undefined,
    private readonly audioBatch: Rational,
  ) {}

  all(): DomainFlow[] {
    return [...this.flows.values()];
  }

  get(id: string): DomainFlow | undefined {
    return this.flows.get(id);
  }

  /**
   * The listing, and the definitions of folders that are new (or were re-created), as one read
   * program. It changes nothing: `apply()` does, with what it read.
   */
  *scanReads(): ReadProgram<Scan> {
    const listed = yield* domainReads.listFlowDirs(this.path);
    if (!listed.ok) return listed;
    const fresh = [...listed.dirs].filter(([id, dir]) => this.flows.get(id)?.inode !== dir.inode);
    const read = yield* all(fresh.map(([, dir]) => domainReads.definition(join(this.path, dir.name))));
    return { ok: true, dirs: listed.dirs, defs: new Map(fresh.map(([id], i) => [id, read[i]!])) };
  }

  /** Every flow's headRead() in one round, by headKey(domain, flow id); flows not read are left out. */
  *headsReads(): ReadProgram<ReadonlyMap<string, number>> {
    const flows = this.all();
    const heads = yield* all(flows.map((f) => f.headRead()));
    return new Map(flows.flatMap((f, i) => (heads[i] === undefined ? [] : [[headKey(this.path, f.id), heads[i]] as const])));
  }

  /** scanReads() and apply() here and now (`check`, tests). */
  scan(): DomainChanges {
    return this.apply(runSync(this.scanReads()));
  }

  /**
   * Follows what a scan read: new folders' flows are added, vanished ones closed. A domain that
   * cannot be listed keeps no flows: nothing can be said about them.
   */
  apply(scan: Scan): DomainChanges {
    this.error = scan.ok ? undefined : scan.error;
    const seen = scan.ok ? scan.dirs : new Map<string, FlowDir>();
    const added: DomainFlow[] = [];
    const removed: DomainFlow[] = [];
    for (const [id, flow] of this.flows) {
      if (seen.get(id)?.inode === flow.inode) continue;
      flow.close();
      this.flows.delete(id);
      removed.push(flow);
    }
    for (const [id, dir] of seen) {
      if (this.flows.has(id)) continue;
      const def = scan.ok ? scan.defs.get(id) : undefined;
      const flow = this.flowOf(id, dir, def ?? { error: 'flow_def.json was not read' });
      this.flows.set(id, flow);
      added.push(flow);
    }
    return { added, removed };
  }

  /**
   * What a scan run on the bounded reader gives: a read that blocked (or never ran) makes the
   * domain unreadable for now; a scan deferred to the next run changes nothing.
   */
  applyOutcome(o: Outcome<Scan>): DomainChanges {
    switch (o.kind) {
      case 'done':
        return this.apply(o.value);
      case 'blocked':
        // While the stuck read has not returned the group is skipped: keep the timeout as the reason.
        return this.apply({ ok: false, error: o.fresh ? o.error : (this.error ?? o.error) });
      case 'paused':
      case 'failed':
        return this.apply({ ok: false, error: o.error });
      case 'deferred':
        return { added: [], removed: [] };
    }
  }

  /** sampleJobs() here and now (`check`, tests). */
  sample(timing: SampleTiming): void {
    for (const f of this.flows.values()) runSync(f.sample(this.clock, this.probe, timing));
  }

  /** One job per flow; `group` is blamed when a read blocks. */
  sampleJobs(timing: SampleTiming, group: string): Job<void>[] {
    return [...this.flows.values()].map((f) => ({ group, program: f.sample(this.clock, this.probe, timing) }));
  }

  close(): void {
    for (const f of this.flows.values()) f.close();
    this.flows.clear();
  }

  private flowOf(id: string, { name, inode }: FlowDir, read: DefinitionRead): DomainFlow {
    const dir = join(this.path, name);
    if (read.def === undefined) return new DomainFlow(id, dir, inode, undefined, read.error, this.audioBatch);
    const mismatch = read.def.id === id ? undefined : `flow_def.json id ${read.def.id} does not match the folder ${name}`;
    return new DomainFlow(id, dir, inode, mismatch ? undefined : read.def, mismatch, this.audioBatch);
  }
}
