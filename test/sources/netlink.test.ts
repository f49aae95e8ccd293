import { existsSync, readFileSync } from 'node:fs';
import { describe, it, expect } from 'vitest';
import {
  NLA_F_NESTED,
  NLMSG_ERROR,
  NetlinkCounterSource,
  NetlinkDecodeError,
  NetlinkPortCounterSet,
  NetlinkRequestError,
  NetlinkUnavailable,
  type NetlinkAnswer,
  type NetlinkTransport,
  type NlMessage,
  NetlinkSocket,
  RDMA_NETLINK,
  ReplyCollector,
  attrNested,
  attrString,
  attrU32,
  attrU64,
  buildDeviceDumpRequest,
  buildStatGetRequest,
  classifySocketErrno,
  decodeAttrs,
  decodeDeviceInfo,
  decodeError,
  decodeMessages,
  decodeStatGetReply,
  encodeMessage,
  hex,
  netlinkCounterSpec,
  rdmaNlType,
} from '../../src/sources/netlink/index.js';
import { BoundedReads } from '../../src/reads/bounded.js';
import type { ReadProgram } from '../../src/reads/program.js';
import { ROUTE_NETLINK } from '../../src/sources/dcb/reader.js';
import { runSync } from '../../src/reads/program.js';
import { valuesNow } from './values-now.js';
import { RXE0_PORT_1 } from '../fixtures/ports.js';

/** Fixtures: see test/fixtures/netlink/gen.py for how each is laid out and why. */
function fixture(name: string): Uint8Array {
  const text = readFileSync(new URL(`../fixtures/netlink/${name}`, import.meta.url), 'utf8');
  return Uint8Array.from(Buffer.from(text.trim(), 'hex'));
}

const SEQ = 0x11223344;
const PORTID = 0x2a3b;

function only(messages: NlMessage[]): NlMessage {
  expect(messages).toHaveLength(1);
  return messages[0]!;
}

describe('encoding', () => {
  it('builds the STAT_GET request iproute2 sends for `rdma statistic show link rxe0/1`', () => {
    const req = buildStatGetRequest(SEQ, 3, 1);
    expect(hex(req)).toBe(hex(fixture('stat-get-request-rxe0-1.hex')));
    // len 32, type RDMA_NL_GET_TYPE(5, 17) = 5137, flags REQUEST|ACK, seq, pid 0,
    // then DEV_INDEX (1) = 3 and PORT_INDEX (3) = 1 as u32 attributes.
    expect(hex(req)).toBe('20000000' + '1114' + '0500' + '44332211' + '00000000' + '0800010003000000' + '0800030001000000');
  });

  it('builds the CMD_GET dump request', () => {
    expect(hex(buildDeviceDumpRequest(7))).toBe('10000000' + '0114' + '0503' + '07000000' + '00000000');
    expect(rdmaNlType(1)).toBe(5121);
  });

  it('pads attributes to 4 bytes but excludes padding from nla_len', () => {
    expect(hex(attrString(2, 'rxe0'))).toBe('0900020072786530' + '00000000');
    expect(hex(attrU64(83, 200n))).toBe('0c005300c800000000000000');
    expect(hex(attrNested(80, [attrU32(3, 1)]))).toBe('0c005080' + '0800030001000000');
  });

  it('counts padded attributes in nlmsg_len, as nla_put() reserves them', () => {
    const m = encodeMessage({ type: 3, flags: 2, seq: 1, pid: 9 }, [attrString(2, 'a')]);
    expect(hex(m)).toBe('18000000' + '0300' + '0200' + '01000000' + '09000000' + '0600020061000000');
    expect(m.length).toBe(24);
  });
});

