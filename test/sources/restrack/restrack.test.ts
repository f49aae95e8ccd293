import { describe, expect, it } from 'vitest';
import {
  type NlMessage,
  NetlinkRequestError,
  ReplyCollector,
  buildResDumpRequest,
  decodeCmIdDump,
  decodeMessages,
  decodeQpDump,
  decodeSockAddr,
  hex,
  sockAddrText,
} from '../../../src/sources/netlink/index.js';
import { ipv6Text } from '../../../src/ipv6.js';
import { RestrackSource } from '../../../src/sources/restrack/source.js';
import { NetlinkUnavailable } from '../../../src/sources/netlink/socket.js';
import { BoundedReads } from '../../../src/reads/bounded.js';
import { type ReadProgram, read, runSync } from '../../../src/reads/program.js';
import { runDirect } from '../../../src/reads/direct.js';
import { FakeRestrackKernel } from './fake-kernel.js';
import { KernelPeer, datagrams, withSeq } from './kernel-peer.js';

/** Fixtures: test/fixtures/netlink/gen_restrack.py says how each is laid out and why. */
const SEQ = 0x11223344;

function messagesOf(name: string): NlMessage[] {
  const c = new ReplyCollector(SEQ);
  for (const d of datagrams(name)) c.feed(decodeMessages(d));
  expect(c.done).toBe(true);
  expect(c.error).toBeUndefined();
  return c.data;
}

describe('restrack requests', () => {
  it('asks for a device dump the way `rdma res show qp` does (REQUEST|ACK|DUMP, DEV_INDEX)', () => {
    // len 24, type RDMA_NL_GET_TYPE(5, 10) = 5130, flags 0x305, seq, pid 0, DEV_INDEX (1) = 3.
    expect(hex(buildResDumpRequest(10, SEQ, 3))).toBe('18000000' + '0a14' + '0503' + '44332211' + '00000000' + '0800010003000000');
    expect(hex(buildResDumpRequest(11, 7, 0)).slice(8, 12)).toBe('0b14'); // RES_CM_ID_GET: 5131
  });
});

describe('decoding QP dumps', () => {
  it('decodes the soft-RoCE sender dump as `rdma res show qp` printed it in the guest', () => {
    const dump = decodeQpDump(messagesOf('restrack-qp-rxe0.hex'));
    expect(dump.devIndex).toBe(3);
    expect(dump.devName).toBe('rxe0');
    expect(dump.entries).toEqual([
      { port: 1, lqpn: 1, rqpn: undefined, rqPsn: undefined, sqPsn: 2, type: 1, state: 3, pathMigState: undefined, pdn: undefined, pid: undefined, kernName: 'ib_core' },
      { port: 1, lqpn: 33, rqpn: 33, rqPsn: 16724105, sqPsn: 8619382, type: 2, state: 3, pathMigState: 0, pdn: 19, pid: 202, kernName: undefined },
    ]);
  });

  it('joins the entries of a dump that spans several messages, in the kernel order', () => {
    const msgs = messagesOf('restrack-qp-mlx5_0-t0.hex');
    expect(msgs).toHaveLength(5);
    const dump = decodeQpDump(msgs);
    expect(dump.devName).toBe('mlx5_0');
    expect(dump.entries).toHaveLength(1 + 200 + 4);
    expect(dump.entries.map((e) => e.lqpn).slice(0, 4)).toEqual([1, 0x100, 0x101, 0x102]);
    expect(dump.entries[200]).toMatchObject({ lqpn: 0x100 + 199, sqPsn: (0x10000 * 199) & 0xffffff, rqpn: 0x900 + 199, pid: 4003 });
    // A driver table (QPs 0x100, 0x132...) is skipped; the fields around it are intact.
    expect(dump.entries[1]).toEqual({ port: 1, lqpn: 0x100, rqpn: 0x900, rqPsn: 0x500000, sqPsn: 0, type: 2, state: 3, pathMigState: 0, pdn: 3, pid: 4000, kernName: undefined });
  });

  it('keeps a user QP whose creating thread is gone (no PID, no KERN_NAME) and a UD QP without port', () => {
    const byQpn = new Map(decodeQpDump(messagesOf('restrack-qp-mlx5_0-t0.hex')).entries.map((e) => [e.lqpn, e]));
    expect(byQpn.get(0x304)).toMatchObject({ pid: undefined, kernName: undefined, pdn: 3, sqPsn: 1234 });
    expect(byQpn.get(0x306)).toEqual({ port: undefined, lqpn: 0x306, rqpn: undefined, rqPsn: undefined, sqPsn: 0, type: 4, state: 2, pathMigState: undefined, pdn: 3, pid: 5001, kernName: undefined });
    expect(byQpn.get(0x300)?.sqPsn).toBe(0xfffff0);
  });

  it('reads a device without QPs (NLMSG_DONE alone) as an empty dump', () => {
    expect(decodeQpDump(messagesOf('restrack-qp-empty.hex')).entries).toEqual([]);
  });

  it('takes a dump that ends in NLMSG_DONE with -EIO as the error, not as a shorter table', () => {
    const c = new ReplyCollector(SEQ);
    for (const d of datagrams('restrack-qp-mlx5_0-eio.hex')) c.feed(decodeMessages(d));
    expect(c.done).toBe(true);
    expect(c.data).toHaveLength(2);
    expect(c.error?.errno).toBe(5);
  });
});

