/**
 * Pure netlink framing: nlmsghdr, nlattr (flat and nested), NLMSG_ERROR/ACK, and the answer to
 * one request gathered from its datagrams (ReplyCollector).
 *
 * Netlink integers are in host byte order (include/uapi/linux/netlink.h); messages and
 * attributes are padded to 4 bytes (NLMSG_ALIGN, NLA_ALIGN) and their length fields exclude
 * the trailing padding.
 */
import { endianness } from 'node:os';
import {
  NLA_F_NESTED,
  NLA_HDRLEN,
  NLA_TYPE_MASK,
  NLMSG_ERROR,
  NLMSG_HDRLEN,
  NLM_F_ACK_TLVS,
  NLM_F_CAPPED,
  NLMSGERR_ATTR_MSG,
} from './constants.js';
import { endsAnswer } from '../../reads/netlink-answer.js';

const LE = endianness() === 'LE';

export class NetlinkDecodeError extends Error {
  override readonly name = 'NetlinkDecodeError';
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(`${message} (at byte ${offset})`);
  }
}

export interface NlHeader {
  readonly type: number;
  readonly flags: number;
  readonly seq: number;
  readonly pid: number;
}

export interface NlMessage extends NlHeader {
  /** Bytes after the 16-byte header, up to nlmsg_len. */
  readonly payload: Uint8Array;
}

export interface NlAttr {
  /** Type with NLA_F_NESTED / NLA_F_NET_BYTEORDER masked off. */
  readonly type: number;
  readonly nested: boolean;
  readonly payload: Uint8Array;
}

const UTF8 = new TextDecoder();

function align4(n: number): number {
  return (n + 3) & ~3;
}

