/**
 * CounterSource over RDMA netlink: one RDMA_NLDEV_CMD_STAT_GET per port per read(), returning
 * every hw counter the kernel reports for the port, optional ones included.
 */
import { type CounterSource, type CounterSpec, type CounterValue, type PortAttributes, type PortCounterSet, type PortRef, portKey } from '../types.js';
import { netlinkCounterSpec } from './counters.js';
import {
  type RdmaDeviceInfo,
  type StatGetReply,
  buildDeviceDumpRequest,
  buildStatGetRequest,
  decodeDeviceInfo,
  decodeStatGetReply,
} from './rdma.js';
import { NetlinkDecodeError } from './codec.js';
import { ERRNO } from './constants.js';
import {
  type NetlinkAnswer,
  NetlinkRequestError,
  NetlinkUnavailable,
  RdmaNetlinkSocket,
  errnoName,
} from './socket.js';

/** What the source needs from a socket; tests substitute canned answers. */
export interface NetlinkTransport {
  nextSeq(): number;
  request(what: string, bytes: Uint8Array, seq: number): NetlinkAnswer;
  close(): void;
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
  private deviceIndexes = new Map<string, number>();
  private closed = false;
  /** Why the last open() returned undefined, for the caller to log once. */
  lastOpenError: NetlinkRequestError | NetlinkUnavailable | undefined;

  constructor(private readonly transport: NetlinkTransport) {}

  /** Opens a NETLINK_RDMA socket; EPROTONOSUPPORT etc. come back as NetlinkUnavailable. */
  static create(options: { readonly timeoutMs?: number } = {}): NetlinkSourceOpenResult {
    const opened = RdmaNetlinkSocket.open(options);
    if (!opened.ok) return opened;
    return { ok: true, source: new NetlinkCounterSource(opened.socket) };
  }

  /** All RDMA devices the kernel lists (RDMA_NLDEV_CMD_GET dump). */
  listDevices(): RdmaDeviceInfo[] {
    const seq = this.transport.nextSeq();
    const answer = this.transport.request('RDMA_NLDEV_CMD_GET dump', buildDeviceDumpRequest(seq), seq);
    const devices = answer.messages.map(decodeDeviceInfo);
    this.deviceIndexes = new Map(devices.map((d) => [d.name, d.index]));
    return devices;
  }

  /** One STAT_GET round trip for (device index, port). Throws NetlinkRequestError. */
  statGet(devIndex: number, port: number, label: string): { reply: StatGetReply; answer: NetlinkAnswer } {
    const seq = this.transport.nextSeq();
    const what = `RDMA_NLDEV_CMD_STAT_GET ${label} (device index ${devIndex})`;
    const answer = this.transport.request(what, buildStatGetRequest(seq, devIndex, port), seq);
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

  open(attrs: PortAttributes): PortCounterSet | undefined {
    const result = this.openPort(attrs);
    this.lastOpenError = result.ok ? undefined : result.error;
    return result.ok ? result.set : undefined;
  }

  /** Like open(), but says why a port has no netlink counters. */
  openPort(ref: PortRef): PortOpenResult {
    if (this.closed) return { ok: false, error: new NetlinkRequestError(portKey(ref), undefined, undefined, 'source is closed') };
    const cached = this.deviceIndexes.has(ref.device);
    try {
      return { ok: true, set: this.discover(ref) };
    } catch (e) {
      if (!(e instanceof NetlinkRequestError)) throw e;
      if (!cached || e.errno === ERRNO.EPERM || e.errno === ERRNO.EACCES) return { ok: false, error: asUnavailableIfDenied(e) };
    }
    // The cached index may be stale (device deleted and re-added): list devices once more.
    this.deviceIndexes.delete(ref.device);
    try {
      return { ok: true, set: this.discover(ref) };
    } catch (e) {
      if (e instanceof NetlinkRequestError) return { ok: false, error: asUnavailableIfDenied(e) };
      throw e;
    }
  }

  private discover(ref: PortRef): NetlinkPortCounterSet {
    const devIndex = this.deviceIndex(ref.device);
    const { reply } = this.statGet(devIndex, ref.port, portKey(ref));
    checkIdentity(reply, ref);
    const specs = reply.counters.map((c) => netlinkCounterSpec(c.name));
    return new NetlinkPortCounterSet(this, { device: ref.device, port: ref.port }, devIndex, specs);
  }

  private deviceIndex(device: string): number {
    let index = this.deviceIndexes.get(device);
    if (index === undefined) {
      this.listDevices();
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
    readonly counters: readonly CounterSpec[],
  ) {}

  read(): CounterValue[] {
    if (this.closed) return this.allFailed('counter set is closed');
    let reply: StatGetReply;
    try {
      reply = this.source.statGet(this.devIndex, this.port.port, portKey(this.port)).reply;
      checkIdentity(reply, this.port);
    } catch (e) {
      if (e instanceof NetlinkRequestError) return this.allFailed(e.message);
      throw e;
    }
    return this.match(reply);
  }

  /** Names added or removed since open(), as of the last read(); re-open when defined. */
  counterSetChange(): CounterSetChange | undefined {
    return this.change;
  }

  private match(reply: StatGetReply): CounterValue[] {
    const values = new Map(reply.counters.map((c) => [c.name, c.value]));
    const known = new Set(this.counters.map((c) => c.name));
    const added = reply.counters.map((c) => c.name).filter((n) => !known.has(n));
    const removed = this.counters.map((c) => c.name).filter((n) => !values.has(n));
    this.change = added.length === 0 && removed.length === 0 ? undefined : { added, removed };
    return this.counters.map((spec): CounterValue => {
      const value = values.get(spec.name);
      if (value !== undefined) return { ok: true, value };
      return { ok: false, error: `${portKey(this.port)} ${spec.name}: no longer reported over netlink (counter set changed; re-open)` };
    });
  }

  private allFailed(error: string): CounterValue[] {
    return this.counters.map(() => ({ ok: false, error }));
  }

  close(): void {
    this.closed = true;
  }
}
