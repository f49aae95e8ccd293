/**
 * Child of verbs-reads.test.ts: the daemon over the stand-in libibverbs.so.1
 * (native/reader/fake-libibverbs.c) listing mlx5_0 and mlx5_1, one port each, from the file
 * FAKE_IBV_DEVICES_FILE; its counters come from the mlx5_roce sysfs tree (with a copy of mlx5_0
 * as mlx5_1), whose class/infiniband_verbs holds a uverbs node per device. mlx5_1 is deleted
 * (its node, its sysfs directory and its entry in the list go, as with `rdma link delete`) and
 * added again; what the daemon exported at each step is printed as JSON on stdout.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { one, series, startDaemon } from '../exporter/harness.js';
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

const devicesFile = process.env.FAKE_IBV_DEVICES_FILE!;
const log = process.env.FAKE_IBV_LOG!;
const calls = (): string[] => fs.readFileSync(log, 'utf8').trim().split('\n');

/** The uverbs class device `node` appears under `root`, its device directory made anew under `gen`. */
function addNode(root: string, node: string, gen: string): void {
  const classDir = path.join(root, 'class', 'infiniband_verbs');
  const target = path.join(root, 'devices', 'virtual', gen, node);
  fs.mkdirSync(target, { recursive: true });
  fs.mkdirSync(classDir, { recursive: true });
  fs.symlinkSync(path.relative(classDir, target), path.join(classDir, node));
}

fs.writeFileSync(devicesFile, 'mlx5_0:1,mlx5_1:1\n');
const run = await startDaemon('mlx5_roce', CONFIG, (fx) => {
  fs.cpSync(fx.path('class', 'infiniband', 'mlx5_0'), fx.path('class', 'infiniband', 'mlx5_1'), { recursive: true });
  addNode(fx.root, 'uverbs0', 'gen1');
  addNode(fx.root, 'uverbs1', 'gen1');
}, (fx) => {
  const opened = runSync(openVerbsReads({ sysfsRoot: fx.root }));
  if (!opened.ok) throw opened.error;
  const sysfs = { sysfsRoot: fx.root };
  return { measurement: { inventory: opened.inventory, sources: [new SysfsCountersSource(sysfs), new SysfsHwCountersSource(sysfs)], notes: [] } };
});

let packets = 1000;
const count = async (): Promise<void> => {
  for (const d of ['mlx5_0', 'mlx5_1']) {
    if (fs.existsSync(run.fx.path('class', 'infiniband', d))) run.fx.setCounter(d, 1, 'counters', 'port_xmit_packets', packets);
  }
  packets += 60;
  await run.tick();
};
const look = async (): Promise<Record<string, unknown>> => {
  const m = await run.scrape();
  const port = (device: string): Record<string, unknown> => ({
    present: one(m, 'mxl_fabric_port_present', { device }),
    pps: series(m, 'mxl_fabric_port_measured_packets_per_second', { device, direction: 'tx', source: 'sysfs_counters' }).values().next().value ?? null,
  });
  return { mlx5_0: port('mlx5_0'), mlx5_1: port('mlx5_1'), calls: calls() };
};
/** Log lines saying `msg` of `device`'s port 1. */
const logged = (msg: string, device: string): number => run.logs.filter((l) => l.includes(`msg="${msg}"`) && l.includes(`device=${device} port=1`)).length;

const steps: Record<string, unknown> = {};
await count();
await count();
steps.before = { ...(await look()), foundLog: logged('port found', 'mlx5_1') };

// rdma link delete mlx5_1: the uverbs node and the sysfs directory go, libibverbs lists it no more.
fs.rmSync(run.fx.path('class', 'infiniband_verbs', 'uverbs1'));
run.fx.removeDevice('mlx5_1');
fs.writeFileSync(devicesFile, 'mlx5_0:1\n');
await count();
steps.deleted = { ...(await look()), vanishedLog: logged('port vanished', 'mlx5_1') };

// rdma link add: all of it again, as new files.
run.fx.readdDevice('mlx5_1');
addNode(run.fx.root, 'uverbs1', 'gen2');
fs.writeFileSync(devicesFile, 'mlx5_0:1,mlx5_1:1\n');
await count();
steps.added = { ...(await look()), foundLog: logged('port found', 'mlx5_1') };
await count();
steps.counting = await look();

await run.stop();
steps.calls = calls();
process.stdout.write(`${JSON.stringify(steps)}\n`);
