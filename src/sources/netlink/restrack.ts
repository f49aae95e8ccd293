/**
 * RDMA resource tracking (restrack) dumps: RDMA_NLDEV_CMD_RES_QP_GET and
 * RDMA_NLDEV_CMD_RES_CM_ID_GET, what `rdma res show qp` / `rdma res show cm_id` print.
 *
 * Requests mirror iproute2 rdma/res.c _res_send_request(): NLM_F_REQUEST|NLM_F_ACK|NLM_F_DUMP and
 * a u32 DEV_INDEX (drivers/infiniband/core/nldev.c res_get_common_dumpit() answers EINVAL without
 * one). No PORT_INDEX: every QP of the device, whatever its port.
 *
 * Answers follow res_get_common_dumpit(): one NLM_F_MULTI message per skb, each with DEV_INDEX,
 * DEV_NAME (fill_nldev_handle) and a table nest (RES_QP or RES_CM_ID, nla_nest_start_noflag, so
 * without NLA_F_NESTED) of entry nests (RES_QP_ENTRY / RES_CM_ID_ENTRY, also noflag); entries
 * that do not fit go to the next message; NLMSG_DONE ends the dump, with a negative errno when a
 * fill function failed (for a QP: ib_query_qp() failing ends the whole dump).
 * - QP entry (fill_res_qp_entry, fill_res_qp_entry_query): PORT_INDEX once the QP has a port,
 *   LQPN, PDN (user QPs), PID (user, absent once the creating task is gone) or KERN_NAME
 *   (kernel), RQPN and RQ_PSN (RC/UC only), SQ_PSN, PATH_MIG_STATE (RC/UC/XRC), TYPE, STATE,
 *   then driver attributes (RDMA_NLDEV_ATTR_DRIVER, mlx5), ignored here.
 * - cm_id entry (fill_res_cm_id_entry): PORT_INDEX once bound, LQPN and TYPE once it has a QP,
 *   PS, STATE, SRC_ADDR/DST_ADDR (struct __kernel_sockaddr_storage, 128 bytes) when set,
 *   CM_IDN, PID or KERN_NAME.
 * Numbers: include/uapi/rdma/rdma_netlink.h (see constants.ts).
 */
import { endianness } from 'node:os';
import { ipv6Text } from '../../ipv6.js';
import {
  NLM_F_ACK,
  NLM_F_DUMP,
  NLM_F_REQUEST,
  RDMA_NLDEV_ATTR_DEV_INDEX,
  RDMA_NLDEV_ATTR_DEV_NAME,
  RDMA_NLDEV_ATTR_PORT_INDEX,
  RDMA_NLDEV_ATTR_RES_CM_ID,
  RDMA_NLDEV_ATTR_RES_CM_IDN,
  RDMA_NLDEV_ATTR_RES_CM_ID_ENTRY,
  RDMA_NLDEV_ATTR_RES_DST_ADDR,
  RDMA_NLDEV_ATTR_RES_KERN_NAME,
  RDMA_NLDEV_ATTR_RES_LQPN,
  RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE,
  RDMA_NLDEV_ATTR_RES_PDN,
  RDMA_NLDEV_ATTR_RES_PID,
  RDMA_NLDEV_ATTR_RES_PS,
  RDMA_NLDEV_ATTR_RES_QP,
  RDMA_NLDEV_ATTR_RES_QP_ENTRY,
  RDMA_NLDEV_ATTR_RES_RQPN,
  RDMA_NLDEV_ATTR_RES_RQ_PSN,
  RDMA_NLDEV_ATTR_RES_SQ_PSN,
  RDMA_NLDEV_ATTR_RES_SRC_ADDR,
  RDMA_NLDEV_ATTR_RES_STATE,
  RDMA_NLDEV_ATTR_RES_TYPE,
  RDMA_NLDEV_CMD_RES_CM_ID_GET,
  RDMA_NLDEV_CMD_RES_QP_GET,
  rdmaNlType,
} from './constants.js';
import {
  NetlinkDecodeError,
  type NlMessage,
  attrU32,
  encodeMessage,
  payloadView,
  scanAttrs,
  stringAt,
  u32At,
  u8At,
} from './codec.js';