describe('decoding the kernel answer to STAT_GET', () => {
  it('decodes every rxe hw counter with exact u64 values', () => {
    const msg = only(decodeMessages(fixture('stat-get-reply-rxe0-1.hex')));
    expect([msg.type, msg.flags, msg.seq, msg.pid]).toEqual([5137, 0, SEQ, PORTID]);
    const reply = decodeStatGetReply(msg);
    expect(reply.devIndex).toBe(3);
    expect(reply.devName).toBe('rxe0');
    expect(reply.port).toBe(1);
    expect(reply.counters).toEqual([
      { name: 'sent_pkts', value: 200n },
      { name: 'rcvd_pkts', value: 100n },
      { name: 'duplicate_request', value: 0n },
      { name: 'out_of_seq_request', value: 0n },
      { name: 'rcvd_rnr_err', value: 0n },
      { name: 'send_rnr_err', value: 0n },
      { name: 'rcvd_seq_err', value: 0n },
      { name: 'ack_deferred', value: 3n },
      { name: 'retry_exceeded_err', value: 0n },
      { name: 'retry_rnr_exceeded_err', value: 0n },
      { name: 'completer_retry_err', value: 0n },
      { name: 'send_err', value: 0n },
      { name: 'link_downed', value: 0n },
      { name: 'rdma_sends', value: 9007199254740993n },
      { name: 'rdma_recvs', value: 0n },
    ]);
  });

  it('marks nests and masks NLA_F_NESTED off the type', () => {
    const msg = only(decodeMessages(fixture('stat-get-reply-rxe0-1.hex')));
    const table = decodeAttrs(msg.payload).find((a) => a.type === 80);
    expect(table?.nested).toBe(true);
    expect(NLA_F_NESTED).toBe(0x8000);
    const entries = decodeAttrs(table!.payload);
    expect(entries).toHaveLength(15);
    expect(entries.every((e) => e.type === 81 && e.nested)).toBe(true);
  });

  it('skips the PAD attribute nla_put_u64_64bit inserts on some architectures', () => {
    const reply = decodeStatGetReply(only(decodeMessages(fixture('stat-get-reply-rxe0-1-pad.hex'))));
    expect(reply.counters).toEqual([
      { name: 'sent_pkts', value: 200n },
      { name: 'rcvd_pkts', value: 100n },
    ]);
  });

  it('decodes mlx5 optional counters once enabled', () => {
    const reply = decodeStatGetReply(only(decodeMessages(fixture('stat-get-reply-mlx5_0-1-optional.hex'))));
    expect([reply.devIndex, reply.devName, reply.port]).toEqual([0, 'mlx5_0', 1]);
    expect(reply.counters).toEqual([
      { name: 'out_of_buffer', value: 7n },
      { name: 'rdma_tx_bytes', value: 123456789012n },
      { name: 'rdma_tx_packets', value: 30000000n },
    ]);
  });

  it('rejects truncated or foreign messages', () => {
    const buf = fixture('stat-get-reply-rxe0-1.hex');
    expect(() => decodeMessages(buf.subarray(0, 100))).toThrow(NetlinkDecodeError);
    const ack = only(decodeMessages(fixture('ack-stat-get.hex')));
    expect(() => decodeStatGetReply(ack)).toThrow('message type 2, expected 5137');
    const noTable = encodeMessage({ type: 5137, flags: 0, seq: 1, pid: 0 }, [attrU32(1, 3)]);
    expect(() => decodeStatGetReply(only(decodeMessages(noTable)))).toThrow('reply lacks STAT_HWCOUNTERS');
  });
});

