/**
 * The read primitive's vocabulary: the small system calls a read program may ask for, their
 * wire encoding (native/reader/mfe-reader.h is the reference) and a typed view of the results.
 * Both executors (the native reader threads and the direct fallback) write the same result
 * layout, so everything that interprets a result is written once, here and in the programs.
 *
 * Adding a kind of read: a member of `Op`, its number in KIND, its case in encodeOp(), in
 * run_op() (native/reader/mfe-reader.c) and in runOp() (direct.ts), and, when its output has a
 * new shape, an accessor on Results.
 */
import { constants as osConstants } from 'node:os';

export type Op =
  /** pread(2) at `offset`: a sysfs attribute runs its show() again at offset 0. */
  | { readonly kind: 'pread'; readonly fd: number; readonly offset: number; readonly max: number }
  /** read(2) of a stream (a FIFO): no offset. */
  | { readonly kind: 'read'; readonly fd: number; readonly max: number }
  /** open(O_RDONLY|O_NONBLOCK|flags), read to EOF or `max`, close. */
  | { readonly kind: 'readFile'; readonly path: string; readonly max: number; readonly flags?: number }
  /** Names in a directory (not . and ..), in the kernel's order. */
  | { readonly kind: 'readDir'; readonly path: string; readonly max: number }
  | { readonly kind: 'readLink'; readonly path: string }
  /** stat(2), following symlinks. */
  | { readonly kind: 'stat'; readonly path: string }
  /** open(2) (O_CLOEXEC is added): the descriptor, owned by the caller from then on. */
  | { readonly kind: 'open'; readonly path: string; readonly flags: number }
  /** MXL's writer test: flock(LOCK_EX|LOCK_NB), released at once. 0 free, 1 held. */
  | { readonly kind: 'flockProbe'; readonly fd: number }
  /** send(2) on a connected socket (netlink). */
  | { readonly kind: 'send'; readonly fd: number; readonly bytes: Uint8Array }
  /** recv(2) of one datagram, MSG_TRUNC: the status is its full length. */
  | { readonly kind: 'recv'; readonly fd: number; readonly max: number }
  /**
   * A netlink request on a connected socket and every datagram of its answer, up to NLMSG_DONE
   * or NLMSG_ERROR for its seq, as one op: requests of several programs on one socket never
   * interleave. The output is each datagram as a u32 length and its bytes (Results.datagrams()).
   */
  | { readonly kind: 'netlinkTransact'; readonly fd: number; readonly bytes: Uint8Array; readonly max: number }
  /**
   * ioctl(fd, request, buf) where buf starts as a copy of `arg` (`max` bytes); `pointer` stores
   * the address of buf[to] at buf[at] first (struct ifreq's ifr_data -> an ethtool struct).
   */
  | {
      readonly kind: 'ioctl';
      readonly fd: number;
      readonly request: number;
      readonly arg: Uint8Array;
      readonly max: number;
      readonly pointer?: { readonly at: number; readonly to: number };
    };

export type OpKind = Op['kind'];

export const KIND: Readonly<Record<OpKind, number>> = {
  pread: 1, read: 2, readFile: 3, readDir: 4, readLink: 5, stat: 6, open: 7, flockProbe: 8, send: 9, recv: 10, ioctl: 11,
  netlinkTransact: 12,
};

export const OP_BYTES = 48;
export const RESULT_BYTES = 16;
export const STAT_BYTES = 32;
/** PATH_MAX: a readlink target is never longer. */
const LINK_MAX = 4096;
const NO_FIX = 0xffff_ffff;
/** -ECANCELED: the op never ran (its batch was given up, or its thread died first). */
export const NOT_RUN = -125;

/** Output bytes an op reserves. */
export function outCap(op: Op): number {
  switch (op.kind) {
    case 'pread':
    case 'read':
    case 'readFile':
    case 'readDir':
    case 'recv':
    case 'ioctl':
    case 'netlinkTransact':
      return op.max;
    case 'readLink':
      return LINK_MAX;
    case 'stat':
      return STAT_BYTES;
    case 'open':
    case 'flockProbe':
    case 'send':
      return 0;
  }
}

const align8 = (n: number): number => (n + 7) & ~7;

/**
 * A list of ops, encoded once: programs that read the same descriptors every tick keep their
 * batch, and the encoding is reused (see concat()).
 */
export class OpBatch {
  private encoded: { readonly ops: Buffer; readonly inputs: Buffer } | undefined;
  /** Output bytes: results plus every op's 8-aligned region. */
  readonly outputBytes: number;

  constructor(readonly ops: readonly Op[]) {
    let data = 0;
    for (const op of ops) data += align8(outCap(op));
    this.outputBytes = ops.length * RESULT_BYTES + data;
  }

