/**
 * RDMA netlink (NETLINK_RDMA, client RDMA_NL_NLDEV) requests and replies, as pure functions, and
 * the protocol the RDMA sources open their NetlinkSocket with (RDMA_NETLINK).
 *
 * Requests mirror iproute2's `rdma` tool: rdma/utils.c rd_prepare_msg() sets
 * type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd); rdma/stat.c stat_show_one_link() sends
 * RDMA_NLDEV_CMD_STAT_GET with NLM_F_REQUEST|NLM_F_ACK and u32 DEV_INDEX + PORT_INDEX and no
 * STAT_RES; rdma/rdma.c rd_init() maps names to indexes with a RDMA_NLDEV_CMD_GET dump.
 *
 * Replies follow drivers/infiniband/core/nldev.c: with no STAT_RES, nldev_stat_get_doit() runs
 * stat_get_doit_default_counter(), which answers one STAT_GET message carrying DEV_INDEX,
 * DEV_NAME, PORT_INDEX and a nested STAT_HWCOUNTERS table of STAT_HWCOUNTER_ENTRY nests, each
 * a NAME string and a u64 VALUE (nla_put_u64_64bit, so a PAD attribute may precede it on
 * architectures without efficient unaligned access). Counters disabled with
 * `rdma statistic set ... optional-counters` are skipped (is_disabled bit), enabled optional
 * ones appear like any other. The ACK requested by NLM_F_ACK follows as NLMSG_ERROR(0).
 * A CMD_GET dump answers one NLM_F_MULTI message per device (fill_dev_info: DEV_INDEX,
 * DEV_NAME, PORT_INDEX = last port number, ...), then NLMSG_DONE.
 */
import {
  NLM_F_ACK,
  NLM_F_DUMP,
  NLM_F_REQUEST,
  NETLINK_RDMA,
  RDMA_NLDEV_ATTR_DEV_INDEX,
  RDMA_NLDEV_ATTR_DEV_NAME,
  RDMA_NLDEV_ATTR_PORT_INDEX,
  RDMA_NLDEV_ATTR_STAT_HWCOUNTERS,
  RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY,
  RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME,
  RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE,
  RDMA_NLDEV_CMD_GET,
  RDMA_NLDEV_CMD_STAT_GET,
  rdmaNlType,
} from './constants.js';
import { NetlinkDecodeError, type NlAttr, type NlMessage, attrAsString, attrAsU32, attrAsU64, attrU32, decodeAttrs, encodeMessage, findAttr } from './codec.js';
import type { NetlinkProtocol } from './socket.js';

export function buildStatGetRequest(seq: number, devIndex: number, port: number): Uint8Array {
  return encodeMessage(
    { type: rdmaNlType(RDMA_NLDEV_CMD_STAT_GET), flags: NLM_F_REQUEST | NLM_F_ACK, seq, pid: 0 },
    [attrU32(RDMA_NLDEV_ATTR_DEV_INDEX, devIndex), attrU32(RDMA_NLDEV_ATTR_PORT_INDEX, port)],
  );
}

export function buildDeviceDumpRequest(seq: number): Uint8Array {
  return encodeMessage(
    { type: rdmaNlType(RDMA_NLDEV_CMD_GET), flags: NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP, seq, pid: 0 },
    [],
  );
}

interface HwCounterEntry {
  readonly name: string;
  readonly value: bigint;
}

export interface StatGetReply {
  readonly devIndex: number;
  readonly devName: string;
  readonly port: number;
  readonly counters: readonly HwCounterEntry[];
}

export interface RdmaDeviceInfo {
  readonly index: number;
  readonly name: string;
  /** Highest port number (fill_dev_info puts rdma_end_port() in PORT_INDEX). */
  readonly lastPort: number | undefined;
}

function required(attrs: readonly NlAttr[], type: number, what: string): NlAttr {
  const a = findAttr(attrs, type);
  if (a === undefined) throw new NetlinkDecodeError(`reply lacks ${what} (attribute ${type})`, 0);
  return a;
}

function expectType(msg: NlMessage, cmd: number): void {
  const want = rdmaNlType(cmd);
  if (msg.type !== want) throw new NetlinkDecodeError(`message type ${msg.type}, expected ${want}`, 0);
}

function decodeHwCounterEntry(entry: NlAttr): HwCounterEntry {
  const fields = decodeAttrs(entry.payload);
  return {
    name: attrAsString(required(fields, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, 'HWCOUNTER_ENTRY_NAME')),
    value: attrAsU64(required(fields, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, 'HWCOUNTER_ENTRY_VALUE')),
  };
}

export function decodeStatGetReply(msg: NlMessage): StatGetReply {
  expectType(msg, RDMA_NLDEV_CMD_STAT_GET);
  const attrs = decodeAttrs(msg.payload);
  const table = required(attrs, RDMA_NLDEV_ATTR_STAT_HWCOUNTERS, 'STAT_HWCOUNTERS');
  const counters = decodeAttrs(table.payload)
    .filter((a) => a.type === RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY)
    .map(decodeHwCounterEntry);
  return {
    devIndex: attrAsU32(required(attrs, RDMA_NLDEV_ATTR_DEV_INDEX, 'DEV_INDEX')),
    devName: attrAsString(required(attrs, RDMA_NLDEV_ATTR_DEV_NAME, 'DEV_NAME')),
    port: attrAsU32(required(attrs, RDMA_NLDEV_ATTR_PORT_INDEX, 'PORT_INDEX')),
    counters,
  };
}

export function decodeDeviceInfo(msg: NlMessage): RdmaDeviceInfo {
  expectType(msg, RDMA_NLDEV_CMD_GET);
  const attrs = decodeAttrs(msg.payload);
  const port = findAttr(attrs, RDMA_NLDEV_ATTR_PORT_INDEX);
  return {
    index: attrAsU32(required(attrs, RDMA_NLDEV_ATTR_DEV_INDEX, 'DEV_INDEX')),
    name: attrAsString(required(attrs, RDMA_NLDEV_ATTR_DEV_NAME, 'DEV_NAME')),
    lastPort: port === undefined ? undefined : attrAsU32(port),
  };
}

/** The RDMA sources' netlink protocol (include/uapi/linux/netlink.h NETLINK_RDMA). */
export const RDMA_NETLINK: NetlinkProtocol = {
  number: NETLINK_RDMA,
  name: 'NETLINK_RDMA',
  title: 'RDMA netlink',
  missing: 'this kernel has no RDMA netlink (CONFIG_INFINIBAND unset or ib_core not loaded)',
};