describe('decoding cm_id dumps', () => {
  it('decodes the sender cm_id: QP 33, CONNECT, TCP port space, both addresses', () => {
    const dump = decodeCmIdDump(messagesOf('restrack-cm-id-rxe0.hex'));
    expect(dump.entries).toEqual([{
      port: 1, lqpn: 33, qpType: 2, ps: 0x0106, state: 5, cmIdn: 9, pid: 202, kernName: undefined,
      src: { family: 2, address: '10.99.0.1', port: 48130 },
      dst: { family: 2, address: '10.99.0.2', port: 1312 },
    }]);
    expect(sockAddrText(dump.entries[0]!.src!)).toBe('10.99.0.1:48130');
  });

  it('decodes a listener (no QP, no peer), IPv6 addresses and a cm_id whose QP is gone', () => {
    const e = decodeCmIdDump(messagesOf('restrack-cm-id-mlx5_0.hex')).entries;
    expect(e).toHaveLength(4);
    expect(e[0]).toMatchObject({ port: undefined, lqpn: undefined, state: 8, dst: undefined, src: { address: '0.0.0.0', port: 1312 } });
    expect(e[3]).toMatchObject({ lqpn: 0x3ff, src: { family: 10, address: 'fd00::1', port: 40003 } });
    expect(sockAddrText(e[3]!.dst!)).toBe('[fd00::2:0:0:7]:1313');
  });

  it('writes IPv6 as RFC 5952 does', () => {
    const b = (...g: number[]): Uint8Array => new Uint8Array(new Uint16Array(g.map((x) => ((x & 0xff) << 8) | (x >> 8))).buffer);
    expect(ipv6Text(b(0, 0, 0, 0, 0, 0, 0, 1))).toBe('::1');
    expect(ipv6Text(b(0x2001, 0xdb8, 0, 0, 1, 0, 0, 1))).toBe('2001:db8::1:0:0:1');
    expect(ipv6Text(b(0x2001, 0xdb8, 0, 1, 1, 1, 1, 1))).toBe('2001:db8:0:1:1:1:1:1');
    expect(ipv6Text(b(0, 0, 0, 0, 0, 0xffff, 0x0a63, 0x0001))).toBe('::ffff:10.99.0.1');
    expect(() => decodeSockAddr(Uint8Array.of(2, 0, 1))).toThrow(/family 2 in 3 bytes/);
  });
});

/** The device list, then every device's QP dump, then every cm_id dump, as the source asks for them. */
function rxeAnswers(first: number, qp0 = datagrams('restrack-qp-rxe0.hex')): Uint8Array[] {
  return [
    ...withSeq([...datagrams('get-dump-two-rxe.hex'), ...datagrams('get-dump-done.hex')], first),
    ...withSeq(qp0, first + 1),
    ...withSeq(datagrams('restrack-qp-rxe1.hex'), first + 2),
    ...withSeq(datagrams('restrack-cm-id-rxe0.hex'), first + 3),
    ...withSeq(datagrams('restrack-cm-id-rxe1.hex'), first + 4),
  ];
}

