/**
 * The kernel's connection tables as read programs: per RDMA device one RES_QP_GET and one
 * RES_CM_ID_GET dump (netlink/restrack.ts), on a NETLINK_RDMA socket of its own so that a dump
 * that hangs or overflows never leaves a half-read answer on the port counters' socket.
 *
 * Cost: restrack needs no capability, but every QP dump queries every QP (ib_query_qp): rxe copies
 * its fields, mlx5 sends one QUERY_QP firmware command per QP (mlx5_ib_query_qp), so 100 QPs read
 * each second are 100 commands a second on the device's command queue.
 *
 * A dump that failed in transit (timeout, answer larger than the room, malformed) or that the
 * bounded reader gave up on leaves the socket with an unknown rest of an answer: it is replaced
 * before the next read. The room per device starts at 256 KiB (about 2,500 QPs) and doubles up to
 * 16 MiB when a dump does not fit; that device is read again on the next tick.
 */
import { type ReadProgram, all, withoutReads, pair } from '../../reads/program.js';
import { NetlinkDecodeError } from '../netlink/codec.js';
import { RDMA_NLDEV_CMD_RES_CM_ID_GET, RDMA_NLDEV_CMD_RES_QP_GET } from '../netlink/constants.js';
import { RDMA_NETLINK, type RdmaDeviceInfo, buildDeviceDumpRequest, decodeDeviceInfo } from '../netlink/rdma.js';
import { type CmIdEntry, type QpEntry, type ResDump, type RestrackCommand, buildResDumpRequest, decodeCmIdDump, decodeQpDump } from '../netlink/restrack.js';
import { type NetlinkAnswer, NetlinkRequestError, NetlinkUnavailable, NetlinkSocket } from '../netlink/socket.js';
import { type NetlinkTransport, requestOf } from '../netlink/source.js';
import { ERRNO } from '../../ffi/errno.js';

export type DeviceDump =
  | {
      readonly ok: true;
      readonly device: string;
      readonly qps: ResDump<QpEntry>;
      readonly cmIds: ResDump<CmIdEntry>;
      /** The datagrams as received (captures). */
      readonly raw: { readonly qp: readonly Uint8Array[]; readonly cmId: readonly Uint8Array[] };
    }
  | { readonly ok: false; readonly device: string; readonly error: string };

export type RestrackRead =
  | { readonly ok: true; readonly devices: readonly DeviceDump[] }
  | { readonly ok: false; readonly error: string };

export type TransportOpen =
  | { readonly ok: true; readonly transport: NetlinkTransport }
  | { readonly ok: false; readonly error: NetlinkUnavailable };

/** How long a kernel without RDMA netlink is taken at its word before socket() is tried again. */
const ABSENT_RETRY_MS = 30_000;
const FIRST_ROOM_BYTES = 256 * 1024;
const MAX_ROOM_BYTES = 16 * 1024 * 1024;
const ENOBUFS = ERRNO.ENOBUFS;

export function openRestrackSocket(timeoutMs: number): TransportOpen {
  const opened = NetlinkSocket.open(RDMA_NETLINK, { timeoutMs });
  return opened.ok ? { ok: true, transport: opened.socket } : { ok: false, error: opened.error };
}

export class RestrackSource {
  private transport: NetlinkTransport | undefined;
  private dirty = false;
  private readonly room = new Map<string, number>();
  /** The devices of the last device list: their QP dumps go out with the next one. */
  private known: RdmaDeviceInfo[] = [];
  private closed = false;
  /** Why no socket opened, and until when (monotonic ms) that answer stands. */
  private unavailable: { readonly error: NetlinkUnavailable; readonly untilMs: number } | undefined;

  constructor(
    private readonly open: () => TransportOpen,
    private readonly nowMs: () => number = () => performance.now(),
  ) {}

  /** The bounded reader gave up on a read of this source: its socket is replaced before the next. */
  abandon(): void {
    this.dirty = true;
    this.unavailable = undefined;
  }

  /**
   * Whether the next read has a socket: the one it has (replaced, when it must be, as the read
   * runs: a thread given up inside recv() may still hold it), or one opened now; why not when
   * none opens (a host without RDMA netlink).
   */
  ready(): TransportOpen {
    return this.transport !== undefined && !this.closed ? { ok: true, transport: this.transport } : this.socket();
  }

