/**
 * RTM_GETDCB requests and replies as pure functions.
 *
 * The request is what `dcb pfc show dev IF` (iproute2 dcb/) and lldptool send: an rtnetlink
 * message of type RTM_GETDCB whose payload is a struct dcbmsg (family AF_UNSPEC, cmd
 * DCB_CMD_IEEE_GET) followed by a DCB_ATTR_IFNAME string. net/dcb/dcbnl.c dcbnl_ieee_get()
 * answers -EOPNOTSUPP for a netdev without dcbnl_ops (veth, virtio_net...), else
 * dcbnl_ieee_fill() builds one RTM_GETDCB message: DCB_ATTR_IFNAME, a DCB_ATTR_IEEE nest (started
 * without NLA_F_NESTED) holding DCB_ATTR_IEEE_PFC (struct ieee_pfc, when the driver has
 * ieee_getpfc) among others, and DCB_ATTR_DCBX (u8, when it has getdcbx).
 */
import { endianness } from 'node:os';
import { NLM_F_ACK, NLM_F_REQUEST } from '../netlink/constants.js';
import { type NlMessage, NetlinkDecodeError, attrString, decodeAttrs, encodeMessage, findAttr } from '../netlink/codec.js';
import {
  AF_UNSPEC, DCBMSG_BYTES, DCBX_BITS, DCB_ATTR_DCBX, DCB_ATTR_IEEE, DCB_ATTR_IEEE_PFC, DCB_ATTR_IFNAME, DCB_CMD_IEEE_GET,
  IEEE_8021QAZ_MAX_TCS, IEEE_PFC_BYTES, IEEE_PFC_INDICATIONS_AT, IEEE_PFC_REQUESTS_AT, RTM_GETDCB,
} from './constants.js';

const LE = endianness() === 'LE';

export function buildIeeeGetRequest(seq: number, ifname: string): Uint8Array {
  const dcbmsg = new Uint8Array(DCBMSG_BYTES);
  dcbmsg[0] = AF_UNSPEC;
  dcbmsg[1] = DCB_CMD_IEEE_GET;
  return encodeMessage({ type: RTM_GETDCB, flags: NLM_F_REQUEST | NLM_F_ACK, seq, pid: 0 }, [dcbmsg, attrString(DCB_ATTR_IFNAME, ifname)]);
}

interface IeeePfc {
  /** Traffic classes that may have PFC enabled at once. */
  readonly pfcCap: number;
  /** Bit p set: PFC enabled on priority p. */
  readonly pfcEn: number;
  /** PFC frames sent per priority, and received (the driver's own counters). */
  readonly requests: readonly bigint[];
  readonly indications: readonly bigint[];
}

export interface IeeeGetReply {
  readonly ifname: string | undefined;
  /** Undefined when the driver has no ieee_getpfc. */
  readonly pfc: IeeePfc | undefined;
  /** DCBX modes (host, lld_managed, cee, ieee, static); undefined without getdcbx. */
  readonly dcbx: readonly string[] | undefined;
}

export function decodeIeeeGetReply(msg: NlMessage): IeeeGetReply {
  if (msg.type !== RTM_GETDCB) throw new NetlinkDecodeError(`message type ${msg.type}, expected RTM_GETDCB (${RTM_GETDCB})`, 0);
  if (msg.payload.length < DCBMSG_BYTES) throw new NetlinkDecodeError('RTM_GETDCB shorter than struct dcbmsg', 0);
  const attrs = decodeAttrs(msg.payload.subarray(DCBMSG_BYTES));
  const name = findAttr(attrs, DCB_ATTR_IFNAME);
  const ieee = findAttr(attrs, DCB_ATTR_IEEE);
  const pfcAttr = ieee === undefined ? undefined : findAttr(decodeAttrs(ieee.payload), DCB_ATTR_IEEE_PFC);
  const dcbx = findAttr(attrs, DCB_ATTR_DCBX);
  return {
    ifname: name === undefined ? undefined : new TextDecoder().decode(name.payload.subarray(0, Math.max(0, name.payload.indexOf(0)))),
    pfc: pfcAttr === undefined ? undefined : decodeIeeePfc(pfcAttr.payload),
    dcbx: dcbx === undefined || dcbx.payload.length < 1 ? undefined : DCBX_BITS.filter(([bit]) => (dcbx.payload[0]! & bit) !== 0).map(([, n]) => n),
  };
}

function decodeIeeePfc(b: Uint8Array): IeeePfc {
  if (b.length < IEEE_PFC_BYTES) throw new NetlinkDecodeError(`DCB_ATTR_IEEE_PFC of ${b.length} bytes, expected ${IEEE_PFC_BYTES}`, 0);
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const u64s = (at: number): bigint[] => Array.from({ length: IEEE_8021QAZ_MAX_TCS }, (_, i) => dv.getBigUint64(at + i * 8, LE));
  return { pfcCap: b[0]!, pfcEn: b[1]!, requests: u64s(IEEE_PFC_REQUESTS_AT), indications: u64s(IEEE_PFC_INDICATIONS_AT) };
}

/** pfc_en as one flag per priority 0..7. */
export const pfcEnabledPriorities = (pfcEn: number): boolean[] =>
  Array.from({ length: IEEE_8021QAZ_MAX_TCS }, (_, p) => (pfcEn & (1 << p)) !== 0);