describe('ACK, errors and dumps', () => {
  it('decodes the ACK that NLM_F_ACK asks for', () => {
    const ack = only(decodeMessages(fixture('ack-stat-get.hex')));
    expect(ack.type).toBe(NLMSG_ERROR);
    expect(decodeError(ack)).toEqual({ errno: 0, extAck: undefined, requestSeq: SEQ });
  });

  it('decodes an error with its extended-ack text', () => {
    const err = only(decodeMessages(fixture('error-einval-stat-get.hex')));
    expect(decodeError(err)).toEqual({ errno: 22, extAck: 'Invalid port index', requestSeq: SEQ });
  });

  it('decodes the CMD_GET dump', () => {
    const devices = decodeMessages(fixture('get-dump-two-rxe.hex')).map(decodeDeviceInfo);
    expect(devices).toEqual([
      { index: 3, name: 'rxe0', lastPort: 1 },
      { index: 4, name: 'rxe1', lastPort: 1 },
    ]);
  });

  it('collects a doit answer up to its ACK', () => {
    const c = new ReplyCollector(SEQ);
    c.feed(decodeMessages(fixture('stat-get-reply-rxe0-1.hex')));
    expect(c.done).toBe(false);
    c.feed(decodeMessages(fixture('ack-stat-get.hex')));
    expect([c.done, c.data.length, c.error]).toEqual([true, 1, undefined]);
  });

  it('collects a dump up to NLMSG_DONE', () => {
    const c = new ReplyCollector(SEQ);
    c.feed(decodeMessages(fixture('get-dump-two-rxe.hex')));
    expect(c.done).toBe(false);
    c.feed(decodeMessages(fixture('get-dump-done.hex')));
    expect([c.done, c.data.length, c.error]).toEqual([true, 2, undefined]);
  });

  it('ends on an error and ignores answers to other requests', () => {
    const c = new ReplyCollector(SEQ + 1);
    c.feed(decodeMessages(fixture('stat-get-reply-rxe0-1.hex')));
    c.feed(decodeMessages(fixture('ack-stat-get.hex')));
    expect([c.done, c.data.length]).toEqual([false, 0]);
    const d = new ReplyCollector(SEQ);
    d.feed(decodeMessages(fixture('error-einval-stat-get.hex')));
    expect([d.done, d.error?.errno, d.error?.extAck]).toEqual([true, 22, 'Invalid port index']);
  });
});

describe('counter meanings', () => {
  it('maps rxe and mlx5 names and keeps unknown ones by name', () => {
    expect(netlinkCounterSpec('sent_pkts')).toEqual({
      name: 'sent_pkts',
      bits: 64,
      overflow: 'wrap',
      meaning: { direction: 'tx', quantity: 'packets', scale: 1 },
    });
    expect(netlinkCounterSpec('rcvd_pkts').meaning).toEqual({ direction: 'rx', quantity: 'packets', scale: 1 });
    expect(netlinkCounterSpec('rdma_rx_bytes').meaning).toEqual({ direction: 'rx', quantity: 'bytes', scale: 1, layer: 'l2' });
    expect(netlinkCounterSpec('rdma_tx_packets').meaning?.direction).toBe('tx');
    expect(netlinkCounterSpec('out_of_sequence')).toEqual({ name: 'out_of_sequence', bits: 64, overflow: 'wrap', meaning: undefined });
    expect(netlinkCounterSpec('toString').meaning).toBeUndefined();
  });
});

/** Answers requests from a script, checking each request's exact bytes. */
class ScriptedTransport implements NetlinkTransport {
  private seq = 100;
  readonly sent: string[] = [];
  closed = 0;
  constructor(private readonly answers: ((seq: number) => NetlinkAnswer | Error)[]) {}
  nextSeq(): number {
    return ++this.seq;
  }
  request(what: string, bytes: Uint8Array, _seq: number): NetlinkAnswer {
    this.sent.push(hex(bytes));
    const next = this.answers.shift();
    if (next === undefined) throw new Error(`unexpected request ${what}`);
    const answer = next(this.seq);
    if (answer instanceof Error) throw answer;
    return answer;
  }
  close(): void {
    this.closed++;
  }
}

function withoutReads(...messages: Uint8Array[]): NetlinkAnswer {
  return { messages: messages.flatMap((m) => decodeMessages(m)), raw: messages };
}

function statReply(seq: number, counters: [string, bigint][], device = 'rxe0', port = 1): Uint8Array {
  const entries = counters.map(([n, v]) => attrNested(81, [attrString(82, n), attrU64(83, v)]));
  return encodeMessage({ type: 5137, flags: 0, seq, pid: 0 }, [
    attrU32(1, 3),
    attrString(2, device),
    attrU32(3, port),
    attrNested(80, entries),
  ]);
}

