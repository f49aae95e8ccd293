import { afterEach, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConnectionMonitor } from '../../../src/sources/restrack/monitor.js';
import { RestrackSource } from '../../../src/sources/restrack/source.js';
import { BoundedReads } from '../../../src/reads/bounded.js';
import { NetlinkUnavailable } from '../../../src/sources/netlink/index.js';
import { FakeRestrackKernel } from './fake-kernel.js';
import { ProcFixture, mapsLine } from '../procfs/fixture.js';
import { processAndMaps } from '../../../src/sources/restrack/monitor.js';
import { type ExitRead, processExitReads, processReads } from '../../../src/sources/procfs/index.js';
import type { ConnectionSeries } from '../../../src/config/types.js';

const FLOW = '5fbec3b1-1b0f-417d-9059-8b94a47197ed';

let reader: BoundedReads | undefined;
afterEach(() => reader?.close());

function monitorOn(kernel: FakeRestrackKernel, logs: string[] = []): ConnectionMonitor {
  reader = new BoundedReads({ readTimeoutMs: 1000, mode: 'direct' });
  const log = { warn: (_f: unknown, m: string) => logs.push(m), info: (_f: unknown, m: string) => logs.push(m) };
  return new ConnectionMonitor(new RestrackSource(() => ({ ok: true, transport: kernel.transport() })), log as never);
}

describe('the connection monitor', () => {
  it('says a port\'s PSNs are dead when the port counts packets and no connection\'s PSN moves (irdma)', async () => {
    const k = new FakeRestrackKernel();
    k.device(0, 'irdma0', [{ lqpn: 7, sqPsn: 100, rqPsn: 5, pid: 1 }]);
    const m = monitorOn(k);
    const busy = (): number => 2000;
    await m.tick(reader!, 0, busy);
    expect(m.psnLiveOf('irdma0', 1)).toBeUndefined(); // first sight: no window yet
    await m.tick(reader!, 1000, busy);
    expect(m.psnLiveOf('irdma0', 1)).toBe(0);
    k.qps.get('irdma0')![0]!.sqPsn = 160;
    await m.tick(reader!, 2000, busy);
    expect(m.psnLiveOf('irdma0', 1)).toBe(1);
  });

  it('decides nothing on an idle port (fewer than 1,000 packets in the window)', async () => {
    const k = new FakeRestrackKernel();
    k.device(0, 'irdma0', [{ lqpn: 7, sqPsn: 100, pid: 1 }]);
    const m = monitorOn(k);
    await m.tick(reader!, 0, () => 400);
    await m.tick(reader!, 1000, () => 499);
    expect(m.psnLiveOf('irdma0', 1)).toBeUndefined();
  });

  it('logs an unreadable source once, keeps the counts, and says when it reads again', async () => {
    const k = new FakeRestrackKernel();
    k.device(0, 'rxe0', [{ lqpn: 33, sqPsn: 100, pid: 1 }]);
    let down = false;
    const logs: string[] = [];
    reader = new BoundedReads({ readTimeoutMs: 1000, mode: 'direct' });
    const log = { warn: (_f: unknown, m: string) => logs.push(m), info: (_f: unknown, m: string) => logs.push(m) };
    const m = new ConnectionMonitor(new RestrackSource(() => (down
      ? { ok: false, error: new NetlinkUnavailable('family-unsupported', 93, 'no ib_core') }
      : { ok: true, transport: k.transport() })), log as never);
    await m.tick(reader, 0);
    k.qps.get('rxe0')![0]!.sqPsn = 150;
    await m.tick(reader, 1000);
    down = true;
    m['source'].abandon();
    await m.tick(reader, 2000);
    await m.tick(reader, 3000);
    expect(m.lastStatus.error).toBe('RDMA netlink unavailable (family-unsupported): no ib_core');
    expect(m.connections()[0]).toMatchObject({ sent: { packets: 50 }, window: undefined, present: true });
    down = false;
    m['source'].abandon();
    k.qps.get('rxe0')![0]!.sqPsn = 170;
    await m.tick(reader, 4000);
    expect(m.connections()[0]).toMatchObject({ sent: { packets: 70 } });
    expect(logs).toEqual(['connections cannot be read; their counts stand still (logged once)', 'connections read again']);
  });
});

