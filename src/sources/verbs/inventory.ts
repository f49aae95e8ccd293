/**
 * PortInventory over libibverbs: devices and ports as the verbs provider reports them.
 *
 * Every libibverbs call is an op of the read primitive (src/reads/ops.ts `verbsOpen`,
 * `verbsQueryPort`, `verbsQueryGids`), run by the reader library's C code
 * (native/reader/verbs.c): on a reader thread when the daemon reads bounded, on the caller's
 * thread through runSync() (the CLI). The library keeps the opened devices; this inventory holds
 * their handles, and close() lets go of them (a device is closed once no query uses it).
 *
 * A device that goes or comes (`rdma link delete`/`add`, a driver unbind or reload, a firmware
 * reset) changes <sysfs>/class/infiniband_verbs, which every tick's listChangedReads() looks at;
 * listReads() then opens the devices again and lets go of the old contexts. Holding the context
 * of a deleted device is not harmless: ib_uverbs_remove_one() (drivers/infiniband/core/
 * uverbs_main.c) removes the uverbsN class device first, then, for a driver without
 * disassociate_ucontext (rxe, siw), waits until every open file of it is closed, so
 * `rdma link delete rxe0` hangs for as long as the exporter keeps its context; with it (mlx5)
 * the old context fails from then on, and a device back under the same name needs a new one.
 */
import type { PortAttributes, PortInventory, PortRef, PortState } from '../types.js';
import * as path from 'node:path';
import { type ReadProgram, namesOf, read } from '../../reads/program.js';
import { ELIBACC, ELIBBAD, OpBatch, VERBS_PORT_BYTES, type Op, type Results, statusName } from '../../reads/ops.js';
import { DEFAULT_SYSFS_ROOT, DIR_READ_BYTES, isSafeName } from '../sysfs/paths.js';
import { ERRNO, errnoName } from '../../ffi/errno.js';
import { closeVerbsDevice } from '../../reads/native.js';
import { loadLibc } from '../../ffi/libc.js';
import {
  type GidEntry,
  PORT_ATTR_SIZE,
  type RawPortAttr,
  decodeGidTable,
  decodePortAttr,
  decodeVerbsDevices,
  gidTypeName,
  linkLayerName,
  mtuBytes,
  physStateName,
  portRateBitsPerSecond,
  portStateName,
} from './layout.js';

const LIBIBVERBS = 'libibverbs.so.1';
/** Room for a device's GID table when its size was not read at open (mlx5: 255 per port). */
const MIN_GID_ROOM = 256;

export type VerbsUnavailableReason =
  /** libibverbs.so.1 is not installed (or not loadable), or the reader library that calls it is missing. */
  | 'library-missing'
  /** The library lacks a symbol this code needs (too old). */
  | 'symbol-missing'
  /** The library loaded but lists no device (ENOSYS: the kernel has no uverbs support). */
  | 'no-devices'
  /** Devices exist but none could be opened (e.g. EACCES on /dev/infiniband/uverbs*). */
  | 'open-failed'
  /** Listing or opening the devices did not return within the read timeout. */
  | 'blocked';

/** libibverbs cannot describe any port here; the caller uses sysfs and logs this once. */
export class VerbsUnavailable extends Error {
  override readonly name = 'VerbsUnavailable';
  constructor(
    readonly reason: VerbsUnavailableReason,
    readonly detail: string,
    readonly errno?: number,
  ) {
    super(`libibverbs unavailable (${reason}): ${detail}`);
  }
}

export type VerbsOpenResult =
  | { readonly ok: true; readonly inventory: VerbsInventory }
  | { readonly ok: false; readonly error: VerbsUnavailable };

interface OpenDevice {
  readonly name: string;
  /** The reader library's handle for the opened context. */
  readonly handle: number;
  readonly portCount: number;
  /** Sum of the ports' gid_tbl_len: room for the whole device GID table. */
  readonly gidCapacity: number;
}

interface SkippedDevice {
  readonly device: string;
  readonly error: string;
}

