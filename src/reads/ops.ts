/**
 * The read primitive's vocabulary: the small system calls a read program may ask for, their
 * wire encoding (native/reader/mfe-reader.h is the reference) and a typed view of the results.
 * Both executors (the native reader threads and the direct fallback) write the same result
 * layout, so everything that interprets a result is written once, here and in the programs.
 *
 * Adding a kind of read: a member of `Op`, its number in KIND, its case in encodeOp(), in
 * mfr_run_op() (native/reader/ops.c) and in runOp() (direct.ts), and, when its output has a
 * new shape, an accessor on Results.
 */
import { ERRNO, errnoName } from '../ffi/errno.js';
import { type ReadError, readErrorText, statusError } from './errors.js';

export type Op =
  /** pread(2) at `offset`: a sysfs attribute runs its show() again at offset 0. */
  | { readonly kind: 'pread'; readonly fd: number; readonly offset: number; readonly max: number }
  /**
   * pread(2) at 0 of a counter's text, parsed by the reader ("%llu\n"; counter-bytes.ts is the
   * same rule): Results.counterLow()/counterHigh() of the u64, or EILSEQ with the text as output.
   */
  | { readonly kind: 'preadCounter'; readonly fd: number; readonly max: number }
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
  /**
   * libibverbs, loaded by the reader library on first use (native/reader/verbs.c): every listed
   * device opened (ibv_get_device_list, ibv_open_device, ibv_query_device), one record each
   * (src/sources/verbs/layout.ts decodeVerbsDevices). A device is then named by its handle.
   */
  | { readonly kind: 'verbsOpen' }
  /** ibv_query_port: the 48-byte compat struct (zero to 56), and ibv_query_port_speed with `speed`. */
  | { readonly kind: 'verbsQueryPort'; readonly device: number; readonly port: number; readonly speed: boolean }
  /** The port's valid GID entries (32 bytes each), with room for `entries` (the device's whole table). */
  | { readonly kind: 'verbsQueryGids'; readonly device: number; readonly port: number; readonly entries: number }
  | {
      readonly kind: 'ioctl';
      readonly fd: number;
      readonly request: number;
      readonly arg: Uint8Array;
      readonly max: number;
      readonly pointer?: { readonly at: number; readonly to: number };
    };

type OpKind = Op['kind'];

const KIND: Readonly<Record<OpKind, number>> = {
  pread: 1, read: 2, readFile: 3, readDir: 4, readLink: 5, stat: 6, open: 7, send: 9, recv: 10, ioctl: 11,
  netlinkTransact: 12, verbsOpen: 13, verbsQueryPort: 14, verbsQueryGids: 15, preadCounter: 16,
};

/** -EILSEQ: a preadCounter's text is not a counter (its output is the text). */
export const NOT_A_COUNTER = -ERRNO.EILSEQ;

/** mfe-reader.h: struct mfr_verbs_device, and the room MFR_VERBS_OPEN gets (256 devices). */
export const VERBS_DEVICE_BYTES = 96;
const VERBS_OPEN_BYTES = 256 * VERBS_DEVICE_BYTES;
/** MFR_VERBS_PORT_BYTES: the port attributes (56) and the speed (u64 at 56). */
export const VERBS_PORT_BYTES = 64;
const VERBS_GID_BYTES = 32;
const VERBS_SPEED = 1;
/** -ELIBACC, -ELIBBAD: the reader could not load libibverbs.so.1, or it lacks a symbol (the output says why). */
export const ELIBACC = -79;
export const ELIBBAD = -80;

const OP_BYTES = 48;
const RESULT_BYTES = 16;
export const STAT_BYTES = 32;
/** PATH_MAX: a readlink target is never longer. */
const LINK_MAX = 4096;
const NO_FIX = 0xffff_ffff;
/** -ECANCELED: the op never ran (its batch was given up, or its thread died first). */
export const NOT_RUN = -ERRNO.ECANCELED;

