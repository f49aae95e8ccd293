/**
 * Follows one MXL domain (usually /dev/shm/mxl) live: `<uuid>.mxl-flow` folders that appear
 * and disappear, each flow's definition (flow_def.json) and its runtime header (`data`).
 * Read-only: files are opened O_RDONLY, nothing is written, and the only lock taken is
 * MXL's own non-blocking writer test, released at once.
 */
import { closeSync, readdirSync, statSync, constants } from 'node:fs';
import { join } from 'node:path';
import { type FlowDefinition, loadFlowFile } from '../flows/definition.js';
import { InputError, formatProblem } from '../input/problems.js';
import { CounterSeries } from '../sampler/series.js';
import type { CounterSpec } from '../sources/types.js';
import { FLOW_INFO_READ_BYTES, type FlowInfo, FlowInfoError, decodeFlowInfo } from './flowinfo.js';
import { type ReadProgram, read } from '../reads/program.js';
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

export class DomainFlow {
  info: FlowInfo | undefined;
  headerError: string | undefined;
  writerActive: boolean | undefined;
  lastWriteAgeSeconds: number | undefined;
  readonly headIndex = new CounterSeries(HEAD_INDEX);
  private fd: number | undefined;

  constructor(
    readonly id: string,
    readonly dir: string,
    readonly inode: number,
    readonly def: FlowDefinition | undefined,
    readonly defError: string | undefined,
  ) {}

  /** The header read is a read program (src/reads): the daemon runs it on the bounded reader. */
  *sample(clock: DomainClock, probe: WriterProbe | undefined, windowNs: bigint): ReadProgram<void> {
    const now = clock.monotonicNs();
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
      this.headIndex.update(now, { ok: true, value: this.info.headIndex });
      this.headIndex.trim(now, windowNs);
      this.writerActive = probe?.writerHoldsLock(this.fd);
      const age = this.info.lastWriteTime > 0n ? clock.taiNs() - this.info.lastWriteTime : undefined;
      this.lastWriteAgeSeconds = age === undefined ? undefined : Math.max(0, Number(age) / 1e9);
    } catch (e) {
      this.headerError = e instanceof FlowInfoError ? e.message : (e as Error).message;
      this.headIndex.update(now, { ok: false, error: this.headerError });
      this.info = undefined;
    }
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}

export interface DomainChanges {
  readonly added: readonly DomainFlow[];
  readonly removed: readonly DomainFlow[];
}

export class DomainWatcher {
  private readonly flows = new Map<string, DomainFlow>();
  error: string | undefined;

  constructor(
    readonly path: string,
    private readonly clock: DomainClock,
    private readonly probe: WriterProbe | undefined,
  ) {}

  all(): DomainFlow[] {
    return [...this.flows.values()];
  }

  /** Lists the domain; flows whose folder is new (or was re-created) are read, vanished ones closed. */
  scan(): DomainChanges {
    const seen = this.listFlowDirs();
    const added: DomainFlow[] = [];
    const removed: DomainFlow[] = [];
    for (const [name, flow] of this.flows) {
      const inode = seen.get(name);
      if (inode === flow.inode) continue;
      flow.close();
      this.flows.delete(name);
      removed.push(flow);
    }
    for (const [name, inode] of seen) {
      if (this.flows.has(name)) continue;
      const flow = this.readFlow(name, inode);
      this.flows.set(name, flow);
      added.push(flow);
    }
    return { added, removed };
  }

  /** One job per flow; `group` is blamed when a read blocks. */
  sampleJobs(windowNs: bigint, group: string): Job<void>[] {
    return [...this.flows.values()].map((f) => ({ group, program: f.sample(this.clock, this.probe, windowNs) }));
  }

  close(): void {
    for (const f of this.flows.values()) f.close();
    this.flows.clear();
  }

  /** Flow folder name -> inode; `.mxl-tmp-*` folders (flows being built) never match. */
  private listFlowDirs(): Map<string, number> {
    const out = new Map<string, number>();
    let names: string[];
    try {
      names = readdirSync(this.path);
      this.error = undefined;
    } catch (e) {
      this.error = (e as Error).message;
      return out;
    }
    for (const name of names) {
      if (!FLOW_DIR.test(name)) continue;
      try {
        const st = statSync(join(this.path, name));
        if (st.isDirectory()) out.set(name, st.ino);
      } catch {
        // removed between readdir and stat
      }
    }
    return out;
  }

  private readFlow(name: string, inode: number): DomainFlow {
    const id = FLOW_DIR.exec(name)![1]!.toLowerCase();
    const dir = join(this.path, name);
    try {
      const def = loadFlowFile(join(dir, 'flow_def.json'));
      const mismatch = def.id === id ? undefined : `flow_def.json id ${def.id} does not match the folder ${name}`;
      return new DomainFlow(id, dir, inode, mismatch ? undefined : def, mismatch);
    } catch (e) {
      const reason = e instanceof InputError ? e.problems.map(formatProblem).join('; ') : (e as Error).message;
      return new DomainFlow(id, dir, inode, undefined, reason);
    }
  }
}