export interface VerbsOptions {
  /**
   * Where the sysfs that libibverbs sees is mounted (default /sys): its class/infiniband_verbs
   * tells when a device came or went. Only tests give another.
   */
  readonly sysfsRoot?: string;
}

/** A uverbs class device (class/infiniband_verbs/uverbsN): one per device libibverbs can open. */
interface UverbsNode {
  readonly name: string;
  /** Its directory's inode (stat follows the class link): a device re-created under the same name has another. */
  readonly ino: number | undefined;
}

/** What one verbsOpen op opened and skipped, and the uverbs nodes as listed just before it. */
interface Opening {
  readonly devices: readonly OpenDevice[];
  readonly skipped: readonly SkippedDevice[];
  /** By name. */
  readonly nodes: readonly UverbsNode[];
  /** Why no device is open, when none is. */
  readonly error: VerbsUnavailable | undefined;
}

/** Lists the devices and opens each (one verbsOpen op): the inventory, or why there is none. */
export function* openVerbsReads(options: VerbsOptions = {}): ReadProgram<VerbsOpenResult> {
  const dir = path.join(options.sysfsRoot ?? DEFAULT_SYSFS_ROOT, 'class', 'infiniband_verbs');
  const r = yield* read([listOp(dir)]);
  const opening = yield* openingReads(dir, yield* nodeNames(r, dir));
  if (opening.error !== undefined) return { ok: false, error: opening.error };
  return { ok: true, inventory: new VerbsInventory(dir, opening) };
}

const listOp = (dir: string): Op => ({ kind: 'readDir', path: dir, max: DIR_READ_BYTES });
const statOp = (dir: string, node: string): Op => ({ kind: 'stat', path: path.join(dir, node) });

/** The node names of listing 0 of `r`, sorted (none when class/infiniband_verbs is missing: no uverbs). */
function* nodeNames(r: Results, dir: string): ReadProgram<string[]> {
  return ((yield* namesOf(r, 0, dir)) ?? []).filter(isSafeName).sort();
}

/**
 * One round: the nodes listed (`names`) stat'ed, then every device opened. In that order: a
 * device that goes after the look is seen gone at the next one, and its context let go then.
 */
function* openingReads(dir: string, names: readonly string[]): ReadProgram<Opening> {
  const r = yield* read([...names.map((n) => statOp(dir, n)), { kind: 'verbsOpen' }]);
  const nodes = names.map((name, i) => ({ name, ino: r.stat(i)?.ino }));
  return { nodes, ...openedDevices(r, names.length) };
}

/** The verbsOpen op's (op `i` of `r`) devices, those it skipped, and why none is open when none is. */
function openedDevices(r: Results, i: number): Omit<Opening, 'nodes'> {
  const status = r.status(i);
  const none = (error: VerbsUnavailable): Omit<Opening, 'nodes'> => ({ devices: [], skipped: [], error });
  if (status === ELIBACC || status === ELIBBAD) {
    const why = r.bytes(i).toString('utf8') || LIBIBVERBS;
    return none(new VerbsUnavailable(status === ELIBACC ? 'library-missing' : 'symbol-missing', why));
  }
  if (status < 0) return none(noDevices(-status));
  const records = decodeVerbsDevices(r.bytes(i), status);
  if (records.length === 0) return none(noDevices(0));
  const skipped = records.filter((d) => d.status !== 0).map((d) => ({ device: d.name, error: `${d.failedCall} failed with ${statusName(d.status)}` }));
  const devices = records.filter((d) => d.status === 0);
  if (devices.length > 0) return { devices, skipped, error: undefined };
  return { devices, skipped, error: new VerbsUnavailable('open-failed', skipped.map((s) => `${s.device}: ${s.error}`).join('; ')) };
}

function noDevices(errno: number): VerbsUnavailable {
  if (errno === 0) return new VerbsUnavailable('no-devices', 'ibv_get_device_list() found 0 devices', 0);
  const why = errno === ERRNO.ENOSYS ? ': the kernel has no RDMA/uverbs support' : '';
  return new VerbsUnavailable('no-devices', `ibv_get_device_list() failed with ${errnoName(errno)}${why}`, errno);
}

