/**
 * A blocking netlink socket of any protocol, driven through koffi: one request, its whole
 * answer. The RDMA sources open it for NETLINK_RDMA (RDMA_NETLINK, rdma.ts), DCB for
 * NETLINK_ROUTE (dcb/reader.ts).
 *
 * request() blocks its caller; requestReads() runs the same exchange as one op on the bounded
 * reader. SO_RCVTIMEO bounds the wait so a lost answer costs at most `timeoutMs`, never a hung
 * sampler.
 */
import { endianness } from 'node:os';
import {
  AF_NETLINK,
  NETLINK_EXT_ACK,
  SOCK_CLOEXEC,
  SOCK_RAW,
  SOL_NETLINK,
  SOL_SOCKET,
  SO_RCVTIMEO,
} from './constants.js';
import { type NlMessage, NetlinkDecodeError, ReplyCollector, decodeMessages } from './codec.js';
import { ERRNO, errnoName } from '../../ffi/errno.js';
import { type Libc, NativeLoadError, errorText, loadLibc } from '../../ffi/libc.js';
import { type ReadProgram, read, runSync } from '../../reads/program.js';

const LE = endianness() === 'LE';

export type NetlinkUnavailableReason =
  /** koffi or libc could not be loaded. */
  | 'ffi-unavailable'
  /** socket() said EPROTONOSUPPORT/EAFNOSUPPORT: the kernel has no such netlink protocol. */
  | 'family-unsupported'
  /** EPERM/EACCES from socket() or from the kernel for a request. */
  | 'permission-denied'
  /** Anything else from socket()/bind(). */
  | 'socket-error';

/** A netlink protocol, as socket(AF_NETLINK, SOCK_RAW, number) takes it and messages name it. */
export interface NetlinkProtocol {
  readonly number: number;
  /** Its constant: NETLINK_RDMA. */
  readonly name: string;
  /** What people call it: "RDMA netlink". */
  readonly title: string;
  /** Why a kernel has none, said when socket() answers EPROTONOSUPPORT or EAFNOSUPPORT. */
  readonly missing: string;
}

/**
 * A netlink protocol cannot be used on this host; the caller falls back (RDMA netlink: to sysfs)
 * and logs this once. `title` names the protocol (the RDMA sources' by default).
 */
export class NetlinkUnavailable extends Error {
  override readonly name = 'NetlinkUnavailable';
  constructor(
    readonly reason: NetlinkUnavailableReason,
    readonly errno: number | undefined,
    detail: string,
    title = 'RDMA netlink',
  ) {
    super(`${title} unavailable (${reason}): ${detail}`);
  }
}

/** One request failed (kernel error, timeout, malformed answer); the socket stays usable. */
export class NetlinkRequestError extends Error {
  override readonly name = 'NetlinkRequestError';
  constructor(
    readonly what: string,
    readonly errno: number | undefined,
    readonly extAck: string | undefined,
    detail: string,
  ) {
    super(`${what}: ${detail}${extAck === undefined ? '' : ` (kernel: ${extAck})`}`);
  }
}

export type SocketOpenResult =
  | { readonly ok: true; readonly socket: NetlinkSocket }
  | { readonly ok: false; readonly error: NetlinkUnavailable };

export interface NetlinkAnswer {
  readonly messages: readonly NlMessage[];
  /** The datagrams as received, for captures and debugging. */
  readonly raw: readonly Uint8Array[];
}

/** struct sockaddr_nl for the kernel (pid 0, no groups): family u16, pad u16, pid u32, groups u32. */
function kernelSockaddr(): Uint8Array {
  const b = new Uint8Array(12);
  new DataView(b.buffer).setUint16(0, AF_NETLINK, LE);
  return b;
}

/** struct timeval on LP64: tv_sec and tv_usec are both 64-bit. */
function timeval(ms: number): Uint8Array {
  const b = new Uint8Array(16);
  const dv = new DataView(b.buffer);
  dv.setBigInt64(0, BigInt(Math.floor(ms / 1000)), LE);
  dv.setBigInt64(8, BigInt((ms % 1000) * 1000), LE);
  return b;
}

export function classifySocketErrno(errno: number, protocol: NetlinkProtocol): NetlinkUnavailable {
  const name = errnoName(errno);
  const unavailable = (reason: NetlinkUnavailableReason, detail: string): NetlinkUnavailable =>
    new NetlinkUnavailable(reason, errno, detail, protocol.title);
  if (errno === ERRNO.EPROTONOSUPPORT || errno === ERRNO.EAFNOSUPPORT) {
    return unavailable('family-unsupported', `socket(AF_NETLINK, SOCK_RAW, ${protocol.name}) failed with ${name}: ${protocol.missing}`);
  }
  return unavailable(errno === ERRNO.EPERM || errno === ERRNO.EACCES ? 'permission-denied' : 'socket-error', `socket(${protocol.name}) failed with ${name}`);
}

