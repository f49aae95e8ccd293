/**
 * Looks a driver counter up in the vocabulary.
 *
 * The lookup is by name within the kind of counter (RDMA hw counter or ethtool statistic): the
 * tables are written so that a name means the same thing in every driver that uses it (mlx5's
 * and renamed bnxt_re's `rp_cnp_handled`, rxe's and mlx5's `duplicate_request`), which a test
 * checks, so a port needs no driver detection to be classified. Names in no table mean nothing
 * here and stay raw `port_stat_total` series.
 */
import type { CounterSourceKind } from '../types.js';
import { BNXT_EN } from './bnxt_en.js';
import { BNXT_RE } from './bnxt_re.js';
import { EFA } from './efa.js';
import { ICE } from './ice.js';
import { IRDMA } from './irdma.js';
import { MLX5 } from './mlx5.js';
import { MLX5_CORE } from './mlx5_core.js';
import { RXE } from './rxe.js';
import type { DriverTable, HealthMeaning } from './types.js';

export * from './types.js';

export const DRIVER_TABLES: readonly DriverTable[] = [MLX5, BNXT_RE, IRDMA, RXE, EFA, MLX5_CORE, BNXT_EN, ICE];

function index(kind: DriverTable['counters']): ReadonlyMap<string, HealthMeaning> {
  const map = new Map<string, HealthMeaning>();
  for (const t of DRIVER_TABLES) {
    if (t.counters !== kind) continue;
    for (const e of t.entries) if (!map.has(e.name)) map.set(e.name, e.meaning);
  }
  return map;
}

const RDMA = index('rdma');
const ETHTOOL = index('ethtool');

/** Which table a source's counter names belong to; undefined for byte/packet-only sources. */
function tableFor(source: CounterSourceKind): ReadonlyMap<string, HealthMeaning> | undefined {
  switch (source) {
    case 'netlink':
    case 'sysfs_hw_counters':
      return RDMA;
    case 'ethtool':
      return ETHTOOL;
    default:
      return undefined;
  }
}

/** What a counter of this source means for fabric health, if anything. */
export function healthMeaning(source: CounterSourceKind, name: string): HealthMeaning | undefined {
  return tableFor(source)?.get(name);
}

/** Every ethtool statistic name the vocabulary knows: the only ones the ethtool source keeps. */
export function isKnownEthtoolStat(name: string): boolean {
  return ETHTOOL.has(name);
}
