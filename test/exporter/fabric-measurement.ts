/**
 * The mlx5_roce fixture measured as on a host with ethtool statistics and DCB: the sysfs and
 * netdev sources, the captured mlx5_core ethtool table, and a DCB answer with PFC on priority 3.
 * A fake sysfs tree cannot give those two, so the daemon is handed them (fabric-health families).
 */
import type { DaemonOptions } from '../../src/exporter/daemon.js';
import { EthtoolCounterSource } from '../../src/sources/ethtool/source.js';
import { NetdevSource } from '../../src/sources/netdev.js';
import { SysfsCountersSource, SysfsHwCountersSource, SysfsInventory } from '../../src/sources/sysfs/index.js';
import { TableKernel, loadTable } from '../fixtures/ethtool.js';
import type { SysfsFixture } from '../fixtures/sysfs.js';
import { dcbReader } from '../health/dcb-replies.js';

export function mlx5EthtoolAndDcb(fx: SysfsFixture): Partial<DaemonOptions> {
  return {
    measurement: {
      inventory: new SysfsInventory({ sysfsRoot: fx.root }),
      sources: [new SysfsCountersSource({ sysfsRoot: fx.root }), new SysfsHwCountersSource({ sysfsRoot: fx.root }), new NetdevSource({ sysfsRoot: fx.root }),
        new EthtoolCounterSource(new TableKernel(loadTable('mlx5_core')), { sysfsRoot: fx.root })],
      notes: [],
      dcb: dcbReader({ ens1f0np0: { pfcEn: 0b1000, dcbx: 0x8 } }),
    },
  };
}
