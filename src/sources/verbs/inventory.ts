/**
 * PortInventory over libibverbs: devices and ports as the verbs provider reports them.
 */
import type { PortAttributes, PortInventory, PortRef, PortState } from '../types.js';
import { type ReadProgram, answer } from '../../reads/program.js';
import { NativeLoadError, errorText } from '../../ffi/libc.js';
import { errnoName } from '../netlink/socket.js';
import {
  DEVICE_ATTR_SIZE,
  GID_ENTRY_SIZE,
  type GidEntry,
  PORT_ATTR_SIZE,
  type RawPortAttr,
  decodeGidEntry,
  decodeGidTable,
  decodePhysPortCount,
  decodePortAttr,
  gidTypeName,
  linkLayerName,
  mtuBytes,
  physStateName,
  portRateBitsPerSecond,
  portStateName,
} from './layout.js';
import { LIBIBVERBS, type VerbsNative, VerbsSymbolError, loadVerbsNative } from './native.js';

const ENOSYS = 38;

export type VerbsUnavailableReason =
  /** koffi itself could not be loaded. */
  | 'ffi-unavailable'
  /** libibverbs.so.1 is not installed (or not loadable). */
  | 'library-missing'
  /** The library lacks a symbol this code needs (too old). */
  | 'symbol-missing'
  /** The library loaded but lists no device (ENOSYS: the kernel has no uverbs support). */
  | 'no-devices'
  /** Devices exist but none could be opened (e.g. EACCES on /dev/infiniband/uverbs*). */
  | 'open-failed';

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
  readonly ctx: bigint;
  readonly portCount: number;
  /** Sum of the ports' gid_tbl_len: room for the whole device GID table. */
  readonly gidCapacity: number;
}

export interface SkippedDevice {
  readonly device: string;
  readonly error: string;
}

export function openVerbsInventory(native?: VerbsNative): VerbsOpenResult {
  let api: VerbsNative;
  try {
    api = native ?? loadVerbsNative();
  } catch (e) {
    return { ok: false, error: loadFailure(e) };
  }
  const listed = api.getDeviceList();
  if (listed.list === null) return { ok: false, error: noDevices(listed.errno) };
  const skipped: SkippedDevice[] = [];
  const devices = openAll(api, listed.devices, skipped);
  api.freeDeviceList(listed.list);
  if (listed.devices.length === 0) return { ok: false, error: noDevices(0) };
  if (devices.length === 0) {
    const detail = skipped.map((s) => `${s.device}: ${s.error}`).join('; ');
    return { ok: false, error: new VerbsUnavailable('open-failed', detail) };
  }
  return { ok: true, inventory: new VerbsInventory(api, devices, skipped) };
}

function loadFailure(e: unknown): VerbsUnavailable {
  if (e instanceof VerbsSymbolError) return new VerbsUnavailable('symbol-missing', e.message);
  if (e instanceof NativeLoadError && e.what === 'koffi') return new VerbsUnavailable('ffi-unavailable', e.message);
  if (e instanceof NativeLoadError) return new VerbsUnavailable('library-missing', e.message);
  return new VerbsUnavailable('library-missing', `${LIBIBVERBS}: ${errorText(e)}`);
}

function noDevices(errno: number): VerbsUnavailable {
  if (errno === 0) return new VerbsUnavailable('no-devices', 'ibv_get_device_list() found 0 devices', 0);
  const why = errno === ENOSYS ? ': the kernel has no RDMA/uverbs support' : '';
  return new VerbsUnavailable('no-devices', `ibv_get_device_list() failed with ${errnoName(errno)}${why}`, errno);
}

function openAll(api: VerbsNative, handles: readonly bigint[], skipped: SkippedDevice[]): OpenDevice[] {
  const out: OpenDevice[] = [];
  for (const handle of handles) {
    const name = api.deviceName(handle) ?? `device@${handle.toString(16)}`;
    const opened = openOne(api, handle, name);
    if (typeof opened === 'string') skipped.push({ device: name, error: opened });
    else out.push(opened);
  }
  return out;
}

function openOne(api: VerbsNative, handle: bigint, name: string): OpenDevice | string {
  const { ctx, errno } = api.openDevice(handle);
  if (ctx === null) return `ibv_open_device failed with ${errnoName(errno)}`;
  const attr = new Uint8Array(DEVICE_ATTR_SIZE);
  const rc = api.queryDevice(ctx, attr);
  if (rc !== 0) {
    api.closeDevice(ctx);
    return `ibv_query_device failed with ${errnoName(rc)}`;
  }
  const portCount = decodePhysPortCount(attr);
  let gidCapacity = 0;
  for (let port = 1; port <= portCount; port++) {
    gidCapacity += Math.max(0, queryPortAttr(api, ctx, port)?.gidTblLen ?? 0);
  }
  return { name, ctx, portCount, gidCapacity };
}

