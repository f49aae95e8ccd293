/**
 * SIOCETHTOOL command buffers, built and decoded as pure functions. The same calls `ethtool -S`
 * makes (ethtool.c do_gnicdrvstats(): ETHTOOL_GSSET_INFO for the count, ETHTOOL_GSTRINGS, then
 * ETHTOOL_GSTATS), none of which needs a capability (net/ethtool/ioctl.c lists them among the
 * commands any user may send).
 */
import { endianness } from 'node:os';
import {
  DRVINFO_BYTES, DRVINFO_DRIVER_AT, DRVINFO_DRIVER_LEN, DRVINFO_N_STATS_AT, ETHTOOL_GDRVINFO, ETHTOOL_GSSET_INFO, ETHTOOL_GSTATS,
  ETHTOOL_GSTRINGS, ETH_GSTRING_LEN, ETH_SS_STATS, GSTATS_HEADER, GSTRINGS_HEADER, SSET_INFO_HEADER,
} from './constants.js';

const LE = endianness() === 'LE';

export class EthtoolDecodeError extends Error {
  override readonly name = 'EthtoolDecodeError';
}

const view = (b: Uint8Array): DataView => new DataView(b.buffer, b.byteOffset, b.byteLength);

function command(cmd: number, bytes: number): Uint8Array {
  const b = new Uint8Array(bytes);
  view(b).setUint32(0, cmd, LE);
  return b;
}

/** NUL-terminated text in a fixed-size field. */
function cString(b: Uint8Array, at: number, len: number): string {
  const field = b.subarray(at, at + len);
  const nul = field.indexOf(0);
  return new TextDecoder().decode(nul < 0 ? field : field.subarray(0, nul));
}

export const drvinfoRequest = (): Uint8Array => command(ETHTOOL_GDRVINFO, DRVINFO_BYTES);

export function decodeDrvinfo(b: Uint8Array): { driver: string; nStats: number } {
  if (b.length < DRVINFO_BYTES) throw new EthtoolDecodeError(`ethtool_drvinfo of ${b.length} bytes`);
  return { driver: cString(b, DRVINFO_DRIVER_AT, DRVINFO_DRIVER_LEN), nStats: view(b).getUint32(DRVINFO_N_STATS_AT, LE) };
}

/** Asks for the size of the ETH_SS_STATS set only. */
export function ssetInfoRequest(): Uint8Array {
  const b = command(ETHTOOL_GSSET_INFO, SSET_INFO_HEADER + 4);
  view(b).setBigUint64(8, 1n << BigInt(ETH_SS_STATS), LE);
  return b;
}

/** Number of statistics; 0 when the kernel cleared the set's bit (the driver has none). */
export function decodeSsetInfo(b: Uint8Array): number {
  if (b.length < SSET_INFO_HEADER + 4) throw new EthtoolDecodeError(`ethtool_sset_info of ${b.length} bytes`);
  const mask = view(b).getBigUint64(8, LE);
  return (mask & (1n << BigInt(ETH_SS_STATS))) === 0n ? 0 : view(b).getUint32(SSET_INFO_HEADER, LE);
}

export function gstringsRequest(n: number): Uint8Array {
  const b = command(ETHTOOL_GSTRINGS, GSTRINGS_HEADER + n * ETH_GSTRING_LEN);
  view(b).setUint32(4, ETH_SS_STATS, LE);
  view(b).setUint32(8, n, LE);
  return b;
}

export function decodeGstrings(b: Uint8Array, n: number): string[] {
  const len = view(b).getUint32(8, LE);
  if (len !== n) throw new EthtoolDecodeError(`asked for ${n} strings, the kernel answered ${len}`);
  return Array.from({ length: n }, (_, i) => cString(b, GSTRINGS_HEADER + i * ETH_GSTRING_LEN, ETH_GSTRING_LEN));
}

export function gstatsRequest(n: number): Uint8Array {
  const b = command(ETHTOOL_GSTATS, GSTATS_HEADER + n * 8);
  view(b).setUint32(4, n, LE);
  return b;
}

/** The values, or undefined when the kernel's count differs from the strings' (the set changed). */
export function decodeGstats(b: Uint8Array, n: number): bigint[] | undefined {
  const count = view(b).getUint32(4, LE);
  if (count !== n) return undefined;
  const dv = view(b);
  return Array.from({ length: n }, (_, i) => dv.getBigUint64(GSTATS_HEADER + i * 8, LE));
}
