/**
 * An in-memory kernel for the restrack dumps: answers RDMA_NLDEV_CMD_GET, RES_QP_GET and
 * RES_CM_ID_GET requests from a table the test changes between ticks, encoded with the project's
 * own encoder in the kernel's layout (gen_restrack.py pins that layout byte for byte against the
 * decoder; this one feeds the layers above it). Synchronous request() only: the source runs it in
 * its read program wherever the real socket's netlinkTransact op would go.
 */
import {
  type NetlinkAnswer,
  type NetlinkTransport,
  NetlinkRequestError,
  attrNested,
  attrString,
  attrU32,
  attrU8,
  decodeAttrs,
  decodeMessages,
  encodeAttr,
  encodeMessage,
  rdmaNlType,
} from '../../../src/sources/netlink/index.js';

export interface FakeQp {
  lqpn: number;
  sqPsn: number;
  rqPsn?: number;
  rqpn?: number;
  type?: number;
  state?: number;
  port?: number;
  pid?: number;
}

export interface FakeCmId {
  lqpn: number;
  src: [string, number];
  dst: [string, number];
  port?: number;
  pid?: number;
}

function sockaddrIn(addr: string, port: number): Uint8Array {
  const b = Buffer.alloc(128);
  b.writeUInt16LE(2, 0);
  b.writeUInt16BE(port, 2);
  addr.split('.').forEach((o, i) => b.writeUInt8(Number(o), 4 + i));
  return new Uint8Array(b);
}

export class FakeRestrackKernel {
  readonly devices: { index: number; name: string }[] = [];
  readonly qps = new Map<string, FakeQp[]>();
  readonly cmIds = new Map<string, FakeCmId[]>();
  requests = 0;
  /** Called as a device's QP dump is answered: what moves while the kernel reads its tables. */
  onQpDump: ((device: string) => void) | undefined;
  private seq = 100;

  device(index: number, name: string, qps: FakeQp[], cmIds: FakeCmId[] = []): void {
    this.devices.push({ index, name });
    this.qps.set(name, qps);
    this.cmIds.set(name, cmIds);
  }

  transport(): NetlinkTransport {
    return {
      nextSeq: () => ++this.seq,
      request: (what, bytes, seq) => this.withoutReads(what, bytes, seq),
      close: () => undefined,
    };
  }

  private withoutReads(what: string, bytes: Uint8Array, seq: number): NetlinkAnswer {
    this.requests++;
    const [req] = decodeMessages(bytes);
    const hdr = { flags: 2, seq, pid: 1 };
    const done = encodeMessage({ type: 3, ...hdr }, [new Uint8Array(4)]);
    const msgs = (parts: Uint8Array[][]): NetlinkAnswer => {
      const raw = [...parts.map((p) => encodeMessage({ type: req!.type, ...hdr }, p)), done];
      return { messages: raw.slice(0, -1).map((r) => decodeMessages(r)[0]!), raw };
    };
    if (req!.type === rdmaNlType(1)) return msgs(this.devices.map((d) => [attrU32(1, d.index), attrString(2, d.name), attrU32(3, 1)]));
    const index = Buffer.from(decodeAttrs(req!.payload)[0]!.payload).readUInt32LE(0);
    const dev = this.devices.find((d) => d.index === index);
    if (!dev) throw new NetlinkRequestError(what, 22, undefined, 'kernel answered EINVAL');
    const head = [attrU32(1, dev.index), attrString(2, dev.name)];
    if (req!.type === rdmaNlType(10)) {
      this.onQpDump?.(dev.name);
      const entries = (this.qps.get(dev.name) ?? []).map((q) => attrNested(20, [
        attrU32(3, q.port ?? 1), attrU32(21, q.lqpn), attrU32(60, 1), ...(q.pid === undefined ? [] : [attrU32(28, q.pid)]),
        attrU32(22, q.rqpn ?? 0), attrU32(23, q.rqPsn ?? 0), attrU32(24, q.sqPsn), attrU8(25, 0), attrU8(26, q.type ?? 2), attrU8(27, q.state ?? 3),
      ]));
      return msgs(filled(entries).map((some) => [...head, attrNested(19, some)]));
    }
    const entries = (this.cmIds.get(dev.name) ?? []).map((c, i) => attrNested(31, [
      attrU32(3, c.port ?? 1), attrU32(21, c.lqpn), attrU8(26, 2), attrU32(32, 0x106), attrU8(27, 5),
      encodeAttr(33, sockaddrIn(...c.src)), encodeAttr(34, sockaddrIn(...c.dst)), attrU32(63, i + 1), ...(c.pid === undefined ? [] : [attrU32(28, c.pid)]),
    ]));
    return msgs(filled(entries).map((some) => [...head, attrNested(30, some)]));
  }
}

/** Entries per message as the kernel fills its dump skbs (32 KiB less their overhead): none for no entry. */
function filled(entries: readonly Uint8Array[], room = 32768 - 320 - 64): Uint8Array[][] {
  const out: Uint8Array[][] = [];
  let size = room;
  for (const e of entries) {
    if (size + e.length > room) out.push([]), (size = 0);
    out[out.length - 1]!.push(e);
    size += e.length;
  }
  return out;
}
