/**
 * Host assumptions the model relies on, per port: is the RoCE netdev a VLAN (4 more bytes per
 * frame than an untagged `l2HeaderBytes` of 14), and is PFC enabled where the kernel says so
 * (DCB netlink). Read-only; refreshed on a slow timer by the daemon and once by `check`.
 */
import type { DcbReader, PfcState } from '../sources/dcb/reader.js';
import { isVlanNetdev, lowerNetdev } from '../sources/netdev-links.js';
import { type PortAttributes, portKey } from '../sources/types.js';

export interface PortAssumptions {
  readonly netdev: string | undefined;
  /** Undefined when unknown (no netdev, or sysfs says nothing). */
  readonly vlan: boolean | undefined;
  /** The device under a VLAN netdev (`lower_*` link), where DCB lives. */
  readonly lowerNetdev: string | undefined;
  readonly pfc: PfcState;
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
    for (const attrs of ports) next.set(portKey(attrs), assessPort(attrs, this.sysfsRoot, this.dcb));
    this.current = next;
  }

  get byPort(): ReadonlyMap<string, PortAssumptions> {
    return this.current;
  }
}
