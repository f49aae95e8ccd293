/**
 * A PortCounterSet over a list of sysfs files: each file is opened once and re-read with a
 * positioned read at offset 0, which makes kernfs call the attribute's show() again. A read is
 * one batch: a stat of the directory whose disappearance (or re-creation) means the port is gone,
 * then one preadCounter per file: the reader parses the text (the rule of
 * reads/counter-bytes.ts) and the values land in the set's typed arrays, so nothing is allocated per value.
 */
import { closeSync } from 'node:fs';
import { constants as fsConstants } from 'node:fs';
import type { CounterReadings, CounterSourceKind, CounterSpec, CounterValue, PortCounterSet, PortRef, SetRead } from '../types.js';
import { NOT_A_COUNTER, type Op, OpBatch, type Results, isDirectoryMode } from '../../reads/ops.js';
import { OneRound, type ReadProgram, withoutReads, read } from '../../reads/program.js';
import type { ReadError } from '../../reads/errors.js';
import { carve } from '../../typed-arrays.js';

export interface CounterFile {
  readonly spec: CounterSpec;
  readonly file: string;
}

/**
 * O_NONBLOCK keeps a FIFO (or any odd file under a misconfigured root) from blocking the
 * sampler in open(); kernfs ignores the flag for regular attributes.
 */
const OPEN_FLAGS = fsConstants.O_RDONLY | fsConstants.O_NONBLOCK;
/** Longest valid text is a u64 plus newline (21 bytes); "N/A (no PMA)" fits too. */
const COUNTER_READ_BYTES = 32;

type Handle = { readonly fd: number } | { readonly openError: ReadError };

interface DirIdentity {
  readonly dev: number;
  readonly ino: number;
}

/**
 * Reads between two stats of the watched directory. On real sysfs a read of a removed
 * device's attribute fails (ENODEV) at once; the stat catches what regular files cannot say (a
 * fixture tree deleted or re-created under open descriptors). After any failed read the next
 * read stats again; the port's own directory is also watched every tick by the inventory.
 */
const STAT_EVERY = 10;

export class FileCounterSet implements PortCounterSet {
  readonly counters: readonly CounterSpec[];
  /** The reads with the directory's stat first, and without. */
  private readonly withStat: OpBatch;
  private readonly plain: OpBatch;
  /** Index of each counter's pread in `plain` (+1 in `withStat`), or -1 when its open failed. */
  private readonly opIndex: Int32Array;
  private readonly status: Int32Array;
  private readonly low: Uint32Array;
  private readonly high: Uint32Array;
  private readonly errors: (ReadError | undefined)[];
  private readonly readings: CounterReadings;
  /** What every complete read answers: the same arrays, refilled. */
  private readonly read: SetRead;
  private readsSinceStat = 0;
  private readonly program = new OneRound<SetRead>((r, batch) => this.decode(r, batch === this.withStat));
  private failed = false;
  private closed = false;

  private constructor(
    readonly kind: CounterSourceKind,
    readonly port: PortRef,
    files: readonly CounterFile[],
    private readonly handles: readonly Handle[],
    /** The directory whose disappearance (or replacement) means the port is gone. */
    readonly watchDir: string,
    private readonly identity: DirIdentity | undefined,
    private readonly onClose?: (set: FileCounterSet) => void,
  ) {
    this.counters = files.map((f) => f.spec);
    const reads: Op[] = [];
    const n = files.length;
    ({ opIndex: this.opIndex, status: this.status, low: this.low, high: this.high } = carve({ opIndex: ['i32', n], status: ['i32', n], low: ['u32', n], high: ['u32', n] }));
    handles.forEach((h, i) => (this.opIndex[i] = 'fd' in h ? reads.push({ kind: 'preadCounter', fd: h.fd, max: COUNTER_READ_BYTES }) - 1 : -1));
    this.errors = handles.map((h) => ('openError' in h ? h.openError : undefined));
    this.readings = { low: this.low, high: this.high, errors: this.errors };
    this.read = { kind: 'readings', counters: this.counters, readings: this.readings };
    this.plain = new OpBatch(reads);
    this.withStat = new OpBatch([{ kind: 'stat', path: watchDir }, ...reads]);
  }

  /** Opens every file (one batch: the directory's identity and one open per file). */
  static *openReads(
    kind: CounterSourceKind,
    port: PortRef,
    files: readonly CounterFile[],
    watchDir: string,
    onClose?: (set: FileCounterSet) => void,
  ): ReadProgram<FileCounterSet> {
    const r = yield* read([{ kind: 'stat', path: watchDir }, ...files.map((f): Op => ({ kind: 'open', path: f.file, flags: OPEN_FLAGS }))]);
    const st = r.stat(0);
    const identity = st && isDirectoryMode(st.mode) ? { dev: st.dev, ino: st.ino } : undefined;
    const handles = files.map((_, i): Handle => (r.ok(i + 1) ? { fd: r.status(i + 1) } : { openError: r.failure(i + 1, 'open') }));
    return new FileCounterSet(kind, port, files, handles, watchDir, identity, onClose);
  }

  /** `checkDir`: stat the watched directory on this read whatever the count says. */
  reads(checkDir = false): ReadProgram<SetRead> {
    if (this.closed) return withoutReads({ kind: 'values', counters: this.counters, values: this.counters.map(() => CLOSED) });
    const stat = checkDir || this.failed || this.readsSinceStat === 0 || this.plain.length === 0;
    this.readsSinceStat = (this.readsSinceStat + 1) % STAT_EVERY;
    return this.program.start(stat ? this.withStat : this.plain);
  }

  /** The values of one read (`stat`: with the directory's stat first), into the set's arrays. */
  private decode(r: Results, stat: boolean): SetRead {
    if (stat) {
      // An fd on a deleted regular file keeps returning its old content, and a re-created
      // directory means the fds point at the old files.
      const st = r.stat(0);
      if (st === undefined || !isDirectoryMode(st.mode)) return { kind: 'gone', reason: 'vanished', dir: this.watchDir };
      if (this.identity && (st.dev !== this.identity.dev || st.ino !== this.identity.ino)) {
        return { kind: 'gone', reason: 'recreated', dir: this.watchDir };
      }
    }
    const base = stat ? 1 : 0;
    r.counters(base, this.opIndex, this.status, this.low, this.high);
    let failed = false;
    for (let i = 0; i < this.opIndex.length; i++) {
      const k = this.opIndex[i]!;
      if (k < 0) continue; // its open failed: errors[i] says why, every read
      const status = this.status[i]!;
      if (status >= 0) {
        if (this.errors[i] !== undefined) this.errors[i] = undefined;
      } else if (status === NOT_A_COUNTER) {
        this.errors[i] = { code: 'NOTACOUNTER', op: 'read', detail: `not a counter: ${JSON.stringify(r.out.toString('utf8', r.start(k + base), r.end(k + base)).trim())}` };
      } else {
        this.errors[i] = r.failure(k + base, 'read');
        failed = true;
      }
    }
    this.failed = failed;
    return this.read;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const h of this.handles) {
      if ('fd' in h) closeQuietly(h.fd);
    }
    this.onClose?.(this);
  }
}

const CLOSED: CounterValue = { ok: false, error: { code: 'CLOSED', op: 'read', detail: 'closed' } };

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // Already closed or never valid: nothing left to release.
  }
}