describe('the connection monitor and the processes behind connections', () => {
  it('names the process, its container and the flow it maps from /proc (a fixture tree)', async () => {
    const proc = ProcFixture.create();
    const cid = 'c'.repeat(64);
    proc.add({
      pid: 202, comm: 'mxl-fabrics-dem', startTicks: 4242n, cgroup: `0::/system.slice/docker-${cid}.scope\n`,
      maps: `${mapsLine(0x7f0000000000n, 1, 'rw-s', { path: `/dev/shm/mxl-tx/${FLOW}.mxl-flow/grains/data.0`, inode: 12 })}\n`,
    });
    const k = new FakeRestrackKernel();
    k.device(3, 'rxe0', [{ lqpn: 33, sqPsn: 100, rqPsn: 5, pid: 202 }], [{ lqpn: 33, src: ['10.99.0.1', 48130], dst: ['10.99.0.2', 1312], pid: 202 }]);
    reader = new BoundedReads({ readTimeoutMs: 1000, mode: 'direct' });
    const m = new ConnectionMonitor(new RestrackSource(() => ({ ok: true, transport: k.transport() })), undefined, undefined,
      { domainPaths: () => ['/dev/shm/mxl-tx'], pins: () => [], procRoot: proc.root });
    try {
      await m.tick(reader, 0);
      const c = m.connections()[0]!;
      expect(m.ownerOf(c.key)).toEqual({ process: 'mxl-fabrics-dem', container: cid, podUid: '', carried: { flowId: FLOW, domain: '/dev/shm/mxl-tx', how: 'only-flow' } });
      // The process exits between two ticks, its QP still in the tables (the kernel tears it down
      // as the process exits: measured with real MXL, issue 32): the QP keeps the owner and flow
      // it was last known to have, which its ConnectionDown names once it is gone.
      proc.remove(202);
      await m.tick(reader, 1000);
      expect(m.ownerOf(c.key)).toEqual({ process: 'mxl-fabrics-dem', container: cid, podUid: '', carried: { flowId: FLOW, domain: '/dev/shm/mxl-tx', how: 'only-flow' } });
      expect(m.processOf(202)).toMatchObject({ ok: false, reason: 'gone' });
    } finally {
      proc.close();
    }
  });

  it('keeps the process and flow of a QP whose creating thread exited, for the life of the QP (issue 33)', async () => {
    const proc = ProcFixture.create();
    const maps = `${mapsLine(0x7f0000000000n, 1, 'rw-s', { path: `/dev/shm/mxl-tx/${FLOW}.mxl-flow/grains/data.0`, inode: 12 })}\n`;
    proc.add({ pid: 202, comm: 'mxl-fabrics-dem', startTicks: 4242n, maps });
    // The QP was made by thread 203 of process 202: restrack names the thread (task_pid_vnr).
    proc.add({ pid: 203, tgid: 202, comm: 'mxl-fabrics-dem', startTicks: 4250n, maps });
    const k = new FakeRestrackKernel();
    k.device(3, 'rxe0', [{ lqpn: 33, sqPsn: 100, rqPsn: 5, pid: 203 }], [{ lqpn: 33, src: ['10.99.0.1', 48130], dst: ['10.99.0.2', 1312], pid: 203 }]);
    reader = new BoundedReads({ readTimeoutMs: 1000, mode: 'direct' });
    const m = new ConnectionMonitor(new RestrackSource(() => ({ ok: true, transport: k.transport() })), undefined, undefined,
      { domainPaths: () => ['/dev/shm/mxl-tx'], pins: () => [], procRoot: proc.root });
    const carried = { flowId: FLOW, domain: '/dev/shm/mxl-tx', how: 'only-flow' };
    try {
      await m.tick(reader, 0);
      const key = m.connections()[0]!.key;
      expect(m.ownerOf(key)).toMatchObject({ process: 'mxl-fabrics-dem', carried });
      // The thread exits: /proc/203 goes, and the kernel names no pid for the QP or its cm_id.
      proc.remove(203);
      delete k.qps.get('rxe0')![0]!.pid;
      delete k.cmIds.get('rxe0')![0]!.pid;
      k.qps.get('rxe0')![0]!.sqPsn += 50;
      await m.tick(reader, 1000);
      expect(m.connections()).toMatchObject([{ key, obs: { pid: 203 }, pidKept: true, window: { sent: 50 } }]);
      expect(m.ownerOf(key)).toMatchObject({ process: 'mxl-fabrics-dem', carried });
      // The process itself exits and its pid is reused by another: the QP is not the other's; it
      // keeps the owner it was last known to have while it is listed.
      proc.add({ pid: 202, comm: 'other', startTicks: 9999n, maps });
      await m.tick(reader, 2000);
      expect(m.ownerOf(key)).toMatchObject({ process: 'mxl-fabrics-dem', carried });
      expect(m.processOf(203)).toMatchObject({ ok: false, reason: 'gone' });
    } finally {
      proc.close();
    }
  });

  it('places a process\'s unpaired flows where all its unpaired connections run, per process; nowhere when they run in two places', async () => {
    const FLOW_2 = '0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d21';
    const proc = ProcFixture.create();
    const maps = (dir: string): string => [FLOW, FLOW_2].map((f, i) =>
      mapsLine(0x7f0000000000n + BigInt(i) * 0x1000n, 1, 'rw-s', { path: `${dir}/${f}.mxl-flow/grains/data.0`, inode: 12 + i })).join('\n') + '\n';
    proc.add({ pid: 205, comm: 'sender', startTicks: 1n, maps: maps('/dev/shm/mxl') }); // two connections out of rxe0
    proc.add({ pid: 206, comm: 'receiver', startTicks: 1n, maps: maps('/dev/shm/mxl') }); // two into rxe1
    proc.add({ pid: 207, comm: 'split', startTicks: 1n, maps: maps('/dev/shm/mxl-b') }); // one out of rxe0, one out of rxe1
    const k = new FakeRestrackKernel();
    k.device(3, 'rxe0', [{ lqpn: 33, sqPsn: 0, rqPsn: 0, pid: 205 }, { lqpn: 34, sqPsn: 0, rqPsn: 0, pid: 205 }, { lqpn: 37, sqPsn: 0, rqPsn: 0, pid: 207 }]);
    k.device(4, 'rxe1', [{ lqpn: 35, sqPsn: 0, rqPsn: 0, pid: 206 }, { lqpn: 36, sqPsn: 0, rqPsn: 0, pid: 206 }, { lqpn: 38, sqPsn: 0, rqPsn: 0, pid: 207 }]);
    reader = new BoundedReads({ readTimeoutMs: 1000, mode: 'direct' });
    const m = new ConnectionMonitor(new RestrackSource(() => ({ ok: true, transport: k.transport() })), undefined, undefined,
      { domainPaths: () => ['/dev/shm/mxl', '/dev/shm/mxl-b'], pins: () => [], procRoot: proc.root });
    try {
      await m.tick(reader, 0);
      expect(m.placements('/dev/shm/mxl', FLOW)).toEqual([]); // no PSN has moved yet
      for (const q of k.qps.get('rxe0')!) q.sqPsn += 100;
      for (const q of k.qps.get('rxe1')!) if (q.pid === 206) q.rqPsn! += 100; else q.sqPsn += 100;
      await m.tick(reader, 1000);
      for (const f of [FLOW, FLOW_2]) {
        expect(m.placements('/dev/shm/mxl', f)).toEqual([{ device: 'rxe0', port: 1, direction: 'tx' }, { device: 'rxe1', port: 1, direction: 'rx' }]);
        expect(m.placements('/dev/shm/mxl-b', f)).toEqual([]);
      }
      expect(m.processShares().map((s) => [s.pid, s.connections.length])).toEqual([[205, 2], [207, 2], [206, 2]]);
    } finally {
      proc.close();
    }
  });

  it('says once that maps needs CAP_SYS_PTRACE, on the status too, and exports the connection without a flow', async () => {
    const proc = ProcFixture.create();
    proc.add({ pid: 202, comm: 'mxl-fabrics-dem', startTicks: 1n, maps: '' });
    const k = new FakeRestrackKernel();
    k.device(3, 'rxe0', [{ lqpn: 33, sqPsn: 100, pid: 202 }, { lqpn: 34, sqPsn: 100, pid: 202 }]);
    const logs: string[] = [];
    reader = new BoundedReads({ readTimeoutMs: 1000, mode: 'direct' });
    const log = { warn: (_f: unknown, msg: string) => logs.push(msg), info: (_f: unknown, msg: string) => logs.push(msg) };
    // The kernel refuses another user's maps with EACCES (fs/proc/base.c proc_mem_open); as root
    // in this test nothing is refused, so the maps read answers as the kernel would.
    // eslint-disable-next-line require-yield
    const denied: typeof processAndMaps = function* (root, pid) {
      const process = yield* processReads(root, pid);
      return { process, maps: { ok: false, reason: 'denied', detail: `EACCES: read '${root}/${pid}/maps'` } };
    };
    const m = new ConnectionMonitor(new RestrackSource(() => ({ ok: true, transport: k.transport() })), log as never, undefined,
      { domainPaths: () => ['/dev/shm/mxl-tx'], pins: () => [], procRoot: proc.root, processReads: denied });
    try {
      await m.tick(reader, 0);
      await m.tick(reader, 1000);
      expect(logs).toEqual(["reading another user's /proc/PID/maps needs CAP_SYS_PTRACE: connections of such processes are exported without their MXL flows (logged once)"]);
      expect(m.lastStatus.mapsDenied).toBe(`EACCES: read '${proc.root}/202/maps'`);
      expect(m.connections().map((c) => m.ownerOf(c.key))).toEqual([
        { process: 'mxl-fabrics-dem', container: '', podUid: '', carried: undefined },
        { process: 'mxl-fabrics-dem', container: '', podUid: '', carried: undefined },
      ]);
    } finally {
      proc.close();
    }
  });
});

