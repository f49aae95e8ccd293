/**
 * Chooses the measurement sources for this host. Ports and their attributes
 * come from libibverbs when it sees devices, else from sysfs. Counters, per
 * quantity in this order: RDMA netlink, sysfs counters/ and hw_counters/,
 * then the port's netdev. A fake sysfs tree (`--path.sysfs` other than /sys)
 * is read through sysfs only: libibverbs and netlink always see the real kernel.
 */
import { SysfsInventory, SysfsCountersSource, SysfsHwCountersSource, DEFAULT_SYSFS_ROOT } from './sysfs/index.js';
import { NetdevSource } from './netdev.js';
import { VerbsUnavailable, type VerbsOpenResult, openVerbsReads } from './verbs/index.js';
import type { BoundedReads } from '../reads/bounded.js';
import { runSync } from '../reads/program.js';
import { NetlinkCounterSource } from './netlink/index.js';
import type { CounterSource, PortInventory } from './types.js';
import { DcbNetlinkReader, type DcbReader } from './dcb/reader.js';
import { EthtoolCounterSource } from './ethtool/source.js';
import { readErrorText } from '../reads/errors.js';

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

/** Chooses here and now: libibverbs' devices are opened on this thread (the CLI). */
export function selectSources(opts: SelectOptions): Measurement {
  return choose(opts, () => runSync(openVerbsReads()));
}

/**
 * Chooses with libibverbs' devices listed and opened on the bounded reader (the daemon): a
 * libibverbs that does not answer costs one read timeout, and ports come from sysfs.
 */
export async function selectSourcesOn(reader: BoundedReads, opts: SelectOptions): Promise<Measurement> {
  if (sysfsOnly(opts)) return selectSources(opts);
  // One op opens every device (each ibv_open_device maps the device's pages and may take a
  // while on a host with many): it gets more than a tick's read timeout, once, at start.
  const tickTimeout = reader.readTimeoutMs;
  reader.readTimeoutMs = Math.max(tickTimeout, VERBS_OPEN_TIMEOUT_MS);
  const [o] = await reader.run([{ group: VERBS_OPEN_GROUP, program: openVerbsReads() }]).finally(() => {
    reader.readTimeoutMs = tickTimeout;
  });
  const verbs: VerbsOpenResult = o?.kind === 'done' ? o.value
    : { ok: false, error: new VerbsUnavailable('blocked', `listing and opening the devices: ${o !== undefined && 'error' in o ? readErrorText(o.error) : 'not read'}`) };
  return choose(opts, () => verbs);
}

/** The group libibverbs' device listing is read in (blamed when it blocks). */
const VERBS_OPEN_GROUP = 'verbs devices';
const VERBS_OPEN_TIMEOUT_MS = 5000;

const sysfsOnly = (opts: SelectOptions): boolean => opts.sysfsOnly === true || opts.sysfsRoot !== DEFAULT_SYSFS_ROOT;

function choose(opts: SelectOptions, openVerbs: () => VerbsOpenResult): Measurement {
  const sysfs = { sysfsRoot: opts.sysfsRoot };
  const fileSources: CounterSource[] = [new SysfsCountersSource(sysfs), new SysfsHwCountersSource(sysfs), new NetdevSource(sysfs)];
  if (sysfsOnly(opts)) {
    const why = opts.sysfsOnly ? 'native sources disabled' : `--path.sysfs=${opts.sysfsRoot}`;
    return { inventory: new SysfsInventory(sysfs), sources: fileSources, notes: [`${why}: reading ports and counters from sysfs only`] };
  }
  const notes: string[] = [];
  const dcb = DcbNetlinkReader.open();
  return {
    inventory: chooseInventory(opts.sysfsRoot, openVerbs(), notes),
    sources: [...netlinkSource(notes), ...fileSources, ...ethtoolSource(opts.sysfsRoot, notes)],
    notes,
    ...('reader' in dcb ? { dcb: dcb.reader } : {}),
  };
}

function chooseInventory(sysfsRoot: string, verbs: VerbsOpenResult, notes: string[]): PortInventory {
  if (verbs.ok && verbs.inventory.ports().length > 0) {
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
