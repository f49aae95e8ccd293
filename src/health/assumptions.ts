/**
 * Host assumptions the model relies on, per port: is the RoCE netdev a VLAN (4 more bytes per
 * frame than an untagged `l2HeaderBytes` of 14), and is PFC enabled where the kernel says so
 * (DCB netlink). Read-only; refreshed on a slow timer by the daemon and once by `check`.
 */
import * as path from 'node:path';
import type { DcbReader, PfcState } from '../sources/dcb/reader.js';
import { listDir, netdevDir, readText } from '../sources/sysfs/paths.js';
import type { PortAttributes } from '../sources/types.js';

export interface PortAssumptions {
  readonly netdev: string | undefined;
  /** Undefined when unknown (no netdev, or sysfs says nothing). */
  readonly vlan: boolean | undefined;
  /** The device under a VLAN netdev (`lower_*` link), where DCB lives. */
  readonly lowerNetdev: string | undefined;
  readonly pfc: PfcState;
}

/**
 * A VLAN netdev's uevent says DEVTYPE=vlan (`vlan_type` in net/8021q/vlan_dev.c; the core
 * prints DEVTYPE from the device type's name in dev_uevent(), drivers/base/core.c).
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

/** The netdev below a stacked one (`lower_<name>` links, net/core/dev.c netdev_adjacent_sysfs_add()). */
export function lowerNetdev(sysfsRoot: string, netdev: string): string | undefined {
  try {
    const lower = listDir(netdevDir(sysfsRoot, netdev)).find((n) => n.startsWith('lower_'));
    return lower?.slice('lower_'.length);
  } catch {
    return undefined;
  }
}

export function assessPort(attrs: PortAttributes, sysfsRoot: string, dcb: DcbReader | undefined): PortAssumptions {
  const netdev = attrs.netdev;
  if (netdev === undefined) {
    return { netdev, vlan: undefined, lowerNetdev: undefined, pfc: { known: false, netdev, reason: 'the port has no netdev (InfiniBand link layer)' } };
  }
  const vlan = isVlanNetdev(sysfsRoot, netdev);
  const lower = vlan ? lowerNetdev(sysfsRoot, netdev) : undefined;
  const dcbDev = lower ?? netdev;
  const pfc: PfcState = dcb
    ? dcb.readPfc(dcbDev)
    : { known: false, netdev: dcbDev, reason: 'DCB netlink is not read with a fake --path.sysfs or without netlink' };
  return { netdev, vlan, lowerNetdev: lower, pfc };
}

/** Every port's assumptions, kept until the next refresh. */
export class HostAssumptions {
  private current = new Map<string, PortAssumptions>();

  constructor(
    private readonly sysfsRoot: string,
    private readonly dcb: DcbReader | undefined,
  ) {}

  refresh(ports: Iterable<PortAttributes>): void {
    const next = new Map<string, PortAssumptions>();
    for (const attrs of ports) next.set(`${attrs.device}/${attrs.port}`, assessPort(attrs, this.sysfsRoot, this.dcb));
    this.current = next;
  }

  get byPort(): ReadonlyMap<string, PortAssumptions> {
    return this.current;
  }
}
