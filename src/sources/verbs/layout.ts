/**
 * libibverbs struct layouts and enums, decoded from raw bytes by pure functions.
 *
 * Sources (rdma-core 691953d8; the installed Debian rdma-core 44 headers agree, checked with
 * offsetof() in a C program against /usr/include/infiniband/verbs.h on x86_64):
 * - The exported `ibv_query_port@@IBVERBS_1.1` fills `struct _compat_ibv_port_attr`
 *   (libibverbs/verbs.c), 48 bytes: the first 48 bytes of `struct ibv_port_attr`
 *   (libibverbs/verbs.h), which continues with port_cap_flags2 u16 @48 and (rdma-core 47+)
 *   active_speed_ex u32 @52, 56 bytes in all. `ibv_query_port()` in verbs.h is a macro over a
 *   static inline, so an FFI must call the compat symbol and never sees active_speed_ex.
 * - `struct ibv_gid_entry` (verbs.h): gid[16] @0, gid_index u32 @16, port_num u32 @20,
 *   gid_type u32 @24, ndev_ifindex u32 @28; 32 bytes.
 * - `struct ibv_device_attr` (verbs.h): phys_port_cnt u8 @227; 232 bytes.
 * Integers are host-endian.
 */
import { endianness } from 'node:os';
import type { LinkLayer } from '../types.js';
import { VERBS_DEVICE_BYTES } from '../../reads/ops.js';

const LE = endianness() === 'LE';

export const COMPAT_PORT_ATTR_SIZE = 48;
export const PORT_ATTR_SIZE = 56;
const GID_ENTRY_SIZE = 32;
const DEVICE_ATTR_SIZE = 232;
const PHYS_PORT_CNT_OFFSET = 227;

export class VerbsLayoutError extends Error {
  override readonly name = 'VerbsLayoutError';
}

export interface RawPortAttr {
  readonly state: number;
  readonly maxMtu: number;
  readonly activeMtu: number;
  readonly gidTblLen: number;
  readonly portCapFlags: number;
  readonly maxMsgSz: number;
  readonly badPkeyCntr: number;
  readonly qkeyViolCntr: number;
  readonly pkeyTblLen: number;
  readonly lid: number;
  readonly smLid: number;
  readonly lmc: number;
  readonly maxVlNum: number;
  readonly smSl: number;
  readonly subnetTimeout: number;
  readonly initTypeReply: number;
  readonly activeWidth: number;
  readonly activeSpeed: number;
  readonly physState: number;
  readonly linkLayer: number;
  readonly flags: number;
  /** Only in a full 56-byte ibv_port_attr. */
  readonly portCapFlags2: number | undefined;
  /** Only in a full 56-byte ibv_port_attr; 0 means "see activeSpeed" (ibv_query_port(3)). */
  readonly activeSpeedEx: number | undefined;
}

function dataView(buf: Uint8Array): DataView {
  return new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
}

export function decodePortAttr(buf: Uint8Array): RawPortAttr {
  if (buf.length < COMPAT_PORT_ATTR_SIZE) {
    throw new VerbsLayoutError(`ibv_port_attr needs ${COMPAT_PORT_ATTR_SIZE} bytes, got ${buf.length}`);
  }
  const dv = dataView(buf);
  const full = buf.length >= PORT_ATTR_SIZE;
  return {
    state: dv.getUint32(0, LE),
    maxMtu: dv.getUint32(4, LE),
    activeMtu: dv.getUint32(8, LE),
    gidTblLen: dv.getInt32(12, LE),
    portCapFlags: dv.getUint32(16, LE),
    maxMsgSz: dv.getUint32(20, LE),
    badPkeyCntr: dv.getUint32(24, LE),
    qkeyViolCntr: dv.getUint32(28, LE),
    pkeyTblLen: dv.getUint16(32, LE),
    lid: dv.getUint16(34, LE),
    smLid: dv.getUint16(36, LE),
    lmc: dv.getUint8(38),
    maxVlNum: dv.getUint8(39),
    smSl: dv.getUint8(40),
    subnetTimeout: dv.getUint8(41),
    initTypeReply: dv.getUint8(42),
    activeWidth: dv.getUint8(43),
    activeSpeed: dv.getUint8(44),
    physState: dv.getUint8(45),
    linkLayer: dv.getUint8(46),
    flags: dv.getUint8(47),
    portCapFlags2: full ? dv.getUint16(48, LE) : undefined,
    activeSpeedEx: full ? dv.getUint32(52, LE) : undefined,
  };
}