function view(b: Uint8Array): DataView {
  return new DataView(b.buffer, b.byteOffset, b.byteLength);
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const total = parts.reduce((n, p) => n + p.length, 0);
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

// ---------------------------------------------------------------- encoding

/** One attribute, padded to 4 bytes; nla_len counts header + value, not the padding. */
export function encodeAttr(type: number, value: Uint8Array, nested = false): Uint8Array {
  const len = NLA_HDRLEN + value.length;
  const out = new Uint8Array(align4(len));
  const dv = view(out);
  dv.setUint16(0, len, LE);
  dv.setUint16(2, nested ? type | NLA_F_NESTED : type, LE);
  out.set(value, NLA_HDRLEN);
  return out;
}

export function attrU32(type: number, value: number): Uint8Array {
  const v = new Uint8Array(4);
  view(v).setUint32(0, value, LE);
  return encodeAttr(type, v);
}

export function attrU64(type: number, value: bigint): Uint8Array {
  const v = new Uint8Array(8);
  view(v).setBigUint64(0, value, LE);
  return encodeAttr(type, v);
}

/** NUL-terminated, as nla_put_string() writes it. */
export function attrString(type: number, value: string): Uint8Array {
  const bytes = new TextEncoder().encode(value);
  const v = new Uint8Array(bytes.length + 1);
  v.set(bytes);
  return encodeAttr(type, v);
}

/** A nested attribute with NLA_F_NESTED set, as nla_nest_start() does. */
export function attrNested(type: number, children: readonly Uint8Array[]): Uint8Array {
  return encodeAttr(type, concat(children), true);
}

export function encodeMessage(header: NlHeader, attrs: readonly Uint8Array[]): Uint8Array {
  const body = concat(attrs);
  const len = NLMSG_HDRLEN + body.length;
  const out = new Uint8Array(align4(len));
  const dv = view(out);
  dv.setUint32(0, len, LE);
  dv.setUint16(4, header.type, LE);
  dv.setUint16(6, header.flags, LE);
  dv.setUint32(8, header.seq, LE);
  dv.setUint32(12, header.pid, LE);
  out.set(body, NLMSG_HDRLEN);
  return out;
}

// ---------------------------------------------------------------- decoding

/** Splits one datagram into its messages; throws NetlinkDecodeError on bad lengths. */
export function decodeMessages(buf: Uint8Array): NlMessage[] {
  const dv = view(buf);
  const out: NlMessage[] = [];
  let at = 0;
  while (at + NLMSG_HDRLEN <= buf.length) {
    const len = dv.getUint32(at, LE);
    if (len < NLMSG_HDRLEN || at + len > buf.length) {
      throw new NetlinkDecodeError(`bad nlmsg_len ${len} in ${buf.length}-byte datagram`, at);
    }
    out.push({
      type: dv.getUint16(at + 4, LE),
      flags: dv.getUint16(at + 6, LE),
      seq: dv.getUint32(at + 8, LE),
      pid: dv.getUint32(at + 12, LE),
      payload: buf.subarray(at + NLMSG_HDRLEN, at + len),
    });
    at += align4(len);
  }
  return out;
}

/** Attributes packed in `buf` (a message payload after any family header, or a nest). */
export function decodeAttrs(buf: Uint8Array): NlAttr[] {
  const dv = view(buf);
  const out: NlAttr[] = [];
  let at = 0;
  while (at + NLA_HDRLEN <= buf.length) {
    const len = dv.getUint16(at, LE);
    if (len < NLA_HDRLEN || at + len > buf.length) {
      throw new NetlinkDecodeError(`bad nla_len ${len} in ${buf.length}-byte attribute block`, at);
    }
    const rawType = dv.getUint16(at + 2, LE);
    out.push({
      type: rawType & NLA_TYPE_MASK,
      nested: (rawType & NLA_F_NESTED) !== 0,
      payload: buf.subarray(at + NLA_HDRLEN, at + len),
    });
    at += align4(len);
  }
  return out;
}

export function attrAsU32(a: NlAttr): number {
  if (a.payload.length !== 4) {
    throw new NetlinkDecodeError(`attribute ${a.type}: expected 4-byte u32, got ${a.payload.length}`, 0);
  }
  return view(a.payload).getUint32(0, LE);
}

export function attrU8(type: number, value: number): Uint8Array {
  return encodeAttr(type, Uint8Array.of(value));
}

/** u64 attribute; also accepts a u32 (some producers shrink small values). */
export function attrAsU64(a: NlAttr): bigint {
  if (a.payload.length === 8) return view(a.payload).getBigUint64(0, LE);
  if (a.payload.length === 4) return BigInt(view(a.payload).getUint32(0, LE));
  throw new NetlinkDecodeError(`attribute ${a.type}: expected 8-byte u64, got ${a.payload.length}`, 0);
}

/** String attribute up to its first NUL (nla_put_string includes the terminator). */
export function attrAsString(a: NlAttr): string {
  const nul = a.payload.indexOf(0);
  const bytes = nul >= 0 ? a.payload.subarray(0, nul) : a.payload;
  return UTF8.decode(bytes);
}

/**
 * Walks the attributes of `dv` in [from, to) without an object per attribute (the restrack dumps
 * hold some twenty per QP): `visit(type, at, len)` gets each one's type (flags masked) and its
 * payload's offset and length. Throws where decodeAttrs() would.
 */
export function scanAttrs(dv: DataView, from: number, to: number, visit: (type: number, at: number, len: number) => void): void {
  let at = from;
  while (at + NLA_HDRLEN <= to) {
    const len = dv.getUint16(at, LE);
    if (len < NLA_HDRLEN || at + len > to) {
      throw new NetlinkDecodeError(`bad nla_len ${len} in ${to - from}-byte attribute block`, at - from);
    }
    visit(dv.getUint16(at + 2, LE) & NLA_TYPE_MASK, at + NLA_HDRLEN, len - NLA_HDRLEN);
    at += align4(len);
  }
}

/** A u32 attribute's payload at `at` (scanAttrs), checked as attrAsU32() checks. */
export function u32At(dv: DataView, type: number, at: number, len: number): number {
  if (len !== 4) throw new NetlinkDecodeError(`attribute ${type}: expected 4-byte u32, got ${len}`, 0);
  return dv.getUint32(at, LE);
}

/** A u8 attribute's payload at `at` (scanAttrs: nla_put_u8, one byte padded to 4 on the wire). */
export function u8At(dv: DataView, type: number, at: number, len: number): number {
  if (len !== 1) throw new NetlinkDecodeError(`attribute ${type}: expected 1-byte u8, got ${len}`, 0);
  return dv.getUint8(at);
}

/** A string attribute's payload at `at` (scanAttrs), up to its first NUL. */
export function stringAt(dv: DataView, at: number, len: number): string {
  const bytes = new Uint8Array(dv.buffer, dv.byteOffset + at, len);
  const nul = bytes.indexOf(0);
  return UTF8.decode(nul >= 0 ? bytes.subarray(0, nul) : bytes);
}

/** A message payload's view (one per message, for scanAttrs). */
export const payloadView = (m: NlMessage): DataView => view(m.payload);

export function findAttr(attrs: readonly NlAttr[], type: number): NlAttr | undefined {
  return attrs.find((a) => a.type === type);
}

// ---------------------------------------------------------------- errors and acks

export interface NlErrorInfo {
  /** Positive errno; 0 means a plain ACK. */
  readonly errno: number;
  /** The kernel's extended-ack text (NLMSGERR_ATTR_MSG), when it sent one. */
  readonly extAck: string | undefined;
  /** Sequence number of the request being answered. */
  readonly requestSeq: number | undefined;
}

/**
 * struct nlmsgerr: int error (negative errno, 0 = ACK), then the offending request's
 * nlmsghdr (only the header if NLM_F_CAPPED, else the whole request), then TLVs if
 * NLM_F_ACK_TLVS (include/uapi/linux/netlink.h).
 */
export function decodeError(msg: NlMessage): NlErrorInfo {
  if (msg.type !== NLMSG_ERROR) throw new NetlinkDecodeError(`type ${msg.type} is not NLMSG_ERROR`, 0);
  if (msg.payload.length < 4) throw new NetlinkDecodeError('NLMSG_ERROR shorter than its error field', 0);
  const dv = view(msg.payload);
  const errno = 0 - dv.getInt32(0, LE);
  if (msg.payload.length < 4 + NLMSG_HDRLEN) return { errno, extAck: undefined, requestSeq: undefined };
  const requestLen = dv.getUint32(4, LE);
  const requestSeq = dv.getUint32(4 + 8, LE);
  return { errno, extAck: extAckMessage(msg, requestLen), requestSeq };
}

function extAckMessage(msg: NlMessage, requestLen: number): string | undefined {
  if ((msg.flags & NLM_F_ACK_TLVS) === 0) return undefined;
  const echoed = (msg.flags & NLM_F_CAPPED) !== 0 ? NLMSG_HDRLEN : align4(requestLen);
  const tlvStart = 4 + echoed;
  if (tlvStart >= msg.payload.length) return undefined;
  const text = findAttr(decodeAttrs(msg.payload.subarray(tlvStart)), NLMSGERR_ATTR_MSG);
  return text === undefined ? undefined : attrAsString(text);
}

/** Host-order int32 inside a payload (e.g. NLMSG_DONE's status). */
function readI32(b: Uint8Array, at: number): number {
  return view(b).getInt32(at, LE);
}

function isError(msg: NlMessage): boolean {
  return msg.type === NLMSG_ERROR;
}

export function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

/**
 * Gathers the answer to one request from the datagrams that follow it, to its end
 * (reads/netlink-answer.ts endsAnswer: the one rule): an NLMSG_ERROR is an ACK (errno 0) or the
 * request's error; an NLMSG_DONE's int payload is negative when the dump failed. Messages for
 * other sequence numbers (late answers to a request that timed out) are ignored.
 */
export class ReplyCollector {
  readonly data: NlMessage[] = [];
  error: NlErrorInfo | undefined;
  done = false;

  constructor(readonly seq: number) {}

  feed(messages: readonly NlMessage[]): void {
    for (const m of messages) {
      if (this.done) return;
      if (m.seq !== this.seq) continue;
      if (!endsAnswer(m.type, m.seq, this.seq)) this.data.push(m);
      else if (isError(m)) this.finishWithError(decodeError(m));
      else this.finishDump(m);
    }
  }

  private finishWithError(info: NlErrorInfo): void {
    this.done = true;
    if (info.errno !== 0) this.error = info;
  }

  private finishDump(m: NlMessage): void {
    this.done = true;
    if (m.payload.length < 4) return;
    const status = readI32(m.payload, 0);
    if (status < 0) this.error = { errno: -status, extAck: undefined, requestSeq: this.seq };
  }
}