describe('each device read at its own interval under connections.qp_queries_per_second (issue 35)', () => {
  /** A sysfs root where rxe0 is rxe (its `parent` attribute: sysfs/driver.ts) and mlx5_0 a device of no known driver. */
  function sysfs(): string {
    const root = mkdtempSync(join(tmpdir(), 'pacing-sysfs-'));
    mkdirSync(join(root, 'class', 'infiniband', 'rxe0'), { recursive: true });
    writeFileSync(join(root, 'class', 'infiniband', 'rxe0', 'parent'), 'veth0\n');
    return root;
  }

  function paced(k: FakeRestrackKernel, logs: string[], queriesPerSecond = 1000): ConnectionMonitor {
    reader = new BoundedReads({ readTimeoutMs: 1000, mode: 'direct' });
    const log = { warn: (_f: unknown, m: string) => logs.push(m), info: (_f: unknown, m: string) => logs.push(m) };
    const pacing = { samplingIntervalMs: 1000, connectionsIntervalMs: 1000, qpQueriesPerSecond: queriesPerSecond };
    return new ConnectionMonitor(new RestrackSource(() => ({ ok: true, transport: k.transport() }), undefined, sysfs()), log as never, undefined, undefined, () => pacing);
  }

  const qps = (n: number, first: number) => Array.from({ length: n }, (_, i) => ({ lqpn: first + i, sqPsn: 100, rqPsn: 1, rqpn: 9000 + i, pid: 7 }));
  // 100 Gb/s at 4,096-byte packets.
  const limit = (): number => 2749;

  it('reads a device whose QPs outrun the budget further apart, keeping its windows between; an rxe device every tick', async () => {
    const k = new FakeRestrackKernel();
    k.device(1, 'rxe0', qps(1500, 100));
    k.device(2, 'mlx5_0', qps(1500, 100));
    const logs: string[] = [];
    const m = paced(k, logs);
    const dumped: string[] = [];
    k.onQpDump = (d) => dumped.push(d);
    const asked = new Map<string, [number, number]>();
    for (const at of [0, 1000, 2000, 3000, 4000]) {
      for (const q of [...k.qps.get('rxe0')!, ...k.qps.get('mlx5_0')!]) q.sqPsn += 10;
      expect(m.due(at, limit)).toBe(true);
      const before = Date.now();
      const had = dumped.length;
      await m.tick(reader!, at, undefined, undefined, limit);
      for (const d of dumped.slice(had)) asked.set(d, [before, Date.now()]);
    }
    // 1,500 QPs at 1,000 a second: every 2 s on mlx5_0 (no driver told apart: it pays); rxe answers from memory.
    expect(dumped).toEqual(['rxe0', 'mlx5_0', 'rxe0', 'rxe0', 'mlx5_0', 'rxe0', 'rxe0', 'mlx5_0']);
    const devices = m.tracker.devices();
    expect(devices.get('mlx5_0')).toMatchObject({ lateReads: 0, qpQueries: 4500, readIntervalMs: 2000, overBudget: false });
    expect(devices.get('rxe0')).toMatchObject({ lateReads: 0, qpQueries: 7500, readIntervalMs: 1000, overBudget: false });
    // Each device's last read is stamped within the tick that read it (mlx5_0 last at 4000, rxe0 at 4000 too).
    for (const d of ['mlx5_0', 'rxe0']) {
      const [from, to] = asked.get(d)!;
      expect(devices.get(d)!.lastReadUnixMs).toBeGreaterThanOrEqual(from);
      expect(devices.get(d)!.lastReadUnixMs).toBeLessThanOrEqual(to);
    }
    // Between its reads mlx5_0's connections keep their last window (a rate, not a gap).
    const one = m.connections().find((c) => c.obs.device === 'mlx5_0')!;
    expect(one.window).toEqual({ sent: 20, received: 0, ms: 2000 });
    expect(logs).toEqual([]);
  });

  it('reads no further apart than the PSN limit allows, over budget, and says so once', async () => {
    const k = new FakeRestrackKernel();
    k.device(2, 'mlx5_0', qps(10_000, 100));
    const logs: string[] = [];
    const m = paced(k, logs);
    for (const at of [0, 1000, 2000, 3000, 4000]) await m.tick(reader!, at, undefined, undefined, limit);
    expect(m.tracker.devices().get('mlx5_0')).toMatchObject({ lateReads: 0, qpQueries: 30_000, readIntervalMs: 2000, overBudget: true });
    expect(logs).toEqual(['connections.qp_queries_per_second would read this device further apart than its fastest port may leave its PSNs unread: read at that limit instead, over budget']);
    expect(m.due(5000, limit)).toBe(false);
    expect(m.due(5500, limit)).toBe(true);
  });
});