  /**
   * Every device's two dumps. The socket is (re)opened here, when the reader runs the program.
   * The QP dumps, whose PSNs are the packet counts, go out together in one round with the device
   * list (for the devices of the last read; read again when the list changed): one request reads
   * every device's PSNs back to back, and whatever the caller puts in the same run (the flows'
   * headIndex: model/same-tick.ts). The cm_id dumps follow in one more round.
   */
  *reads(): ReadProgram<RestrackRead> {
    const t = this.socket();
    if (!t.ok) return { ok: false, error: t.error.message };
    const known = this.known;
    const [listed, guessed] = yield* pair(this.deviceList(t.transport), all(known.map((d) => this.dumpOf(t.transport, RDMA_NLDEV_CMD_RES_QP_GET, d))));
    if (!listed.ok) return listed;
    const devices = listed.devices;
    this.known = devices;
    const qps = sameDevices(known, devices) ? guessed : yield* all(devices.map((d) => this.dumpOf(t.transport, RDMA_NLDEV_CMD_RES_QP_GET, d)));
    const cms = yield* all(devices.map((d, i) => (qps[i]!.ok ? this.dumpOf(t.transport, RDMA_NLDEV_CMD_RES_CM_ID_GET, d) : withoutReads(qps[i]!))));
    return { ok: true, devices: devices.map((d, i) => this.deviceDump(d, qps[i]!, cms[i]!)) };
  }

  private *deviceList(t: NetlinkTransport): ReadProgram<{ readonly ok: true; readonly devices: RdmaDeviceInfo[] } | { readonly ok: false; readonly error: string }> {
    try {
      const seq = t.nextSeq();
      const reply = yield* requestOf(t, 'RDMA_NLDEV_CMD_GET dump', buildDeviceDumpRequest(seq), seq);
      return { ok: true, devices: reply.messages.map(decodeDeviceInfo) };
    } catch (e) {
      return { ok: false, error: this.failed(e) };
    }
  }

  /** One dump of one device; a failure is that device's (its room doubles on ENOBUFS). */
  private *dumpOf(t: NetlinkTransport, cmd: RestrackCommand, d: RdmaDeviceInfo): ReadProgram<DumpRead> {
    try {
      return { ok: true, answer: yield* this.dump(t, cmd, d) };
    } catch (e) {
      if (e instanceof NetlinkRequestError && e.errno === ENOBUFS) this.room.set(d.name, Math.min(MAX_ROOM_BYTES, this.roomOf(d.name) * 2));
      return { ok: false, error: this.failed(e) };
    }
  }

  private deviceDump(d: RdmaDeviceInfo, qp: DumpRead, cm: DumpRead): DeviceDump {
    if (!qp.ok) return { ok: false, device: d.name, error: qp.error };
    if (!cm.ok) return { ok: false, device: d.name, error: cm.error };
    try {
      return { ok: true, device: d.name, qps: decodeQpDump(qp.answer.messages), cmIds: decodeCmIdDump(cm.answer.messages), raw: { qp: qp.answer.raw, cmId: cm.answer.raw } };
    } catch (e) {
      return { ok: false, device: d.name, error: this.failed(e) };
    }
  }

  private *dump(t: NetlinkTransport, cmd: RestrackCommand, d: RdmaDeviceInfo): ReadProgram<NetlinkAnswer> {
    const seq = t.nextSeq();
    const what = `${cmd === RDMA_NLDEV_CMD_RES_QP_GET ? 'RDMA_NLDEV_CMD_RES_QP_GET' : 'RDMA_NLDEV_CMD_RES_CM_ID_GET'} dump of ${d.name}`;
    return yield* requestOf(t, what, buildResDumpRequest(cmd, seq, d.index), seq, this.roomOf(d.name));
  }

  private roomOf(device: string): number {
    return this.room.get(device) ?? FIRST_ROOM_BYTES;
  }

  private failed(e: unknown): string {
    if (e instanceof NetlinkDecodeError) {
      this.dirty = true;
      return e.message;
    }
    if (!(e instanceof NetlinkRequestError)) throw e;
    this.dirty = true;
    return e.message;
  }

  private socket(): TransportOpen {
    if (this.closed) return { ok: false, error: new NetlinkUnavailable('socket-error', undefined, 'restrack source is closed') };
    if (this.transport !== undefined && !this.dirty) return { ok: true, transport: this.transport };
    this.transport?.close();
    this.transport = undefined;
    this.dirty = false;
    const now = this.nowMs();
    if (this.unavailable !== undefined && now < this.unavailable.untilMs) return { ok: false, error: this.unavailable.error };
    const opened = this.open();
    if (opened.ok) this.transport = opened.transport;
    // A kernel without RDMA netlink (no ib_core) is asked again now and then, not every tick.
    this.unavailable = opened.ok || opened.error.reason !== 'family-unsupported' ? undefined : { error: opened.error, untilMs: now + ABSENT_RETRY_MS };
    return opened;
  }

  close(): void {
    this.closed = true;
    this.transport?.close();
    this.transport = undefined;
  }
}

type DumpRead = { readonly ok: true; readonly answer: NetlinkAnswer } | { readonly ok: false; readonly error: string };

/** The same devices, by index and name, in the same order. */
function sameDevices(a: readonly RdmaDeviceInfo[], b: readonly RdmaDeviceInfo[]): boolean {
  return a.length === b.length && a.every((d, i) => d.index === b[i]!.index && d.name === b[i]!.name);
}