describe('NetlinkCounterSource', () => {
  it('opens a port with a device dump and one STAT_GET, then reads one STAT_GET per read()', () => {
    const t = new ScriptedTransport([
      () => withoutReads(fixture('get-dump-two-rxe.hex')),
      () => withoutReads(fixture('stat-get-reply-rxe0-1.hex')),
      (seq) => withoutReads(statReply(seq, [['rcvd_pkts', 101n], ['sent_pkts', 400n]])),
    ]);
    const source = new NetlinkCounterSource(t);
    expect(source.kind).toBe('netlink');
    const set = runSync(source.openReads(RXE0_PORT_1));
    expect(set).toBeDefined();
    expect(set!.kind).toBe('netlink');
    expect(set!.port).toEqual({ device: 'rxe0', port: 1 });
    expect(set!.counters.map((c) => c.name)).toHaveLength(15);
    expect(set!.counters[0]).toEqual(netlinkCounterSpec('sent_pkts'));
    expect(t.sent).toEqual([hex(buildDeviceDumpRequest(101)), hex(buildStatGetRequest(102, 3, 1))]);

    const removed = set!.counters.filter((c) => c.name !== 'sent_pkts' && c.name !== 'rcvd_pkts').map((c) => c.name);
    const values = valuesNow(set!);
    expect(t.sent[2]).toBe(hex(buildStatGetRequest(103, 3, 1)));
    // The set follows the kernel's list, in its order: counters it stopped reporting leave it.
    expect(set!.counters.map((c) => c.name)).toEqual(['rcvd_pkts', 'sent_pkts']);
    expect(values).toEqual([{ ok: true, value: 101n }, { ok: true, value: 400n }]);
    expect(set).toBeInstanceOf(NetlinkPortCounterSet);
    const change = (set as NetlinkPortCounterSet).counterSetChange();
    expect(change).toEqual({ added: [], removed });
  });

  it('follows counters that appear after open() (an operator enabled optional counters) and leave', () => {
    const t = new ScriptedTransport([
      () => withoutReads(fixture('get-dump-two-rxe.hex')),
      (seq) => withoutReads(statReply(seq, [['out_of_buffer', 1n]])),
      (seq) => withoutReads(statReply(seq, [['out_of_buffer', 2n], ['rdma_tx_bytes', 5000n]])),
      (seq) => withoutReads(statReply(seq, [['out_of_buffer', 3n]])),
      (seq) => withoutReads(statReply(seq, [['out_of_buffer', 4n]])),
    ]);
    const set = runSync(new NetlinkCounterSource(t).openPortReads({ device: 'rxe0', port: 1 }));
    if (!set.ok) throw set.error;
    // The read that first reports an enabled counter brings it into the set, with its value.
    expect(valuesNow(set.set)).toEqual([{ ok: true, value: 2n }, { ok: true, value: 5000n }]);
    expect(set.set.counters.map((c) => c.name)).toEqual(['out_of_buffer', 'rdma_tx_bytes']);
    expect(set.set.counters[1]).toEqual(netlinkCounterSpec('rdma_tx_bytes'));
    expect(set.set.counterSetChange()).toEqual({ added: ['rdma_tx_bytes'], removed: [] });
    // Disabled again: it leaves the set.
    expect(valuesNow(set.set)).toEqual([{ ok: true, value: 3n }]);
    expect(set.set.counterSetChange()).toEqual({ added: [], removed: ['rdma_tx_bytes'] });
    expect(valuesNow(set.set)).toEqual([{ ok: true, value: 4n }]);
    expect(set.set.counterSetChange()).toBeUndefined();
  });

  it('turns a failed read into one error per counter', () => {
    const t = new ScriptedTransport([
      () => withoutReads(fixture('get-dump-two-rxe.hex')),
      (seq) => withoutReads(statReply(seq, [['sent_pkts', 1n], ['rcvd_pkts', 2n]])),
      () => new NetlinkRequestError('RDMA_NLDEV_CMD_STAT_GET rxe0/1 (device index 3)', 22, undefined, 'kernel answered EINVAL'),
    ]);
    const set = runSync(new NetlinkCounterSource(t).openReads(RXE0_PORT_1))!;
    const err = { code: 'SOURCE', op: 'netlink', detail: 'RDMA_NLDEV_CMD_STAT_GET rxe0/1 (device index 3): kernel answered EINVAL' };
    expect(valuesNow(set)).toEqual([
      { ok: false, error: err },
      { ok: false, error: err },
    ]);
  });

  it('refuses an answer for another device (index reused)', () => {
    const t = new ScriptedTransport([
      () => withoutReads(fixture('get-dump-two-rxe.hex')),
      (seq) => withoutReads(statReply(seq, [['sent_pkts', 1n]], 'rxe9')),
    ]);
    const source = new NetlinkCounterSource(t);
    expect(runSync(source.openReads(RXE0_PORT_1))).toBeUndefined();
    expect(source.lastOpenError?.message).toBe('rxe0/1: kernel answered for rxe9/1 (device index reused?)');
  });

  it('re-lists devices once when a cached device index went stale', () => {
    const t = new ScriptedTransport([
      () => withoutReads(fixture('get-dump-two-rxe.hex')),
      (seq) => withoutReads(statReply(seq, [['sent_pkts', 1n]])),
      () => new NetlinkRequestError('RDMA_NLDEV_CMD_STAT_GET rxe0/1 (device index 3)', 22, undefined, 'kernel answered EINVAL'),
      () => withoutReads(fixture('get-dump-two-rxe.hex')),
      (seq) => withoutReads(statReply(seq, [['sent_pkts', 2n]])),
    ]);
    const source = new NetlinkCounterSource(t);
    expect(runSync(source.openReads(RXE0_PORT_1))).toBeDefined();
    const again = runSync(source.openReads(RXE0_PORT_1));
    expect(again?.counters.map((c) => c.name)).toEqual(['sent_pkts']);
    expect(t.sent[3]).toBe(hex(buildDeviceDumpRequest(104)));
  });

  it('has no counters for a device the kernel does not list', () => {
    const t = new ScriptedTransport([() => withoutReads(fixture('get-dump-two-rxe.hex'))]);
    const source = new NetlinkCounterSource(t);
    expect(runSync(source.openReads({ ...RXE0_PORT_1, device: 'mlx5_0' }))).toBeUndefined();
    expect(source.lastOpenError).toBeInstanceOf(NetlinkRequestError);
    expect(source.lastOpenError?.message).toBe('device mlx5_0: not listed by RDMA_NLDEV_CMD_GET');
  });

  it('turns EPERM from the kernel into NetlinkUnavailable(permission-denied)', () => {
    const t = new ScriptedTransport([
      () => withoutReads(fixture('get-dump-two-rxe.hex')),
      () => new NetlinkRequestError('RDMA_NLDEV_CMD_STAT_GET rxe0/1 (device index 3)', 1, undefined, 'kernel answered EPERM'),
    ]);
    const result = runSync(new NetlinkCounterSource(t).openPortReads(RXE0_PORT_1));
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error).toBeInstanceOf(NetlinkUnavailable);
    expect((result.error as NetlinkUnavailable).reason).toBe('permission-denied');
  });

  it('closes its transport once', () => {
    const t = new ScriptedTransport([]);
    const source = new NetlinkCounterSource(t);
    source.close();
    source.close();
    expect(t.closed).toBe(1);
    expect(runSync(source.openReads(RXE0_PORT_1))).toBeUndefined();
  });
});

