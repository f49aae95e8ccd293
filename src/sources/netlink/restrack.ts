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
  type NlAttr,
  type NlMessage,
  attrAsString,
  attrAsU32,
  attrAsU8,
  attrU32,
  decodeAttrs,
  encodeMessage,
  findAttr,
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

function required(attrs: readonly NlAttr[], type: number, what: string): NlAttr {
  const a = findAttr(attrs, type);
  if (a === undefined) throw new NetlinkDecodeError(`restrack entry lacks ${what} (attribute ${type})`, 0);
  return a;
}

function optU32(attrs: readonly NlAttr[], type: number): number | undefined {
  const a = findAttr(attrs, type);
  return a === undefined ? undefined : attrAsU32(a);
}

function optU8(attrs: readonly NlAttr[], type: number): number | undefined {
  const a = findAttr(attrs, type);
  return a === undefined ? undefined : attrAsU8(a);
}

function optString(attrs: readonly NlAttr[], type: number): string | undefined {
  const a = findAttr(attrs, type);
  return a === undefined ? undefined : attrAsString(a);
}

function decodeQpEntry(entry: NlAttr): QpEntry {
  const f = decodeAttrs(entry.payload);
  return {
    port: optU32(f, RDMA_NLDEV_ATTR_PORT_INDEX),
    lqpn: attrAsU32(required(f, RDMA_NLDEV_ATTR_RES_LQPN, 'RES_LQPN')),
    rqpn: optU32(f, RDMA_NLDEV_ATTR_RES_RQPN),
    rqPsn: optU32(f, RDMA_NLDEV_ATTR_RES_RQ_PSN),
    sqPsn: attrAsU32(required(f, RDMA_NLDEV_ATTR_RES_SQ_PSN, 'RES_SQ_PSN')),
    type: attrAsU8(required(f, RDMA_NLDEV_ATTR_RES_TYPE, 'RES_TYPE')),
    state: attrAsU8(required(f, RDMA_NLDEV_ATTR_RES_STATE, 'RES_STATE')),
    pathMigState: optU8(f, RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE),
    pdn: optU32(f, RDMA_NLDEV_ATTR_RES_PDN),
    pid: optU32(f, RDMA_NLDEV_ATTR_RES_PID),
    kernName: optString(f, RDMA_NLDEV_ATTR_RES_KERN_NAME),
  };
}

function decodeCmIdEntry(entry: NlAttr): CmIdEntry {
  const f = decodeAttrs(entry.payload);
  const addr = (type: number): SockAddr | undefined => {
    const a = findAttr(f, type);
    return a === undefined ? undefined : decodeSockAddr(a.payload);
  };
  return {
    port: optU32(f, RDMA_NLDEV_ATTR_PORT_INDEX),
    lqpn: optU32(f, RDMA_NLDEV_ATTR_RES_LQPN),
    qpType: optU8(f, RDMA_NLDEV_ATTR_RES_TYPE),
    ps: attrAsU32(required(f, RDMA_NLDEV_ATTR_RES_PS, 'RES_PS')),
    state: attrAsU8(required(f, RDMA_NLDEV_ATTR_RES_STATE, 'RES_STATE')),
    src: addr(RDMA_NLDEV_ATTR_RES_SRC_ADDR),
    dst: addr(RDMA_NLDEV_ATTR_RES_DST_ADDR),
    cmIdn: optU32(f, RDMA_NLDEV_ATTR_RES_CM_IDN),
    pid: optU32(f, RDMA_NLDEV_ATTR_RES_PID),
    kernName: optString(f, RDMA_NLDEV_ATTR_RES_KERN_NAME),
  };
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

/** `10.99.0.1:48130`, `[fe80::1]:4791`, as `rdma res show cm_id` prints (IPv6 bracketed here). */
export function sockAddrText(a: SockAddr): string {
  return a.family === AF_INET ? `${a.address}:${a.port}` : `[${a.address}]:${a.port}`;
}

function decodeDump<T>(
  messages: readonly NlMessage[],
  cmd: RestrackCommand,
  table: number,
  entry: number,
  decode: (a: NlAttr) => T,
): ResDump<T> {
  const want = rdmaNlType(cmd);
  let dev: { index: number; name: string } | undefined;
  const entries: T[] = [];
  for (const m of messages) {
    if (m.type !== want) throw new NetlinkDecodeError(`message type ${m.type}, expected ${want}`, 0);
    const attrs = decodeAttrs(m.payload);
    const index = attrAsU32(required(attrs, RDMA_NLDEV_ATTR_DEV_INDEX, 'DEV_INDEX'));
    const name = attrAsString(required(attrs, RDMA_NLDEV_ATTR_DEV_NAME, 'DEV_NAME'));
    if (dev !== undefined && (dev.index !== index || dev.name !== name)) {
      throw new NetlinkDecodeError(`dump of ${dev.name} (index ${dev.index}) has a message for ${name} (index ${index})`, 0);
    }
    dev = { index, name };
    const t = findAttr(attrs, table);
    if (t === undefined) continue;
    for (const a of decodeAttrs(t.payload)) if (a.type === entry) entries.push(decode(a));
  }
  // The kernel cancels a message with no entry (`if (!filled) goto err`): a device without QPs
  // answers NLMSG_DONE alone.
  return { devIndex: dev?.index ?? -1, devName: dev?.name ?? '', entries };
}

/** The messages of one RES_QP_GET dump (NLMSG_DONE already taken off by ReplyCollector). */
export function decodeQpDump(messages: readonly NlMessage[]): ResDump<QpEntry> {
  return decodeDump(messages, RDMA_NLDEV_CMD_RES_QP_GET, RDMA_NLDEV_ATTR_RES_QP, RDMA_NLDEV_ATTR_RES_QP_ENTRY, decodeQpEntry);
}

export function decodeCmIdDump(messages: readonly NlMessage[]): ResDump<CmIdEntry> {
  return decodeDump(
    messages, RDMA_NLDEV_CMD_RES_CM_ID_GET, RDMA_NLDEV_ATTR_RES_CM_ID, RDMA_NLDEV_ATTR_RES_CM_ID_ENTRY, decodeCmIdEntry,
  );
}