export type RestrackCommand = typeof RDMA_NLDEV_CMD_RES_QP_GET | typeof RDMA_NLDEV_CMD_RES_CM_ID_GET;

export function buildResDumpRequest(cmd: RestrackCommand, seq: number, devIndex: number): Uint8Array {
  return encodeMessage(
    { type: rdmaNlType(cmd), flags: NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP, seq, pid: 0 },
    [attrU32(RDMA_NLDEV_ATTR_DEV_INDEX, devIndex)],
  );
}

/** enum ib_qp_type (include/rdma/ib_verbs.h), names as iproute2 rdma/res.c qp_types_to_str(). */
const QP_TYPES: Readonly<Record<number, string>> = {
  0: 'SMI', 1: 'GSI', 2: 'RC', 3: 'UC', 4: 'UD', 5: 'RAW_IPV6', 6: 'RAW_ETHERTYPE', 8: 'RAW_PACKET',
  9: 'XRC_INI', 10: 'XRC_TGT', 255: 'DRIVER',
};
/** enum ib_qp_state, names as iproute2 rdma/res-qp.c qp_states_to_str(). */
const QP_STATES = ['RESET', 'INIT', 'RTR', 'RTS', 'SQD', 'SQE', 'ERR'] as const;
/** enum rdma_cm_state (drivers/infiniband/core/cma_priv.h), as rdma/res-cmid.c prints it. */
const CM_STATES = [
  'IDLE', 'ADDR_QUERY', 'ADDR_RESOLVED', 'ROUTE_QUERY', 'ROUTE_RESOLVED', 'CONNECT', 'DISCONNECT',
  'ADDR_BOUND', 'LISTEN', 'DEVICE_REMOVAL', 'DESTROYING',
] as const;
export const qpTypeName = (t: number): string => QP_TYPES[t] ?? 'UNKNOWN';
export const qpStateName = (s: number): string => QP_STATES[s] ?? 'UNKNOWN';
export const cmStateName = (s: number): string => CM_STATES[s] ?? 'UNKNOWN';

export interface QpEntry {
  /** Absent until the QP is bound to a port (create_qp does not set one). */
  readonly port: number | undefined;
  readonly lqpn: number;
  /** RC/UC only. */
  readonly rqpn: number | undefined;
  /** RC/UC only: the next PSN the QP expects to receive. */
  readonly rqPsn: number | undefined;
  /** The next PSN the QP sends (rxe req.psn, mlx5 next_send_psn). */
  readonly sqPsn: number;
  readonly type: number;
  readonly state: number;
  readonly pathMigState: number | undefined;
  readonly pdn: number | undefined;
  /** The creating thread (task_pid_vnr), absent for kernel QPs and when that task is gone. */
  readonly pid: number | undefined;
  /** Kernel QPs only (ib_core's GSI QP: "ib_core"). */
  readonly kernName: string | undefined;
}

export interface SockAddr {
  /** AF_INET 2, AF_INET6 10, AF_IB 27, or what the kernel sent. */
  readonly family: number;
  /** Dotted quad, RFC 5952 IPv6, or the GID of an AF_IB address. */
  readonly address: string;
  readonly port: number;
}

export interface CmIdEntry {
  readonly port: number | undefined;
  /** Set once the cm_id has a QP (rdma_create_qp / accept). */
  readonly lqpn: number | undefined;
  readonly qpType: number | undefined;
  readonly ps: number;
  readonly state: number;
  readonly src: SockAddr | undefined;
  readonly dst: SockAddr | undefined;
  readonly cmIdn: number | undefined;
  readonly pid: number | undefined;
  readonly kernName: string | undefined;
}

export interface ResDump<T> {
  readonly devIndex: number;
  readonly devName: string;
  readonly entries: readonly T[];
}

function lacks<T>(v: T | undefined, what: string, type: number): T {
  if (v === undefined) throw new NetlinkDecodeError(`restrack entry lacks ${what} (attribute ${type})`, 0);
  return v;
}

