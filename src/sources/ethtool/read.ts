/**
 * The ethtool read as small functions of (transport, ifname) with typed outcomes, so that a
 * bounded read primitive can run them: the string set once, the values each time.
 */
import { errnoName } from '../netlink/socket.js';
import {
  EthtoolDecodeError, decodeDrvinfo, decodeGstats, decodeGstrings, decodeSsetInfo, drvinfoRequest, gstatsRequest, gstringsRequest, ssetInfoRequest,
} from './codec.js';
import { MAX_STATS } from './constants.js';
import type { EthtoolTransport } from './ioctl.js';

export type EthtoolFailure =
  /** The netdev has no ethtool statistics (EOPNOTSUPP, or an empty set). */
  | 'not-supported'
  /** No such netdev in this network namespace. */
  | 'no-device'
  | 'permission-denied'
  /** The driver's statistics changed between the names and the values (channels added...). */
  | 'changed'
  | 'failed';

export type EthtoolOutcome<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly reason: EthtoolFailure; readonly errno: number | undefined; readonly message: string };

export interface EthtoolStringSet {
  readonly ifname: string;
  /** ETHTOOL_GDRVINFO's driver name ("mlx5_core", "veth"...), '' when the netdev has none. */
  readonly driver: string;
  readonly names: readonly string[];
}

const ERRNO = { EPERM: 1, ENODEV: 19, EACCES: 13, EOPNOTSUPP: 95 } as const;

function failure<T>(ifname: string, what: string, errno: number): EthtoolOutcome<T> {
  const reason: EthtoolFailure = errno === ERRNO.EOPNOTSUPP ? 'not-supported'
    : errno === ERRNO.ENODEV ? 'no-device'
      : errno === ERRNO.EPERM || errno === ERRNO.EACCES ? 'permission-denied' : 'failed';
  return { ok: false, reason, errno, message: `${ifname}: ${what} failed with ${errnoName(errno)}` };
}

/** Driver name and statistic names (GDRVINFO, GSSET_INFO, GSTRINGS). */
export function readStringSet(t: EthtoolTransport, ifname: string): EthtoolOutcome<EthtoolStringSet> {
  try {
    const drv = t.request(ifname, drvinfoRequest());
    if (drv.errno !== 0 && drv.errno !== ERRNO.EOPNOTSUPP) return failure(ifname, 'ETHTOOL_GDRVINFO', drv.errno);
    const info = 'data' in drv ? decodeDrvinfo(drv.data) : undefined;
    const sset = t.request(ifname, ssetInfoRequest());
    let n: number;
    if ('data' in sset) n = decodeSsetInfo(sset.data);
    else if (sset.errno === ERRNO.EOPNOTSUPP && info) n = info.nStats; // kernels before GSSET_INFO
    else return failure(ifname, 'ETHTOOL_GSSET_INFO', sset.errno);
    if (n === 0) return { ok: false, reason: 'not-supported', errno: undefined, message: `${ifname}: no ethtool statistics` };
    if (n > MAX_STATS) return { ok: false, reason: 'failed', errno: undefined, message: `${ifname}: ${n} statistics is more than ${MAX_STATS}` };
    const strings = t.request(ifname, gstringsRequest(n));
    if (!('data' in strings)) return failure(ifname, 'ETHTOOL_GSTRINGS', strings.errno);
    return { ok: true, value: { ifname, driver: info?.driver ?? '', names: decodeGstrings(strings.data, n) } };
  } catch (e) {
    if (e instanceof EthtoolDecodeError) return { ok: false, reason: 'changed', errno: undefined, message: `${ifname}: ${e.message}` };
    throw e;
  }
}

/** Every value of the set, in its order (GSTATS). */
export function readValues(t: EthtoolTransport, set: EthtoolStringSet): EthtoolOutcome<bigint[]> {
  const n = set.names.length;
  const reply = t.request(set.ifname, gstatsRequest(n));
  if (!('data' in reply)) return failure(set.ifname, 'ETHTOOL_GSTATS', reply.errno);
  const values = decodeGstats(reply.data, n);
  if (values === undefined) return { ok: false, reason: 'changed', errno: undefined, message: `${set.ifname}: the number of ethtool statistics changed` };
  return { ok: true, value: values };
}

/** `ethtool -S IFNAME` as data: names and values. */
export function readEthtoolStats(t: EthtoolTransport, ifname: string): EthtoolOutcome<EthtoolStringSet & { readonly values: readonly bigint[] }> {
  const set = readStringSet(t, ifname);
  if (!set.ok) return set;
  const values = readValues(t, set.value);
  return values.ok ? { ok: true, value: { ...set.value, values: values.value } } : values;
}
