/**
 * DCB netlink answers for tests: the captured EOPNOTSUPP of a netdev without DCB, and answers
 * of a NIC with DCB built as net/dcb/dcbnl.c dcbnl_ieee_fill() builds them (DCB_ATTR_IFNAME,
 * a DCB_ATTR_IEEE nest without NLA_F_NESTED holding DCB_ATTR_IEEE_PFC, then DCB_ATTR_DCBX).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NetlinkDecodeError, attrString, decodeMessages, encodeAttr, encodeMessage } from '../../src/sources/netlink/codec.js';
import { ReplyCollector } from '../../src/sources/netlink/codec.js';
import { NetlinkRequestError, errnoName, type NetlinkAnswer } from '../../src/sources/netlink/index.js';
import type { NetlinkTransport } from '../../src/sources/netlink/source.js';
import { DcbNetlinkReader } from '../../src/sources/dcb/reader.js';
import { DCB_ATTR_DCBX, DCB_ATTR_IEEE, DCB_ATTR_IEEE_PFC, DCB_ATTR_IFNAME, DCB_CMD_IEEE_GET, RTM_GETDCB } from '../../src/sources/dcb/constants.js';

const DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'dcb');
export const CAPTURED_SEQ = 0x1234;

export interface CapturedDcb {
  readonly ifname: string;
  readonly request: string;
  readonly answer: string;
}
export const capturedEopnotsupp = (): CapturedDcb =>
  JSON.parse(fs.readFileSync(path.join(DIR, 'ieee-get-eopnotsupp-virtio_net.json'), 'utf8')) as CapturedDcb;

/** struct ieee_pfc (136 bytes) with pfc_cap, pfc_en and per-priority request/indication counts. */
export function ieeePfc(pfcCap: number, pfcEn: number, requests: readonly number[] = [], indications: readonly number[] = []): Uint8Array {
  const b = new Uint8Array(136);
  const dv = new DataView(b.buffer);
  b[0] = pfcCap;
  b[1] = pfcEn;
  for (let i = 0; i < 8; i++) {
    dv.setBigUint64(8 + i * 8, BigInt(requests[i] ?? 0), true);
    dv.setBigUint64(72 + i * 8, BigInt(indications[i] ?? 0), true);
  }
  return b;
}

/** The RTM_GETDCB answer dcbnl_ieee_fill() builds, followed by the ACK NLM_F_ACK asks for. */
export function ieeeGetAnswer(seq: number, ifname: string, pfc: Uint8Array | undefined, dcbx: number | undefined): Uint8Array[] {
  const dcbmsg = Uint8Array.of(0, DCB_CMD_IEEE_GET, 0, 0);
  const ets = encodeAttr(1, new Uint8Array(8)); // a DCB_ATTR_IEEE_ETS stand-in the decoder must skip
  const nest = encodeAttr(DCB_ATTR_IEEE, Buffer.concat([ets, ...(pfc ? [encodeAttr(DCB_ATTR_IEEE_PFC, pfc)] : [])]));
  const attrs = [dcbmsg, attrString(DCB_ATTR_IFNAME, ifname), nest, ...(dcbx === undefined ? [] : [encodeAttr(DCB_ATTR_DCBX, Uint8Array.of(dcbx))])];
  const reply = encodeMessage({ type: RTM_GETDCB, flags: 0, seq, pid: 4242 }, attrs);
  const ack = new Uint8Array(36);
  const dv = new DataView(ack.buffer);
  dv.setUint32(0, 36, true);
  dv.setUint16(4, 2, true); // NLMSG_ERROR
  dv.setUint32(8, seq, true);
  return [reply, ack];
}

/** A transport answering each request with the datagrams `answers(ifname, seq)` gives, as the socket would. */
export class DatagramTransport implements NetlinkTransport {
  private seq = CAPTURED_SEQ - 1;
  readonly requests: Uint8Array[] = [];
  constructor(private readonly answers: (request: Uint8Array, seq: number) => Uint8Array[]) {}
  nextSeq(): number {
    return ++this.seq;
  }
  request(what: string, bytes: Uint8Array, seq: number): NetlinkAnswer {
    this.requests.push(bytes);
    const raw = this.answers(bytes, seq);
    const collector = new ReplyCollector(seq);
    for (const d of raw) collector.feed(decodeMessages(d));
    if (!collector.done) throw new NetlinkDecodeError('answer did not end', 0);
    if (collector.error) throw new NetlinkRequestError(what, collector.error.errno, undefined, `kernel answered ${errnoName(collector.error.errno)}`);
    return { messages: collector.data, raw };
  }
  close(): void {}
}

/** A DCB reader over a kernel whose netdevs have the given PFC state (absent: EOPNOTSUPP as captured). */
export function dcbReader(netdevs: Record<string, { pfcEn: number; pfcCap?: number; dcbx?: number } | 'eopnotsupp'>): DcbNetlinkReader {
  const captured = capturedEopnotsupp();
  return new DcbNetlinkReader(new DatagramTransport((request, seq) => {
    const ifname = Buffer.from(request.subarray(24)).toString('utf8').replace(/\0.*$/s, '');
    const state = netdevs[ifname] ?? 'eopnotsupp';
    if (state === 'eopnotsupp') {
      const answer = Uint8Array.from(Buffer.from(captured.answer, 'hex'));
      new DataView(answer.buffer).setUint32(8, seq, true); // the captured answer was to seq 0x1234
      return [answer];
    }
    return ieeeGetAnswer(seq, ifname, ieeePfc(state.pfcCap ?? 8, state.pfcEn), state.dcbx);
  }));
}
