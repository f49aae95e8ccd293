/**
 * SIOCETHTOOL numbers and struct layouts: include/uapi/linux/ethtool.h, sockios.h, net/if.h.
 * Every value was printed by a C program compiled against Debian's linux-libc-dev 6.1.187
 * headers (x86_64), not typed from memory.
 */
export const SIOCETHTOOL = 0x8946;
export const ETHTOOL_GDRVINFO = 0x03;
export const ETHTOOL_GSTRINGS = 0x1b;
export const ETHTOOL_GSTATS = 0x1d;
export const ETHTOOL_GSSET_INFO = 0x37;
export const ETH_SS_STATS = 1;
export const ETH_GSTRING_LEN = 32;
export const IFNAMSIZ = 16;

/** struct ifreq: ifr_name[16], then the union whose ifr_data pointer sits at 16; 40 bytes. */
export const IFREQ_BYTES = 40;
export const IFREQ_DATA_AT = 16;

/** struct ethtool_drvinfo: cmd u32, driver[32] @4, ..., n_stats u32 @180; 196 bytes. */
export const DRVINFO_BYTES = 196;
export const DRVINFO_DRIVER_AT = 4;
export const DRVINFO_DRIVER_LEN = 32;
export const DRVINFO_N_STATS_AT = 180;

/** struct ethtool_sset_info: cmd u32, reserved u32, sset_mask u64 @8, data u32[] @16. */
export const SSET_INFO_HEADER = 16;
/** struct ethtool_gstrings: cmd, string_set, len (u32 each), data @12. */
export const GSTRINGS_HEADER = 12;
/** struct ethtool_stats: cmd, n_stats (u32 each), data u64[] @8. */
export const GSTATS_HEADER = 8;

/** Largest string set accepted: mlx5 with 128 channels lists a few thousand; this bounds a bad answer. */
export const MAX_STATS = 65_536;
