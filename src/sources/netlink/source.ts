/**
 * CounterSource over RDMA netlink: one RDMA_NLDEV_CMD_STAT_GET per port per read, returning
 * every hw counter the kernel reports for the port, optional ones included. A port's set follows
 * the kernel's list: counters an operator enables later (`rdma statistic set link ...
 * optional-counters ...`) join it on the read that first reports them, disabled ones leave it.
 */
import {
  type CounterSource, type CounterSourceKind, type CounterSpec, type CounterValue, type PortAttributes, type PortCounterSet, type PortRef, type SetRead,
  portKey,
} from '../types.js';
import { type ReadProgram } from '../../reads/program.js';
import type { ReadError } from '../../reads/errors.js';
import { netlinkCounterSpec } from './counters.js';
import {
  RDMA_NETLINK,
  type RdmaDeviceInfo,
  type StatGetReply,
  buildDeviceDumpRequest,
  buildStatGetRequest,
  decodeDeviceInfo,
  decodeStatGetReply,
} from './rdma.js';
import { NetlinkDecodeError } from './codec.js';
import { ERRNO, errnoName } from '../../ffi/errno.js';
import {
  type NetlinkAnswer,
  NetlinkRequestError,
  NetlinkUnavailable,
  NetlinkSocket,
} from './socket.js';

/** What the source needs from a socket; tests substitute canned answers. */
export interface NetlinkTransport {
  nextSeq(): number;
  request(what: string, bytes: Uint8Array, seq: number): NetlinkAnswer;
  /** request() as a read program (the socket's send and recv on the bounded reader); request() when absent. */
  requestReads?(what: string, bytes: Uint8Array, seq: number, max?: number): ReadProgram<NetlinkAnswer>;
  close(): void;
}

/** The transport's request as a read program; throws NetlinkRequestError where request() would. */
export function* requestOf(t: NetlinkTransport, what: string, bytes: Uint8Array, seq: number, max?: number): ReadProgram<NetlinkAnswer> {
  if (t.requestReads) return yield* t.requestReads(what, bytes, seq, max);
  return t.request(what, bytes, seq);
}

export type NetlinkSourceOpenResult =
  | { readonly ok: true; readonly source: NetlinkCounterSource }
  | { readonly ok: false; readonly error: NetlinkUnavailable };

export type PortOpenResult =
  | { readonly ok: true; readonly set: NetlinkPortCounterSet }
  | { readonly ok: false; readonly error: NetlinkRequestError | NetlinkUnavailable };

export interface CounterSetChange {
  readonly added: readonly string[];
  readonly removed: readonly string[];
}

export class NetlinkCounterSource implements CounterSource {
  readonly kind = 'netlink' as const;
  /** STAT_GET reports what a port's hw_counters/ directory shows (rdma_hw_stats), and more. */
  readonly covers: readonly CounterSourceKind[] = ['sysfs_hw_counters'];
  private deviceIndexes = new Map<string, number>();
  private closed = false;
  /** Why the last openReads() gave undefined, for the caller to log once. */
  lastOpenError: NetlinkRequestError | NetlinkUnavailable | undefined;

  constructor(private readonly transport: NetlinkTransport) {}

  /** Opens a NETLINK_RDMA socket; EPROTONOSUPPORT etc. come back as NetlinkUnavailable. */
  static create(options: { readonly timeoutMs?: number } = {}): NetlinkSourceOpenResult {
    const opened = NetlinkSocket.open(RDMA_NETLINK, options);
    if (!opened.ok) return opened;
    return { ok: true, source: new NetlinkCounterSource(opened.socket) };
  }


  *listDeviceReads(): ReadProgram<RdmaDeviceInfo[]> {
    const seq = this.transport.nextSeq();
    const answer = yield* requestOf(this.transport, 'RDMA_NLDEV_CMD_GET dump', buildDeviceDumpRequest(seq), seq);
    const devices = answer.messages.map(decodeDeviceInfo);
    this.deviceIndexes = new Map(devices.map((d) => [d.name, d.index]));
    return devices;
  }


  *statGetReads(devIndex: number, port: number, label: string): ReadProgram<{ reply: StatGetReply; answer: NetlinkAnswer }> {
    const seq = this.transport.nextSeq();
    const what = `RDMA_NLDEV_CMD_STAT_GET ${label} (device index ${devIndex})`;
    const answer = yield* requestOf(this.transport, what, buildStatGetRequest(seq, devIndex, port), seq);
    const first = answer.messages[0];
    if (answer.messages.length !== 1 || first === undefined) {
      throw new NetlinkRequestError(what, undefined, undefined, `expected 1 reply message, got ${answer.messages.length}`);
    }
    try {
      return { reply: decodeStatGetReply(first), answer };
    } catch (e) {
      if (e instanceof NetlinkDecodeError) throw new NetlinkRequestError(what, undefined, undefined, e.message);
      throw e;
    }
  }

