/**
 * The direct executor: a batch run right here, synchronously, writing the same result layout
 * as the native reader (ops.ts). Used by runSync() (the CLI, tests) and as the fallback when
 * libmfe-reader is missing, where nothing bounds a read that blocks.
 */
import * as fs from 'node:fs';
import { ELIBACC, NOT_A_COUNTER, type Op, OpBatch, Results, STAT_BYTES, concat, layoutOutput, outputBuffer } from './ops.js';
import { parseCounterBytes } from './counter-bytes.js';
import { datagramEndsAnswer } from './netlink-answer.js';
import { ERRNO } from '../ffi/errno.js';
import { NativeLoadError, loadLibc } from '../ffi/libc.js';
import { runOnThisThread } from './native.js';

const O_CLOEXEC = 0o2000000;

export function runDirect(batch: OpBatch): Results {
  const out = outputBuffer(batch.outputBytes);
  layoutOutput(batch.ops, out);
  const results = new Results(out, batch.length);
  const words = new Int32Array(out.buffer, out.byteOffset, batch.length * 4);
  batch.ops.forEach((op, i) => {
    const [start] = results.span(i);
    const { status, len } = runOp(op, out, start);
    words[i * 4] = status;
    words[i * 4 + 1] = status < 0 ? -1 : 0;
    words[i * 4 + 3] = len;
  });
  return results;
}

interface Done {
  readonly status: number;
  readonly len: number;
}

const failed = (e: unknown): Done => ({ status: -errnoOf(e), len: 0 });
const bytes = (n: number): Done => ({ status: n, len: n });

function errnoOf(e: unknown): number {
  if (typeof e === 'object' && e !== null && 'errno' in e && typeof e.errno === 'number') return Math.abs(e.errno);
  return 5; // EIO: an error without an errno
}

function runOp(op: Op, out: Buffer, at: number): Done {
  try {
    switch (op.kind) {
      case 'pread':
        return bytes(fs.readSync(op.fd, out, at, op.max, op.offset));
      case 'preadCounter':
        return preadCounter(op.fd, out, at, op.max);
      case 'read':
        return bytes(fs.readSync(op.fd, out, at, op.max, null));
      case 'readFile':
        return readFile(op.path, op.flags ?? 0, out, at, op.max);
      case 'readDir':
        return readDir(op.path, out, at, op.max);
      case 'readLink': {
        const target = Buffer.from(fs.readlinkSync(op.path), 'utf8');
        return bytes(target.copy(out, at));
      }
      case 'stat': {
        const st = fs.statSync(op.path, { bigint: true });
        out.writeBigUInt64LE(st.dev, at);
        out.writeBigUInt64LE(st.ino, at + 8);
        out.writeUInt32LE(Number(st.mode), at + 16);
        out.writeBigUInt64LE(st.size, at + 24);
        return { status: 0, len: STAT_BYTES };
      }
      case 'open':
        return { status: fs.openSync(op.path, op.flags | O_CLOEXEC), len: 0 };
      case 'send':
        return sendDirect(op.fd, op.bytes);
      case 'recv':
        return recvDirect(op.fd, out, at, op.max);
      case 'netlinkTransact':
        return netlinkTransactDirect(op.fd, op.bytes, out, at, op.max);
      case 'ioctl':
        return ioctlDirect(op, out, at);
      case 'verbsOpen':
      case 'verbsQueryPort':
      case 'verbsQueryGids':
        return inReaderLibrary(op, out, at);
    }
  } catch (e) {
    return failed(e);
  }
}

const U64_MAX = 2n ** 64n - 1n;

/** The native op's logic (op_pread_counter): the value as a u64 at `at`, or EILSEQ and the text. */
function preadCounter(fd: number, out: Buffer, at: number, max: number): Done {
  const n = fs.readSync(fd, out, at, max, 0);
  const v = parseCounterBytes(out, at, at + n);
  if (v === undefined || (typeof v === 'bigint' && v > U64_MAX)) return { status: NOT_A_COUNTER, len: n };
  if (typeof v === 'bigint') out.writeBigUInt64LE(v, at);
  else {
    out.writeUInt32LE(v % 2 ** 32, at);
    out.writeUInt32LE(Math.floor(v / 2 ** 32), at + 4);
  }
  return { status: n, len: 8 };
}

