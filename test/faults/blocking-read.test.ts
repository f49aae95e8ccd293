/**
 * A sysfs read that blocks: the scrape still answers, only the stuck port's counters go
 * unreadable (ETIMEDOUT), the other ports keep being sampled, and the port is retried once
 * its read returns.
 */
import { describe, it, expect, afterEach } from 'vitest';
import * as fs from 'node:fs';
import { one, series, startDaemon, type Running } from '../exporter/harness.js';
import { BlockingSource, mkfifo } from './blocking-source.js';
import { SysfsInventory, SysfsCountersSource, SysfsHwCountersSource } from '../../src/sources/sysfs/index.js';
import { NetdevSource } from '../../src/sources/netdev.js';
import { Sampler, defaultReadTimeoutMs } from '../../src/sampler/sampler.js';
import { readPlanOf } from '../../src/sampler/offload.js';
import { SysfsFixture } from '../fixtures/sysfs.js';

const CONFIG = `
sampling: { interval: 1s, window: 4s }
ports:
  - { device: rxe0, port: 1, mtu: 4096 }
  - { device: rxe1, port: 1, mtu: 4096 }
flows:
  - { flow: flows/data_60.json, device: rxe0, port: 1, direction: tx }
`;

/** rxe_6_1 with a second device, rxe1, on the same netdev. */
function twoDevices(fx: SysfsFixture): void {
  fs.cpSync(fx.path('class', 'infiniband', 'rxe0'), fx.path('class', 'infiniband', 'rxe1'), { recursive: true });
}

let run: Running | undefined;
let blocking: BlockingSource | undefined;
afterEach(async () => {
  // An abandoned worker may still be in read(2): let it return so it can exit with the test.
  blocking?.feed('0\n');
  await run?.stop();
  blocking?.close();
  run = undefined;
  blocking = undefined;
});

function start(): Promise<Running> {
  return startDaemon('rxe_6_1', CONFIG, twoDevices, (fx) => {
    blocking = new BlockingSource('rxe1', fx.path('hung', 'rxe1-port1'));
    mkfifo(blocking.fifo);
    const sysfs = { sysfsRoot: fx.root };
    return {
      measurement: {
        inventory: new SysfsInventory(sysfs),
        sources: [new SysfsCountersSource(sysfs), new SysfsHwCountersSource(sysfs), new NetdevSource(sysfs), blocking],
        notes: [],
      },
    };
  });
}

describe('a counter read that never returns', () => {
  it('costs one timeout; the stuck port reads ETIMEDOUT, the others keep their exact rates', async () => {
    const t0 = performance.now();
    run = await start(); // the first tick blocks on rxe1
    const startMs = performance.now() - t0;
    const timeout = defaultReadTimeoutMs(1000);
    expect(startMs).toBeGreaterThanOrEqual(timeout);
    expect(startMs).toBeLessThan(timeout + 5000);
    expect(run.logs.join('')).toMatch(/msg="counter read blocked; port skipped, retried with backoff" device=rxe1 port=1 error=ETIMEDOUT/);

    let pkts = 1000n;
    run.fx.setCounter('rxe0', 1, 'hw_counters', 'sent_pkts', pkts);
    run.tick();
    for (let i = 0; i < 5; i++) {
      pkts += 60n;
      run.fx.setCounter('rxe0', 1, 'hw_counters', 'sent_pkts', pkts);
      const t = performance.now();
      run.tick();
      expect(performance.now() - t).toBeLessThan(timeout); // skipped, not waited for again
    }
    const res = await run.get('/metrics');
    expect(res.status).toBe(200);
    const m = await run.scrape();
    // rxe0 unaffected.
    expect(one(m, 'mxl_fabric_port_measured_packets_per_second', { device: 'rxe0', direction: 'tx', source: 'sysfs_hw_counters' })).toBe(60);
    expect([...series(m, 'mxl_fabric_port_stat_up', { device: 'rxe0' }).values()].every((v) => v === 1)).toBe(true);
    // rxe1: every file-based counter unreadable while it is skipped; the port itself is still listed.
    const rxe1 = series(m, 'mxl_fabric_port_stat_up', { device: 'rxe1' });
    expect(rxe1.size).toBeGreaterThan(5);
    expect([...rxe1.values()].every((v) => v === 0)).toBe(true);
    expect(one(m, 'mxl_fabric_port_up', { device: 'rxe1' })).toBe(1);
    expect(one(m, 'mxl_fabric_exporter_read_errors_total', { device: 'rxe1', source: 'sysfs_counters' })).toBe(1);
    expect(series(m, 'mxl_fabric_port_measured_packets_per_second', { device: 'rxe1' }).size).toBe(0);
    expect(one(m, 'mxl_fabric_exporter_read_timeouts_total')).toBe(1);
    expect(one(m, 'mxl_fabric_exporter_blocked_reader_threads')).toBe(1);
  });

  it('abandons one worker, starts one replacement, and retries the port when its read returns', async () => {
    run = await start();
    const reader = sampler(run).reader!;
    expect(reader.timeouts).toBe(1);
    expect(reader.stuckWorkers).toBe(1);
    expect(reader.workersStarted).toBe(2);
    for (let i = 0; i < 5; i++) run.tick();
    expect(reader.workersStarted).toBe(2); // skipping costs nothing

    blocking!.feed('41\n'); // the abandoned read returns (and its worker is terminated)
    await waitFor(() => reader.stuckWorkers === 0);
    blocking!.feed('42\n'); // what the retry will read
    run.tick();
    expect(reader.blockedGroups()).toEqual([]);
    const m = await run.scrape();
    expect(one(m, 'mxl_fabric_port_stat_up', { device: 'rxe1', counter: 'port_xmit_wait' })).toBe(1);
    expect(one(m, 'mxl_fabric_port_stat_total', { device: 'rxe1', counter: 'port_xmit_wait' })).toBe(42);
    expect(one(m, 'mxl_fabric_port_stat_up', { device: 'rxe1', source: 'sysfs_hw_counters', counter: 'sent_pkts' })).toBe(1);
    expect(run.logs.join('')).toContain('msg="counter reads answer again" device=rxe1');
  });

  it('reads sysfs counter sets in the worker (FileCounterSet is offloaded, not read on the main thread)', () => {
    const fx = SysfsFixture.copy('mlx5_roce');
    try {
      const sysfs = { sysfsRoot: fx.root };
      const s = new Sampler({ inventory: new SysfsInventory(sysfs), sources: [new SysfsCountersSource(sysfs), new SysfsHwCountersSource(sysfs), new NetdevSource(sysfs)], intervalMs: 1000, windowMs: 4000 });
      s.tick();
      const sets = [...s.ports.values()].flatMap((p) => p.sets);
      expect(sets.map((x) => x.kind).sort()).toEqual(['netdev', 'sysfs_counters', 'sysfs_hw_counters']);
      for (const set of sets) expect(readPlanOf(set)?.fds.length).toBe(set.counters.length);
      expect(s.reader!.workersStarted).toBe(1);
      s.stop();
    } finally {
      fx.cleanup();
    }
  });
});

function sampler(r: Running): Sampler {
  return r.daemon.state().sampler!;
}

async function waitFor(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}
