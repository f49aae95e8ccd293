/**
 * A transport that answers the restrack requests with dumps recorded in the soft-RoCE guest
 * (test/fixtures/netlink/recorded/), unchanged but for nlmsg_seq: the device list of
 * get-dump-two-rxe.hex (rxe0 index 3, rxe1 index 4), each device's QP and cm_id dump by name.
 */
import { type NetlinkAnswer, type NetlinkTransport, ReplyCollector, decodeAttrs, decodeMessages, rdmaNlType } from '../../../src/sources/netlink/index.js';
import { datagrams, withSeq } from './kernel-peer.js';

/** `dumps`: per device name, the recorded files' stem (`guest-perftest` for guest-perftest-qp-rxe0.hex). */
export function recordedKernel(stem: string): NetlinkTransport {
  let seq = 100;
  const names: Record<number, string> = { 3: 'rxe0', 4: 'rxe1' };
  const answer = (dgs: readonly Uint8Array[], s: number): NetlinkAnswer => {
    const raw = withSeq(dgs, s);
    const c = new ReplyCollector(s);
    for (const d of raw) c.feed(decodeMessages(d));
    return { messages: c.data, raw };
  };
  return {
    nextSeq: () => ++seq,
    request: (_what, bytes, s) => {
      const [req] = decodeMessages(bytes);
      if (req!.type === rdmaNlType(1)) return answer([...datagrams('get-dump-two-rxe.hex'), ...datagrams('get-dump-done.hex')], s);
      const device = names[Buffer.from(decodeAttrs(req!.payload)[0]!.payload).readUInt32LE(0)]!;
      const what = req!.type === rdmaNlType(10) ? 'qp' : 'cm-id';
      return answer(datagrams(`recorded/${stem}-${what}-${device}.hex`), s);
    },
    close: () => undefined,
  };
}
