/**
 * The read path's promises, each written against a defect the review of the old read path found
 * by running it (issue 16):
 *  - a reader that dies between ticks is a crash: replaced, counted, and blamed on no port;
 *  - at most four reader threads are ever blocked, whatever the number of hung files (eight here);
 *  - counters an operator enables over RDMA netlink after start appear within one tick, and
 *    netlink's set stands in for hw_counters/ (not read twice);
 *  - reloading a 10,000-flow config leaves the event loop free: /-/healthy keeps answering.
 */
import { describe, it, expect, afterEach } from 'vitest';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { one, series, startDaemon, type Running } from '../exporter/harness.js';
import { BlockingSource, mkfifo, threadsInPipeRead } from './blocking-source.js';
import { SysfsInventory, SysfsCountersSource, SysfsHwCountersSource } from '../../src/sources/sysfs/index.js';
import { NetdevSource } from '../../src/sources/netdev.js';
import {
  NetlinkCounterSource, type NetlinkAnswer, type NetlinkTransport, attrNested, attrString, attrU32, attrU64, decodeMessages, encodeMessage,
} from '../../src/sources/netlink/index.js';
import type { Sampler } from '../../src/sampler/sampler.js';
import type { SysfsFixture } from '../fixtures/sysfs.js';

let run: Running | undefined;
let blocking: BlockingSource[] = [];
afterEach(async () => {
  for (const b of blocking) b.feed('0\n'); // let abandoned reads return so their threads end
  await run?.stop();
  for (const b of blocking) b.close();
  run = undefined;
  blocking = [];
});

const sampler = (r: Running): Sampler => r.daemon.state().sampler!;

