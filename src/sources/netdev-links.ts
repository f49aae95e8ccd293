/** What sysfs says about a netdev's place in a stack: VLAN or not, and the device below it. */
import * as path from 'node:path';
import { listDir, netdevDir, readText } from './sysfs/paths.js';

/**
 * A VLAN netdev's uevent says DEVTYPE=vlan (`vlan_type` in net/8021q/vlan_dev.c; the core prints
 * DEVTYPE from the device type's name in dev_uevent(), drivers/base/core.c). Undefined when
 * sysfs has no uevent for it.
 */
export function isVlanNetdev(sysfsRoot: string, netdev: string): boolean | undefined {
  let dir: string;
  try {
    dir = netdevDir(sysfsRoot, netdev);
  } catch {
    return undefined;
  }
  const uevent = readText(path.join(dir, 'uevent'));
  if (uevent === undefined) return undefined;
  return /^DEVTYPE=vlan$/m.test(uevent);
}

/** The netdev below a stacked one: its `lower_<name>` link (netdev_adjacent_sysfs_add(), net/core/dev.c). */
export function lowerNetdev(sysfsRoot: string, netdev: string): string | undefined {
  try {
    return listDir(netdevDir(sysfsRoot, netdev)).find((n) => n.startsWith('lower_'))?.slice('lower_'.length);
  } catch {
    return undefined;
  }
}

/** The netdev that carries a port's frames: a VLAN's lower device, else the netdev itself. */
export function physicalNetdev(sysfsRoot: string, netdev: string): string {
  return isVlanNetdev(sysfsRoot, netdev) ? (lowerNetdev(sysfsRoot, netdev) ?? netdev) : netdev;
}
