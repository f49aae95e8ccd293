/**
 * Hostile restrack dumps (issue 35): each is a clear error of its device or a bounded read, never
 * a stall or an allocation without bound. The dumps are the recorded ones of the soft-RoCE guest
 * (test/fixtures/netlink/recorded/) with one thing broken, or generated from them at a size no
 * host should reach (scale-dumps.mjs).
 */
import { describe, expect, it } from 'vitest';
import { type NetlinkAnswer, type NetlinkTransport, NetlinkRequestError, ReplyCollector, decodeAttrs, decodeMessages, rdmaNlType } from '../../../src/sources/netlink/index.js';
import { RestrackSource } from '../../../src/sources/restrack/source.js';
import { ConnectionMonitor } from '../../../src/sources/restrack/monitor.js';
import { runSync } from '../../../src/reads/program.js';
import { BoundedReads } from '../../../src/reads/bounded.js';
import { ERRNO } from '../../../src/ffi/errno.js';
import { scaleDumps } from '../../fixtures/netlink/scale-dumps.mjs';
import { datagrams, withSeq } from './kernel-peer.js';
import { FakeRestrackKernel } from './fake-kernel.js';

/**
 * A kernel answering from datagrams per device index (`dumps(index, 'qp' | 'cm-id')`), with the
 * native reader's room: an answer of more than `max` bytes (each datagram and its 4-byte length,
 * as op_nl_transact packs them) is ENOBUFS. `asked` records each request and its room.
 */
function kernel(list: readonly Uint8Array[], dumps: (index: number, what: 'qp' | 'cm-id') => readonly Uint8Array[]): NetlinkTransport & { asked: string[] } {
  let seq = 1;
  const asked: string[] = [];
  const answer = (what: string, dgs: readonly Uint8Array[], s: number, max: number | undefined): NetlinkAnswer => {
    const raw = withSeq(dgs, s);
    if (max !== undefined && raw.reduce((n, d) => n + 4 + d.length, 0) > max) throw new NetlinkRequestError(what, ERRNO.ENOBUFS, undefined, `answer larger than ${max} bytes`);
    const c = new ReplyCollector(s);
    for (const d of raw) c.feed(decodeMessages(d));
    return { messages: c.data, raw };
  };
  const t = {
    asked,
    nextSeq: () => ++seq,
    request: (): NetlinkAnswer => { throw new Error('unused'); },
    // eslint-disable-next-line require-yield
    *requestReads(what: string, bytes: Uint8Array, s: number, max?: number) {
      asked.push(`${what.replace(/^RDMA_NLDEV_CMD_(RES_)?/, '')} ${max ?? '-'}`);
      const [req] = decodeMessages(bytes);
      if (req!.type === rdmaNlType(1)) return answer(what, list, s, max);
      const index = Buffer.from(decodeAttrs(req!.payload)[0]!.payload).readUInt32LE(0);
      return answer(what, dumps(index, req!.type === rdmaNlType(10) ? 'qp' : 'cm-id'), s, max);
    },
    close: () => undefined,
  };
  return t;
}

const recordedList = (): Uint8Array[] => [...datagrams('get-dump-two-rxe.hex'), ...datagrams('get-dump-done.hex')];
const recorded = (what: 'qp' | 'cm-id', device: string): Uint8Array[] => datagrams(`recorded/guest-mxl-video-${what}-${device}.hex`);
const byIndex = (broken: (what: 'qp' | 'cm-id') => Uint8Array[]) => (index: number, what: 'qp' | 'cm-id'): Uint8Array[] => (index === 3 ? broken(what) : recorded(what, 'rxe1'));

/** The recorded rxe0 QP dump with its RC QP's SQ_PSN attribute claiming 200 bytes: past its entry. */
function truncatedAttribute(): Uint8Array[] {
  const [first, done] = recorded('qp', 'rxe0');
  const b = Buffer.from(first!);
  const at = b.indexOf(Buffer.from('08001800', 'hex'));
  b.writeUInt16LE(200, at);
  return [new Uint8Array(b), done!];
}