/**
 * One QP entry's fields, scanned in place (scanAttrs: no object per attribute; a dump holds some
 * twenty attributes per QP, read on every dump of thousands of QPs).
 */
function decodeQpEntry(dv: DataView, from: number, to: number): QpEntry {
  let port: number | undefined, lqpn: number | undefined, rqpn: number | undefined, rqPsn: number | undefined, sqPsn: number | undefined;
  let type: number | undefined, state: number | undefined, pathMigState: number | undefined, pdn: number | undefined, pid: number | undefined;
  let kernName: string | undefined;
  scanAttrs(dv, from, to, (t, at, len) => {
    switch (t) {
      case RDMA_NLDEV_ATTR_PORT_INDEX: port = u32At(dv, t, at, len); break;
      case RDMA_NLDEV_ATTR_RES_LQPN: lqpn = u32At(dv, t, at, len); break;
      case RDMA_NLDEV_ATTR_RES_RQPN: rqpn = u32At(dv, t, at, len); break;
      case RDMA_NLDEV_ATTR_RES_RQ_PSN: rqPsn = u32At(dv, t, at, len); break;
      case RDMA_NLDEV_ATTR_RES_SQ_PSN: sqPsn = u32At(dv, t, at, len); break;
      case RDMA_NLDEV_ATTR_RES_TYPE: type = u8At(dv, t, at, len); break;
      case RDMA_NLDEV_ATTR_RES_STATE: state = u8At(dv, t, at, len); break;
      case RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE: pathMigState = u8At(dv, t, at, len); break;
      case RDMA_NLDEV_ATTR_RES_PDN: pdn = u32At(dv, t, at, len); break;
      case RDMA_NLDEV_ATTR_RES_PID: pid = u32At(dv, t, at, len); break;
      case RDMA_NLDEV_ATTR_RES_KERN_NAME: kernName = stringAt(dv, at, len); break;
    }
  });
  return {
    port, lqpn: lacks(lqpn, 'RES_LQPN', RDMA_NLDEV_ATTR_RES_LQPN), rqpn, rqPsn, sqPsn: lacks(sqPsn, 'RES_SQ_PSN', RDMA_NLDEV_ATTR_RES_SQ_PSN),
    type: lacks(type, 'RES_TYPE', RDMA_NLDEV_ATTR_RES_TYPE), state: lacks(state, 'RES_STATE', RDMA_NLDEV_ATTR_RES_STATE), pathMigState, pdn, pid, kernName,
  };
}

function decodeCmIdEntry(dv: DataView, from: number, to: number): CmIdEntry {
  let port: number | undefined, lqpn: number | undefined, qpType: number | undefined, ps: number | undefined, state: number | undefined;
  let src: SockAddr | undefined, dst: SockAddr | undefined, cmIdn: number | undefined, pid: number | undefined, kernName: string | undefined;
  scanAttrs(dv, from, to, (t, at, len) => {
    switch (t) {
      case RDMA_NLDEV_ATTR_PORT_INDEX: port = u32At(dv, t, at, len); break;
      case RDMA_NLDEV_ATTR_RES_LQPN: lqpn = u32At(dv, t, at, len); break;
      case RDMA_NLDEV_ATTR_RES_TYPE: qpType = u8At(dv, t, at, len); break;
      case RDMA_NLDEV_ATTR_RES_PS: ps = u32At(dv, t, at, len); break;
      case RDMA_NLDEV_ATTR_RES_STATE: state = u8At(dv, t, at, len); break;
      case RDMA_NLDEV_ATTR_RES_SRC_ADDR: src = sockAddrAt(dv, at, len); break;
      case RDMA_NLDEV_ATTR_RES_DST_ADDR: dst = sockAddrAt(dv, at, len); break;
      case RDMA_NLDEV_ATTR_RES_CM_IDN: cmIdn = u32At(dv, t, at, len); break;
      case RDMA_NLDEV_ATTR_RES_PID: pid = u32At(dv, t, at, len); break;
      case RDMA_NLDEV_ATTR_RES_KERN_NAME: kernName = stringAt(dv, at, len); break;
    }
  });
  return {
    port, lqpn, qpType, ps: lacks(ps, 'RES_PS', RDMA_NLDEV_ATTR_RES_PS), state: lacks(state, 'RES_STATE', RDMA_NLDEV_ATTR_RES_STATE), src, dst, cmIdn, pid, kernName,
  };
}