function readFile(path: string, flags: number, out: Buffer, at: number, max: number): Done {
  const fd = fs.openSync(path, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | O_CLOEXEC | flags);
  try {
    let got = 0;
    while (got < max) {
      const n = fs.readSync(fd, out, at + got, max - got, null);
      if (n === 0) break;
      got += n;
    }
    return bytes(got);
  } finally {
    fs.closeSync(fd);
  }
}

function readDir(path: string, out: Buffer, at: number, max: number): Done {
  let len = 0;
  let count = 0;
  for (const name of fs.readdirSync(path)) {
    const n = Buffer.byteLength(name) + 1;
    if (len + n > max) return { status: -ERRNO.ENOBUFS, len };
    out.write(name, at + len, 'utf8');
    out[at + len + n - 1] = 0;
    len += n;
    count++;
  }
  return { status: count, len };
}

function sendDirect(fd: number, data: Uint8Array): Done {
  const libc = loadLibc();
  const n = libc.send(fd, data);
  return n < 0 ? { status: -libc.errno(), len: 0 } : { status: n, len: 0 };
}

/** The native op's logic (native/reader/ops.c op_nl_transact) with libc's send and recv; netlink-answer.ts says when it ends. */
function netlinkTransactDirect(fd: number, req: Uint8Array, out: Buffer, at: number, max: number): Done {
  const libc = loadLibc();
  const seq = Buffer.from(req.buffer, req.byteOffset, req.byteLength).readUInt32LE(8);
  const sent = libc.send(fd, req);
  if (sent < 0) return { status: -libc.errno(), len: 0 };
  if (sent !== req.byteLength) return { status: -ERRNO.EIO, len: 0 };
  let len = 0;
  for (let d = 0; d < 4096; d++) {
    if (max - len < 4) return { status: -ERRNO.ENOBUFS, len };
    const room = out.subarray(at + len + 4, at + max);
    const n = libc.recv(fd, room, 0x20); // MSG_TRUNC
    if (n < 0) return { status: -libc.errno(), len };
    if (n > room.length) return { status: -ERRNO.ENOBUFS, len };
    out.writeUInt32LE(n, at + len);
    const dg = out.subarray(at + len + 4, at + len + 4 + n);
    len += 4 + n;
    if (datagramEndsAnswer(dg, seq)) return { status: len, len };
  }
  return { status: -ERRNO.EPROTO, len };
}

/** The native op's logic (op MFR_IOCTL): the argument copied into the output, the ioctl on it. */
function ioctlDirect(op: Extract<Op, { kind: 'ioctl' }>, out: Buffer, at: number): Done {
  const buf = out.subarray(at, at + op.max);
  buf.set(op.arg.subarray(0, op.max));
  if (op.pointer && !pointerFits(op.pointer, op.max)) return { status: -ERRNO.EINVAL, len: 0 };
  const status = loadLibc().ioctlBuffer(op.fd, op.request, buf, op.pointer);
  return { status, len: status < 0 ? 0 : op.max };
}

/** A pointer fixup stays inside the op's buffer: 8 bytes at `at`, a target at or before its end. */
const pointerFits = (p: { readonly at: number; readonly to: number }, max: number): boolean =>
  p.at + 8 <= max && p.to <= max;

/**
 * libibverbs ops run by the reader library's own code on this thread (one implementation, in C);
 * without the library they fail as if libibverbs were missing, with the reason as their output.
 */
function inReaderLibrary(op: Op, out: Buffer, at: number): Done {
  const batch = new OpBatch([op]);
  const { request } = concat([batch]);
  const tmp = outputBuffer(batch.outputBytes);
  let n: number;
  try {
    n = runOnThisThread(request, 1, tmp);
  } catch (e) {
    if (!(e instanceof NativeLoadError)) throw e;
    const why = Buffer.from(`libibverbs is read through the reader library, which is not available: ${e.message}`);
    return { status: ELIBACC, len: why.copy(out, at, 0, Math.min(why.length, batch.outputBytes - 16)) };
  }
  if (n < 0) return { status: n, len: 0 };
  const r = new Results(tmp, 1);
  const [s, e] = r.span(0);
  tmp.copy(out, at, s, e);
  return { status: r.status(0), len: e - s };
}

function recvDirect(fd: number, out: Buffer, at: number, max: number): Done {
  const libc = loadLibc();
  const MSG_TRUNC = 0x20;
  const n = libc.recv(fd, out.subarray(at, at + max), MSG_TRUNC);
  return n < 0 ? { status: -libc.errno(), len: 0 } : { status: n, len: Math.min(n, max) };
}
