/**
 * A PortCounterSet over a list of sysfs files: each file is opened once and re-read with a
 * positioned read at offset 0, which makes kernfs call the attribute's show() again. A read is
 * one batch: a stat of the directory whose disappearance (or re-creation) means the port is gone,
 * then one pread per file; the text is parsed where it lands (parseCounterBytes).
 */
import { closeSync } from 'node:fs';
import { constants as fsConstants } from 'node:fs';
import type { CounterSourceKind, CounterSpec, CounterValue, PortCounterSet, PortRef, SetRead } from '../types.js';
import { valuesOf } from '../types.js';
import { type Op, OpBatch, isDirectoryMode } from '../../reads/ops.js';
import { type ReadProgram, read, runSync } from '../../reads/program.js';
import { parseCounterBytes } from './parse.js';

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
export const COUNTER_READ_BYTES = 32;

type Handle = { readonly fd: number } | { readonly openError: string };

interface DirIdentity {
  readonly dev: number;
  readonly ino: number;
}

export class FileCounterSet implements PortCounterSet {
  readonly counters: readonly CounterSpec[];
  private readonly batch: OpBatch;
  /** Index of each counter's pread in the batch, or -1 when its open failed. */
  private readonly opIndex: readonly number[];
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
    const ops: Op[] = [{ kind: 'stat', path: watchDir }];
    this.opIndex = handles.map((h) => ('fd' in h ? ops.push({ kind: 'pread', fd: h.fd, offset: 0, max: COUNTER_READ_BYTES }) - 1 : -1));
    this.batch = new OpBatch(ops);
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
    const handles = files.map((_, i): Handle => (r.ok(i + 1) ? { fd: r.status(i + 1) } : { openError: r.error(i + 1, 'open') }));
    return new FileCounterSet(kind, port, files, handles, watchDir, identity, onClose);
  }

  static open(kind: CounterSourceKind, port: PortRef, files: readonly CounterFile[], watchDir: string, onClose?: (set: FileCounterSet) => void): FileCounterSet {
    return runSync(FileCounterSet.openReads(kind, port, files, watchDir, onClose));
  }

  *reads(): ReadProgram<SetRead> {
    if (this.closed) return { kind: 'values', counters: this.counters, values: this.counters.map(() => CLOSED) };
    const r = yield this.batch;
    // One stat per read: an fd on a deleted regular file keeps returning its old content, and
    // a re-created directory means the fds point at the old files. (Real sysfs answers ENODEV
    // on orphaned attributes too; the fixtures are regular files and need this check.)
    const st = r.stat(0);
    if (st === undefined || !isDirectoryMode(st.mode)) return { kind: 'gone', reason: 'vanished', dir: this.watchDir };
    if (this.identity && (st.dev !== this.identity.dev || st.ino !== this.identity.ino)) {
      return { kind: 'gone', reason: 'recreated', dir: this.watchDir };
    }
    const values = new Array<CounterValue>(this.handles.length);
    for (let i = 0; i < values.length; i++) {
      const h = this.handles[i]!;
      const k = this.opIndex[i]!;
      if (k < 0) values[i] = { ok: false, error: (h as { openError: string }).openError };
      else if (!r.ok(k)) values[i] = { ok: false, error: r.error(k, 'read') };
      else {
        const s = r.start(k);
        const e = r.end(k);
        const value = parseCounterBytes(r.out, s, e);
        values[i] = value === undefined ? { ok: false, error: `not a counter: ${JSON.stringify(r.out.toString('utf8', s, e).trim())}` } : { ok: true, value };
      }
    }
    return { kind: 'values', counters: this.counters, values };
  }

  read(): CounterValue[] {
    return valuesOf(runSync(this.reads()), this.counters.length);
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

const CLOSED: CounterValue = { ok: false, error: 'closed' };

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // Already closed or never valid: nothing left to release.
  }
}