/** What one attribute read asked libibverbs: the port struct, its effective speed, its GIDs. */
interface PortQuery {
  readonly attr: RawPortAttr;
  /** ibv_query_port_speed() in 100 Mb/s units; 0 when unsupported. */
  readonly speed100Mbps: bigint;
  readonly gids: GidEntry[];
}

/** An opening as the inventory uses it: its devices by name, and the look that tells when it is out of date. */
interface Held {
  readonly opening: Opening;
  readonly devices: ReadonlyMap<string, OpenDevice>;
  /** The uverbs nodes' listing, then a stat of each node the opening found (kept: read every tick). */
  readonly look: OpBatch;
}

function hold(dir: string, opening: Opening): Held {
  return {
    opening,
    devices: new Map(opening.devices.map((d) => [d.name, d])),
    look: new OpBatch([listOp(dir), ...opening.nodes.map((n) => statOp(dir, n.name))]),
  };
}

class VerbsInventory implements PortInventory {
  readonly kind = 'verbs' as const;
  private held: Held;
  private closed = false;

  constructor(
    /** <sysfs>/class/infiniband_verbs. */
    private readonly dir: string,
    opening: Opening,
    private readonly closeDevice: (handle: number) => void = (h) => void closeVerbsDevice(h),
  ) {
    this.held = hold(dir, opening);
  }

  /** Devices listed but not opened at the last opening, with why. */
  get skipped(): readonly SkippedDevice[] {
    return this.held.opening.skipped;
  }

  /** The ports of the devices open now, without a read. */
  ports(): PortRef[] {
    const out: PortRef[] = [];
    for (const d of this.held.devices.values()) {
      for (let port = 1; port <= d.portCount; port++) out.push({ device: d.name, port });
    }
    return out;
  }

  /** The open devices' ports; when a device came or went since they were opened, opened again first. */
  *listReads(): ReadProgram<PortRef[]> {
    if (this.closed) return [];
    const now = yield* this.lookReads();
    if (now.changed) yield* this.reopenReads(now.names);
    return this.ports();
  }

  /** One look at the uverbs nodes (their listing, and the inode of each known one). */
  *listChangedReads(): ReadProgram<boolean> {
    if (this.closed) return false;
    return (yield* this.lookReads()).changed;
  }

  /** Whether the uverbs nodes differ from those listed at the opening (names or inodes), and their names now. */
  private *lookReads(): ReadProgram<{ readonly changed: boolean; readonly names: string[] }> {
    const before = this.held.opening.nodes;
    const r = yield this.held.look;
    // Decoded before namesOf() may yield again.
    const moved = before.some((n, i) => r.stat(i + 1)?.ino !== n.ino);
    const names = yield* nodeNames(r, this.dir);
    const changed = moved || names.length !== before.length || names.some((n, i) => n !== before[i]!.name);
    return { changed, names };
  }

  /**
   * Opens every device again (one verbsOpen op) and lets go of the contexts held so far. An
   * unchanged device is reopened too: devices come and go rarely, its new context costs one
   * ibv_open_device, and a device back under its old name (mlx5 after a reload) cannot be told
   * from one that stayed by its name, while its old context only fails (EIO) from then on.
   */
  private *reopenReads(names: readonly string[]): ReadProgram<void> {
    const opening = yield* openingReads(this.dir, names);
    // Closed meanwhile (the daemon stopping): the new contexts are let go of as well.
    const old = this.closed ? opening : this.held.opening;
    if (!this.closed) this.held = hold(this.dir, opening);
    for (const d of old.devices) this.closeDevice(d.handle);
  }

  *stateReads(ref: PortRef): ReadProgram<PortState | undefined> {
    const d = this.device(ref);
    if (d === undefined) return undefined;
    const r = yield* read([portOp(d, ref.port, false)]);
    if (!r.ok(0)) return undefined;
    const attr = decodePortAttr(r.bytes(0).subarray(0, PORT_ATTR_SIZE));
    const activeIbMtu = mtuBytes(attr.activeMtu);
    return { state: portStateName(attr.state), physState: physStateName(attr.physState), ...(activeIbMtu === undefined ? {} : { activeIbMtu }) };
  }

