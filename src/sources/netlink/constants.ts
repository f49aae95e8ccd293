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
export const MSG_TRUNC = 0x20;

export const NLMSG_HDRLEN = 16;
export const NLA_HDRLEN = 4;
export const NLMSG_ERROR = 2;
export const NLMSG_DONE = 3;

export const NLM_F_REQUEST = 0x1;
export const NLM_F_MULTI = 0x2;
export const NLM_F_ACK = 0x4;
export const NLM_F_DUMP = 0x300;
/** In an NLMSG_ERROR: the echoed request was trimmed to its header. */
export const NLM_F_CAPPED = 0x100;
/** In an NLMSG_ERROR: extended-ack TLVs follow the echoed request. */
export const NLM_F_ACK_TLVS = 0x200;

export const NLA_F_NESTED = 0x8000;
export const NLA_F_NET_BYTEORDER = 0x4000;
export const NLA_TYPE_MASK = ~(NLA_F_NESTED | NLA_F_NET_BYTEORDER) & 0xffff;
export const NLMSGERR_ATTR_MSG = 1;

/** RDMA_NL_NLDEV client; message type = (client << 10) + op (RDMA_NL_GET_TYPE). */
export const RDMA_NL_NLDEV = 5;
export const RDMA_NLDEV_CMD_GET = 1;
export const RDMA_NLDEV_CMD_STAT_GET = 17;

export const RDMA_NLDEV_ATTR_PAD = 0;
export const RDMA_NLDEV_ATTR_DEV_INDEX = 1;
export const RDMA_NLDEV_ATTR_DEV_NAME = 2;
export const RDMA_NLDEV_ATTR_PORT_INDEX = 3;
export const RDMA_NLDEV_ATTR_STAT_HWCOUNTERS = 80;
export const RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY = 81;
export const RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME = 82;
export const RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE = 83;

export function rdmaNlType(op: number): number {
  return (RDMA_NL_NLDEV << 10) + op;
}

export const ERRNO = {
  EPERM: 1,
  EINTR: 4,
  ENODEV: 19,
  EAGAIN: 11,
  EACCES: 13,
  EINVAL: 22,
  EOPNOTSUPP: 95,
  EPROTONOSUPPORT: 93,
  EAFNOSUPPORT: 97,
} as const;