/**
 * IPv4 addresses as read before, by address and port: a dump of thousands of cm_ids names the
 * same few hundred endpoints read after read. Cleared when it grows past its bound.
 */
const IPV4_SEEN = new Map<number, SockAddr>();
const IPV4_SEEN_MAX = 1 << 16;

/** decodeSockAddr() of the payload at `at`, with IPv4 addresses from IPV4_SEEN. */
function sockAddrAt(dv: DataView, at: number, len: number): SockAddr {
  if (len >= 8 && dv.getUint16(at, LE) === AF_INET) {
    const k = dv.getUint32(at + 4, false) * 65536 + dv.getUint16(at + 2, false);
    const seen = IPV4_SEEN.get(k);
    if (seen !== undefined) return seen;
    const a = decodeSockAddr(new Uint8Array(dv.buffer, dv.byteOffset + at, len));
    if (IPV4_SEEN.size >= IPV4_SEEN_MAX) IPV4_SEEN.clear();
    IPV4_SEEN.set(k, a);
    return a;
  }
  return decodeSockAddr(new Uint8Array(dv.buffer, dv.byteOffset + at, len));
}

const LE = endianness() === 'LE';
const AF_INET = 2;
const AF_INET6 = 10;
/** include/linux/socket.h; struct sockaddr_ib in include/rdma/ib.h. */
const AF_IB = 27;

/**
 * struct sockaddr_in / sockaddr_in6 / sockaddr_ib inside a __kernel_sockaddr_storage: family in
 * host order, port and address in network order. AF_IB carries no port: its service id's low 16
 * bits are the port of the RDMA_PS_* space (cma.c cma_port_from_service_id).
 */
export function decodeSockAddr(b: Uint8Array): SockAddr {
  if (b.length < 2) throw new NetlinkDecodeError(`sockaddr of ${b.length} bytes`, 0);
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const family = dv.getUint16(0, LE);
  const need = family === AF_INET ? 8 : family === AF_INET6 ? 24 : family === AF_IB ? 32 : 2;
  if (b.length < need) throw new NetlinkDecodeError(`sockaddr family ${family} in ${b.length} bytes`, 0);
  if (family === AF_INET) return { family, address: Array.from(b.subarray(4, 8)).join('.'), port: dv.getUint16(2, false) };
  if (family === AF_INET6) return { family, address: ipv6Text(b.subarray(8, 24)), port: dv.getUint16(2, false) };
  if (family === AF_IB) return { family, address: ipv6Text(b.subarray(8, 24)), port: dv.getUint16(30, false) };
  return { family, address: '', port: 0 };
}

const TEXTS = new WeakMap<SockAddr, string>();

/** `10.99.0.1:48130`, `[fe80::1]:4791`, as `rdma res show cm_id` prints (IPv6 bracketed here). */
export function sockAddrText(a: SockAddr): string {
  let t = TEXTS.get(a);
  if (t === undefined) TEXTS.set(a, (t = a.family === AF_INET ? `${a.address}:${a.port}` : `[${a.address}]:${a.port}`));
  return t;
}

/**
 * A dump's messages decoded one by one; between two, `pause()` may say the caller's slice of time
 * is up: the generator then yields, and goes on when resumed (a dump of tens of thousands of QPs
 * is decoded beside the event loop, not in one stall).
 */