export interface GidEntry {
  /** 16 raw bytes. */
  readonly gid: Uint8Array;
  /** As sysfs prints it: eight groups of four hex digits. */
  readonly gidText: string;
  readonly gidIndex: number;
  readonly portNum: number;
  readonly gidType: number;
  readonly ndevIfindex: number;
}

function formatGid(gid: Uint8Array): string {
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) {
    groups.push(Buffer.from(gid.subarray(i, i + 2)).toString('hex'));
  }
  return groups.join(':');
}

export function decodeGidEntry(buf: Uint8Array): GidEntry {
  if (buf.length < GID_ENTRY_SIZE) {
    throw new VerbsLayoutError(`ibv_gid_entry needs ${GID_ENTRY_SIZE} bytes, got ${buf.length}`);
  }
  const dv = dataView(buf);
  const gid = Uint8Array.prototype.slice.call(buf, 0, 16);
  return {
    gid,
    gidText: formatGid(gid),
    gidIndex: dv.getUint32(16, LE),
    portNum: dv.getUint32(20, LE),
    gidType: dv.getUint32(24, LE),
    ndevIfindex: dv.getUint32(28, LE),
  };
}

/** Entries of an _ibv_query_gid_table() result: `count` consecutive 32-byte entries. */
export function decodeGidTable(buf: Uint8Array, count: number): GidEntry[] {
  const out: GidEntry[] = [];
  for (let i = 0; i < count; i++) {
    out.push(decodeGidEntry(buf.subarray(i * GID_ENTRY_SIZE, (i + 1) * GID_ENTRY_SIZE)));
  }
  return out;
}

export function decodePhysPortCount(buf: Uint8Array): number {
  if (buf.length < DEVICE_ATTR_SIZE) {
    throw new VerbsLayoutError(`ibv_device_attr needs ${DEVICE_ATTR_SIZE} bytes, got ${buf.length}`);
  }
  return buf[PHYS_PORT_CNT_OFFSET] ?? 0;
}

// ---------------------------------------------------------------- enums (verbs.h)

const PORT_STATES = ['NOP', 'DOWN', 'INIT', 'ARMED', 'ACTIVE', 'ACTIVE_DEFER'] as const;

/** enum ibv_port_state: IBV_PORT_NOP = 0 .. IBV_PORT_ACTIVE_DEFER = 5. */
export function portStateName(state: number): string {
  return PORT_STATES[state] ?? `UNKNOWN(${state})`;
}

/**
 * Physical port state, named as the kernel's sysfs phys_state file names it
 * (drivers/infiniband/core/sysfs.c phys_state_to_str), so verbs and sysfs inventories agree.
 */
const PHYS_STATES = [
  undefined,
  'Sleep',
  'Polling',
  'Disabled',
  'PortConfigurationTraining',
  'LinkUp',
  'LinkErrorRecovery',
  'Phy Test',
] as const;

export function physStateName(physState: number): string | undefined {
  return PHYS_STATES[physState];
}

/** enum ibv_mtu: IBV_MTU_256 = 1 .. IBV_MTU_4096 = 5. */
export function mtuBytes(mtu: number): number | undefined {
  return mtu >= 1 && mtu <= 5 ? 128 << mtu : undefined;
}

/**
 * IBV_LINK_LAYER_UNSPECIFIED/INFINIBAND/ETHERNET = 0/1/2. Unspecified is reported as InfiniBand,
 * as the kernel's sysfs link_layer file does for a port that is not Ethernet.
 */
export function linkLayerName(linkLayer: number): LinkLayer {
  if (linkLayer === 0 || linkLayer === 1) return 'InfiniBand';
  if (linkLayer === 2) return 'Ethernet';
  return 'unknown';
}

/** enum ibv_gid_type: IB = 0, RoCE v1 = 1, RoCE v2 = 2. */
export function gidTypeName(gidType: number): string {
  if (gidType === 0) return 'IB';
  if (gidType === 1) return 'RoCE v1';
  if (gidType === 2) return 'RoCE v2';
  return `unknown(${gidType})`;
}

