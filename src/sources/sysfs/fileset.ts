/**
 * A PortCounterSet over a list of sysfs files: each file is opened once and re-read with a
 * positioned read at offset 0, which makes kernfs call the attribute's show() again.
 */
import * as fs from 'node:fs';
import type { CounterSourceKind, CounterSpec, CounterValue, PortCounterSet, PortRef, ReadPlan } from '../types.js';
import { parseCounterText } from './parse.js';
import { errorCode } from './paths.js';

export interface CounterFile {
  readonly spec: CounterSpec;
  readonly file: string;
}

/**
 * O_NONBLOCK keeps a FIFO (or any odd file under a misconfigured root) from blocking the
 * sampler in open(); kernfs ignores the flag for regular attributes.
 */
const OPEN_FLAGS = fs.constants.O_RDONLY | fs.constants.O_NONBLOCK;
/** Longest valid text is a u64 plus newline (21 bytes); leave room for "N/A (no PMA)". */
const READ_BYTES = 64;

type Handle = { readonly fd: number } | { readonly openError: string };

interface DirIdentity {
  readonly dev: number;
  readonly ino: number;
}

export class FileCounterSet implements PortCounterSet {
  readonly counters: readonly CounterSpec[];
  private readonly handles: Handle[];
  private readonly files: readonly CounterFile[];
  private readonly identity: DirIdentity | undefined;
  private readonly buf = Buffer.alloc(READ_BYTES);
  private closed = false;

  /** `watchDir` is the directory whose disappearance (or replacement) means the port is gone. */
  constructor(
    readonly kind: CounterSourceKind,
    readonly port: PortRef,
    files: readonly CounterFile[],
    private readonly watchDir: string,
    private readonly onClose?: (set: FileCounterSet) => void,
  ) {
    this.files = files;
    this.counters = files.map((f) => f.spec);
    this.identity = dirIdentity(watchDir);
    this.handles = files.map((f) => openHandle(f.file));
  }

  read(): CounterValue[] {
    if (this.closed) return this.files.map(() => ({ ok: false, error: 'closed' }));
    const gone = this.vanished();
    if (gone !== undefined) return this.files.map(() => ({ ok: false, error: gone }));
    return this.handles.map((h) => this.readOne(h));
  }

  readPlan(): ReadPlan | undefined {
    if (this.closed) return undefined;
    const watch = this.identity ? { dir: this.watchDir, dev: this.identity.dev, ino: this.identity.ino } : { dir: this.watchDir };
    return { watch, fds: this.handles.map((h) => ('fd' in h ? h.fd : h.openError)), position: 0 };
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const h of this.handles) {
      if ('fd' in h) closeQuietly(h.fd);
    }
    this.onClose?.(this);
  }

  /**
   * One stat per read(): an fd on a deleted regular file keeps returning its old content, and
   * a re-created directory means the fds point at the old files. (Real sysfs answers ENODEV on
   * orphaned attributes too; the fixtures are regular files and need this check.)
   */
  private vanished(): string | undefined {
    const now = dirIdentity(this.watchDir);
    if (now === undefined) return `ENOENT: ${this.watchDir} vanished`;
    if (this.identity && (now.dev !== this.identity.dev || now.ino !== this.identity.ino)) {
      return `ESTALE: ${this.watchDir} was re-created; reopen`;
    }
    return undefined;
  }

  private readOne(h: Handle): CounterValue {
    if ('openError' in h) return { ok: false, error: h.openError };
    let n: number;
    try {
      n = fs.readSync(h.fd, this.buf, 0, READ_BYTES, 0);
    } catch (err) {
      return { ok: false, error: `${errorCode(err)}: read` };
    }
    const text = this.buf.toString('utf8', 0, n);
    const value = parseCounterText(text);
    if (value === undefined) return { ok: false, error: `not a counter: ${JSON.stringify(text.trim())}` };
    return { ok: true, value };
  }
}

function openHandle(file: string): Handle {
  try {
    return { fd: fs.openSync(file, OPEN_FLAGS) };
  } catch (err) {
    return { openError: `${errorCode(err)}: open` };
  }
}

function dirIdentity(dir: string): DirIdentity | undefined {
  try {
    const st = fs.statSync(dir, { throwIfNoEntry: false });
    return st?.isDirectory() ? { dev: st.dev, ino: st.ino } : undefined;
  } catch {
    return undefined;
  }
}

function closeQuietly(fd: number): void {
  try {
    fs.closeSync(fd);
  } catch {
    // Already closed or never valid: nothing left to release.
  }
}