/** Output bytes an op reserves. */
function outCap(op: Op): number {
  switch (op.kind) {
    case 'pread':
    case 'preadCounter':
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
    case 'send':
      return 0;
    case 'verbsOpen':
      return VERBS_OPEN_BYTES;
    case 'verbsQueryPort':
      return VERBS_PORT_BYTES;
    case 'verbsQueryGids':
      return op.entries * VERBS_GID_BYTES;
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

  /**
   * Whether this batch was encoded before: its owner keeps it and reads with it again (a counter
   * set, a port's held state), unlike the one-off batches of a listing or an attribute read.
   */
  get reused(): boolean {
    return this.encoded !== undefined;
  }

  /** Op records (in_off relative to this batch's own inputs) and the inputs. */
  encoding(): { readonly ops: Buffer; readonly inputs: Buffer } {
    if (this.encoded) return this.encoded;
    const records = Buffer.alloc(this.ops.length * OP_BYTES);
    let total = 0;
    for (const op of this.ops) total += inputLength(op);
    // Not from Buffer's shared 8 KB pool: a kept encoding would keep its whole slab alive.
    const inputs = Buffer.allocUnsafeSlow(total);
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
  b.writeInt32LE('fd' in op ? op.fd : 'device' in op ? op.device : -1, at + 4);
  b.writeUInt32LE(inOff, at + 8);
  b.writeUInt32LE(inLen, at + 12);
  b.writeUInt32LE(outCap(op), at + 16);
  b.writeUInt32LE(flagsOf(op), at + 20);
  const offset = op.kind === 'pread' ? op.offset : op.kind === 'ioctl' ? op.request : 'port' in op ? op.port : 0;
  b.writeBigInt64LE(BigInt(offset), at + 24);
  const fix = op.kind === 'ioctl' ? op.pointer : undefined;
  b.writeUInt32LE(fix ? fix.at : NO_FIX, at + 32);
  b.writeUInt32LE(fix ? fix.to : NO_FIX, at + 36);
}

function flagsOf(op: Op): number {
  if (op.kind === 'open') return op.flags;
  if (op.kind === 'readFile') return op.flags ?? 0;
  if (op.kind === 'verbsQueryPort') return op.speed ? VERBS_SPEED : 0;
  return 0;
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

/** `ENOENT`... for a negative status (-errno; NOT_RUN is -ECANCELED). */
export function statusName(status: number): string {
  return errnoName(-status);
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
  private u32: Uint32Array | undefined;
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
    /** The request's result words, shared by the views of its batches (slice()). */
    words?: Int32Array,
  ) {
    this.words = words ?? new Int32Array(out.buffer, out.byteOffset, count * 4);
    this.dataStart = count * RESULT_BYTES;
    this.generation = lease.generation;
  }

  /** The view of the ops starting at op `base` of this request: no new typed array per batch. */
  slice(base: number): Results {
    const r = new Results(this.out, this.count, this.base + base, this.lease, this.words);
    r.u32 = this.data32(); // one view of the request's memory for all its batches
    return r;
  }

  private data32(): Uint32Array {
    return (this.u32 ??= new Uint32Array(this.out.buffer, this.out.byteOffset, this.out.length >>> 2));
  }

  /** >= 0: bytes, a descriptor, a count...; < 0: -errno. Statuses fit 32 bits. */
  status(i: number): number {
    if (this.lease.generation !== this.generation) throw new ResultsReusedError();
    return this.words[(this.base + i) * 4]!;
  }

  ok(i: number): boolean {
    return this.status(i) >= 0;
  }

  /** Why op i failed, as data. */
  failure(i: number, op: string, path?: string): ReadError {
    return statusError(this.status(i), op, path);
  }

  /** `ENOENT: read`-style text for a failed op (its failure() as people read it). */
  error(i: number, syscall: string): string {
    return readErrorText(this.failure(i, syscall));
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

  /** A preadCounter's value (ok(i)): its low and high 32 bits (the value is high * 2^32 + low). */
  counterLow(i: number): number {
    return this.out.readUInt32LE(this.start(i));
  }

  counterHigh(i: number): number {
    return this.out.readUInt32LE(this.start(i) + 4);
  }

  /**
   * The statuses of ops `first`.. into `status`, and the halves of those that are a preadCounter
   * read (status >= 0) into `low`/`high` (entry k for op first + k; `ops[k]` < 0 skips entry k).
   * One pass over the results, for a set's values each tick.
   */
  counters(first: number, ops: Int32Array, status: Int32Array, low: Uint32Array, high: Uint32Array): void {
    if (this.lease.generation !== this.generation) throw new ResultsReusedError();
    const words = this.words;
    const data = this.data32();
    const dataWord = this.dataStart >>> 2;
    for (let k = 0; k < ops.length; k++) {
      const op = ops[k]!;
      if (op < 0) continue;
      const w = (this.base + first + op) * 4;
      const st = words[w]!;
      status[k] = st;
      if (st < 0) continue;
      const at = dataWord + (words[w + 2]! >>> 2);
      low[k] = data[at]!;
      high[k] = data[at + 1]!;
    }
  }

  stat(i: number): StatInfo | undefined {
    if (!this.ok(i)) return undefined;
    const s = this.start(i);
    return { dev: this.u64At(s), ino: this.u64At(s + 8), mode: this.out.readUInt32LE(s + 16), size: this.u64At(s + 24) };
  }

  /** Whether op i read exactly `bytes` (a state file that did not change): nothing decoded. */
  sameBytes(i: number, bytes: Uint8Array): boolean {
    if (!this.ok(i)) return false;
    const s = this.start(i);
    const e = this.end(i);
    return e - s === bytes.length && this.out.compare(bytes, 0, bytes.length, s, e) === 0;
  }

  /** A little-endian u64 as a number (exact below 2^53: dev, ino and sizes are), without a BigInt. */
  private u64At(at: number): number {
    return this.out.readUInt32LE(at + 4) * 0x1_0000_0000 + this.out.readUInt32LE(at);
  }
}

const FOREVER = { generation: 0 };

/** A program read its results after it yielded again: they belong to another request now. */
class ResultsReusedError extends Error {
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
