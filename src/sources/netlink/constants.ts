/**
 * Netlink and RDMA netlink numbers.
 *
 * Generic netlink framing: include/uapi/linux/netlink.h (nlmsghdr, nlattr, NLM_F_*, NLMSG_*,
 * NLA_F_*). RDMA numbers: include/uapi/rdma/rdma_netlink.h, identical in rdma-core
 * kernel-headers/rdma/rdma_netlink.h (checked at rdma-core 691953d8). Every value below was
 * printed by a C program compiled against those headers, not typed from memory.
 */

export const AF_NETLINK = 16;
export const SOCK_RAW = 3;
export const SOCK_CLOEXEC = 0o2000000;
export const NETLINK_RDMA = 20;
export const SOL_SOCKET = 1;
export const SO_RCVTIMEO = 20;
export const SOL_NETLINK = 270;
export const NETLINK_EXT_ACK = 11;

export { NLMSG_ERROR, NLMSG_HDRLEN } from '../../reads/netlink-answer.js';
export const NLA_HDRLEN = 4;

export const NLM_F_REQUEST = 0x1;
export const NLM_F_ACK = 0x4;
export const NLM_F_DUMP = 0x300;
/** In an NLMSG_ERROR: the echoed request was trimmed to its header. */
export const NLM_F_CAPPED = 0x100;
/** In an NLMSG_ERROR: extended-ack TLVs follow the echoed request. */
export const NLM_F_ACK_TLVS = 0x200;

export const NLA_F_NESTED = 0x8000;
const NLA_F_NET_BYTEORDER = 0x4000;
export const NLA_TYPE_MASK = ~(NLA_F_NESTED | NLA_F_NET_BYTEORDER) & 0xffff;
export const NLMSGERR_ATTR_MSG = 1;

/** RDMA_NL_NLDEV client; message type = (client << 10) + op (RDMA_NL_GET_TYPE). */
const RDMA_NL_NLDEV = 5;
export const RDMA_NLDEV_CMD_GET = 1;
export const RDMA_NLDEV_CMD_STAT_GET = 17;
/** Restrack dumps (enum rdma_nldev_command: RES_GET = 9, then QP, CM_ID in order). */
export const RDMA_NLDEV_CMD_RES_QP_GET = 10;
export const RDMA_NLDEV_CMD_RES_CM_ID_GET = 11;

export const RDMA_NLDEV_ATTR_DEV_INDEX = 1;
export const RDMA_NLDEV_ATTR_DEV_NAME = 2;
export const RDMA_NLDEV_ATTR_PORT_INDEX = 3;
/*
 * Restrack attributes (enum rdma_nldev_attr, "don't change the order ... this is ABI"):
 * RES_SUMMARY is 15, so RES_QP = 19 ... RES_DST_ADDR = 34; RES_PDN = 60, RES_CM_IDN = 63.
 */
export const RDMA_NLDEV_ATTR_RES_QP = 19;
export const RDMA_NLDEV_ATTR_RES_QP_ENTRY = 20;
export const RDMA_NLDEV_ATTR_RES_LQPN = 21;
export const RDMA_NLDEV_ATTR_RES_RQPN = 22;
export const RDMA_NLDEV_ATTR_RES_RQ_PSN = 23;
export const RDMA_NLDEV_ATTR_RES_SQ_PSN = 24;
export const RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE = 25;
export const RDMA_NLDEV_ATTR_RES_TYPE = 26;
export const RDMA_NLDEV_ATTR_RES_STATE = 27;
export const RDMA_NLDEV_ATTR_RES_PID = 28;
export const RDMA_NLDEV_ATTR_RES_KERN_NAME = 29;
export const RDMA_NLDEV_ATTR_RES_CM_ID = 30;
export const RDMA_NLDEV_ATTR_RES_CM_ID_ENTRY = 31;
export const RDMA_NLDEV_ATTR_RES_PS = 32;
export const RDMA_NLDEV_ATTR_RES_SRC_ADDR = 33;
export const RDMA_NLDEV_ATTR_RES_DST_ADDR = 34;
export const RDMA_NLDEV_ATTR_RES_PDN = 60;
export const RDMA_NLDEV_ATTR_RES_CM_IDN = 63;
export const RDMA_NLDEV_ATTR_STAT_HWCOUNTERS = 80;
export const RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY = 81;
export const RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME = 82;
export const RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE = 83;

export function rdmaNlType(op: number): number {
  return (RDMA_NL_NLDEV << 10) + op;
}

