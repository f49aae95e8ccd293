/**
 * CounterSource over the RoCE port's Ethernet netdev: /sys/class/net/<ndev>/statistics/.
 *
 * The files print the 64-bit rtnl_link_stats64 fields (NETSTAT_ENTRY/dev_get_stats() in
 * net/core/net-sysfs.c), so they wrap at 2^64 and never saturate. Bytes count the Ethernet frame
 * from the destination MAC on, header included, without FCS, preamble or inter-frame gap
 * (measured on veth under rxe: 4096 + 58 bytes per full RoCE packet), i.e. model layer 'l2'.
 *
 * Only software RoCE (rxe) traffic passes through the netdev; hardware RoCE (mlx5, bnxt_re)
 * bypasses the kernel stack, so there these counters miss the RDMA traffic.
 */
import * as path from 'node:path';
import { FileCounterSet } from './sysfs/fileset.js';
import { netdevDir, resolveRoot, type SysfsOptions } from './sysfs/paths.js';
import type { CounterMeaning, CounterSource, CounterSpec, PortAttributes, PortCounterSet } from './types.js';
import { isDirectoryMode } from '../reads/ops.js';
import { type ReadProgram, withoutReads, read } from '../reads/program.js';

const NETDEV_MEANINGS: Readonly<Record<string, CounterMeaning>> = {
  tx_bytes: { direction: 'tx', quantity: 'bytes', scale: 1, layer: 'l2' },
  rx_bytes: { direction: 'rx', quantity: 'bytes', scale: 1, layer: 'l2' },
  tx_packets: { direction: 'tx', quantity: 'packets', scale: 1 },
  rx_packets: { direction: 'rx', quantity: 'packets', scale: 1 },
};

const NETDEV_COUNTERS: readonly CounterSpec[] = Object.entries(NETDEV_MEANINGS).map(([name, meaning]) => ({
  name,
  bits: 64,
  overflow: 'wrap',
  meaning,
}));

export class NetdevSource implements CounterSource {
  readonly kind = 'netdev' as const;
  readonly root: string;
  private readonly sets = new Set<FileCounterSet>();

  constructor(options?: SysfsOptions) {
    this.root = resolveRoot(options);
  }

  /** Undefined when the port has no netdev (InfiniBand) or the netdev has no statistics. */
  openReads(attrs: PortAttributes): ReadProgram<PortCounterSet | undefined> {
    const stats = this.statisticsDir(attrs.netdev);
    return stats === undefined ? withoutReads(undefined) : this.openStats(attrs, stats);
  }

  private *openStats(attrs: PortAttributes, stats: string): ReadProgram<PortCounterSet | undefined> {
    const st = (yield* read([{ kind: 'stat', path: stats }])).stat(0);
    if (st === undefined || !isDirectoryMode(st.mode)) return undefined;
    const files = NETDEV_COUNTERS.map((spec) => ({ spec, file: path.join(stats, spec.name) }));
    const port = { device: attrs.device, port: attrs.port };
    const set = yield* FileCounterSet.openReads(this.kind, port, files, stats, (s) => this.sets.delete(s));
    this.sets.add(set);
    return set;
  }

  close(): void {
    for (const set of [...this.sets]) set.close();
  }

  private statisticsDir(netdev: string | undefined): string | undefined {
    if (netdev === undefined) return undefined;
    try {
      return path.join(netdevDir(this.root, netdev), 'statistics');
    } catch {
      return undefined;
    }
  }
}