describe('the processes behind thousands of connections, read again (issue 35)', () => {
  const FLOW_B = '5fbec3b1-1b0f-417d-9059-8b94a4710002';
  const mapsOf = (flow: string): string => `${mapsLine(0x7f0000000000n, 1, 'rw-s', { path: `/dev/shm/mxl-tx/${flow}.mxl-flow/grains/data.0`, inode: 12 })}\n`;

  it('reads a process found before by its stat alone, and its maps again when its connections change or every 10 s', async () => {
    const proc = ProcFixture.create();
    proc.add({ pid: 202, comm: 'mxl-fabrics-dem', startTicks: 4242n, maps: mapsOf(FLOW) });
    const k = new FakeRestrackKernel();
    k.device(3, 'rxe0', [{ lqpn: 33, sqPsn: 100, rqPsn: 5, pid: 202 }], [{ lqpn: 33, src: ['10.99.0.1', 48130], dst: ['10.99.0.2', 1312], pid: 202 }]);
    reader = new BoundedReads({ readTimeoutMs: 1000, mode: 'direct' });
    const m = new ConnectionMonitor(new RestrackSource(() => ({ ok: true, transport: k.transport() })), undefined, undefined,
      { domainPaths: () => ['/dev/shm/mxl-tx'], pins: () => [], procRoot: proc.root });
    const carried = (): string | undefined => m.ownerOf(m.connections()[0]!.key)?.carried?.flowId;
    try {
      await m.tick(reader, 0);
      expect(carried()).toBe(FLOW);
      // The same process (same start): its name is not read again; its maps stand for 10 s while its connections do.
      proc.write(202, 'comm', 'renamed\n');
      proc.write(202, 'maps', mapsOf(FLOW_B));
      await m.tick(reader, 1000);
      expect([m.processOf(202)?.ok && m.processOf(202)!.process.comm, carried()]).toEqual(['mxl-fabrics-dem', FLOW]);
      await m.tick(reader, 10_500);
      expect(carried()).toBe(FLOW_B);
      // A new connection of the process: its maps are read at once.
      proc.write(202, 'maps', mapsOf(FLOW));
      k.qps.get('rxe0')![0]!.sqPsn += 50; // QP 33 sends: the process's one connection that way carries the flow
      k.qps.get('rxe0')!.push({ lqpn: 34, sqPsn: 100, rqPsn: 5, pid: 202 });
      await m.tick(reader, 11_500);
      expect(carried()).toBe(FLOW);
      // Another process under the pid (another start): read in full.
      proc.remove(202);
      proc.add({ pid: 202, comm: 'other', startTicks: 9999n, maps: mapsOf(FLOW) });
      await m.tick(reader, 12_500);
      expect(m.processOf(202)).toMatchObject({ ok: true, process: { comm: 'other', startTicks: 9999n } });
    } finally {
      proc.close();
    }
  });
});