function queryPortAttr(api: VerbsNative, ctx: bigint, port: number): RawPortAttr | undefined {
  // The compat symbol writes 48 bytes; the rest stays zero, so active_speed_ex reads as 0.
  const buf = new Uint8Array(PORT_ATTR_SIZE);
  return api.queryPort(ctx, port, buf) === 0 ? decodePortAttr(buf) : undefined;
}

export class VerbsInventory implements PortInventory {
  readonly kind = 'verbs' as const;
  private readonly devices: Map<string, OpenDevice>;
  private closed = false;

  constructor(
    private readonly api: VerbsNative,
    devices: readonly OpenDevice[],
    /** Devices listed but not opened, with why. */
    readonly skipped: readonly SkippedDevice[] = [],
  ) {
    this.devices = new Map(devices.map((d) => [d.name, d]));
  }

  listPorts(): PortRef[] {
    const out: PortRef[] = [];
    for (const d of this.devices.values()) {
      for (let port = 1; port <= d.portCount; port++) out.push({ device: d.name, port });
    }
    return out;
  }

  /**
   * libibverbs answers through its own calls (ioctls on /dev/infiniband/uverbsN), which the
   * read primitive cannot run: these programs make no reads and call verbs on this thread.
   */
  listReads(): ReadProgram<PortRef[]> {
    return answer(this.listPorts());
  }

  attributeReads(ref: PortRef): ReadProgram<PortAttributes | undefined> {
    return answer(this.readAttributes(ref));
  }

  /** The devices were opened once; their list does not change under this inventory. */
  listChangedReads(): ReadProgram<boolean> {
    return answer(false);
  }

  stateReads(ref: PortRef): ReadProgram<PortState | undefined> {
    const d = this.closed ? undefined : this.devices.get(ref.device);
    if (d === undefined || ref.port < 1 || ref.port > d.portCount) return answer(undefined);
    const attr = queryPortAttr(this.api, d.ctx, ref.port);
    return answer(attr === undefined ? undefined : { state: portStateName(attr.state), physState: physStateName(attr.physState) });
  }

  forget(): void {
    // Nothing is held per port.
  }

  readAttributes(ref: PortRef): PortAttributes | undefined {
    const d = this.closed ? undefined : this.devices.get(ref.device);
    if (d === undefined || ref.port < 1 || ref.port > d.portCount) return undefined;
    const attr = queryPortAttr(this.api, d.ctx, ref.port);
    if (attr === undefined) return undefined;
    const gids = this.readGids(d, ref.port, attr.gidTblLen);
    const speed = this.api.queryPortSpeed.bind(this.api);
    return toPortAttributes(ref, attr, gids, (i) => this.api.ifIndexToName(i), () => speed(d.ctx, ref.port));
  }

  /** The port's valid GID entries, e.g. for `devices` output; undefined if the port is gone. */
  readGidEntries(ref: PortRef): GidEntry[] | undefined {
    const d = this.closed ? undefined : this.devices.get(ref.device);
    if (d === undefined || ref.port < 1 || ref.port > d.portCount) return undefined;
    const attr = queryPortAttr(this.api, d.ctx, ref.port);
    return attr === undefined ? undefined : this.readGids(d, ref.port, attr.gidTblLen);
  }

  ifName(ifindex: number): string | undefined {
    return this.api.ifIndexToName(ifindex);
  }

  /** The port's valid GID entries: one table query, else one query per index. */
  private readGids(d: OpenDevice, port: number, gidTblLen: number): GidEntry[] {
    const capacity = Math.max(d.gidCapacity, gidTblLen);
    const table = new Uint8Array(capacity * GID_ENTRY_SIZE);
    const n = capacity > 0 ? this.api.queryGidTable(d.ctx, table, capacity) : 0;
    if (n !== undefined && n >= 0) return decodeGidTable(table, n).filter((g) => g.portNum === port);
    const out: GidEntry[] = [];
    const entry = new Uint8Array(GID_ENTRY_SIZE);
    for (let index = 0; index < gidTblLen; index++) {
      if (this.api.queryGidEx(d.ctx, port, index, entry) === 0) out.push(decodeGidEntry(entry));
    }
    return out;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const d of this.devices.values()) this.api.closeDevice(d.ctx);
  }
}

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
