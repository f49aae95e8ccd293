/**
 * A counter source whose read(2) really blocks, standing in for a hung driver behind a sysfs
 * attribute (kernfs ignores O_NONBLOCK, so such a read blocks whatever the exporter asks).
 *
 * The file is a FIFO opened O_RDWR without O_NONBLOCK: open() returns at once (the opener is
 * both ends), and read(2) then sleeps in pipe_read() until someone writes, for as long as the
 * pipe stays empty, because this process itself holds a writer and EOF never comes. A FIFO
 * opened the way FileCounterSet opens files (O_RDONLY | O_NONBLOCK, pread) fails with ESPIPE
 * instead of blocking, which is why the source is test-only. Its read is a `read` op (read(2),
 * no offset) on the bounded reader, like any other set's.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { PortCounterSet, SetRead } from '../../src/sources/types.js';
import type { CounterSource, CounterSourceKind, CounterSpec, CounterValue, PortAttributes, PortRef } from '../../src/sources/types.js';
import { parseCounterBytes } from '../../src/reads/counter-bytes.js';
import { type ReadProgram, withoutReads, read } from '../../src/reads/program.js';

export function mkfifo(file: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  execFileSync('mkfifo', [file]);
}

/**
 * Threads of this process asleep in a pipe read (the FIFOs' hung reads), counted by the kernel:
 * ground truth for the reader's thread cap, whatever the reader says.
 */
export function threadsInPipeRead(): number {
  let n = 0;
  for (const tid of fs.readdirSync('/proc/self/task')) {
    try {
      if (fs.readFileSync(`/proc/self/task/${tid}/wchan`, 'utf8').includes('pipe_read')) n++;
    } catch {
      // the thread ended
    }
  }
  return n;
}

/**
 * A FIFO whose read(2) sleeps until fed (this process holds a writer, so EOF never comes): a
 * stand-in program yields `wait()` where the real one issues the op that would hang.
 */
export class Stall {
  readonly fd: number;
  armed = false;
  constructor(readonly fifo: string) {
    mkfifo(fifo);
    this.fd = fs.openSync(fifo, fs.constants.O_RDWR);
  }

  /** One read that waits while armed, as a kernel that does not answer. */
  *wait(): ReadProgram<void> {
    if (this.armed) yield* read([{ kind: 'read', fd: this.fd, max: 8 }]);
  }

  /** Lets a blocked read return. */
  feed(): void {
    fs.writeSync(this.fd, 'x');
  }

  close(): void {
    fs.closeSync(this.fd);
  }
}

class FifoCounterSet implements PortCounterSet {
  readonly counters: readonly CounterSpec[];
  private readonly fd: number;
  private closed = false;

  constructor(readonly kind: CounterSourceKind, readonly port: PortRef, name: string, fifo: string) {
    this.counters = [{ name, bits: 64, overflow: 'wrap', meaning: undefined }];
    this.fd = fs.openSync(fifo, fs.constants.O_RDWR);
  }

  *reads(): ReadProgram<SetRead> {
    if (this.closed) return { kind: 'values', counters: this.counters, values: [{ ok: false, error: { code: 'CLOSED', op: 'read', detail: 'closed' } }] };
    const r = yield* read([{ kind: 'read', fd: this.fd, max: 64 }]);
    const v = r.ok(0) ? parseCounterBytes(r.bytes(0)) : undefined;
    const value: CounterValue = v === undefined ? { ok: false, error: r.ok(0) ? { code: 'NOTACOUNTER', op: 'read', detail: 'not a counter' } : r.failure(0, 'read') } : { ok: true, value: v };
    return { kind: 'values', counters: this.counters, values: [value] };
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    fs.closeSync(this.fd);
  }
}

/** Adds one FIFO-backed counter to one device's port; every other port gets nothing from it. */
export class BlockingSource implements CounterSource {
  readonly kind: CounterSourceKind = 'sysfs_counters';
  readonly sets: FifoCounterSet[] = [];

  constructor(private readonly device: string, readonly fifo: string, private readonly counter = 'port_xmit_wait') {}

  /** Answers from memory (no read): only the set's own reads block, on the bounded reader. */
  openReads(attrs: PortAttributes): ReadProgram<PortCounterSet | undefined> {
    if (attrs.device !== this.device) return withoutReads(undefined);
    const set = new FifoCounterSet(this.kind, { device: attrs.device, port: attrs.port }, this.counter, this.fifo);
    this.sets.push(set);
    return withoutReads(set);
  }

  /** Lets one blocked read(2) return with `text`. */
  feed(text: string): void {
    let fd: number;
    try {
      fd = fs.openSync(this.fifo, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK);
    } catch {
      return; // no reader left (ENXIO) or no FIFO: nothing is blocked on it
    }
    try {
      fs.writeSync(fd, text);
    } finally {
      fs.closeSync(fd);
    }
  }

  close(): void {
    for (const s of this.sets) s.close();
  }
}
