/**
 * DCB netlink (rtnetlink RTM_GETDCB) numbers: include/uapi/linux/dcbnl.h and rtnetlink.h. Every
 * value was printed by a C program compiled against Debian's linux-libc-dev 6.1.187 headers,
 * not typed from memory.
 */
export const NETLINK_ROUTE = 0;
export const RTM_GETDCB = 78;
export const AF_UNSPEC = 0;
/** struct dcbmsg { __u8 dcb_family; __u8 cmd; __u16 dcb_pad; } */
export const DCBMSG_BYTES = 4;

export const DCB_CMD_IEEE_GET = 21;
export const DCB_ATTR_IFNAME = 1;
export const DCB_ATTR_IEEE = 13;
export const DCB_ATTR_DCBX = 14;
export const DCB_ATTR_IEEE_PFC = 2;

/** struct ieee_pfc: pfc_cap u8 @0, pfc_en u8 @1, mbc u8 @2, delay u16 @4, requests u64[8] @8, indications u64[8] @72; 136 bytes. */
export const IEEE_PFC_BYTES = 136;
export const IEEE_PFC_REQUESTS_AT = 8;
export const IEEE_PFC_INDICATIONS_AT = 72;
export const IEEE_8021QAZ_MAX_TCS = 8;

/** DCB_ATTR_DCBX bits (DCB_CAP_DCBX_*). */
export const DCBX_BITS: readonly (readonly [bit: number, name: string])[] = [
  [0x1, 'host'],
  [0x2, 'lld_managed'],
  [0x4, 'cee'],
  [0x8, 'ieee'],
  [0x10, 'static'],
];