  *attributeReads(ref: PortRef): ReadProgram<PortAttributes | undefined> {
    const q = yield* this.portReads(ref);
    if (q === undefined) return undefined;
    return toPortAttributes(ref, q.attr, q.gids, (i) => this.ifName(i), () => q.speed100Mbps);
  }

  /** The port's valid GID entries, e.g. for `devices` output; undefined if the port is gone. */
  *gidReads(ref: PortRef): ReadProgram<GidEntry[] | undefined> {
    return (yield* this.portReads(ref))?.gids;
  }

  forget(): void {
    // Nothing is held per port.
  }


  ifName(ifindex: number): string | undefined {
    return loadLibc().ifIndexToName(ifindex);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const d of this.held.opening.devices) this.closeDevice(d.handle);
  }

  private device(ref: PortRef): OpenDevice | undefined {
    const d = this.closed ? undefined : this.held.devices.get(ref.device);
    return d === undefined || ref.port < 1 || ref.port > d.portCount ? undefined : d;
  }

  /** One round: the port struct with its speed, and the port's GIDs from the device table. */
  private *portReads(ref: PortRef): ReadProgram<PortQuery | undefined> {
    const d = this.device(ref);
    if (d === undefined) return undefined;
    const entries = Math.max(d.gidCapacity, MIN_GID_ROOM);
    const r = yield* read([portOp(d, ref.port, true), { kind: 'verbsQueryGids', device: d.handle, port: ref.port, entries }]);
    if (!r.ok(0)) return undefined;
    const bytes = r.bytes(0);
    return {
      attr: decodePortAttr(bytes.subarray(0, PORT_ATTR_SIZE)),
      speed100Mbps: bytes.length >= VERBS_PORT_BYTES ? bytes.readBigUInt64LE(PORT_ATTR_SIZE) : 0n,
      gids: r.ok(1) ? decodeGidTable(r.bytes(1), r.status(1)) : [],
    };
  }
}

const portOp = (d: OpenDevice, port: number, speed: boolean): Op => ({ kind: 'verbsQueryPort', device: d.handle, port, speed });

/**
 * Pure mapping from decoded verbs structs to PortAttributes. The netdev is the one behind the
 * lowest-indexed GID that names one (gid_attrs/ndevs/0 in sysfs terms).
 */
export function toPortAttributes(
  ref: PortRef,
  attr: RawPortAttr,
  gids: readonly GidEntry[],
  ifName: (ifindex: number) => string | undefined,
  effectiveSpeed100Mbps: () => bigint | undefined = () => undefined,
): PortAttributes {
  const sorted = [...gids].sort((a, b) => a.gidIndex - b.gidIndex);
  const withNdev = sorted.find((g) => g.ndevIfindex !== 0);
  return {
    device: ref.device,
    port: ref.port,
    state: portStateName(attr.state),
    physState: physStateName(attr.physState),
    linkLayer: linkLayerName(attr.linkLayer),
    activeIbMtu: mtuBytes(attr.activeMtu),
    rateBitsPerSecond: portRateBitsPerSecond(attr) ?? fallbackRate(effectiveSpeed100Mbps),
    netdev: withNdev === undefined ? undefined : ifName(withNdev.ndevIfindex),
    gidTypes: [...new Set(sorted.map((g) => gidTypeName(g.gidType)))],
    attributeSource: 'verbs',
  };
}

/** ibv_query_port_speed() (IBVERBS_1.16, 2025) covers speeds the compat struct cannot carry (XDR). */
function fallbackRate(effectiveSpeed100Mbps: () => bigint | undefined): number | undefined {
  const v = effectiveSpeed100Mbps();
  return v === undefined || v === 0n ? undefined : Number(v) * 100_000_000;
}