  get length(): number {
    return this.ops.length;
  }

  /** Op records (in_off relative to this batch's own inputs) and the inputs. */
  encoding(): { readonly ops: Buffer; readonly inputs: Buffer } {
    if (this.encoded) return this.encoded;
    const records = Buffer.alloc(this.ops.length * OP_BYTES);
    let total = 0;
    for (const op of this.ops) total += inputLength(op);
    const inputs = Buffer.allocUnsafe(total);
    let inAt = 0;
    this.ops.forEach((op, i) => {
      const n = writeInput(op, inputs, inAt);
      encodeOp(records, i * OP_BYTES, op, n > 0 ? inAt : 0, n);
      inAt += n;
    });
    this.encoded = { ops: records, inputs };
    return this.encoded;
  }
}

const hasPath = (op: Op): op is Extract<Op, { path: string }> => 'path' in op;

/** Bytes an op's input takes: a path and its NUL, or the bytes to send or pass to ioctl. */
function inputLength(op: Op): number {
  if (hasPath(op)) return Buffer.byteLength(op.path, 'utf8') + 1;
  if (op.kind === 'send' || op.kind === 'netlinkTransact') return op.bytes.byteLength;
  if (op.kind === 'ioctl') return op.arg.byteLength;
  return 0;
}

function writeInput(op: Op, to: Buffer, at: number): number {
  if (hasPath(op)) {
    const n = to.write(op.path, at, 'utf8');
    to[at + n] = 0;
    return n + 1;
  }
  const bytes = op.kind === 'send' || op.kind === 'netlinkTransact' ? op.bytes : op.kind === 'ioctl' ? op.arg : undefined;
  if (bytes === undefined) return 0;
  to.set(bytes, at);
  return bytes.byteLength;
}

function encodeOp(b: Buffer, at: number, op: Op, inOff: number, inLen: number): void {
  b.writeUInt32LE(KIND[op.kind], at);
  b.writeInt32LE('fd' in op ? op.fd : -1, at + 4);
  b.writeUInt32LE(inOff, at + 8);
  b.writeUInt32LE(inLen, at + 12);
  b.writeUInt32LE(outCap(op), at + 16);
  b.writeUInt32LE(op.kind === 'open' ? op.flags : op.kind === 'readFile' ? (op.flags ?? 0) : 0, at + 20);
  const offset = op.kind === 'pread' ? op.offset : op.kind === 'ioctl' ? op.request : 0;
  b.writeBigInt64LE(BigInt(offset), at + 24);
  const fix = op.kind === 'ioctl' ? op.pointer : undefined;
  b.writeUInt32LE(fix ? fix.at : NO_FIX, at + 32);
  b.writeUInt32LE(fix ? fix.to : NO_FIX, at + 36);
}

/**
 * Several batches as one request: their op records back to back, then their inputs, with each
 * record's in_off moved to where its batch's inputs landed.
 */
export function concat(batches: readonly OpBatch[]): { readonly request: Buffer; readonly ops: number; readonly outputBytes: number } {
  let ops = 0;
  let inputs = 0;
  let outputBytes = 0;
  for (const b of batches) {
    const e = b.encoding();
    ops += b.length;
    inputs += e.inputs.length;
    outputBytes += b.outputBytes;
  }
  const request = Buffer.alloc(ops * OP_BYTES + inputs);
  let opAt = 0;
  let inAt = ops * OP_BYTES;
  for (const b of batches) {
    const e = b.encoding();
    e.ops.copy(request, opAt);
    if (e.inputs.length > 0) {
      for (let i = 0; i < b.length; i++) {
        const rec = opAt + i * OP_BYTES;
        if (request.readUInt32LE(rec + 12) > 0) request.writeUInt32LE(request.readUInt32LE(rec + 8) + inAt, rec + 8);
      }
      e.inputs.copy(request, inAt);
    }
    opAt += e.ops.length;
    inAt += e.inputs.length;
  }
  return { request, ops, outputBytes };
}

// ---------------------------------------------------------------------------------------------
// Results

const ERRNO_NAMES = new Map<number, string>(Object.entries(osConstants.errno).map(([name, n]) => [n, name]));

/** `ENOENT`... for a negative status; `errno N` for one Node does not name. */
export function errnoName(status: number): string {
  return ERRNO_NAMES.get(-status) ?? (status === NOT_RUN ? 'ECANCELED' : `errno ${-status}`);
}

export interface StatInfo {
  readonly dev: number;
  readonly ino: number;
  readonly mode: number;
  readonly size: number;
}