async function waitFor(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** rxe_6_1 with rxe1..rxe{n-1} copied from rxe0 (on the same netdev). */
function devices(n: number): (fx: SysfsFixture) => void {
  return (fx) => {
    for (let i = 1; i < n; i++) fs.cpSync(fx.path('class', 'infiniband', 'rxe0'), fx.path('class', 'infiniband', `rxe${i}`), { recursive: true });
  };
}

describe('a reader thread that dies between ticks', () => {
  it('is reported as a crash and replaced; no port is blamed and every counter is read', async () => {
    run = await startDaemon('rxe_6_1', 'ports: [{ device: rxe0, port: 1, mtu: 4096 }, { device: rxe1, port: 1, mtu: 4096 }]\nflows: []\n', devices(2));
    await run.tick();
    const reader = sampler(run).reader;
    run.fx.setCounter('rxe1', 1, 'hw_counters', 'sent_pkts', 5000);
    // Dies right before the next tick, before anything on the event loop could notice.
    expect(reader.killIdleThreadForTest()).toBe(true);
    await run.tick();
    await waitFor(() => reader.threadsLost === 1);
    const m = await run.scrape();
    expect([...series(m, 'mxl_fabric_port_stat_up').values()].every((v) => v === 1)).toBe(true);
    expect(one(m, 'mxl_fabric_port_transmitted_packets_total', { device: 'rxe1', source: 'sysfs_hw_counters' })).toBe(5000);
    expect(one(m, 'mxl_fabric_exporter_read_timeouts_total')).toBe(0);
    expect(one(m, 'mxl_fabric_exporter_reader_threads_lost_total')).toBe(1);
    expect(one(m, 'mxl_fabric_exporter_blocked_reader_threads')).toBe(0);
    const logs = run.logs.join('');
    expect(logs).toContain('msg="a reader thread died; replaced (no port blamed)"');
    expect(logs).not.toContain('read blocked');
    expect(reader.threadStats()).toMatchObject({ lost: 1, blocked: 0, started: 2 });
  });
});

describe('eight ports whose reads hang', () => {
  it('block at most four reader threads; reads pause at four, and a returned read frees one thread', async () => {
    const ports = Array.from({ length: 9 }, (_, i) => `  - { device: rxe${i}, port: 1, mtu: 4096 }`).join('\n');
    const before = threadsInPipeRead();
    let most = 0;
    const watch = setInterval(() => (most = Math.max(most, threadsInPipeRead() - before)), 5);
    try {
      run = await startDaemon('rxe_6_1', `sampling: { interval: 200ms, window: 1s }\nports:\n${ports}\nflows: []\n`, devices(9), (fx) => {
        // rxe0..rxe7 each have a counter whose read never returns; rxe8 is healthy.
        blocking = Array.from({ length: 8 }, (_, i) => new BlockingSource(`rxe${i}`, fx.path('hung', `rxe${i}`)));
        for (const b of blocking) mkfifo(b.fifo);
        const sysfs = { sysfsRoot: fx.root };
        return { measurement: { inventory: new SysfsInventory(sysfs), sources: [new SysfsCountersSource(sysfs), new SysfsHwCountersSource(sysfs), new NetdevSource(sysfs), ...blocking], notes: [] } };
      });
      for (let i = 0; i < 8; i++) await run.tick();
      most = Math.max(most, threadsInPipeRead() - before);
      expect(most).toBe(4);
      const reader = sampler(run).reader;
      expect(reader.threadStats()).toMatchObject({ blocked: 4, live: 0, started: 4 });
      let m = await run.scrape();
      expect(one(m, 'mxl_fabric_exporter_blocked_reader_threads')).toBe(4);
      expect(one(m, 'mxl_fabric_exporter_read_timeouts_total')).toBe(4);
      // rxe8 is healthy, but nothing is read while four threads are stuck.
      expect(one(m, 'mxl_fabric_port_stat_up', { device: 'rxe8', counter: 'sent_pkts' })).toBe(0);

      const lines = run.logs.join('');
      expect(lines).toMatch(/EAGAIN: 4 reader threads are blocked in the kernel/);

      // One hung read returns: its thread ends and the next tick may start one again, never a fifth.
      const stuck = reader.blockedGroups()[0]!;
      blocking.find((b) => `${b.fifo.split('/').at(-1)}/1` === stuck)!.feed('7\n');
      await waitFor(() => reader.blockedThreads === 3);
      expect(threadsInPipeRead() - before).toBe(3);
      for (let i = 0; i < 3; i++) await run.tick();
      expect(reader.threadStats()).toMatchObject({ blocked: 4, started: 5 });
      m = await run.scrape();
      expect(one(m, 'mxl_fabric_exporter_blocked_reader_threads')).toBe(4);
    } finally {
      clearInterval(watch);
    }
    expect(most).toBeLessThanOrEqual(4);
  });
});

/** A kernel that answers STAT_GET for mlx5_0/1 (device index 0) with whatever `counters` holds now. */
class FakeRdmaNetlink implements NetlinkTransport {
  counters: [string, bigint][] = [['out_of_buffer', 5n], ['out_of_sequence', 1n]];
  private seq = 0;
  nextSeq(): number {
    return ++this.seq;
  }

  request(_what: string, bytes: Uint8Array, seq: number): NetlinkAnswer {
    const cmd = new DataView(bytes.buffer, bytes.byteOffset).getUint16(4, true) & 0xff;
    const reply = cmd === 1 // RDMA_NLDEV_CMD_GET dump: one device, then NLMSG_DONE
      ? [encodeMessage({ type: bytesType(bytes), flags: 2, seq, pid: 0 }, [attrU32(1, 0), attrString(2, 'mlx5_0'), attrU32(3, 1)])]
      : [encodeMessage({ type: bytesType(bytes), flags: 0, seq, pid: 0 }, [
          attrU32(1, 0), attrString(2, 'mlx5_0'), attrU32(3, 1),
          attrNested(80, this.counters.map(([n, v]) => attrNested(81, [attrString(82, n), attrU64(83, v)]))),
        ])];
    return { messages: reply.flatMap((m) => decodeMessages(m)), raw: reply };
  }

  close(): void {}
}

const bytesType = (b: Uint8Array): number => new DataView(b.buffer, b.byteOffset).getUint16(4, true);

describe('optional counters enabled over RDMA netlink after start', () => {
  it('appear within one tick, with a rate on the next; hw_counters/ is not read beside netlink', async () => {
    const kernel = new FakeRdmaNetlink();
    run = await startDaemon('mlx5_roce', 'ports: [{ device: mlx5_0, port: 1, mtu: 4096 }]\nflows: []\n', undefined, (fx) => {
      const sysfs = { sysfsRoot: fx.root };
      return {
        measurement: {
          inventory: new SysfsInventory(sysfs),
          sources: [new NetlinkCounterSource(kernel), new SysfsCountersSource(sysfs), new SysfsHwCountersSource(sysfs), new NetdevSource(sysfs)],
          notes: [],
        },
      };
    });
    await run.tick();
    const port = sampler(run).ports.get('mlx5_0/1')!;
    expect(port.sets.map((s) => s.kind)).toEqual(['netlink', 'sysfs_counters', 'netdev']);
    let m = await run.scrape();
    expect(one(m, 'mxl_fabric_port_transmitted_bytes_total', { source: 'netlink' })).toBeUndefined();

    // `rdma statistic set link mlx5_0/1 optional-counters rdma_tx_bytes,rdma_tx_packets`
    kernel.counters = [['out_of_buffer', 7n], ['out_of_sequence', 1n], ['rdma_tx_bytes', 123_456_789_012n], ['rdma_tx_packets', 30_000_000n]];
    await run.tick();
    m = await run.scrape();
    expect(one(m, 'mxl_fabric_port_transmitted_bytes_total', { source: 'netlink', counter: 'rdma_tx_bytes' })).toBe(123_456_789_012);
    expect(one(m, 'mxl_fabric_port_transmitted_packets_total', { source: 'netlink', counter: 'rdma_tx_packets' })).toBe(30_000_000);

    kernel.counters = [['out_of_buffer', 7n], ['out_of_sequence', 1n], ['rdma_tx_bytes', 123_457_789_012n], ['rdma_tx_packets', 30_000_250n]];
    await run.tick();
    m = await run.scrape();
    expect(one(m, 'mxl_fabric_port_measured_bytes_per_second', { direction: 'tx', source: 'netlink', layer: 'l2' })).toBe(1_000_000);
    expect(one(m, 'mxl_fabric_port_measured_packets_per_second', { direction: 'tx', source: 'netlink' })).toBe(250);
  });
});

describe('reloading a 10,000-flow config', () => {
  it('keeps /-/healthy answering while it loads', async () => {
    run = await startDaemon('rxe_6_1', 'ports: [{ device: rxe0, port: 1, mtu: 4096 }]\nflows: []\n');
    const dir = path.dirname(run.configFile);
    const flow = JSON.parse(fs.readFileSync(path.join(dir, 'flows', 'data_60.json'), 'utf8')) as Record<string, unknown>;
    const lines = ['ports: [{ device: rxe0, port: 1, mtu: 4096 }]', 'flows:'];
    for (let i = 0; i < 10_000; i++) {
      const id = `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;
      fs.writeFileSync(path.join(dir, 'flows', `f${i}.json`), JSON.stringify({ ...flow, id, label: `flow ${i}` }));
      lines.push(`  - { flow: flows/f${i}.json, device: rxe0, port: 1, direction: ${i % 2 ? 'rx' : 'tx'} }`);
    }
    fs.writeFileSync(run.configFile, `${lines.join('\n')}\n`);

    let done = false;
    let answered = 0;
    // What SIGHUP (or POST /-/reload with --web.enable-lifecycle) runs.
    const reload = run.daemon.reload().then((r) => {
      done = true;
      return r;
    });
    while (!done) {
      const r = await fetch(`${run.base}/-/healthy`);
      if (!done && r.status === 200) answered++;
    }
    expect(await reload).toEqual({ ok: true });
    expect(answered).toBeGreaterThan(0);
    expect(run.daemon.state().config.flows).toHaveLength(10_000);
  }, 60_000);
});
