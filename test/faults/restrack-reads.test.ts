/**
 * The restrack dumps run on the daemon's one bounded reader in their own group (`restrack`), on a
 * socket of their own: a dump the kernel never finishes (an mlx5 firmware command that does not
 * come back) costs one read timeout, the port counters read in the same ticks stay exact, the
 * group is skipped (no second timeout) until the read returns, and the connections are read again
 * on a new socket after that.
 *
 * The hang is real: the daemon's restrack socket is one end of a socketpair whose other end plays
 * the kernel (kernel-peer.ts) and answers the device list but never the QP dump, so the reader
 * thread's netlinkTransact op sleeps in recv(2) (no SO_RCVTIMEO on it) until the test answers.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { one, startDaemon, type Running } from '../exporter/harness.js';
import { KernelPeer, datagrams, withSeq } from '../sources/restrack/kernel-peer.js';
import { answersDuring, waitFor } from './event-loop.js';
import { defaultReadTimeoutMs } from '../../src/sampler/sampler.js';

const timeout = defaultReadTimeoutMs(1000);
const CONFIG = `
metrics: { connection_series: qp }
sampling: { interval: 1s, window: 4s }
ports:
  - { device: rxe0, port: 1, mtu: auto, capacity: auto }
flows: []
`;

let run: Running | undefined;
const peers: KernelPeer[] = [];
afterEach(async () => {
  await run?.stop();
  for (const p of peers.splice(0)) p.close();
  run = undefined;
});

/** The device list (rxe0 and rxe1 are listed; only rxe0 is asked about here: see answers()). */
const deviceList = (seq: number): Uint8Array[] => withSeq([datagrams('get-dump-two-rxe.hex')[0]!, ...datagrams('get-dump-done.hex')], seq);
/** A QP dump of rxe0 whose sender QP 33 is at `sq`: the guest's dump with sq_psn rewritten. */
function qpDump(seq: number, sq: number): Uint8Array[] {
  const dgs = withSeq(datagrams('restrack-qp-rxe0.hex'), seq);
  const b = Buffer.from(dgs[0]!);
  // The one SQ_PSN (type 24) of an RC QP: after its 4-byte header; the GSI QP's comes first.
  const at = b.indexOf(Buffer.from('08001800', 'hex'), b.indexOf(Buffer.from('0800150021000000', 'hex')));
  b.writeUInt32LE(sq, at + 4);
  return [new Uint8Array(b), dgs[1]!];
}
const cmDump = (seq: number): Uint8Array[] => withSeq(datagrams('restrack-cm-id-rxe0.hex'), seq);
/** rxe1 has no QP: its two dumps are NLMSG_DONE alone. */
const empty = (seq: number): Uint8Array[] => withSeq([datagrams('restrack-qp-empty.hex')[0]!], seq);

/** One tick's answers on a peer whose first request is `seq`: the device list, both QP dumps, both cm_id dumps. */
function answers(seq: number, sq: number): Uint8Array[] {
  return [...deviceList(seq), ...qpDump(seq + 1, sq), ...empty(seq + 2), ...cmDump(seq + 3), ...empty(seq + 4)];
}

describe('a restrack dump that never ends', () => {
  it('costs one read timeout; the port counters read in the same ticks stay exact; connections come back on a new socket', async () => {
    let seq = 1;
    let pkts = 200;
    let sq = 8_619_382;
    const open = (): { ok: true; transport: KernelPeer['socket'] } => {
      const p = new KernelPeer(1);
      peers.push(p);
      seq = 1;
      p.withoutReads(answers(seq, sq));
      return { ok: true, transport: p.socket };
    };
    run = await startDaemon('rxe_6_1', CONFIG, undefined, () => ({ restrack: open }));
    const peer = (): KernelPeer => peers[peers.length - 1]!;
    const second = async (queue: 'all' | 'hang' | 'none'): Promise<void> => {
      pkts += 60;
      sq += 60;
      seq += 5;
      if (queue === 'all') peer().withoutReads(answers(seq, sq));
      if (queue === 'hang') peer().withoutReads(deviceList(seq)); // the QP dump (seq + 1) never comes
      run!.fx.setCounter('rxe0', 1, 'hw_counters', 'sent_pkts', BigInt(pkts));
      await run!.tick(1);
    };
    const portExact = (m: Map<string, number>): void => {
      expect(one(m, 'mxl_fabric_port_measured_packets_per_second', { device: 'rxe0', direction: 'tx', source: 'sysfs_hw_counters' })).toBe(60);
      expect(one(m, 'mxl_fabric_port_transmitted_packets_total', { device: 'rxe0', counter: 'sent_pkts' })).toBe(pkts);
    };
    const sent = (m: Map<string, number>): number | undefined => one(m, 'mxl_fabric_connection_sent_packets_total', { device: 'rxe0', local: '10.99.0.1:48130' });

    await second('all');
    await second('all');
    let m = await run.scrape();
    portExact(m);
    expect(sent(m)).toBe(120);
    expect(one(m, 'mxl_fabric_exporter_read_timeouts_total')).toBe(0);

    const t0 = performance.now();
    const hung = second('hang');
    expect(await answersDuring(run, hung)).toBe(true);
    await hung;
    expect(performance.now() - t0).toBeGreaterThanOrEqual(timeout);
    m = await run.scrape();
    expect(one(m, 'mxl_fabric_exporter_read_timeouts_total')).toBe(1);
    expect(one(m, 'mxl_fabric_exporter_blocked_reader_threads')).toBe(1);
    portExact(m);
    expect(sent(m)).toBe(120); // the last counts stand; nothing invented
    expect(run.logs.join('')).toContain('msg="read blocked; skipped until it returns" group=restrack error=ETIMEDOUT');

    // Skipped while the dump is stuck: no second timeout, no wait.
    const t1 = performance.now();
    await second('none');
    expect(performance.now() - t1).toBeLessThan(timeout);
    m = await run.scrape();
    expect(one(m, 'mxl_fabric_exporter_read_timeouts_total')).toBe(1);
    portExact(m);

    // The kernel answers at last: the op returns, the socket is replaced, the counts go on.
    peer().withoutReads(qpDump(seq - 5 + 1, sq));
    await waitFor(() => run!.daemon.state().sampler!.reader.blockedThreads === 0);
    expect(peers).toHaveLength(1);
    await second('none'); // opens the new peer, which answers this tick
    await second('all');
    m = await run.scrape();
    expect(peers).toHaveLength(2);
    expect(one(m, 'mxl_fabric_exporter_read_timeouts_total')).toBe(1);
    portExact(m);
    // 120, then the four ticks' 240 packets since (the PSN moved on while unread): counted once read again.
    expect(sent(m)).toBe(120 + 4 * 60);
    expect(one(m, 'mxl_fabric_connection_restarts_total', { device: 'rxe0', local: '10.99.0.1:48130' })).toBe(0);
  });
});