/** active_width bits (libibverbs/examples/devinfo.c width_str): 1, 2, 4, 8, 16 = 1X, 4X, 8X, 12X, 2X. */
const LANES: Readonly<Record<number, number>> = { 1: 1, 2: 4, 4: 8, 8: 12, 16: 2 };

/**
 * Per-lane data rate in units of 0.1 Gb/s, keyed by the IB speed bit (include/rdma/ib_verbs.h
 * enum ib_port_speed; values as the kernel's sysfs rate_show() uses): SDR 2.5, DDR 5,
 * QDR 10, FDR10 10, FDR 14, EDR 25, HDR 50, NDR 100, XDR 200 (XDR only in active_speed_ex).
 */
const DECI_GBPS_PER_LANE: Readonly<Record<number, number>> = {
  1: 25,
  2: 50,
  4: 100,
  8: 100,
  16: 140,
  32: 250,
  64: 500,
  128: 1000,
  256: 2000,
};

function laneCount(activeWidth: number): number | undefined {
  return LANES[activeWidth];
}

/** The speed bit in effect: active_speed_ex when the library filled it, else active_speed. */
function effectiveSpeed(attr: Pick<RawPortAttr, 'activeSpeed' | 'activeSpeedEx'>): number {
  return attr.activeSpeedEx !== undefined && attr.activeSpeedEx !== 0 ? attr.activeSpeedEx : attr.activeSpeed;
}

/** lanes x per-lane speed in bit/s, or undefined when either enum is unknown. */
export function portRateBitsPerSecond(attr: Pick<RawPortAttr, 'activeWidth' | 'activeSpeed' | 'activeSpeedEx'>): number | undefined {
  const lanes = laneCount(attr.activeWidth);
  const deci = DECI_GBPS_PER_LANE[effectiveSpeed(attr)];
  if (lanes === undefined || deci === undefined) return undefined;
  return lanes * deci * 100_000_000;
}

// ---------------------------------------------------------------- the reader's verbs ops

/** Which call failed for a device the verbsOpen op could not open (mfe-reader.h enum mfr_verbs_call). */
const FAILED_CALL = ['', 'ibv_open_device', 'ibv_query_device', 'the reader\'s device table (full)'] as const;

/** One device as the verbsOpen op reports it (mfe-reader.h struct mfr_verbs_device, 96 bytes). */
export interface VerbsDeviceRecord {
  readonly name: string;
  /** 0, or -errno of `failedCall`. */
  readonly status: number;
  readonly failedCall: string | undefined;
  readonly handle: number;
  readonly portCount: number;
  /** The ports' gid_tbl_len summed: room for the whole device GID table. */
  readonly gidCapacity: number;
}

const VERBS_DEVICE_RECORD_SIZE = VERBS_DEVICE_BYTES;

export function decodeVerbsDevices(buf: Uint8Array, count: number): VerbsDeviceRecord[] {
  if (buf.length < count * VERBS_DEVICE_RECORD_SIZE) {
    throw new VerbsLayoutError(`${count} device records need ${count * VERBS_DEVICE_RECORD_SIZE} bytes, got ${buf.length}`);
  }
  const out: VerbsDeviceRecord[] = [];
  for (let i = 0; i < count; i++) {
    const dv = dataView(buf.subarray(i * VERBS_DEVICE_RECORD_SIZE, (i + 1) * VERBS_DEVICE_RECORD_SIZE));
    const nameBytes = buf.subarray(i * VERBS_DEVICE_RECORD_SIZE + 32, (i + 1) * VERBS_DEVICE_RECORD_SIZE);
    const nul = nameBytes.indexOf(0);
    const failed = dv.getUint32(16, LE);
    out.push({
      name: Buffer.from(nameBytes.subarray(0, nul < 0 ? nameBytes.length : nul)).toString('utf8'),
      status: dv.getInt32(0, LE),
      failedCall: failed === 0 ? undefined : (FAILED_CALL[failed] ?? `call ${failed}`),
      handle: dv.getUint32(4, LE),
      portCount: dv.getUint32(8, LE),
      gidCapacity: dv.getUint32(12, LE),
    });
  }
  return out;
}