/** Room for a whole answer on the reader: an mlx5 port's STAT_GET is a few KB, a device dump less. */
const ANSWER_BYTES = 256 * 1024;

export class NetlinkSocket {
  private seq: number;
  private closed = false;

  private constructor(
    private readonly libc: Libc,
    private readonly fd: number,
  ) {
    this.seq = Math.floor(Date.now() / 1000) & 0x7fffffff;
  }

  static open(protocol: NetlinkProtocol, options: { readonly timeoutMs?: number } = {}): SocketOpenResult {
    let libc: Libc;
    try {
      libc = loadLibc();
    } catch (e) {
      const detail = e instanceof NativeLoadError ? e.message : errorText(e);
      return { ok: false, error: new NetlinkUnavailable('ffi-unavailable', undefined, detail, protocol.title) };
    }
    const fd = libc.socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol.number);
    if (fd < 0) return { ok: false, error: classifySocketErrno(libc.errno(), protocol) };
    const setup = NetlinkSocket.setup(libc, fd, protocol, options.timeoutMs ?? 1000);
    if (setup !== undefined) {
      libc.close(fd);
      return { ok: false, error: setup };
    }
    return { ok: true, socket: new NetlinkSocket(libc, fd) };
  }

  /**
   * A connected datagram socket already open, owned from then on (tests: one end of a
   * socketpair whose other end plays the kernel with recorded answers).
   */
  static adopt(fd: number, firstSeq: number): NetlinkSocket {
    const s = new NetlinkSocket(loadLibc(), fd);
    s.seq = (firstSeq - 1) >>> 0;
    return s;
  }

  private static setup(libc: Libc, fd: number, protocol: NetlinkProtocol, timeoutMs: number): NetlinkUnavailable | undefined {
    const failed = (call: string): NetlinkUnavailable => {
      const errno = libc.errno();
      return new NetlinkUnavailable('socket-error', errno, `${call} failed with ${errnoName(errno)}`, protocol.title);
    };
    if (libc.bind(fd, kernelSockaddr()) < 0) return failed(`bind(${protocol.name})`);
    // Connected to the kernel, so the reader thread can send(2) without an address.
    if (libc.connect(fd, kernelSockaddr()) < 0) return failed(`connect(${protocol.name})`);
    if (libc.setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, timeval(timeoutMs)) < 0) return failed('setsockopt(SO_RCVTIMEO)');
    // Best effort: kernels since 4.12 then explain EINVAL and friends in text.
    const one = new Uint8Array(4);
    new DataView(one.buffer).setInt32(0, 1, LE);
    libc.setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, one);
    return undefined;
  }

  nextSeq(): number {
    this.seq = (this.seq + 1) >>> 0;
    return this.seq;
  }

  /** Sends one request and gathers its answer here and now (requestReads() on this thread); throws NetlinkRequestError. */
  request(what: string, bytes: Uint8Array, seq: number): NetlinkAnswer {
    return runSync(this.requestReads(what, bytes, seq));
  }

  /**
   * request() as a read program: the request and its whole answer in one op (netlinkTransact),
   * so two programs' requests on this socket never interleave. SO_RCVTIMEO bounds each recv.
   * `max`: room for the whole answer, every datagram of a dump included (ENOBUFS past it).
   */
  *requestReads(what: string, bytes: Uint8Array, seq: number, max = ANSWER_BYTES): ReadProgram<NetlinkAnswer> {
    if (this.closed) throw new NetlinkRequestError(what, undefined, undefined, 'socket is closed');
    const r = yield* read([{ kind: 'netlinkTransact', fd: this.fd, bytes, max }]);
    const status = r.status(0);
    const raw = r.datagrams(0);
    if (status < 0) {
      const errno = -status;
      const detail = errno === ERRNO.EAGAIN ? 'timed out waiting for the kernel'
        : errno === ERRNO.ENOBUFS ? `answer larger than ${max} bytes`
        : `send/recv failed with ${errnoName(errno)}`;
      throw new NetlinkRequestError(what, errno, undefined, detail);
    }
    const collector = new ReplyCollector(seq);
    try {
      for (const chunk of raw) collector.feed(decodeMessages(chunk));
    } catch (e) {
      if (e instanceof NetlinkDecodeError) throw new NetlinkRequestError(what, undefined, undefined, e.message);
      throw e;
    }
    if (!collector.done) throw new NetlinkRequestError(what, undefined, undefined, `no end of answer in ${raw.length} datagrams`);
    if (collector.error !== undefined) {
      const { errno, extAck } = collector.error;
      throw new NetlinkRequestError(what, errno, extAck, `kernel answered ${errnoName(errno)}`);
    }
    return { messages: collector.data, raw };
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.libc.close(this.fd);
  }
}
