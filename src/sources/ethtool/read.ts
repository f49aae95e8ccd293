/**
 * The ethtool read as read programs of (transport, ifname) with typed outcomes, run on the
 * bounded reader (src/reads) by the sampler, or here and now by the CLI and tests: the string
 * set once, the values each time.
 */
import { ERRNO, errnoName } from '../../ffi/errno.js';
import { type ReadProgram } from '../../reads/program.js';
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


function failure<T>(ifname: string, what: string, errno: number): EthtoolOutcome<T> {
  const reason: EthtoolFailure = errno === ERRNO.EOPNOTSUPP ? 'not-supported'
    : errno === ERRNO.ENODEV ? 'no-device'
      : errno === ERRNO.EPERM || errno === ERRNO.EACCES ? 'permission-denied' : 'failed';
  return { ok: false, reason, errno, message: `${ifname}: ${what} failed with ${errnoName(errno)}` };
}

/** Driver name and statistic names (GDRVINFO, GSSET_INFO, GSTRINGS). */
export function* stringSetReads(t: EthtoolTransport, ifname: string): ReadProgram<EthtoolOutcome<EthtoolStringSet>> {
  try {
    const drv = yield* t.requestReads(ifname, drvinfoRequest());
    if (drv.errno !== 0 && drv.errno !== ERRNO.EOPNOTSUPP) return failure(ifname, 'ETHTOOL_GDRVINFO', drv.errno);
    const info = 'data' in drv ? decodeDrvinfo(drv.data) : undefined;
    const sset = yield* t.requestReads(ifname, ssetInfoRequest());
    let n: number;
    if ('data' in sset) n = decodeSsetInfo(sset.data);
    else if (sset.errno === ERRNO.EOPNOTSUPP && info) n = info.nStats; // kernels before GSSET_INFO
    else return failure(ifname, 'ETHTOOL_GSSET_INFO', sset.errno);
    if (n === 0) return { ok: false, reason: 'not-supported', errno: undefined, message: `${ifname}: no ethtool statistics` };
    if (n > MAX_STATS) return { ok: false, reason: 'failed', errno: undefined, message: `${ifname}: ${n} statistics is more than ${MAX_STATS}` };
    const strings = yield* t.requestReads(ifname, gstringsRequest(n));
    if (!('data' in strings)) return failure(ifname, 'ETHTOOL_GSTRINGS', strings.errno);
    return { ok: true, value: { ifname, driver: info?.driver ?? '', names: decodeGstrings(strings.data, n) } };
  } catch (e) {
    if (e instanceof EthtoolDecodeError) return { ok: false, reason: 'changed', errno: undefined, message: `${ifname}: ${e.message}` };
    throw e;
  }
}


/** Every value of the set, in its order (GSTATS). */
export function* valuesReads(t: EthtoolTransport, set: EthtoolStringSet): ReadProgram<EthtoolOutcome<bigint[]>> {
  const n = set.names.length;
  const reply = yield* t.requestReads(set.ifname, gstatsRequest(n));
  if (!('data' in reply)) return failure(set.ifname, 'ETHTOOL_GSTATS', reply.errno);
  const values = decodeGstats(reply.data, n);
  if (values === undefined) return { ok: false, reason: 'changed', errno: undefined, message: `${set.ifname}: the number of ethtool statistics changed` };
  return { ok: true, value: values };
}

/** `ethtool -S IFNAME` as data: names and values. */
export function* ethtoolStatsReads(t: EthtoolTransport, ifname: string): ReadProgram<EthtoolOutcome<EthtoolStringSet & { readonly values: readonly bigint[] }>> {
  const set = yield* stringSetReads(t, ifname);
  if (!set.ok) return set;
  const values = yield* valuesReads(t, set.value);
  return values.ok ? { ok: true, value: { ...set.value, values: values.value } } : values;
}