describe('a vanished connection whose process exited (issue 32: one page per cause)', () => {
  // Flow A's initiator (pid 309) on rxe0 and the target (pid 181) on rxe1, as in the soft-RoCE
  // guest with real MXL: killing the initiator removes its QP (its process is gone) and the
  // target's (MXL's target destroys it after the disconnect and listens again; it still runs).
  const INITIATOR = { lqpn: 17, src: ['192.168.77.1', 44056] as const, dst: ['192.168.77.2', 1312] as const };
  function twoEnds(): { proc: ProcFixture; k: FakeRestrackKernel } {
    const proc = ProcFixture.create();
    proc.add({ pid: 309, comm: 'mxl-fabrics-dem', startTicks: 5000n });
    proc.add({ pid: 181, comm: 'mxl-fabrics-dem', startTicks: 4000n });
    const k = new FakeRestrackKernel();
    k.device(3, 'rxe0', [{ lqpn: INITIATOR.lqpn, sqPsn: 100, rqPsn: 5, rqpn: 18, pid: 309 }],
      [{ lqpn: INITIATOR.lqpn, src: [...INITIATOR.src], dst: [...INITIATOR.dst], pid: 309 }]);
    k.device(4, 'rxe1', [{ lqpn: 18, sqPsn: 5, rqPsn: 100, rqpn: 17, pid: 181 }],
      [{ lqpn: 18, src: [...INITIATOR.dst], dst: [...INITIATOR.src], pid: 181 }]);
    return { proc, k };
  }
  /** The monitor with its exit checks counted (pid per check) and, when `answer` says, answered instead. */
  function monitor(proc: ProcFixture, k: FakeRestrackKernel, checked: number[], opts: { answer?: ExitRead; series?: ConnectionSeries } = {}): ConnectionMonitor {
    reader = new BoundedReads({ readTimeoutMs: 1000, mode: 'direct' });
    const exitReads: typeof processExitReads = function* (root, last) {
      checked.push(last.pid);
      const r = yield* processExitReads(root, last);
      return opts.answer ?? r;
    };
    return new ConnectionMonitor(new RestrackSource(() => ({ ok: true, transport: k.transport() })), undefined, undefined,
      { domainPaths: () => [], pins: () => [], procRoot: proc.root, exitReads, ...(opts.series ? { series: () => opts.series! } : {}) });
  }
  const keyOn = (m: ConnectionMonitor, device: string): string => m.connections().find((c) => c.obs.device === device)!.key;
  const exitedNow = (m: ConnectionMonitor): Record<string, boolean> =>
    Object.fromEntries(m.connections().map((c) => [`${c.obs.device} ${c.present ? 'present' : 'vanished'}`, m.processExited(c.key)]));

  it('the killed initiator\'s connection is exited; the target\'s, whose process runs, is not; a present one is not; checked only once vanished', async () => {
    const { proc, k } = twoEnds();
    const checked: number[] = [];
    const m = monitor(proc, k, checked);
    try {
      await m.tick(reader!, 0);
      await m.tick(reader!, 1000);
      expect(exitedNow(m)).toEqual({ 'rxe0 present': false, 'rxe1 present': false });
      expect(checked).toEqual([]); // nothing vanished: nothing read for it
      expect(m.anyProcessExited()).toBe(false);
      proc.remove(309); // SIGKILL: the process goes, and both QPs with it
      k.qps.set('rxe0', []);
      k.cmIds.set('rxe0', []);
      k.qps.set('rxe1', []);
      k.cmIds.set('rxe1', []);
      await m.tick(reader!, 2000);
      expect(exitedNow(m)).toEqual({ 'rxe0 vanished': true, 'rxe1 vanished': false });
      expect(checked.sort()).toEqual([181, 309]);
      // An exit is for good: the initiator's is not read again; the target's still is, each read.
      await m.tick(reader!, 3000);
      expect(checked.sort()).toEqual([181, 181, 309]);
      expect(m.processExited(keyOn(m, 'rxe0'))).toBe(true);
      // The target exits too, later: its kept connection's process has exited now.
      proc.remove(181);
      await m.tick(reader!, 4000);
      expect(exitedNow(m)).toEqual({ 'rxe0 vanished': true, 'rxe1 vanished': true });
    } finally {
      proc.close();
    }
  });

  it('the target killed: its vanished connection is exited; the initiator\'s QP in ERR is present, not checked', async () => {
    const { proc, k } = twoEnds();
    const checked: number[] = [];
    const m = monitor(proc, k, checked);
    try {
      await m.tick(reader!, 0);
      proc.remove(181);
      k.qps.set('rxe1', []);
      k.cmIds.set('rxe1', []);
      k.qps.get('rxe0')![0]!.state = 6; // retries exceeded: ERR
      await m.tick(reader!, 1000);
      expect(exitedNow(m)).toEqual({ 'rxe0 present': false, 'rxe1 vanished': true });
      expect(checked).toEqual([181]);
    } finally {
      proc.close();
    }
  });

  it('a pid reused by another process is exited; a stat the kernel refuses (EACCES) counts as running', async () => {
    const { proc, k } = twoEnds();
    const checked: number[] = [];
    const m = monitor(proc, k, checked);
    try {
      await m.tick(reader!, 0);
      proc.add({ pid: 309, comm: 'mxl-fabrics-dem', startTicks: 7777n }); // the same name, another process
      k.qps.set('rxe0', []);
      k.cmIds.set('rxe0', []);
      await m.tick(reader!, 1000);
      expect(m.processExited(keyOn(m, 'rxe0'))).toBe(true);
    } finally {
      proc.close();
    }
    const denied = twoEnds();
    const d = monitor(denied.proc, denied.k, [], { answer: { ok: false, reason: 'denied', detail: `EACCES: read '${denied.proc.root}/309/stat'` } });
    try {
      await d.tick(reader!, 0);
      denied.proc.remove(309);
      denied.k.qps.set('rxe0', []);
      denied.k.cmIds.set('rxe0', []);
      await d.tick(reader!, 1000);
      await d.tick(reader!, 2000);
      expect(exitedNow(d)).toEqual({ 'rxe0 vanished': false, 'rxe1 present': false });
    } finally {
      denied.proc.close();
    }
  });

  it('a process never read (not in this PID namespace, hidepid) is never taken for one that exited; at `flow` nothing is checked', async () => {
    const { proc, k } = twoEnds();
    proc.remove(309); // /proc/309 was never there for the exporter
    const checked: number[] = [];
    const m = monitor(proc, k, checked);
    try {
      await m.tick(reader!, 0);
      k.qps.set('rxe0', []);
      k.cmIds.set('rxe0', []);
      await m.tick(reader!, 1000);
      expect(exitedNow(m)).toEqual({ 'rxe0 vanished': false, 'rxe1 present': false });
      expect(checked).toEqual([]);
    } finally {
      proc.close();
    }
    const grouped = twoEnds();
    const g = monitor(grouped.proc, grouped.k, checked, { series: 'flow' });
    try {
      await g.tick(reader!, 0);
      grouped.proc.remove(309);
      grouped.k.qps.set('rxe0', []);
      grouped.k.cmIds.set('rxe0', []);
      await g.tick(reader!, 1000);
      expect(exitedNow(g)).toEqual({ 'rxe0 vanished': false, 'rxe1 present': false });
      expect(checked).toEqual([]);
    } finally {
      grouped.proc.close();
    }
  });
});
