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
 * before the next read. The room of each device's dumps starts at 256 KiB (about 3,000 QPs, 800
 * cm_ids) and grows fourfold up to 16 MiB when a dump does not fit (that device is read again on
 * the next tick); a cm_id dump starts at the room its QP dump's count asks for. A dump larger
 * than 16 MiB (some 190,000 QPs or 50,000 cm_ids on one device), or a device of more than 65,536
 * QPs, is an error of that device, which is then not asked again for 10 minutes: the reads and
 * what they allocate stay bounded. The dumps are handed on undecoded: the monitor decodes them
 * in slices beside the event loop.
 */
import { type ReadProgram, all, withoutReads, pair } from '../../reads/program.js';
import { NetlinkDecodeError } from '../netlink/codec.js';
import { RDMA_NLDEV_ATTR_RES_QP, RDMA_NLDEV_ATTR_RES_QP_ENTRY, RDMA_NLDEV_CMD_RES_CM_ID_GET, RDMA_NLDEV_CMD_RES_QP_GET } from '../netlink/constants.js';
import { RDMA_NETLINK, type RdmaDeviceInfo, buildDeviceDumpRequest, decodeDeviceInfo } from '../netlink/rdma.js';
import { type CmIdEntry, type QpEntry, type ResDump, type RestrackCommand, buildResDumpRequest, countEntries, decodeCmIdDump, decodeQpDump } from '../netlink/restrack.js';
import type { NlMessage } from '../netlink/codec.js';
import { type NetlinkAnswer, NetlinkRequestError, NetlinkUnavailable, NetlinkSocket } from '../netlink/socket.js';
import { type NetlinkTransport, requestOf } from '../netlink/source.js';
import { ERRNO } from '../../ffi/errno.js';
import { type RdmaDriver, driverReads } from '../sysfs/driver.js';

export type DeviceDump =
  | {
      readonly ok: true;
      readonly device: string;
      /** The dumps' messages, to decode in slices (netlink/restrack.ts decode*DumpSliced). */
      readonly messages: { readonly qp: readonly NlMessage[]; readonly cmId: readonly NlMessage[] };
      /** QPs in the QP dump (counted, not decoded), the kernel's own included. */
      readonly qpCount: number;
      /** Decoded at once on first use (the CLI, captures, tests). */
      readonly qps: ResDump<QpEntry>;
      readonly cmIds: ResDump<CmIdEntry>;
      /** The datagrams as received (captures). */
      readonly raw: { readonly qp: readonly Uint8Array[]; readonly cmId: readonly Uint8Array[] };
    }
  | { readonly ok: false; readonly device: string; readonly error: string };

export type RestrackRead =
  /** `devices`: those asked for, read or failed; `skipped`: the others listed, not asked for. */
  | { readonly ok: true; readonly devices: readonly DeviceDump[]; readonly skipped: readonly string[] }
  | { readonly ok: false; readonly error: string };

/** Which listed devices a read dumps (the monitor's schedule); every one when absent. */
export type DeviceChoice = (device: string) => boolean;

export type TransportOpen =
  | { readonly ok: true; readonly transport: NetlinkTransport }
  | { readonly ok: false; readonly error: NetlinkUnavailable };

/** How long a kernel without RDMA netlink is taken at its word before socket() is tried again. */
const ABSENT_RETRY_MS = 30_000;
const FIRST_ROOM_BYTES = 256 * 1024;
const MAX_ROOM_BYTES = 16 * 1024 * 1024;
/**
 * The most QPs followed on one device: each costs the exporter a few microseconds a read and a
 * few hundred bytes kept; a dump holding more (a fault, or a host beyond any media host's 50,000)
 * is an error of that device, counted before anything is decoded.
 */
const MAX_QPS_PER_DEVICE = 65_536;
/** How long a device whose dump outgrew MAX_ROOM_BYTES goes unasked. */
const TOO_LARGE_RETRY_MS = 10 * 60_000;
/**
 * A cm_id's bytes in its dump per byte of its QP's: fill_res_cm_id_entry() puts both whole
 * 128-byte __kernel_sockaddr_storage addresses and eight small attributes, 324 bytes an entry
 * against 84 for its RC QP's (the dumps recorded in the soft-RoCE guest).
 */
const CM_ID_PER_QP_BYTES = 4;
const ENOBUFS = ERRNO.ENOBUFS;

export function openRestrackSocket(timeoutMs: number): TransportOpen {
  const opened = NetlinkSocket.open(RDMA_NETLINK, { timeoutMs });
  return opened.ok ? { ok: true, transport: opened.socket } : { ok: false, error: opened.error };
}

