/**
 * Chooses the measurement sources for this host. Order per quantity:
 * netlink, then sysfs counters/ and hw_counters/, then the netdev. A fake
 * sysfs tree (`--path.sysfs` other than /sys) can only be read through sysfs:
 * libibverbs and netlink always see the real kernel.
 */
import { SysfsInventory, SysfsCountersSource, SysfsHwCountersSource, DEFAULT_SYSFS_ROOT } from './sysfs/index.js';
import { NetdevSource } from './netdev.js';
import type { CounterSource, PortInventory } from './types.js';

export interface Measurement {
  readonly inventory: PortInventory;
  readonly sources: readonly CounterSource[];
  /** One line each on what was chosen and why, for the log and `devices`. */
  readonly notes: readonly string[];
}

export interface SelectOptions {
  readonly sysfsRoot: string;
}

export function selectSources(opts: SelectOptions): Measurement {
  const sysfs = { sysfsRoot: opts.sysfsRoot };
  const notes: string[] = [];
  if (opts.sysfsRoot !== DEFAULT_SYSFS_ROOT) notes.push(`--path.sysfs=${opts.sysfsRoot}: reading ports and counters from sysfs only`);
  return {
    inventory: new SysfsInventory(sysfs),
    sources: [new SysfsCountersSource(sysfs), new SysfsHwCountersSource(sysfs), new NetdevSource(sysfs)],
    notes,
  };
}
