/**
 * Host assumptions the model relies on, per port: is the RoCE netdev a VLAN (4 more bytes per
 * frame than an untagged `l2HeaderBytes` of 14), and is PFC enabled where the kernel says so
 * (DCB netlink). Read-only; refreshed on a slow timer by the daemon (on the bounded reader) and
 * once by `check`.
 */
import type { DcbReader, PfcState } from '../sources/dcb/reader.js';
import { netdevLinksReads } from '../sources/netdev-links.js';
import { type PortAttributes, portKey } from '../sources/types.js';
import type { BoundedReads } from '../reads/bounded.js';
import { type ReadProgram, withoutReads } from '../reads/program.js';
import { readErrorText } from '../reads/errors.js';

export interface PortAssumptions {
  readonly netdev: string | undefined;
  /** Undefined when unknown (no netdev, or sysfs says nothing). */
  readonly vlan: boolean | undefined;
  /** The device under a VLAN netdev (`lower_*` link), where DCB lives. */
  readonly lowerNetdev: string | undefined;
  readonly pfc: PfcState;
}

export function assessPortReads(attrs: PortAttributes, sysfsRoot: string, dcb: DcbReader | undefined): ReadProgram<PortAssumptions> {
  const netdev = attrs.netdev;
  if (netdev === undefined) {
    return withoutReads({ netdev, vlan: undefined, lowerNetdev: undefined, pfc: { known: false, netdev, reason: 'the port has no netdev (InfiniBand link layer)' } });
  }
  return assessNetdev(netdev, sysfsRoot, dcb);
}

function* assessNetdev(netdev: string, sysfsRoot: string, dcb: DcbReader | undefined): ReadProgram<PortAssumptions> {
  const { vlan, lower: linked } = yield* netdevLinksReads(sysfsRoot, netdev);
  const lower = vlan ? linked : undefined;
  const dcbDev = lower ?? netdev;
  const pfc: PfcState = dcb
    ? yield* dcb.pfcReads(dcbDev)
    : { known: false, netdev: dcbDev, reason: 'DCB netlink is not read with a fake --path.sysfs or without netlink' };
  return { netdev, vlan, lowerNetdev: lower, pfc };
}

/** The reader's group of a port's assumption reads: a hung DCB read never stalls the port's counters. */
const assumptionsGroup = (attrs: PortAttributes): string => `assumptions ${portKey(attrs)}`;

/** Every port's assumptions, kept until the next refresh. */
export class HostAssumptions {
  private current = new Map<string, PortAssumptions>();

  constructor(
    private readonly sysfsRoot: string,
    private readonly dcb: DcbReader | undefined,
  ) {}

  /**
   * Reads every port's assumptions on `reader`. A port whose reads block (or were not run) keeps
   * what the last refresh found; with nothing found yet, its PFC state is unknown and says why.
   */
  async refresh(ports: Iterable<PortAttributes>, reader: BoundedReads): Promise<void> {
    const list = [...ports];
    const outcomes = await reader.run(list.map((attrs) => ({ group: assumptionsGroup(attrs), program: assessPortReads(attrs, this.sysfsRoot, this.dcb) })));
    const next = new Map<string, PortAssumptions>();
    list.forEach((attrs, i) => {
      const key = portKey(attrs);
      const o = outcomes[i]!;
      if (o.kind === 'done') next.set(key, o.value);
      else {
        const error = o.kind === 'deferred' ? 'not read yet' : readErrorText(o.error);
        next.set(key, this.current.get(key) ?? unread(attrs.netdev, error));
      }
    });
    this.current = next;
  }

  get byPort(): ReadonlyMap<string, PortAssumptions> {
    return this.current;
  }
}

function unread(netdev: string | undefined, error: string): PortAssumptions {
  return { netdev, vlan: undefined, lowerNetdev: undefined, pfc: { known: false, netdev, reason: `the host's DCB and VLAN state was not read: ${error}` } };
}
