/**
 * What sysfs says about a netdev's place in a stack: VLAN or not, and the device below it.
 * One round of reads (its uevent and its directory), as a read program (src/reads).
 */
import * as path from 'node:path';
import { DIR_READ_BYTES, netdevDir } from './sysfs/paths.js';
import { type ReadProgram, withoutReads, namesOf, read } from '../reads/program.js';

/** A sysfs attribute is at most one page (fs/sysfs/file.c sysfs_kf_seq_show()). */
const UEVENT_BYTES = 4096;

export interface NetdevLinks {
  /**
   * A VLAN netdev's uevent says DEVTYPE=vlan (`vlan_type` in net/8021q/vlan_dev.c; the core
   * prints DEVTYPE from the device type's name in dev_uevent(), drivers/base/core.c). Undefined
   * when sysfs has no uevent for it.
   */
  readonly vlan: boolean | undefined;
  /** The netdev below a VLAN: its `lower_<name>` link (netdev_adjacent_sysfs_add(), net/core/dev.c). */
  readonly lower: string | undefined;
}

const UNKNOWN: NetdevLinks = { vlan: undefined, lower: undefined };

export function netdevLinksReads(sysfsRoot: string, netdev: string): ReadProgram<NetdevLinks> {
  let dir: string;
  try {
    dir = netdevDir(sysfsRoot, netdev);
  } catch {
    return withoutReads(UNKNOWN);
  }
  return linksOf(dir);
}

function* linksOf(dir: string): ReadProgram<NetdevLinks> {
  const r = yield* read([
    { kind: 'readFile', path: path.join(dir, 'uevent'), max: UEVENT_BYTES },
    { kind: 'readDir', path: dir, max: DIR_READ_BYTES },
  ]);
  const uevent = r.text(0);
  if (uevent === undefined) return UNKNOWN;
  const vlan = /^DEVTYPE=vlan$/m.test(uevent);
  if (!vlan) return { vlan, lower: undefined };
  const names = yield* namesOf(r, 1, dir);
  return { vlan, lower: names?.find((n) => n.startsWith('lower_'))?.slice('lower_'.length) };
}

/** The netdev that carries a port's frames: a VLAN's lower device, else the netdev itself. */
export function* physicalNetdevReads(sysfsRoot: string, netdev: string): ReadProgram<string> {
  const links = yield* netdevLinksReads(sysfsRoot, netdev);
  return links.vlan ? (links.lower ?? netdev) : netdev;
}
