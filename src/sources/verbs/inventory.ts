/**
 * PortInventory over libibverbs: devices and ports as the verbs provider reports them.
 *
 * Every libibverbs call is an op of the read primitive (src/reads/ops.ts `verbsOpen`,
 * `verbsQueryPort`, `verbsQueryGids`), run by the reader library's C code
 * (native/reader/verbs.c): on a reader thread when the daemon reads bounded, on the caller's
 * thread through runSync() (the CLI). The library keeps the opened devices; this inventory holds
 * their handles, and close() lets go of them (a device is closed once no query uses it).
 */
import type { PortAttributes, PortInventory, PortRef, PortState } from '../types.js';
import { type ReadProgram, withoutReads, read } from '../../reads/program.js';
import { ELIBACC, ELIBBAD, VERBS_PORT_BYTES, type Op, statusName } from '../../reads/ops.js';
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

/** Lists the devices and opens each (one verbsOpen op): the inventory, or why there is none. */
export function* openVerbsReads(): ReadProgram<VerbsOpenResult> {
  const r = yield* read([{ kind: 'verbsOpen' }]);
  const status = r.status(0);
  if (status === ELIBACC || status === ELIBBAD) {
    const why = r.bytes(0).toString('utf8') || LIBIBVERBS;
    return { ok: false, error: new VerbsUnavailable(status === ELIBACC ? 'library-missing' : 'symbol-missing', why) };
  }
  if (status < 0) return { ok: false, error: noDevices(-status) };
  const records = decodeVerbsDevices(r.bytes(0), status);
  if (records.length === 0) return { ok: false, error: noDevices(0) };
  const skipped = records.filter((d) => d.status !== 0).map((d) => ({ device: d.name, error: `${d.failedCall} failed with ${statusName(d.status)}` }));
  const devices = records.filter((d) => d.status === 0);
  if (devices.length === 0) {
    return { ok: false, error: new VerbsUnavailable('open-failed', skipped.map((s) => `${s.device}: ${s.error}`).join('; ')) };
  }
  return { ok: true, inventory: new VerbsInventory(devices, skipped) };
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

class VerbsInventory implements PortInventory {
  readonly kind = 'verbs' as const;
  private readonly devices: Map<string, OpenDevice>;
  private closed = false;

  constructor(
    devices: readonly OpenDevice[],
    /** Devices listed but not opened, with why. */
    readonly skipped: readonly SkippedDevice[] = [],
    private readonly closeDevice: (handle: number) => void = (h) => void closeVerbsDevice(h),
  ) {
    this.devices = new Map(devices.map((d) => [d.name, d]));
  }

  private ports(): PortRef[] {
    const out: PortRef[] = [];
    for (const d of this.devices.values()) {
      for (let port = 1; port <= d.portCount; port++) out.push({ device: d.name, port });
    }
    return out;
  }

  /** The devices were opened once: their ports are known without a read. */
  listReads(): ReadProgram<PortRef[]> {
    return withoutReads(this.ports());
  }

  /** The devices were opened once; their list does not change under this inventory. */
  listChangedReads(): ReadProgram<boolean> {
    return withoutReads(false);
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
    for (const d of this.devices.values()) this.closeDevice(d.handle);
  }

  private device(ref: PortRef): OpenDevice | undefined {
    const d = this.closed ? undefined : this.devices.get(ref.device);
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