/** The requests a program makes, by round (one round: one request on the reader). */
function rounds(program: ReadProgram<unknown>, asked: string[]): string[][] {
  const out: string[][] = [];
  let seen = asked.length;
  let step = program.next();
  while (!step.done) {
    out.push(asked.slice(seen));
    seen = asked.length;
    step = program.next(runDirect(step.value));
  }
  return out;
}

describe('the restrack source over a socket', () => {
  it('reads every device’s dumps through the native reader’s netlinkTransact op, to NLMSG_DONE', async () => {
    const peer = new KernelPeer(1000);
    const reader = new BoundedReads({ readTimeoutMs: 2000 });
    const source = new RestrackSource(() => ({ ok: true, transport: peer.socket }));
    try {
      peer.withoutReads(rxeAnswers(1000));
      const [o] = await reader.run([{ group: 'restrack', program: source.reads() }]);
      expect(reader.mode).toBe('native');
      expect(o?.kind).toBe('done');
      if (o?.kind !== 'done' || !o.value.ok) throw new Error(JSON.stringify(o));
      expect(o.value.devices.map((d) => d.device)).toEqual(['rxe0', 'rxe1']);
      const [d0, d1] = o.value.devices;
      if (!d0?.ok || !d1?.ok) throw new Error('device read failed');
      expect(d0.qps.entries.map((e) => [e.lqpn, e.sqPsn, e.rqPsn])).toEqual([[1, 2, undefined], [33, 8619382, 16724105]]);
      expect(d1.qps.entries.map((e) => [e.lqpn, e.sqPsn, e.rqPsn])).toEqual([[1, 2, undefined], [33, 16724105, 8619382]]);
      expect(d1.cmIds.entries[0]?.src?.port).toBe(1312);
      expect(d0.raw.qp).toHaveLength(2); // one message, then NLMSG_DONE
    } finally {
      reader.close();
      peer.close();
    }
  });

  it('reads every device’s QP dump in the device list’s round once the devices are known (one request: their PSNs together), the cm_id dumps in one more', () => {
    const kernel = new FakeRestrackKernel();
    kernel.device(3, 'rxe0', [{ lqpn: 33, sqPsn: 100 }]);
    kernel.device(4, 'rxe1', [{ lqpn: 34, sqPsn: 200 }]);
    const asked: string[] = [];
    const base = kernel.transport();
    const source = new RestrackSource(() => ({
      ok: true,
      transport: {
        ...base,
        *requestReads(what: string, bytes: Uint8Array, seq: number) {
          asked.push(what.replace(/^RDMA_NLDEV_CMD_(RES_)?/, ''));
          yield* read([{ kind: 'stat', path: '/' }]);
          return base.request(what, bytes, seq);
        },
      },
    }));
    expect(rounds(source.reads(), asked)).toEqual([
      ['GET dump'], ['QP_GET dump of rxe0', 'QP_GET dump of rxe1'], ['CM_ID_GET dump of rxe0', 'CM_ID_GET dump of rxe1'],
    ]);
    expect(rounds(source.reads(), asked)).toEqual([
      ['GET dump', 'QP_GET dump of rxe0', 'QP_GET dump of rxe1'], ['CM_ID_GET dump of rxe0', 'CM_ID_GET dump of rxe1'],
    ]);
    // A device that came: the QP dumps are read again for the new list, in one round.
    kernel.device(5, 'rxe2', [{ lqpn: 35, sqPsn: 300 }]);
    const program = source.reads();
    expect(rounds(program, asked)).toEqual([
      ['GET dump', 'QP_GET dump of rxe0', 'QP_GET dump of rxe1'],
      ['QP_GET dump of rxe0', 'QP_GET dump of rxe1', 'QP_GET dump of rxe2'],
      ['CM_ID_GET dump of rxe0', 'CM_ID_GET dump of rxe1', 'CM_ID_GET dump of rxe2'],
    ]);
    const r = runSync(source.reads());
    if (!r.ok) throw new Error(r.error);
    expect(r.devices.map((d) => (d.ok ? [d.device, d.qps.entries[0]?.sqPsn] : d.error))).toEqual([['rxe0', 100], ['rxe1', 200], ['rxe2', 300]]);
  });

  it('a kernel without RDMA netlink is asked again every 30 s, not every read; a permission error every read', () => {
    let now = 0;
    let opens = 0;
    const absent = new RestrackSource(() => {
      opens++;
      return { ok: false, error: new NetlinkUnavailable('family-unsupported', 93, 'no ib_core') };
    }, () => now);
    const error = 'RDMA netlink unavailable (family-unsupported): no ib_core';
    expect(runSync(absent.reads())).toEqual({ ok: false, error });
    now = 29_999;
    expect(absent.ready().ok).toBe(false);
    expect(runSync(absent.reads())).toEqual({ ok: false, error });
    expect(opens).toBe(1);
    now = 30_000;
    expect(runSync(absent.reads())).toEqual({ ok: false, error });
    expect(opens).toBe(2);
    absent.abandon(); // the socket is to be replaced: asked again at once
    absent.ready();
    expect(opens).toBe(3);

    let denied = 0;
    const eperm = new RestrackSource(() => {
      denied++;
      return { ok: false, error: new NetlinkUnavailable('permission-denied', 1, 'EPERM') };
    }, () => 0);
    runSync(eperm.reads());
    runSync(eperm.reads());
    expect(denied).toBe(2);
  });

  it('makes a dump that ends in an error that device’s error, the other devices read', () => {
    const peer = new KernelPeer(1);
    const opened: number[] = [];
    const source = new RestrackSource(() => {
      opened.push(1);
      return { ok: true, transport: peer.socket };
    });
    try {
      const eio = withSeq(datagrams('restrack-qp-mlx5_0-eio.hex'), 2);
      // rxe0's QP dump ends with -EIO: its cm_id dump is never asked for.
      const answers = rxeAnswers(1).filter((d) => Buffer.from(d).readUInt32LE(8) !== 2 && Buffer.from(d).readUInt32LE(8) !== 3);
      peer.withoutReads([...answers.slice(0, 2), ...eio, ...withSeq(datagrams('restrack-qp-rxe1.hex'), 3), ...withSeq(datagrams('restrack-cm-id-rxe1.hex'), 4)]);
      const r = runSync(source.reads());
      if (!r.ok) throw new Error(r.error);
      expect(r.devices[0]).toEqual({ ok: false, device: 'rxe0', error: expect.stringMatching(/^RDMA_NLDEV_CMD_RES_QP_GET dump of rxe0: kernel answered EIO$/) });
      expect(r.devices[1]?.ok).toBe(true);
      expect(opened).toHaveLength(1);
    } finally {
      peer.close();
    }
  });

  it('says a device list that fails, and replaces the socket before the next read', () => {
    const peers = [new KernelPeer(1), new KernelPeer(1)];
    let n = 0;
    const source = new RestrackSource(() => ({ ok: true, transport: peers[n++]!.socket }));
    try {
      peers[0]!.withoutReads(withSeq(datagrams('error-einval-stat-get.hex'), 1));
      const r1 = runSync(source.reads());
      expect(r1).toEqual({ ok: false, error: expect.stringMatching(/^RDMA_NLDEV_CMD_GET dump: kernel answered EINVAL/) });
      peers[1]!.withoutReads(rxeAnswers(1));
      const r2 = runSync(source.reads());
      expect(r2.ok).toBe(true);
      expect(n).toBe(2);
    } finally {
      for (const p of peers) p.close();
    }
  });

  it('raises the room of a device whose dump did not fit (ENOBUFS) fourfold, for the next read', () => {
    const t = { nextSeq: () => 1, request: () => { throw new Error('unused'); }, close: () => undefined, rooms: [] as number[] };
    const source = new RestrackSource(() => ({
      ok: true,
      transport: {
        ...t,
        // eslint-disable-next-line require-yield
        *requestReads(what: string, _b: Uint8Array, _s: number, max?: number) {
          t.rooms.push(max ?? -1);
          if (what.startsWith('RDMA_NLDEV_CMD_GET')) {
            const c = new ReplyCollector(SEQ);
            c.feed(decodeMessages(datagrams('get-dump-two-rxe.hex')[0]!));
            return { messages: c.data.slice(0, 1), raw: [] };
          }
          throw new NetlinkRequestError(what, 105, undefined, `answer larger than ${max} bytes`);
        },
      },
    }));
    runSync(source.reads());
    runSync(source.reads());
    // The device list (-1: the socket's default room), then rxe0's QP dump: 256 KiB, then 1 MiB.
    expect(t.rooms).toEqual([-1, 256 * 1024, -1, 1024 * 1024]);
  });
});
