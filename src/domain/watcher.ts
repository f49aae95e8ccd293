/**
 * Follows one MXL domain (usually /dev/shm/mxl) live: `<uuid>.mxl-flow` folders that appear
 * and disappear, each flow's definition (flow_def.json) and its runtime header (`data`).
 * Read-only: files are opened O_RDONLY, nothing is written, and the only lock taken is
 * MXL's own non-blocking writer test, released at once.
 *
 * The header's open and pread are a read program (`DomainFlow.sample`), run on the daemon's
 * bounded reader each tick; the listing and the definition files, read when the folder
 * changes, are the small calls of `domainReads`.
 */
import { closeSync, readdirSync, statSync, constants } from 'node:fs';
import { join } from 'node:path';
import { type FlowDefinition, loadFlowFile } from '../flows/definition.js';
import { InputError, formatProblem } from '../input/problems.js';
import { type Rational } from '../model/index.js';
import { CounterSeries } from '../sampler/series.js';
import type { CounterSpec } from '../sources/types.js';
import { type FlowObservation, type FlowState, flowState, lastWriteAgeNs, stallAfterNs } from './activity.js';
import { FLOW_INFO_READ_BYTES, type FlowInfo, FlowInfoError, decodeFlowInfo } from './flowinfo.js';
import { type ReadProgram, read, runSync } from '../reads/program.js';
import type { Job } from '../reads/bounded.js';

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

/** The domain's blocking reads, one small call each. */
export const domainReads = {
  /** Flow id (lower case) -> its folder; `.mxl-tmp-*` folders (flows being built) never match. */
  listFlowDirs(path: string): Map<string, FlowDir> {
    const out = new Map<string, FlowDir>();
    for (const name of readdirSync(path)) {
      const id = FLOW_DIR.exec(name)?.[1]?.toLowerCase();
      if (id === undefined) continue;
      try {
        const st = statSync(join(path, name));
        if (st.isDirectory()) out.set(id, { name, inode: st.ino });
      } catch {
        // removed between readdir and stat
      }
    }
    return out;
  },
  definition(dir: string): FlowDefinition {
    return loadFlowFile(join(dir, 'flow_def.json'));
  },
  close(fd: number): void {
    closeSync(fd);
  },
};

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
      this.headIndex.update(now, { ok: false, error: this.headerError });
      this.info = undefined;
    }
    const o = this.observe(now, clock, timing.intervalNs);
    this.state = flowState(o);
    const age = lastWriteAgeNs(o);
    this.lastWriteAgeSeconds = age === undefined ? undefined : Math.max(0, Number(age) / 1e9);
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
  error: string | undefined;

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
   * Lists the domain; flows whose folder is new (or was re-created) are read, vanished ones
   * closed. A domain that cannot be listed keeps no flows: nothing can be said about them.
   */
  scan(): DomainChanges {
    let seen: Map<string, FlowDir>;
    try {
      seen = domainReads.listFlowDirs(this.path);
      this.error = undefined;
    } catch (e) {
      this.error = (e as Error).message;
      seen = new Map();
    }
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
      const flow = this.readFlow(id, dir);
      this.flows.set(id, flow);
      added.push(flow);
    }
    return { added, removed };
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

  private readFlow(id: string, { name, inode }: FlowDir): DomainFlow {
    const dir = join(this.path, name);
    try {
      const def = domainReads.definition(dir);
      const mismatch = def.id === id ? undefined : `flow_def.json id ${def.id} does not match the folder ${name}`;
      return new DomainFlow(id, dir, inode, mismatch ? undefined : def, mismatch, this.audioBatch);
    } catch (e) {
      const reason = e instanceof InputError ? e.problems.map(formatProblem).join('; ') : (e as Error).message;
      return new DomainFlow(id, dir, inode, undefined, reason, this.audioBatch);
    }
  }
}