describe('hostile restrack dumps', () => {
  it('a truncated attribute is an error of its device, naming the byte; the other device is read; a good dump reads again', () => {
    let broken = true;
    const t = kernel(recordedList(), byIndex((what) => (what === 'qp' && broken ? truncatedAttribute() : recorded(what, 'rxe0'))));
    const logs: string[] = [];
    const m = new ConnectionMonitor(new RestrackSource(() => ({ ok: true, transport: t })), { warn: (f: { err?: string }) => logs.push(f.err ?? ''), info: () => undefined } as never);
    m.tickSync(0);
    expect([...m.lastStatus.deviceErrors]).toEqual([['rxe0', 'bad nla_len 200 in 80-byte attribute block (at byte 48)']]);
    expect(m.connections().map((c) => c.obs.device)).toEqual(['rxe1']);
    m.tickSync(1000);
    expect(logs).toEqual(['bad nla_len 200 in 80-byte attribute block (at byte 48)']);
    broken = false;
    m.tickSync(2000);
    expect(m.lastStatus.deviceErrors.size).toBe(0);
    expect(m.connections().map((c) => c.obs.device).sort()).toEqual(['rxe0', 'rxe1']);
  });

  it('a datagram cut short (its nlmsg_len past its end) is an error of its device too', () => {
    const cut = (): Uint8Array[] => [recorded('qp', 'rxe0')[0]!.subarray(0, 100)];
    const source = new RestrackSource(() => ({ ok: true, transport: kernel(recordedList(), byIndex((what) => (what === 'qp' ? cut() : recorded(what, 'rxe0')))) }));
    const r = runSync(source.reads());
    if (!r.ok) throw new Error(r.error);
    expect(r.devices[0]).toMatchObject({ ok: false, device: 'rxe0', error: expect.stringMatching(/bad nlmsg_len \d+ in 100-byte datagram/) });
    expect(r.devices[1]!.ok).toBe(true);
  });

  it('100,000 QPs with cm_ids on one device: the QP dump is read within 16 MiB; the cm_id dump, larger, is a clear error and the device is left unasked for 10 minutes', () => {
    const big = scaleDumps({ qps: 100_000, devices: 1, pids: [7] });
    const d = big.devices[0]!;
    let now = 0;
    const t = kernel(big.list, (_i, what) => (what === 'qp' ? d.qp : d.cmId));
    const source = new RestrackSource(() => ({ ok: true, transport: t }), () => now);
    const errors: string[] = [];
    for (let i = 0; i < 6; i++) {
      const r = runSync(source.reads());
      if (!r.ok) throw new Error(r.error);
      errors.push(r.devices[0]!.ok ? 'ok' : r.devices[0]!.error);
      now += 1000;
    }
    // The QP dump's room grows fourfold to 16 MiB (8.4 MB of QPs fit); the cm_id dump is asked for
    // at once with the room its 100,001 QPs call for, the most: 32 MB do not fit.
    expect(t.asked.filter((a) => !a.startsWith('GET'))).toEqual([
      'QP_GET dump of mlx5_0 262144', 'QP_GET dump of mlx5_0 1048576', 'QP_GET dump of mlx5_0 4194304', 'QP_GET dump of mlx5_0 16777216',
      'CM_ID_GET dump of mlx5_0 16777216',
    ]);
    expect(errors.slice(3)).toEqual(new Array(3).fill(
      'RDMA_NLDEV_CMD_RES_CM_ID_GET dump of mlx5_0: answer larger than 16777216 bytes: more than the 16 MiB the exporter reads of one dump; mlx5_0\'s connections are not read (asked again in 10 minutes)'));
    now = 10 * 60_000 + 4000;
    runSync(source.reads());
    expect(t.asked.filter((a) => !a.startsWith('GET')).slice(5)).toEqual(['QP_GET dump of mlx5_0 16777216', 'CM_ID_GET dump of mlx5_0 16777216']);
  });

  it('more QPs on one device than the exporter follows (65,536) is a clear error, counted before anything is decoded', () => {
    const big = scaleDumps({ qps: 100_000, devices: 1, pids: [7] });
    const done = [big.devices[0]!.qp.at(-1)!];
    const source = new RestrackSource(() => ({ ok: true, transport: kernel(big.list, (_i, what) => (what === 'qp' ? big.devices[0]!.qp : done)) }));
    for (let i = 0; i < 3; i++) runSync(source.reads());
    const r = runSync(source.reads());
    if (!r.ok) throw new Error(r.error);
    expect(r.devices[0]).toEqual({ ok: false, device: 'mlx5_0', error: 'mlx5_0 holds 100001 QPs, more than the 65536 the exporter follows on one device: its connections are not read (asked again in 10 minutes)' });
  });

  it('a read of 45,000 QPs gives the event loop turns while it is decoded, joined and tracked', async () => {
    const big = scaleDumps({ qps: 45_000, devices: 1, pids: [7] });
    const d = big.devices[0]!;
    const m = new ConnectionMonitor(new RestrackSource(() => ({ ok: true, transport: kernel(big.list, (_i, what) => (what === 'qp' ? d.qp : d.cmId)) })));
    const reader = new BoundedReads({ readTimeoutMs: 5000, mode: 'direct' });
    try {
      for (let i = 0; i < 4; i++) await m.tick(reader, i * 1000); // the rooms grow to fit
      expect(m.connections()).toHaveLength(45_000);
      let turns = 0;
      const count = (): void => {
        turns++;
        if (!done) setImmediate(count);
      };
      let done = false;
      setImmediate(count);
      await m.tick(reader, 4000);
      done = true;
      expect(turns).toBeGreaterThan(1);
    } finally {
      reader.close();
    }
  });

  it('a cm_id whose QP is not in the dump, or is the kernel\'s GSI QP, makes no connection; the QPs keep their own', () => {
    const k = new FakeRestrackKernel();
    k.device(3, 'rxe0', [{ lqpn: 1, sqPsn: 2, type: 1 }, { lqpn: 33, sqPsn: 100, rqPsn: 5, rqpn: 33, pid: 202 }], [
      { lqpn: 999, src: ['10.99.0.1', 40000], dst: ['10.99.0.9', 1312], pid: 202 },
      { lqpn: 1, src: ['10.99.0.1', 40001], dst: ['10.99.0.9', 1313], pid: 202 },
      { lqpn: 33, src: ['10.99.0.1', 48130], dst: ['10.99.0.2', 1312], pid: 202 },
    ]);
    const m = new ConnectionMonitor(new RestrackSource(() => ({ ok: true, transport: k.transport() })));
    m.tickSync(0);
    m.tickSync(1000);
    expect(m.connections().map((c) => [c.obs.qpn, c.obs.local, c.obs.peer])).toEqual([[33, '10.99.0.1:48130', '10.99.0.2:1312']]);
    expect(m.lastStatus.deviceErrors.size).toBe(0);
  });
});
