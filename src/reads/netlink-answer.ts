/**
 * When a netlink answer is complete: the one rule of the netlinkTransact op (ops.ts), kept by the
 * direct executor (direct.ts) and by the request collector (sources/netlink/codec.ts), and in C
 * by the native reader (native/reader/ops.c op_nl_transact). A request sent with
 * NLM_F_ACK ends with NLMSG_ERROR (errno 0 is the ACK), a dump with NLMSG_DONE or NLMSG_ERROR,
 * each carrying the request's seq; messages of other seqs (late answers to a request given up
 * earlier) end nothing.
 */
import { endianness } from 'node:os';

/** include/uapi/linux/netlink.h */
export const NLMSG_ERROR = 2;
const NLMSG_DONE = 3;
/** struct nlmsghdr: len u32, type u16, flags u16, seq u32, pid u32 (host order). */
export const NLMSG_HDRLEN = 16;

/** Whether a message of `type` and `seq` ends the answer to request `want`. */
export const endsAnswer = (type: number, seq: number, want: number): boolean => seq === want && (type === NLMSG_ERROR || type === NLMSG_DONE);

const LE = endianness() === 'LE';

/** Whether a datagram holds the message that ends the answer to request `want` (headers read in place, nothing decoded). */
export function datagramEndsAnswer(dg: Uint8Array, want: number): boolean {
  const v = new DataView(dg.buffer, dg.byteOffset, dg.byteLength);
  for (let m = 0; m + NLMSG_HDRLEN <= dg.byteLength; ) {
    const len = v.getUint32(m, LE);
    if (len < NLMSG_HDRLEN) return false;
    if (endsAnswer(v.getUint16(m + 4, LE), v.getUint32(m + 8, LE), want)) return true;
    m += (len + 3) & ~3;
  }
  return false;
}
