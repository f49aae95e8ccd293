/**
 * Child of verbs-reads.test.ts, run with LD_LIBRARY_PATH at the stand-in libibverbs.so.1
 * (native/reader/fake-libibverbs.c) listing mlx5_0 and mlx5_1, one port each, whose
 * ibv_query_port of mlx5_1/1 waits on the FIFO FAKE_IBV_STALL_FIFO while FIFO.armed exists.
 * The daemon's ports come from that libibverbs, its counters from the mlx5_roce sysfs tree
 * (with a copy of mlx5_0 as mlx5_1). It prints what it saw at each step as JSON on stdout;
 * the test judges it. On a daemon that queries libibverbs on the event loop, the armed tick
 * never ends and nothing is printed.
 */
import * as fs from 'node:fs';
import { one, series, startDaemon } from '../exporter/harness.js';
import { Stall } from './blocking-source.js';
import { openVerbsReads } from '../../src/sources/verbs/index.js';
import { SysfsCountersSource, SysfsHwCountersSource } from '../../src/sources/sysfs/index.js';
import { runSync } from '../../src/reads/program.js';

const CONFIG = `
sampling: { interval: 1s, window: 4s }
ports:
  - { device: mlx5_0, port: 1, mtu: 4096, capacity: 100Gbps }
  - { device: mlx5_1, port: 1, mtu: 4096, capacity: 100Gbps }
flows: []
`;

const fifo = process.env.FAKE_IBV_STALL_FIFO!;
const log = process.env.FAKE_IBV_LOG!;
const stall = new Stall(fifo);
const arm = (on: boolean): void => (on ? fs.writeFileSync(`${fifo}.armed`, '') : fs.rmSync(`${fifo}.armed`, { force: true }));
const calls = (): string[] => fs.readFileSync(log, 'utf8').trim().split('\n');

const run = await startDaemon('mlx5_roce', CONFIG, (fx) => {
  fs.cpSync(fx.path('class', 'infiniband', 'mlx5_0'), fx.path('class', 'infiniband', 'mlx5_1'), { recursive: true });
  for (const d of ['mlx5_0', 'mlx5_1']) fx.setCounter(d, 1, 'counters', 'port_xmit_packets', 940);
}, (fx) => {
  const opened = runSync(openVerbsReads());
  if (!opened.ok) throw opened.error;
  const sysfs = { sysfsRoot: fx.root };
  return { measurement: { inventory: opened.inventory, sources: [new SysfsCountersSource(sysfs), new SysfsHwCountersSource(sysfs)], notes: [] } };
});
const reader = run.daemon.state().sampler!.reader;
let packets = 1000;
const count = async (): Promise<void> => {
  for (const d of ['mlx5_0', 'mlx5_1']) run.fx.setCounter(d, 1, 'counters', 'port_xmit_packets', packets);
  packets += 60;
  const t0 = performance.now();
  const tick = run.tick();
  const answered = await answersDuring(tick);
  await tick;
  return void Object.assign(lastTick, { answered, ms: performance.now() - t0 });
};
const lastTick = { answered: false, ms: 0 };
const look = async (): Promise<Record<string, unknown>> => {
  const m = await run.scrape();
  const pps = (device: string): number | undefined =>
    series(m, 'mxl_fabric_port_measured_packets_per_second', { device, direction: 'tx', source: 'sysfs_counters' }).values().next().value;
  const statUp = (device: string): number[] => [...new Set(series(m, 'mxl_fabric_port_stat_up', { device }).values())];
  return {
    tick: { ...lastTick },
    timeouts: one(m, 'mxl_fabric_exporter_read_timeouts_total'),
    blockedThreads: one(m, 'mxl_fabric_exporter_blocked_reader_threads'),
    bounded: one(m, 'mxl_fabric_exporter_reads_bounded'),
    mlx5_0: { up: one(m, 'mxl_fabric_port_up', { device: 'mlx5_0' }), pps: pps('mlx5_0'), statUp: statUp('mlx5_0'),
      xmit: one(m, 'mxl_fabric_port_stat_total', { device: 'mlx5_0', counter: 'port_xmit_packets' }) },
    mlx5_1: { up: one(m, 'mxl_fabric_port_up', { device: 'mlx5_1' }), pps: pps('mlx5_1'), statUp: statUp('mlx5_1'),
      xmit: one(m, 'mxl_fabric_port_stat_total', { device: 'mlx5_1', counter: 'port_xmit_packets' }) },
  };
};

/** Whether /-/healthy answered while `pending` ran (event-loop.ts's answersDuring, without vitest). */
async function answersDuring(pending: Promise<unknown>): Promise<boolean> {
  let done = false;
  void pending.then(() => { done = true; });
  const res = await fetch(`${run.base}/-/healthy`);
  return res.status === 200 && !done;
}

async function waitFor(cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

const steps: Record<string, unknown> = {};
await count();
await count();
steps.before = await look();
arm(true);
await count();
steps.stalled = await look();
steps.blockedLog = /msg="counter read blocked; port skipped until the read returns" device=mlx5_1 port=1 error=ETIMEDOUT/.test(run.logs.join(''));
await count();
steps.skipped = await look();
arm(false);
stall.feed();
await waitFor(() => reader.blockedThreads === 0);
await count();
await count();
steps.recovered = await look();
// Stopped while a query is stuck: the context stays open until the query returns.
arm(true);
await count();
steps.stuckAgain = await look();
await run.stop();
steps.callsAtStop = calls();
arm(false);
stall.feed();
await waitFor(() => calls().includes('close mlx5_1'));
steps.calls = calls();
stall.close();
process.stdout.write(`${JSON.stringify(steps)}\n`);