describe('socket errors', () => {
  it('classifies socket() errnos', () => {
    expect(classifySocketErrno(93, RDMA_NETLINK).reason).toBe('family-unsupported');
    expect(classifySocketErrno(97, RDMA_NETLINK).reason).toBe('family-unsupported');
    expect(classifySocketErrno(1, RDMA_NETLINK).reason).toBe('permission-denied');
    expect(classifySocketErrno(13, RDMA_NETLINK).reason).toBe('permission-denied');
    expect(classifySocketErrno(24, RDMA_NETLINK).reason).toBe('socket-error');
    expect(classifySocketErrno(24, RDMA_NETLINK).message).toBe('RDMA netlink unavailable (socket-error): socket(NETLINK_RDMA) failed with EMFILE');
  });

  it('round-trips a real netlink dump through koffi (NETLINK_ROUTE, RTM_GETLINK)', () => {
    const opened = NetlinkSocket.open(ROUTE_NETLINK, { timeoutMs: 2000 });
    if (!opened.ok) throw opened.error;
    const socket = opened.socket;
    try {
      const seq = socket.nextSeq();
      // RTM_GETLINK (18) dump with an empty struct ifinfomsg (16 bytes).
      const req = encodeMessage({ type: 18, flags: 0x301, seq, pid: 0 }, [new Uint8Array(16)]);
      const answer = socket.request('RTM_GETLINK dump', req, seq);
      expect(answer.messages.length).toBeGreaterThan(0);
      expect(answer.messages.every((m) => m.type === 16 && m.seq === seq)).toBe(true); // RTM_NEWLINK
      // An unknown message type comes back as a kernel error, not a hang.
      const bad = socket.nextSeq();
      expect(() => socket.request('type 999', encodeMessage({ type: 999, flags: 5, seq: bad, pid: 0 }, []), bad)).toThrow(
        NetlinkRequestError,
      );
    } finally {
      socket.close();
    }
  });

  it('runs requests of several programs on one socket without mixing their answers (bounded reader)', async () => {
    const opened = NetlinkSocket.open(ROUTE_NETLINK, { timeoutMs: 2000 });
    if (!opened.ok) throw opened.error;
    const socket = opened.socket;
    const reader = new BoundedReads({ readTimeoutMs: 1500 });
    try {
      // Four RTM_GETLINK dumps (with NLM_F_ACK, as the exporter's requests) in one run: each round
      // of each program goes to the reader thread in one request, on the same socket.
      const dump = (): ReadProgram<NetlinkAnswer> => {
        const seq = socket.nextSeq();
        return socket.requestReads('RTM_GETLINK dump', encodeMessage({ type: 18, flags: 0x305, seq, pid: 0 }, [new Uint8Array(16)]), seq);
      };
      const outcomes = await reader.run([1, 2, 3, 4].map((i) => ({ group: `g${i}`, program: dump() })));
      const sync = socket.request('RTM_GETLINK dump', encodeMessage({ type: 18, flags: 0x305, seq: 999, pid: 0 }, [new Uint8Array(16)]), 999);
      for (const o of outcomes) {
        expect(o.kind).toBe('done');
        if (o.kind === 'done') expect(o.value.messages.map((m) => m.type)).toEqual(sync.messages.map((m) => m.type));
      }
    } finally {
      reader.close();
      socket.close();
    }
  });

  it('opens a real NETLINK_RDMA socket, or says cleanly that the kernel has none', () => {
    const created = NetlinkCounterSource.create({ timeoutMs: 500 });
    if (existsSync('/sys/module/ib_core')) {
      expect(created.ok).toBe(true);
      if (created.ok) {
        expect(Array.isArray(runSync(created.source.listDeviceReads()))).toBe(true);
        created.source.close();
      }
      return;
    }
    // This project's build hosts: CONFIG_INFINIBAND unset, so the family does not exist.
    expect(created.ok).toBe(false);
    if (created.ok) return;
    expect(created.error).toBeInstanceOf(NetlinkUnavailable);
    expect(created.error.reason).toBe('family-unsupported');
    expect(created.error.errno).toBe(93);
    expect(created.error.message).toBe(
      'RDMA netlink unavailable (family-unsupported): socket(AF_NETLINK, SOCK_RAW, NETLINK_RDMA) failed with ' +
        'EPROTONOSUPPORT: this kernel has no RDMA netlink (CONFIG_INFINIBAND unset or ib_core not loaded)',
    );
  });
});