function* decodeDump<T>(
  messages: readonly NlMessage[],
  cmd: RestrackCommand,
  table: number,
  entry: number,
  decode: (dv: DataView, from: number, to: number) => T,
  pause: () => boolean,
  each?: (entries: readonly T[]) => void,
): Generator<void, ResDump<T>> {
  const want = rdmaNlType(cmd);
  let dev: { index: number; name: string } | undefined;
  let entries: T[] = [];
  for (const m of messages) {
    if (m.type !== want) throw new NetlinkDecodeError(`message type ${m.type}, expected ${want}`, 0);
    const dv = payloadView(m);
    let index: number | undefined, name: string | undefined, tableAt: number | undefined, tableLen = 0;
    scanAttrs(dv, 0, dv.byteLength, (t, at, len) => {
      if (t === RDMA_NLDEV_ATTR_DEV_INDEX) index = u32At(dv, t, at, len);
      else if (t === RDMA_NLDEV_ATTR_DEV_NAME) name = stringAt(dv, at, len);
      else if (t === table && tableAt === undefined) [tableAt, tableLen] = [at, len];
    });
    index = lacks(index, 'DEV_INDEX', RDMA_NLDEV_ATTR_DEV_INDEX);
    name = lacks(name, 'DEV_NAME', RDMA_NLDEV_ATTR_DEV_NAME);
    if (dev !== undefined && (dev.index !== index || dev.name !== name)) {
      throw new NetlinkDecodeError(`dump of ${dev.name} (index ${dev.index}) has a message for ${name} (index ${index})`, 0);
    }
    dev = { index, name };
    if (tableAt !== undefined) {
      scanAttrs(dv, tableAt, tableAt + tableLen, (t, at, len) => {
        if (t === entry) entries.push(decode(dv, at, at + len));
      });
    }
    if (each !== undefined) {
      each(entries);
      entries = [];
    }
    if (pause()) yield;
  }
  // The kernel cancels a message with no entry (`if (!filled) goto err`): a device without QPs
  // answers NLMSG_DONE alone.
  return { devIndex: dev?.index ?? -1, devName: dev?.name ?? '', entries };
}

/** A generator run to its end at once. */
function whole<T>(g: Generator<void, T>): T {
  let step = g.next();
  while (!step.done) step = g.next();
  return step.value;
}

const never = (): boolean => false;

/** The messages of one RES_QP_GET dump (NLMSG_DONE already taken off by ReplyCollector). */
export function decodeQpDump(messages: readonly NlMessage[]): ResDump<QpEntry> {
  return whole(decodeQpDumpSliced(messages, never));
}

export function decodeCmIdDump(messages: readonly NlMessage[]): ResDump<CmIdEntry> {
  return whole(decodeCmIdDumpSliced(messages, never));
}

/**
 * decodeQpDump() in slices (decodeDump); with `each`, each message's QPs are handed to it as they
 * are decoded and not kept (a read of tens of thousands holds none of them for long).
 */
export function decodeQpDumpSliced(messages: readonly NlMessage[], pause: () => boolean, each?: (entries: readonly QpEntry[]) => void): Generator<void, ResDump<QpEntry>> {
  return decodeDump(messages, RDMA_NLDEV_CMD_RES_QP_GET, RDMA_NLDEV_ATTR_RES_QP, RDMA_NLDEV_ATTR_RES_QP_ENTRY, decodeQpEntry, pause, each);
}

/** decodeCmIdDump() in slices (decodeDump). */
export function decodeCmIdDumpSliced(messages: readonly NlMessage[], pause: () => boolean): Generator<void, ResDump<CmIdEntry>> {
  return decodeDump(messages, RDMA_NLDEV_CMD_RES_CM_ID_GET, RDMA_NLDEV_ATTR_RES_CM_ID, RDMA_NLDEV_ATTR_RES_CM_ID_ENTRY, decodeCmIdEntry, pause);
}

/**
 * The entries a dump's messages hold, counted from the table nests' attribute headers alone
 * (nothing decoded): a QP dump too large to follow is refused before it costs a decode.
 */
export function countEntries(messages: readonly NlMessage[], table: number, entry: number): number {
  let n = 0;
  for (const m of messages) {
    const dv = payloadView(m);
    scanAttrs(dv, 0, dv.byteLength, (t, at, len) => {
      if (t === table) scanAttrs(dv, at, at + len, (e) => void (e === entry && n++));
    });
  }
  return n;
}
