/**
 * Reads a netdev's PFC configuration over DCB netlink (read-only: RTM_GETDCB only), as a read
 * program: the daemon runs it on the bounded reader (src/reads: one netlinkTransact op), `check`
 * and tests here and now.
 *
 * The answer is "unknown" (never an error for the caller) when the kernel or the netdev has no
 * DCB: veth, virtio_net and most software devices answer EOPNOTSUPP; a netdev that vanished
 * answers ENODEV.
 */
import { ERRNO, errnoName } from '../../ffi/errno.js';
import { NetlinkDecodeError } from '../netlink/codec.js';
import { type NetlinkProtocol, NetlinkRequestError, NetlinkSocket } from '../netlink/socket.js';
import { type NetlinkTransport, requestOf } from '../netlink/source.js';
import { type ReadProgram } from '../../reads/program.js';
import { NETLINK_ROUTE } from './constants.js';
import { buildIeeeGetRequest, decodeIeeeGetReply, pfcEnabledPriorities } from './codec.js';

/** rtnetlink (include/uapi/linux/netlink.h NETLINK_ROUTE), which carries DCB (RTM_GETDCB). */
export const ROUTE_NETLINK: NetlinkProtocol = {
  number: NETLINK_ROUTE,
  name: 'NETLINK_ROUTE',
  title: 'route netlink',
  missing: 'this kernel has no rtnetlink',
};

export type PfcState =
  | {
      readonly known: true;
      /** The netdev DCB answered for (the VLAN's lower device, for a VLAN). */
      readonly netdev: string;
      /** PFC enabled, per priority 0..7. */
      readonly enabled: readonly boolean[];
      readonly pfcCap: number;
      readonly dcbx: readonly string[] | undefined;
    }
  | { readonly known: false; readonly netdev: string | undefined; readonly reason: string };

export interface DcbReader {
  pfcReads(ifname: string): ReadProgram<PfcState>;
  close(): void;
}

export class DcbNetlinkReader implements DcbReader {
  constructor(private readonly transport: NetlinkTransport) {}

  /** Opens a NETLINK_ROUTE socket; undefined (with why) where netlink itself is unavailable. */
  static open(timeoutMs = 500): { reader: DcbNetlinkReader } | { error: string } {
    const opened = NetlinkSocket.open(ROUTE_NETLINK, { timeoutMs });
    return opened.ok ? { reader: new DcbNetlinkReader(opened.socket) } : { error: opened.error.message };
  }

  *pfcReads(ifname: string): ReadProgram<PfcState> {
    const seq = this.transport.nextSeq();
    try {
      const answer = yield* requestOf(this.transport, `RTM_GETDCB DCB_CMD_IEEE_GET ${ifname}`, buildIeeeGetRequest(seq, ifname), seq);
      const first = answer.messages[0];
      if (first === undefined) return { known: false, netdev: ifname, reason: 'the kernel sent no DCB answer' };
      const reply = decodeIeeeGetReply(first);
      if (reply.pfc === undefined) return { known: false, netdev: ifname, reason: `${ifname} has DCB but reports no IEEE PFC configuration` };
      return { known: true, netdev: ifname, enabled: pfcEnabledPriorities(reply.pfc.pfcEn), pfcCap: reply.pfc.pfcCap, dcbx: reply.dcbx };
    } catch (e) {
      if (e instanceof NetlinkRequestError) return { known: false, netdev: ifname, reason: unknownReason(ifname, e) };
      if (e instanceof NetlinkDecodeError) return { known: false, netdev: ifname, reason: `malformed DCB answer for ${ifname}: ${e.message}` };
      throw e;
    }
  }

  close(): void {
    this.transport.close();
  }
}

function unknownReason(ifname: string, e: NetlinkRequestError): string {
  if (e.errno === ERRNO.EOPNOTSUPP) return `${ifname} has no DCB support (the kernel answered EOPNOTSUPP)`;
  if (e.errno === ERRNO.ENODEV) return `${ifname} does not exist (ENODEV)`;
  return `DCB query for ${ifname} failed: ${e.errno === undefined ? e.message : errnoName(e.errno)}`;
}