export class RestrackSource {
  private transport: NetlinkTransport | undefined;
  private dirty = false;
  /** By device and command: the room its next dump is read with. */
  private readonly room = new Map<string, number>();
  /** By device: why its last dump outgrew MAX_ROOM_BYTES, and until when it goes unasked (monotonic ms). */
  private readonly tooLarge = new Map<string, { readonly error: string; readonly untilMs: number }>();
  /** The devices of the last device list: their QP dumps go out with the next one. */
  private known: RdmaDeviceInfo[] = [];
  private closed = false;
  /** Why no socket opened, and until when (monotonic ms) that answer stands. */
  private unavailable: { readonly error: NetlinkUnavailable; readonly untilMs: number } | undefined;

  /** Per device (`index name`), its driver: whether each of its QPs costs a firmware command. */
  private readonly driverOf = new Map<string, RdmaDriver>();

  constructor(
    private readonly open: () => TransportOpen,
    private readonly nowMs: () => number = () => performance.now(),
    /** Where the devices' drivers are looked up (`--path.sysfs`). */
    private readonly sysfsRoot = '/sys',
  ) {}

  /** The devices of the last device list. */
  devices(): readonly RdmaDeviceInfo[] {
    return this.known;
  }

  /** The driver of a listed device, once a read has looked it up (sysfs/driver.ts). */
  driver(device: string): RdmaDriver | undefined {
    const d = this.known.find((k) => k.name === device);
    return d === undefined ? undefined : this.driverOf.get(deviceId(d));
  }

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
  *reads(choose: DeviceChoice = () => true): ReadProgram<RestrackRead> {
    const t = this.socket();
    if (!t.ok) return { ok: false, error: t.error.message };
    const asked = (name: string): boolean => choose(name) && !this.resting(name);
    const known = this.known.filter((d) => asked(d.name));
    const [listed, guessed] = yield* pair(this.deviceList(t.transport), all(known.map((d) => this.dumpOf(t.transport, RDMA_NLDEV_CMD_RES_QP_GET, d))));
    if (!listed.ok) return listed;
    const changed = !sameDevices(this.known, listed.devices);
    this.known = listed.devices;
    const resting = listed.devices.filter((d) => choose(d.name) && this.resting(d.name));
    const devices = listed.devices.filter((d) => asked(d.name));
    const skipped = listed.devices.filter((d) => !choose(d.name)).map((d) => d.name);
    // A new list: its QP dumps again, and the drivers of the devices not seen before, in one round.
    const qps = !changed ? guessed : (yield* pair(all(devices.map((d) => this.dumpOf(t.transport, RDMA_NLDEV_CMD_RES_QP_GET, d))), this.lookUpDrivers(listed.devices)))[0];
    devices.forEach((d, i) => this.roomForCmIds(d.name, qps[i]!));
    const cms = yield* all(devices.map((d, i) => (qps[i]!.ok ? this.dumpOf(t.transport, RDMA_NLDEV_CMD_RES_CM_ID_GET, d) : withoutReads(qps[i]!))));
    const rested = resting.map((d): DeviceDump => ({ ok: false, device: d.name, error: this.tooLarge.get(d.name)!.error }));
    return { ok: true, devices: [...devices.map((d, i) => this.deviceDump(d, qps[i]!, cms[i]!)), ...rested], skipped };
  }

  /**
   * The cm_id dump's room from the QP dump just read (each of MXL's QPs has its cm_id, four times
   * its QP entry's bytes): asked for at once, without reads lost growing it.
   */
  private roomForCmIds(device: string, qp: DumpRead): void {
    if (!qp.ok) return;
    const bytes = qp.answer.raw.reduce((n, d) => n + d.length, 0);
    const wanted = Math.min(MAX_ROOM_BYTES, FIRST_ROOM_BYTES * 4 ** Math.max(0, Math.ceil(Math.log((bytes * CM_ID_PER_QP_BYTES) / FIRST_ROOM_BYTES) / Math.log(4))));
    const k = roomKey(device, RDMA_NLDEV_CMD_RES_CM_ID_GET);
    if (wanted > (this.room.get(k) ?? FIRST_ROOM_BYTES)) this.room.set(k, wanted);
  }

  /** Whether a device whose dump outgrew the most the exporter reads is left unasked now. */
  private resting(device: string): boolean {
    const r = this.tooLarge.get(device);
    if (r !== undefined && this.nowMs() >= r.untilMs) this.tooLarge.delete(device);
    return this.tooLarge.has(device);
  }