const S_IFMT = 0o170000;
const S_IFDIR = 0o040000;
export const isDirectoryMode = (mode: number): boolean => (mode & S_IFMT) === S_IFDIR;

/**
 * The collected output of a request: `count` results then the data area. A view for one batch
 * of a concatenated request starts at its first op (`base`). Valid until the program that got
 * it yields again (the reader reuses the memory): decode, or copy what must be kept.
 */
export class Results {
  private readonly words: Int32Array;
  private readonly dataStart: number;
  private readonly generation: number;

  /**
   * `out` must be 8-aligned in its ArrayBuffer (outputBuffer() makes one). `lease` is the
   * reader's count of requests: once it moves on, this view's memory holds another request's
   * results and every accessor throws rather than answer from them.
   */
  constructor(
    readonly out: Buffer,
    private readonly count: number,
    private readonly base = 0,
    private readonly lease: { readonly generation: number } = FOREVER,
  ) {
    this.words = new Int32Array(out.buffer, out.byteOffset, count * 4);
    this.dataStart = count * RESULT_BYTES;
    this.generation = lease.generation;
  }

  /** The view of the ops starting at op `base` of this request. */
  slice(base: number): Results {
    return new Results(this.out, this.count, this.base + base, this.lease);
  }

  /** >= 0: bytes, a descriptor, a count...; < 0: -errno. Statuses fit 32 bits. */
  status(i: number): number {
    if (this.lease.generation !== this.generation) throw new ResultsReusedError();
    return this.words[(this.base + i) * 4]!;
  }

  ok(i: number): boolean {
    return this.status(i) >= 0;
  }

  /** `ENOENT: read`-style text for a failed op. */
  error(i: number, syscall: string): string {
    return `${errnoName(this.status(i))}: ${syscall}`;
  }

  /** Start and end of the op's output in `out`. */
  span(i: number): readonly [number, number] {
    return [this.start(i), this.end(i)];
  }

  start(i: number): number {
    if (this.lease.generation !== this.generation) throw new ResultsReusedError();
    return this.dataStart + this.words[(this.base + i) * 4 + 2]!;
  }

  end(i: number): number {
    if (this.lease.generation !== this.generation) throw new ResultsReusedError();
    const w = (this.base + i) * 4;
    return this.dataStart + this.words[w + 2]! + this.words[w + 3]!;
  }

  bytes(i: number): Buffer {
    const [s, e] = this.span(i);
    return this.out.subarray(s, e);
  }

  text(i: number): string | undefined {
    if (!this.ok(i)) return undefined;
    const [s, e] = this.span(i);
    return this.out.toString('utf8', s, e);
  }

  names(i: number): string[] | undefined {
    if (!this.ok(i)) return undefined;
    const [s, e] = this.span(i);
    if (e === s) return [];
    return this.out.toString('utf8', s, e - 1).split('\0');
  }

  /** A netlinkTransact's datagrams, copied (they outlive the results). */
  datagrams(i: number): Uint8Array[] {
    const all = this.bytes(i);
    const out: Uint8Array[] = [];
    for (let at = 0; at + 4 <= all.length; ) {
      const n = all.readUInt32LE(at);
      out.push(Uint8Array.prototype.slice.call(all, at + 4, at + 4 + n));
      at += 4 + n;
    }
    return out;
  }

  stat(i: number): StatInfo | undefined {
    if (!this.ok(i)) return undefined;
    const [s] = this.span(i);
    const o = this.out;
    return {
      dev: Number(o.readBigUInt64LE(s)),
      ino: Number(o.readBigUInt64LE(s + 8)),
      mode: o.readUInt32LE(s + 16),
      size: Number(o.readBigUInt64LE(s + 24)),
    };
  }
}

const FOREVER = { generation: 0 };

/** A program read its results after it yielded again: they belong to another request now. */
export class ResultsReusedError extends Error {
  override readonly name = 'ResultsReusedError';
  constructor() {
    super('read results used after the program yielded again; decode them before the next round');
  }
}

/** An output buffer for `bytes`, 8-aligned (a Buffer from the pool may not be). */
export function outputBuffer(bytes: number): Buffer {
  return Buffer.from(new ArrayBuffer(align8(Math.max(bytes, 8))));
}

/** Where each op's output goes, as the native side assigns it: 8-aligned, in op order. */
export function layoutOutput(ops: readonly Op[], out: Buffer): void {
  const words = new Int32Array(out.buffer, out.byteOffset, ops.length * 4);
  let at = 0;
  ops.forEach((op, i) => {
    words[i * 4] = NOT_RUN;
    words[i * 4 + 1] = -1;
    words[i * 4 + 2] = at;
    words[i * 4 + 3] = 0;
    at += align8(outCap(op));
  });
}
