/**
 * Chooses the measurement sources for this host. Ports and their attributes
 * come from libibverbs when it sees devices, else from sysfs. Counters, per
 * quantity in this order: RDMA netlink, sysfs counters/ and hw_counters/,
 * then the port's netdev. A fake sysfs tree (`--path.sysfs` other than /sys)
 * is read through sysfs only: libibverbs and netlink always see the real kernel.
 */
import { SysfsInventory, SysfsCountersSource, SysfsHwCountersSource, DEFAULT_SYSFS_ROOT } from './sysfs/index.js';
import { NetdevSource } from './netdev.js';
import { openVerbsInventory } from './verbs/index.js';
import { NetlinkCounterSource } from './netlink/index.js';
import type { CounterSource, PortInventory } from './types.js';
import { DcbNetlinkReader, type DcbReader } from './dcb/reader.js';
import { EthtoolCounterSource } from './ethtool/source.js';

export interface Measurement {
  readonly inventory: PortInventory;
  readonly sources: readonly CounterSource[];
  /** One line each on what was chosen and why, for the log and `devices`. */
  readonly notes: readonly string[];
  /** DCB netlink (PFC state), on the real /sys only. */
  readonly dcb?: DcbReader;
}

export interface SelectOptions {
  readonly sysfsRoot: string;
  /** Skip libibverbs and netlink even on the real /sys (tests, `--no-native`). */
  readonly sysfsOnly?: boolean;
}

export function selectSources(opts: SelectOptions): Measurement {
  const sysfs = { sysfsRoot: opts.sysfsRoot };
  const fileSources: CounterSource[] = [new SysfsCountersSource(sysfs), new SysfsHwCountersSource(sysfs), new NetdevSource(sysfs)];
  if (opts.sysfsOnly || opts.sysfsRoot !== DEFAULT_SYSFS_ROOT) {
    const why = opts.sysfsOnly ? 'native sources disabled' : `--path.sysfs=${opts.sysfsRoot}`;
    return { inventory: new SysfsInventory(sysfs), sources: fileSources, notes: [`${why}: reading ports and counters from sysfs only`] };
  }
  const notes: string[] = [];
  const dcb = DcbNetlinkReader.open();
  return {
    inventory: chooseInventory(opts.sysfsRoot, notes),
    sources: [...netlinkSource(notes), ...fileSources, ...ethtoolSource(opts.sysfsRoot, notes)],
    notes,
    ...('reader' in dcb ? { dcb: dcb.reader } : {}),
  };
}

function chooseInventory(sysfsRoot: string, notes: string[]): PortInventory {
  const verbs = openVerbsInventory();
  if (verbs.ok && verbs.inventory.listPorts().length > 0) {
    notes.push('ports and attributes from libibverbs');
    return verbs.inventory;
  }
  if (verbs.ok) verbs.inventory.close();
  const why = verbs.ok ? 'libibverbs lists no port' : verbs.error.message;
  notes.push(`${why}; ports and attributes from sysfs (${sysfsRoot}/class/infiniband)`);
  return new SysfsInventory({ sysfsRoot });
}

function netlinkSource(notes: string[]): CounterSource[] {
  const nl = NetlinkCounterSource.create({ timeoutMs: 500 });
  if (nl.ok) {
    notes.push('counters from RDMA netlink first, then sysfs and the netdev');
    return [nl.source];
  }
  notes.push(`${nl.error.message}; counters from sysfs and the netdev`);
  return [];
}

/** The netdev's ethtool statistics (PFC, pause, discards): native, so the real /sys only. */
function ethtoolSource(sysfsRoot: string, notes: string[]): CounterSource[] {
  const created = EthtoolCounterSource.create({ sysfsRoot });
  if ('source' in created) return [created.source];
  notes.push(`ethtool statistics unavailable: ${created.error}`);
  return [];
}