  *openReads(attrs: PortAttributes): ReadProgram<PortCounterSet | undefined> {
    const result = yield* this.openPortReads(attrs);
    this.lastOpenError = result.ok ? undefined : result.error;
    return result.ok ? result.set : undefined;
  }


  *openPortReads(ref: PortRef): ReadProgram<PortOpenResult> {
    if (this.closed) return { ok: false, error: new NetlinkRequestError(portKey(ref), undefined, undefined, 'source is closed') };
    const cached = this.deviceIndexes.has(ref.device);
    try {
      return { ok: true, set: yield* this.discover(ref) };
    } catch (e) {
      if (!(e instanceof NetlinkRequestError)) throw e;
      if (!cached || e.errno === ERRNO.EPERM || e.errno === ERRNO.EACCES) return { ok: false, error: asUnavailableIfDenied(e) };
    }
    // The cached index may be stale (device deleted and re-added): list devices once more.
    this.deviceIndexes.delete(ref.device);
    try {
      return { ok: true, set: yield* this.discover(ref) };
    } catch (e) {
      if (e instanceof NetlinkRequestError) return { ok: false, error: asUnavailableIfDenied(e) };
      throw e;
    }
  }

  private *discover(ref: PortRef): ReadProgram<NetlinkPortCounterSet> {
    const devIndex = yield* this.deviceIndex(ref.device);
    const { reply } = yield* this.statGetReads(devIndex, ref.port, portKey(ref));
    checkIdentity(reply, ref);
    const specs = reply.counters.map((c) => netlinkCounterSpec(c.name));
    return new NetlinkPortCounterSet(this, { device: ref.device, port: ref.port }, devIndex, specs);
  }

  private *deviceIndex(device: string): ReadProgram<number> {
    let index = this.deviceIndexes.get(device);
    if (index === undefined) {
      yield* this.listDeviceReads();
      index = this.deviceIndexes.get(device);
    }
    if (index === undefined) {
      throw new NetlinkRequestError(`device ${device}`, ERRNO.ENODEV, undefined, 'not listed by RDMA_NLDEV_CMD_GET');
    }
    return index;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.transport.close();
  }
}

function checkIdentity(reply: StatGetReply, ref: PortRef): void {
  if (reply.devName !== ref.device || reply.port !== ref.port) {
    throw new NetlinkRequestError(
      portKey(ref),
      undefined,
      undefined,
      `kernel answered for ${reply.devName}/${reply.port} (device index reused?)`,
    );
  }
}

function asUnavailableIfDenied(e: NetlinkRequestError): NetlinkRequestError | NetlinkUnavailable {
  if (e.errno === ERRNO.EPERM || e.errno === ERRNO.EACCES) {
    return new NetlinkUnavailable('permission-denied', e.errno, `${e.what}: kernel answered ${errnoName(e.errno)}`);
  }
  return e;
}

export class NetlinkPortCounterSet implements PortCounterSet {
  readonly kind = 'netlink' as const;
  private change: CounterSetChange | undefined;
  private closed = false;

  constructor(
    private readonly source: NetlinkCounterSource,
    readonly port: PortRef,
    readonly devIndex: number,
    /** The kernel's list as of the last read. */
    public counters: readonly CounterSpec[],
  ) {}

  *reads(): ReadProgram<SetRead> {
    if (this.closed) return this.allFailed('counter set is closed', 'CLOSED');
    let reply: StatGetReply;
    try {
      reply = (yield* this.source.statGetReads(this.devIndex, this.port.port, portKey(this.port))).reply;
      checkIdentity(reply, this.port);
    } catch (e) {
      if (e instanceof NetlinkRequestError) return this.allFailed(e.message);
      throw e;
    }
    return this.match(reply);
  }


  /** Names the last read added to or removed from the set (undefined: the same list as before). */
  counterSetChange(): CounterSetChange | undefined {
    return this.change;
  }

  /** Values in the kernel's order; the set's list follows it (series are matched by name). */
  private match(reply: StatGetReply): SetRead {
    const known = new Map(this.counters.map((c) => [c.name, c]));
    const reported = new Set(reply.counters.map((c) => c.name));
    const added = reply.counters.map((c) => c.name).filter((n) => !known.has(n));
    const removed = this.counters.map((c) => c.name).filter((n) => !reported.has(n));
    this.change = added.length === 0 && removed.length === 0 ? undefined : { added, removed };
    const sameOrder = reply.counters.length === this.counters.length && reply.counters.every((c, i) => c.name === this.counters[i]!.name);
    if (!sameOrder) this.counters = reply.counters.map((c) => known.get(c.name) ?? netlinkCounterSpec(c.name));
    return { kind: 'values', counters: this.counters, values: reply.counters.map((c): CounterValue => ({ ok: true, value: c.value })) };
  }

  private allFailed(detail: string, code: 'SOURCE' | 'CLOSED' = 'SOURCE'): SetRead {
    const error: ReadError = { code, op: 'netlink', detail };
    return { kind: 'values', counters: this.counters, values: this.counters.map(() => ({ ok: false, error })) };
  }

  close(): void {
    this.closed = true;
  }
}