  /** The drivers of devices not seen before (a device renamed or re-added is looked up again). */
  private *lookUpDrivers(devices: readonly RdmaDeviceInfo[]): ReadProgram<void> {
    const fresh = devices.filter((d) => !this.driverOf.has(deviceId(d)));
    if (fresh.length === 0) return;
    const drivers = yield* all(fresh.map((d) => driverReads(this.sysfsRoot, d.name)));
    fresh.forEach((d, i) => this.driverOf.set(deviceId(d), drivers[i]!));
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

  /** One dump of one device; a failure is that device's (its room grows on ENOBUFS, up to MAX_ROOM_BYTES). */
  private *dumpOf(t: NetlinkTransport, cmd: RestrackCommand, d: RdmaDeviceInfo): ReadProgram<DumpRead> {
    const room = this.roomOf(d.name, cmd);
    try {
      return { ok: true, answer: yield* this.dump(t, cmd, d, room) };
    } catch (e) {
      const error = this.failed(e);
      if (!(e instanceof NetlinkRequestError && e.errno === ENOBUFS)) return { ok: false, error };
      if (room < MAX_ROOM_BYTES) {
        this.room.set(roomKey(d.name, cmd), Math.min(MAX_ROOM_BYTES, room * 4));
        return { ok: false, error };
      }
      const tooLarge = `${error}: more than the ${MAX_ROOM_BYTES / 2 ** 20} MiB the exporter reads of one dump; ${d.name}'s connections are not read (asked again in ${TOO_LARGE_RETRY_MS / 60_000} minutes)`;
      this.tooLarge.set(d.name, { error: tooLarge, untilMs: this.nowMs() + TOO_LARGE_RETRY_MS });
      return { ok: false, error: tooLarge };
    }
  }

  private deviceDump(d: RdmaDeviceInfo, qp: DumpRead, cm: DumpRead): DeviceDump {
    if (!qp.ok) return { ok: false, device: d.name, error: qp.error };
    if (!cm.ok) return { ok: false, device: d.name, error: cm.error };
    let count: number;
    try {
      count = countEntries(qp.answer.messages, RDMA_NLDEV_ATTR_RES_QP, RDMA_NLDEV_ATTR_RES_QP_ENTRY);
    } catch (e) {
      return { ok: false, device: d.name, error: this.failed(e) };
    }
    if (count > MAX_QPS_PER_DEVICE) {
      const error = `${d.name} holds ${count} QPs, more than the ${MAX_QPS_PER_DEVICE} the exporter follows on one device: its connections are not read (asked again in ${TOO_LARGE_RETRY_MS / 60_000} minutes)`;
      this.tooLarge.set(d.name, { error, untilMs: this.nowMs() + TOO_LARGE_RETRY_MS });
      return { ok: false, device: d.name, error };
    }
    const messages = { qp: qp.answer.messages, cmId: cm.answer.messages };
    let qps: ResDump<QpEntry> | undefined;
    let cmIds: ResDump<CmIdEntry> | undefined;
    return {
      ok: true, device: d.name, messages, qpCount: count, raw: { qp: qp.answer.raw, cmId: cm.answer.raw },
      get qps() {
        return (qps ??= decodeQpDump(messages.qp));
      },
      get cmIds() {
        return (cmIds ??= decodeCmIdDump(messages.cmId));
      },
    };
  }

  /** A device's dump that did not decode (in slices, by the monitor): its socket is replaced too. */
  decodeFailed(e: unknown): string {
    return this.failed(e);
  }

  private *dump(t: NetlinkTransport, cmd: RestrackCommand, d: RdmaDeviceInfo, room: number): ReadProgram<NetlinkAnswer> {
    const seq = t.nextSeq();
    const what = `${cmd === RDMA_NLDEV_CMD_RES_QP_GET ? 'RDMA_NLDEV_CMD_RES_QP_GET' : 'RDMA_NLDEV_CMD_RES_CM_ID_GET'} dump of ${d.name}`;
    return yield* requestOf(t, what, buildResDumpRequest(cmd, seq, d.index), seq, room);
  }

  private roomOf(device: string, cmd: RestrackCommand): number {
    return this.room.get(roomKey(device, cmd)) ?? FIRST_ROOM_BYTES;
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

const deviceId = (d: RdmaDeviceInfo): string => `${d.index} ${d.name}`;
const roomKey = (device: string, cmd: RestrackCommand): string => `${device} ${cmd}`;

/** The same devices, by index and name, in the same order. */
function sameDevices(a: readonly RdmaDeviceInfo[], b: readonly RdmaDeviceInfo[]): boolean {
  return a.length === b.length && a.every((d, i) => d.index === b[i]!.index && d.name === b[i]!.name);
}
