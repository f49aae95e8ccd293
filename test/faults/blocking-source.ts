/**
 * A counter source whose read(2) really blocks, standing in for a hung driver behind a sysfs
 * attribute (kernfs ignores O_NONBLOCK, so such a read blocks whatever the exporter asks).
 *
 * The file is a FIFO opened O_RDWR without O_NONBLOCK: open() returns at once (the opener is
 * both ends), and read(2) then sleeps in pipe_read() until someone writes, for as long as the
 * pipe stays empty, because this process itself holds a writer and EOF never comes. A FIFO
 * opened the way FileCounterSet opens files (O_RDONLY | O_NONBLOCK, pread) fails with ESPIPE
 * instead of blocking, which is why the source is test-only.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { PortCounterSet } from '../../src/sources/types.js';
import type { ReadPlan } from '../../src/sampler/reader.js';
import type { CounterSource, CounterSourceKind, CounterSpec, CounterValue, PortAttributes, PortRef } from '../../src/sources/types.js';
import { parseCounterText } from '../../src/sources/sysfs/parse.js';

export function mkfifo(file: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  execFileSync('mkfifo', [file]);
}

class FifoCounterSet implements PortCounterSet {
  readonly counters: readonly CounterSpec[];
  private readonly fd: number;
  private closed = false;

  constructor(readonly kind: CounterSourceKind, readonly port: PortRef, name: string, fifo: string) {
    this.counters = [{ name, bits: 64, overflow: 'wrap', meaning: undefined }];
    this.fd = fs.openSync(fifo, fs.constants.O_RDWR);
  }

  readPlan(): ReadPlan | undefined {
    return this.closed ? undefined : { fds: [this.fd], position: null };
  }

  /** The sampler's own thread would block here for good; only the worker may call it. */
  read(): CounterValue[] {
    const buf = Buffer.alloc(64);
    const n = fs.readSync(this.fd, buf, 0, 64, null);
    const v = parseCounterText(buf.toString('utf8', 0, n));
    return [v === undefined ? { ok: false, error: 'not a counter' } : { ok: true, value: v }];
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

  open(attrs: PortAttributes): FifoCounterSet | undefined {
    if (attrs.device !== this.device) return undefined;
    const set = new FifoCounterSet(this.kind, { device: attrs.device, port: attrs.port }, this.counter, this.fifo);
    this.sets.push(set);
    return set;
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
