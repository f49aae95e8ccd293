/**
 * Connections end to end on the daemon: restrack from an in-memory kernel, processes from a
 * /proc fixture, flows from an MXL domain: the metrics of the join and the landing page's table.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { one, series, startDaemon, type Running } from './harness.js';
import { FakeRestrackKernel } from '../sources/restrack/fake-kernel.js';
import { NetlinkRequestError, NetlinkUnavailable } from '../../src/sources/netlink/index.js';
import { ProcFixture, mapsLine } from '../sources/procfs/fixture.js';
import { addFlow, commit, makeDomain } from '../domain/mxl-domain.mjs';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';

const VIDEO = {
  id: '0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d21', label: 'Camera 2 video', format: 'urn:x-nmos:format:video',
  tags: { 'urn:x-nmos:tag:grouphint/v1.0': ['Camera 2:Video'] }, media_type: 'video/v210',
  grain_rate: { numerator: 25 }, frame_width: 1920, frame_height: 1080, interlace_mode: 'progressive',
};
/** The per-connection series these tests read (metrics.connection_series: qp; the default counts groups). */
const PER_QP = 'metrics: { connection_series: qp }\n';
/** The model's packets per second for VIDEO on rxe0 (rxe_6_1: IB MTU 4096). */
const PREDICTED = 33_750;

let run: Running | undefined;
let proc: ProcFixture | undefined;
afterEach(async () => {
  await run?.stop();
  proc?.close();
  run = undefined;
  proc = undefined;
});

async function start(pin?: string, direction: 'tx' | 'rx' = 'tx'): Promise<{ kernel: FakeRestrackKernel; domain: string }> {
  const domain = makeDomain();
  addFlow(domain, VIDEO, { id: VIDEO.id, format: 1, rate: [25n, 1n], grainCount: 2, headIndex: 5000n, lastWriteTime: 1n });
  proc = ProcFixture.create();
  const grain = (pid: number, comm: string): void => void proc!.add({
    pid, comm, startTicks: 7n, maps: `${mapsLine(0x7f0000000000n, 1, 'rw-s', { path: `${domain}/${VIDEO.id}.mxl-flow/grains/data.0`, inode: 12 })}\n`,
  });
  grain(202, 'mxl-fabrics-dem');
  grain(205, 'mxl-fabrics-dem');
  const kernel = new FakeRestrackKernel();
  kernel.device(3, 'rxe0', [
    { lqpn: 33, sqPsn: 100, rqPsn: 1, rqpn: 33, pid: 202 },
    { lqpn: 34, sqPsn: 100, rqPsn: 1, rqpn: 34, pid: 205 },
    { lqpn: 35, sqPsn: 100, rqPsn: 1, rqpn: 35, pid: 205 },
  ], [
    { lqpn: 33, src: ['10.99.0.1', 48130], dst: ['10.99.0.2', 1312], pid: 202 },
    { lqpn: 34, src: ['10.99.0.1', 48131], dst: ['10.99.0.2', 1313], pid: 205 },
    { lqpn: 35, src: ['10.99.0.1', 48132], dst: ['10.99.0.3', 1313], pid: 205 },
  ]);
  const config = `
${PER_QP}sampling: { interval: 1s, window: 4s }
ports:
  - { device: rxe0, port: 1, provider: rdma_rocev2, mtu: auto, capacity: auto }
domains:
  - { path: ${domain}, device: rxe0, direction: ${direction}${pin ? `, peer: "${pin}"` : ''} }
`;
  run = await startDaemon('rxe_6_1', config, undefined, () => ({ restrack: () => ({ ok: true, transport: kernel.transport() }), procRoot: proc!.root }));
  return { kernel, domain };
}

async function second(kernel: FakeRestrackKernel, moves: readonly number[]): Promise<void> {
  kernel.qps.get('rxe0')!.forEach((q, i) => (q.sqPsn += moves[i] ?? 0));
  await run!.tick(1);
}

/**
 * A bind: auto domain with VIDEO, mapped by pid 202, whose one connection on rxe0 carries it.
 * `sampling`: the config's; `timer`: options for the daemon (manualClock: undefined, its own timer).
 */
async function startAuto(sampling = '{ interval: 1s, window: 4s }', timer: { manualClock?: undefined } = {}): Promise<FakeRestrackKernel> {
  const domain = makeDomain();
  addFlow(domain, VIDEO, { id: VIDEO.id, format: 1, rate: [25n, 1n], grainCount: 2, headIndex: 5000n, lastWriteTime: 1n });
  proc = ProcFixture.create();
  proc.add({ pid: 202, comm: 'mxl-fabrics-dem', startTicks: 7n, maps: `${mapsLine(0x7f0000000000n, 1, 'rw-s', { path: `${domain}/${VIDEO.id}.mxl-flow/data`, inode: 12 })}\n` });
  const kernel = new FakeRestrackKernel();
  kernel.device(3, 'rxe0', [{ lqpn: 33, sqPsn: 100, rqPsn: 1, rqpn: 33, pid: 202 }], [{ lqpn: 33, src: ['10.99.0.1', 48130], dst: ['10.99.0.2', 1312], pid: 202 }]);
  const config = `
${PER_QP}sampling: ${sampling}
domains:
  - { path: ${domain}, bind: auto, provider: rdma_rocev2 }
`;
  run = await startDaemon('rxe_6_1', config, undefined, () => ({ restrack: () => ({ ok: true, transport: kernel.transport() }), procRoot: proc!.root, ...timer }));
  return kernel;
}

describe('connections joined with processes and flows', () => {
  it('measures the flow from the connection of the process that maps it; a process with two connections one way carries none', async () => {
    const { kernel } = await start();
    await second(kernel, [PREDICTED, 10, 20]);
    await second(kernel, [PREDICTED, 10, 20]);
    const m = await run!.scrape();
    expect(one(m, 'mxl_fabric_flow_measured_packets_per_second', { flow_id: VIDEO.id, direction: 'tx', source: 'connection' })).toBe(PREDICTED);
    expect(one(m, 'mxl_fabric_flow_drift_ratio', { flow_id: VIDEO.id, quantity: 'packets' })).toBe(0);
    expect(one(m, 'mxl_fabric_connection_info', { local: '10.99.0.1:48130', process: 'mxl-fabrics-dem', flow_id: VIDEO.id })).toBe(1);
    expect(one(m, 'mxl_fabric_connection_info', { local: '10.99.0.1:48131', flow_id: '' })).toBe(1);
    expect(one(m, 'mxl_fabric_connection_info', { local: '10.99.0.1:48132', flow_id: '' })).toBe(1);

    const html = await (await run!.get('/')).text();
    const section = html.slice(html.indexOf('<h2>Connections</h2>'));
    expect(section).toContain(`<td><code>${VIDEO.id}</code></td><td>mxl-fabrics-dem<br><small>pid 202</small></td><td>rxe0/1</td>`);
    expect(section).toContain('<td>10.99.0.1:48130 → 10.99.0.2:1312<br><small>RC QP 33 · tx</small></td><td class="ok">RTS</td><td>33.750 kpkt/s<br><small>predicted 33.750 kpkt/s</small></td>');
    expect(section).not.toContain('CAP_SYS_PTRACE');
  });

  it('keeps a connection\'s flow, drift and series when the kernel drops its pid (the creating thread exited; issue 33)', async () => {
    const { kernel } = await start();
    await second(kernel, [PREDICTED, 10, 20]);
    const before = [...series(await run!.scrape(), 'mxl_fabric_connection_sent_packets_total').keys()];
    // restrack names no pid once the thread that made the QP is gone (its cm_id's neither).
    delete kernel.qps.get('rxe0')![0]!.pid;
    delete kernel.cmIds.get('rxe0')![0]!.pid;
    await second(kernel, [PREDICTED, 10, 20]);
    await second(kernel, [PREDICTED, 10, 20]);
    const m = await run!.scrape();
    expect([...series(m, 'mxl_fabric_connection_sent_packets_total').keys()]).toEqual(before);
    expect(one(m, 'mxl_fabric_connection_sent_packets_total', { local: '10.99.0.1:48130', pid: '202' })).toBe(3 * PREDICTED);
    expect(one(m, 'mxl_fabric_connection_info', { local: '10.99.0.1:48130', pid: '202', process: 'mxl-fabrics-dem', flow_id: VIDEO.id })).toBe(1);
    expect(one(m, 'mxl_fabric_flow_measured_packets_per_second', { flow_id: VIDEO.id, direction: 'tx', source: 'connection' })).toBe(PREDICTED);
    expect(one(m, 'mxl_fabric_flow_drift_ratio', { flow_id: VIDEO.id, quantity: 'packets' })).toBe(0);
  });

  it('shows on the landing page the rate and prediction the metrics give, for a connection whose PSNs move both ways (issue 33)', async () => {
    const { kernel } = await start(undefined, 'rx');
    // pid 202's one connection receives the flow and sends a little (both PSNs move): `both`.
    for (let i = 0; i < 2; i++) {
      const q = kernel.qps.get('rxe0')![0]!;
      q.rqPsn! += PREDICTED;
      q.sqPsn += 10;
      await run!.tick(1);
    }
    const m = await run!.scrape();
    expect(one(m, 'mxl_fabric_connection_info', { local: '10.99.0.1:48130', direction: 'both', flow_id: VIDEO.id })).toBe(1);
    expect(one(m, 'mxl_fabric_flow_measured_packets_per_second', { flow_id: VIDEO.id, direction: 'rx', source: 'connection' })).toBe(PREDICTED);
    expect(one(m, 'mxl_fabric_flow_drift_ratio', { flow_id: VIDEO.id, direction: 'rx', quantity: 'packets' })).toBe(0);
    const html = await (await run!.get('/')).text();
    const section = html.slice(html.indexOf('<h2>Connections</h2>'));
    expect(section).toContain('<td>10.99.0.1:48130 → 10.99.0.2:1312<br><small>RC QP 33 · both</small></td><td class="ok">RTS</td><td>33.750 kpkt/s<br><small>predicted 33.750 kpkt/s</small></td>');
  });

  it('follows a `peer:` pin on the domain: the connection to that target carries the flow, drift from its packets', async () => {
    const { kernel } = await start('10.99.0.3:1313');
    await second(kernel, [0, 0, PREDICTED / 2]);
    await second(kernel, [0, 0, PREDICTED / 2]);
    const m = await run!.scrape();
    expect(one(m, 'mxl_fabric_connection_info', { local: '10.99.0.1:48132', flow_id: VIDEO.id })).toBe(1);
    expect(one(m, 'mxl_fabric_connection_info', { local: '10.99.0.1:48131', flow_id: '' })).toBe(1);
    // pid 202 maps the flow too, but its one connection goes elsewhere: the pin says it is not this flow's.
    expect(one(m, 'mxl_fabric_connection_info', { local: '10.99.0.1:48130', flow_id: '' })).toBe(1);
    // 16,875 packets per second: half the prediction.
    expect(one(m, 'mxl_fabric_flow_measured_packets_per_second', { flow_id: VIDEO.id, direction: 'tx' })).toBe(PREDICTED / 2);
    expect(one(m, 'mxl_fabric_flow_drift_ratio', { flow_id: VIDEO.id, quantity: 'packets' })).toBe(-0.5);
  });
});

describe('connections, ports and grains read in the same tick', () => {
  it('coverage is the packets the connections moved over the packets the port counted, between the same two ticks', async () => {
    const { kernel } = await start();
    let pkts = BigInt(readFileSync(run!.fx.portPath('rxe0', 1, 'hw_counters', 'sent_pkts'), 'utf8').trim());
    // Traffic that changes from tick to tick: 1,000, then 3,000 packets, all on the flow's connection.
    for (const n of [1000, 3000]) {
      pkts += BigInt(n);
      run!.fx.setCounter('rxe0', 1, 'hw_counters', 'sent_pkts', pkts);
      await second(kernel, [n, 0, 0]);
    }
    const m = await run!.scrape();
    // 4,000 / 4,000 over the window; the last interval's PSNs (3,000/s) over the window's port rate (2,000/s) would say 1.5.
    expect(one(m, 'mxl_fabric_port_connection_coverage_ratio', { device: 'rxe0', direction: 'tx' })).toBe(1);
  });

  it('packets per grain: the PSN advance over the headIndex advance of the same ticks, per domain', async () => {
    const { kernel, domain } = await start();
    const dir = join(domain, `${VIDEO.id}.mxl-flow`);
    let head = 5000n;
    // 25 grains then 24 in the next tick, 1,350 packets a grain (the model's 33,750 packets/s at 25 grains/s).
    for (const grains of [25, 24]) {
      head += BigInt(grains);
      commit(dir, head, 2n);
      await second(kernel, [grains * 1350, 0, 0]);
    }
    const m = await run!.scrape();
    expect(one(m, 'mxl_fabric_flow_connection_packets_per_grain', { flow_id: VIDEO.id, domain, device: 'rxe0', port: '1', direction: 'tx' })).toBe(1350);
    expect(series(m, 'mxl_fabric_flow_connection_packets_per_grain')).toHaveLength(1);
  });

  it('packets per grain: headIndex is read with the QP dumps, so grains committed while a tick reads the ports and domains count on both sides', async () => {
    const { kernel, domain } = await start();
    const dir = join(domain, `${VIDEO.id}.mxl-flow`);
    let head = 5000n;
    // The writer commits and the connection sends after the domains' read of the tick, as the
    // dumps are read (a loaded host): 25 grains in one tick, 24 in the next, 1,350 packets a grain.
    const moves = [25, 24];
    kernel.onQpDump = () => {
      const grains = moves.shift();
      if (grains === undefined) return;
      head += BigInt(grains);
      commit(dir, head, 2n);
      kernel.qps.get('rxe0')![0]!.sqPsn += grains * 1350;
    };
    await run!.tick(1);
    await run!.tick(1);
    const m = await run!.scrape();
    // headIndex from the domains' read would give 66,150 packets over 25 grains: 2,646.
    expect(one(m, 'mxl_fabric_flow_connection_packets_per_grain', { flow_id: VIDEO.id, domain, device: 'rxe0', port: '1', direction: 'tx' })).toBe(1350);
  });
});

describe('the daemon\'s own timer', () => {
  it('reads the connections after the ports and domains of a tick, so coverage is over the same ticks', async () => {
    // No manual clock: the daemon's one timer ticks.
    const kernel = await startAuto('{ interval: 200ms, window: 2s }', { manualClock: undefined });
    const file = run!.fx.portPath('rxe0', 1, 'hw_counters', 'sent_pkts');
    let pkts = BigInt(readFileSync(file, 'utf8').trim());
    // Port counter and PSN move together, 500 packets every 50 ms, between the timer's ticks.
    for (let i = 0; i < 24; i++) {
      pkts += 500n;
      run!.fx.setCounter('rxe0', 1, 'hw_counters', 'sent_pkts', pkts);
      kernel.qps.get('rxe0')![0]!.sqPsn += 500;
      await new Promise((r) => setTimeout(r, 50));
    }
    const m = await run!.scrape();
    // The timer path gives the same-tick snapshots (a move can land between the port's read and the
    // dump's of one tick: one move of 500 in the window's ~20,000 packets is 2.5 %).
    expect(one(m, 'mxl_fabric_port_connection_coverage_ratio', { device: 'rxe0', direction: 'tx' })).toBeCloseTo(1, 1);
    expect(series(m, 'mxl_fabric_flow_connection_packets_per_grain')).toHaveLength(0); // no grain committed
  });
});

describe('a driver whose PSNs stand still (irdma)', () => {
  it('gets port_connection_psn_live 0 and no per-flow rate from its PSNs: absent, never 0', async () => {
    const { kernel } = await start();
    let pkts = 1000n;
    for (let i = 0; i < 3; i++) {
      pkts += 5000n; // the port counts 5,000 packets a second; no connection's PSN moves
      run!.fx.setCounter('rxe0', 1, 'hw_counters', 'sent_pkts', pkts);
      await second(kernel, [0, 0, 0]);
    }
    const m = await run!.scrape();
    expect(one(m, 'mxl_fabric_port_connection_psn_live', { device: 'rxe0', port: '1' })).toBe(0);
    expect(one(m, 'mxl_fabric_connection_info', { local: '10.99.0.1:48130', flow_id: VIDEO.id })).toBe(1);
    expect(one(m, 'mxl_fabric_flow_measured_packets_per_second', { flow_id: VIDEO.id })).toBeUndefined();
    expect(one(m, 'mxl_fabric_flow_drift_ratio', { flow_id: VIDEO.id, quantity: 'packets' })).toBeUndefined();
    expect(one(m, 'mxl_fabric_port_connection_coverage_ratio', { device: 'rxe0', direction: 'tx' })).toBe(0);
  });
});

describe('bind: auto', () => {
  it('binds a flow no config names to the port and direction of the connection that carries it, and moves it with the connection', async () => {
    const kernel = await startAuto();
    let m = await run!.scrape();
    expect(one(m, 'mxl_fabric_flow_info', { flow_id: VIDEO.id })).toBeUndefined(); // no connection has moved a PSN yet: unbound
    const html = await (await run!.get('/')).text();
    expect(html).toContain(`Flows in bind: auto domains that no connection carries yet: ${VIDEO.id}`);
    await second(kernel, [PREDICTED]);
    await second(kernel, [PREDICTED]);
    m = await run!.scrape();
    expect(one(m, 'mxl_fabric_flow_info', { flow_id: VIDEO.id, device: 'rxe0', port: '1', direction: 'tx', origin: 'domain' })).toBe(1);
    expect(one(m, 'mxl_fabric_flow_predicted_packets_per_second', { flow_id: VIDEO.id, device: 'rxe0', direction: 'tx' })).toBe(PREDICTED);
    expect(one(m, 'mxl_fabric_flow_drift_ratio', { flow_id: VIDEO.id, quantity: 'packets' })).toBe(0);

    // The process now receives the flow on a new connection; the old one is gone: the binding moves to rx.
    kernel.qps.set('rxe0', [{ lqpn: 60, sqPsn: 0, rqPsn: 10, rqpn: 61, pid: 202 }]);
    kernel.cmIds.set('rxe0', [{ lqpn: 60, src: ['10.99.0.1', 1312], dst: ['10.99.0.9', 50000], pid: 202 }]);
    await run!.tick(1);
    kernel.qps.get('rxe0')![0]!.rqPsn! += PREDICTED;
    await run!.tick(1);
    m = await run!.scrape();
    expect(one(m, 'mxl_fabric_flow_info', { flow_id: VIDEO.id, direction: 'rx' })).toBe(1);
    expect(one(m, 'mxl_fabric_flow_info', { flow_id: VIDEO.id, direction: 'tx' })).toBeUndefined();
    expect(one(m, 'mxl_fabric_flow_drift_ratio', { flow_id: VIDEO.id, direction: 'rx', quantity: 'packets' })).toBe(0);
  });
});

describe('a process compared as a whole', () => {
  /** A second video flow, 1280x720p25 v210: 608 packets a grain (720 lines of 3,456 bytes over 4,096-byte payloads), 15,200 a second. */
  const VIDEO_720 = { ...VIDEO, id: '7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f', label: 'Camera 3 video', frame_width: 1280, frame_height: 720 };
  const PREDICTED_720 = 15_200;

  async function startTwoFlows(bind: 'rxe0 tx' | 'auto'): Promise<FakeRestrackKernel> {
    const domain = makeDomain();
    for (const f of [VIDEO, VIDEO_720]) addFlow(domain, f, { id: f.id, format: 1, rate: [25n, 1n], grainCount: 2, headIndex: 5000n, lastWriteTime: 1n });
    proc = ProcFixture.create();
    const line = (f: { id: string }, i: number): string =>
      mapsLine(0x7f0000000000n + BigInt(i) * 0x1000n, 1, 'rw-s', { path: `${domain}/${f.id}.mxl-flow/grains/data.0`, inode: 12 + i });
    proc.add({ pid: 205, comm: 'mxl-fabrics-dem', startTicks: 7n, maps: `${line(VIDEO, 0)}\n${line(VIDEO_720, 1)}\n` });
    const kernel = new FakeRestrackKernel();
    kernel.device(3, 'rxe0', [
      { lqpn: 34, sqPsn: 100, rqPsn: 1, rqpn: 34, pid: 205 },
      { lqpn: 35, sqPsn: 100, rqPsn: 1, rqpn: 35, pid: 205 },
    ], [
      { lqpn: 34, src: ['10.99.0.1', 48131], dst: ['10.99.0.2', 1313], pid: 205 },
      { lqpn: 35, src: ['10.99.0.1', 48132], dst: ['10.99.0.3', 1313], pid: 205 },
    ]);
    const where = bind === 'auto' ? 'bind: auto' : 'device: rxe0, direction: tx';
    const config = `
${PER_QP}sampling: { interval: 1s, window: 4s }
ports:
  - { device: rxe0, port: 1, provider: rdma_rocev2, mtu: auto, capacity: auto }
domains:
  - { path: ${domain}, ${where}, provider: rdma_rocev2 }
`;
    run = await startDaemon('rxe_6_1', config, undefined, () => ({ restrack: () => ({ ok: true, transport: kernel.transport() }), procRoot: proc!.root }));
    return kernel;
  }

  const LABELS = { pid: '205', process: 'mxl-fabrics-dem', device: 'rxe0', port: '1', direction: 'tx' };

  it('sums its flows\' predictions against its connections\' packets when neither pairs up', async () => {
    const kernel = await startTwoFlows('rxe0 tx');
    // 30,000 + 15,000 packets a second: 3,950 fewer than the two flows' 48,950.
    await second(kernel, [30_000, 15_000]);
    await second(kernel, [30_000, 15_000]);
    const m = await run!.scrape();
    expect(one(m, 'mxl_fabric_flow_predicted_packets_per_second', { flow_id: VIDEO_720.id, direction: 'tx' })).toBe(PREDICTED_720);
    expect(one(m, 'mxl_fabric_connection_info', { local: '10.99.0.1:48131', flow_id: '' })).toBe(1);
    expect(one(m, 'mxl_fabric_flow_measured_packets_per_second', { flow_id: VIDEO.id })).toBeUndefined();
    expect(one(m, 'mxl_fabric_process_measured_packets_per_second', LABELS)).toBe(45_000);
    expect(one(m, 'mxl_fabric_process_predicted_packets_per_second', LABELS)).toBe(PREDICTED + PREDICTED_720);
    expect(one(m, 'mxl_fabric_process_drift_ratio', LABELS)).toBeCloseTo(45_000 / 48_950 - 1, 12);
    expect(one(m, 'mxl_fabric_process_drift_ratio', { ...LABELS, direction: 'rx' })).toBeUndefined();
  });

  it('is absent for a process the per-flow join pairs; one flow over two connections one way is compared whole', async () => {
    const { kernel } = await start();
    await second(kernel, [PREDICTED, 10, 20]);
    await second(kernel, [PREDICTED, 10, 20]);
    const m = await run!.scrape();
    expect(one(m, 'mxl_fabric_process_measured_packets_per_second', { pid: '202' })).toBeUndefined();
    expect(one(m, 'mxl_fabric_process_predicted_packets_per_second', { pid: '202' })).toBeUndefined();
    expect(one(m, 'mxl_fabric_process_measured_packets_per_second', LABELS)).toBe(30);
    expect(one(m, 'mxl_fabric_process_predicted_packets_per_second', LABELS)).toBe(PREDICTED);
    expect(one(m, 'mxl_fabric_process_drift_ratio', LABELS)).toBeCloseTo(30 / PREDICTED - 1, 12);
  });

  it('binds a bind: auto domain\'s flows where all the process\'s unpaired connections run, one port and direction', async () => {
    const kernel = await startTwoFlows('auto');
    await second(kernel, [30_000, 15_000]);
    await second(kernel, [30_000, 15_000]);
    const m = await run!.scrape();
    for (const f of [VIDEO, VIDEO_720]) expect(one(m, 'mxl_fabric_flow_info', { flow_id: f.id, device: 'rxe0', port: '1', direction: 'tx', origin: 'domain' })).toBe(1);
    expect(one(m, 'mxl_fabric_process_predicted_packets_per_second', LABELS)).toBe(PREDICTED + PREDICTED_720);
    expect(one(m, 'mxl_fabric_process_drift_ratio', LABELS)).toBeCloseTo(45_000 / 48_950 - 1, 12);
  });
});

describe('a binding its connection disagrees with', () => {
  it('is flow_binding_mismatch 1 with where the connection runs; a binding that agrees has none', async () => {
    const { kernel } = await start(undefined, 'rx');
    await second(kernel, [PREDICTED, 10, 20]);
    await second(kernel, [PREDICTED, 10, 20]);
    let m = await run!.scrape();
    // The domain binds the flow to rxe0 rx; pid 202's connection carries it and sends.
    expect([...series(m, 'mxl_fabric_flow_binding_mismatch')]).toEqual([[
      `mxl_fabric_flow_binding_mismatch{flow_id="${VIDEO.id}",device="rxe0",port="1",direction="rx",connection_device="rxe0",connection_port="1",connection_direction="tx"}`, 1,
    ]]);
    await run!.stop();
    proc?.close();
    const again = await start(undefined, 'tx');
    await second(again.kernel, [PREDICTED, 10, 20]);
    await second(again.kernel, [PREDICTED, 10, 20]);
    m = await run!.scrape();
    expect(series(m, 'mxl_fabric_flow_binding_mismatch').size).toBe(0);
    expect(one(m, 'mxl_fabric_flow_drift_ratio', { flow_id: VIDEO.id, quantity: 'packets' })).toBe(0);
  });
});

describe('the landing page without RDMA netlink', () => {
  it('says the tables cannot be read, and not that no connection is tracked', async () => {
    const unavailable = new NetlinkUnavailable('family-unsupported', 93, 'no RDMA netlink here');
    run = await startDaemon('rxe_6_1', 'flows: []\n', undefined, () => ({ restrack: () => ({ ok: false, error: unavailable }) }));
    await run.tick(1);
    const html = await (await run.get('/')).text();
    const section = html.slice(html.indexOf('<h2>Connections</h2>'));
    expect(section).toContain('Connections cannot be read: RDMA netlink unavailable (family-unsupported)');
    expect(section).not.toContain('No RDMA connection is tracked by the kernel.');
  });
});

describe('two live QPs of one identity (issue 33)', () => {
  it('keep the series they were first given: `#qpn` goes with the second QP for its life, not with the order of the table', async () => {
    const kernel = new FakeRestrackKernel();
    const cm = (lqpn: number) => ({ lqpn, src: ['10.99.0.1', 48130] as [string, number], dst: ['10.99.0.2', 1312] as [string, number], pid: 202 });
    kernel.device(3, 'rxe0', [{ lqpn: 33, sqPsn: 100, rqpn: 33, pid: 202 }, { lqpn: 34, sqPsn: 500, rqpn: 34, pid: 202 }], [cm(33), cm(34)]);
    run = await startDaemon('rxe_6_1', `${PER_QP}sampling: { interval: 1s, window: 4s }\n`, undefined, () => ({ restrack: () => ({ ok: true, transport: kernel.transport() }) }));
    const sent = async (): Promise<[string, number][]> => [...series(await run!.scrape(), 'mxl_fabric_connection_sent_packets_total')];
    kernel.qps.get('rxe0')![1]!.sqPsn += 40;
    await run.tick(1);
    const second = 'mxl_fabric_connection_sent_packets_total{device="rxe0",port="1",local="10.99.0.1:48130#qpn:34",peer="10.99.0.2:1312",pid="202"}';
    expect(await sent()).toContainEqual([second, 40]);
    // The first QP goes, and after the retention (10 min) is forgotten: the second keeps its series.
    kernel.qps.set('rxe0', [kernel.qps.get('rxe0')![1]!]);
    kernel.cmIds.set('rxe0', [cm(34)]);
    await run.tick(1);
    await run.tick(601);
    kernel.qps.get('rxe0')![0]!.sqPsn += 2;
    await run.tick(1);
    expect(await sent()).toEqual([[second, 42]]);
  });
});

describe('connections read too late for the PSN wrap (issue 33)', () => {
  it('count as usual when the port\'s counters show it moved too few packets since for a PSN to wrap', async () => {
    const { kernel } = await start();
    await second(kernel, [PREDICTED, 0, 0]);
    kernel.onQpDump = () => {
      throw new NetlinkRequestError('RDMA_NLDEV_CMD_RES_QP_GET dump of rxe0', 16, undefined, 'EBUSY');
    };
    for (let i = 0; i < 28; i++) await run!.tick(1);
    kernel.onQpDump = undefined;
    // 28 s late by the clock, but the port sent 5,000 packets: every one of them is the QP's.
    kernel.qps.get('rxe0')![0]!.sqPsn += 5000;
    run!.fx.setCounter('rxe0', 1, 'hw_counters', 'sent_pkts', 5000);
    await run!.tick(1);
    const m = await run!.scrape();
    expect(one(m, 'mxl_fabric_connections_late_reads_total', { device: 'rxe0' })).toBe(0);
    expect(one(m, 'mxl_fabric_connection_sent_packets_total', { local: '10.99.0.1:48130' })).toBe(PREDICTED + 5000);
  });


  it('count nothing from that read and say so in connections_late_reads_total', async () => {
    const { kernel } = await start();
    await second(kernel, [PREDICTED, 0, 0]);
    let m = await run!.scrape();
    expect(one(m, 'mxl_fabric_connections_late_reads_total', { device: 'rxe0' })).toBe(0);
    const sent = (): number | undefined => one(m, 'mxl_fabric_connection_sent_packets_total', { local: '10.99.0.1:48130' });
    expect(sent()).toBe(PREDICTED);
    // rxe0: 10 Gb/s, IB MTU 4096: 2^23 packets in 27.5 s. The dumps fail for 28 s while the
    // connection sends 2^23 + 5 packets, which a 24-bit PSN shows as 5; the port counts them.
    kernel.onQpDump = () => {
      throw new NetlinkRequestError('RDMA_NLDEV_CMD_RES_QP_GET dump of rxe0', 16, undefined, 'EBUSY');
    };
    for (let i = 0; i < 28; i++) await run!.tick(1);
    kernel.onQpDump = undefined;
    kernel.qps.get('rxe0')![0]!.sqPsn += 2 ** 23 + 5;
    run!.fx.setCounter('rxe0', 1, 'hw_counters', 'sent_pkts', 2 ** 23 + 5);
    await run!.tick(1);
    m = await run!.scrape();
    expect(one(m, 'mxl_fabric_connections_late_reads_total', { device: 'rxe0' })).toBe(1);
    expect(sent()).toBe(PREDICTED);
    expect(one(m, 'mxl_fabric_flow_measured_packets_per_second', { flow_id: VIDEO.id })).toBeUndefined();
    await second(kernel, [PREDICTED, 0, 0]);
    m = await run!.scrape();
    expect(sent()).toBe(2 * PREDICTED);
    expect(one(m, 'mxl_fabric_flow_measured_packets_per_second', { flow_id: VIDEO.id, direction: 'tx' })).toBe(PREDICTED);
    expect(one(m, 'mxl_fabric_connections_late_reads_total', { device: 'rxe0' })).toBe(1);
  });
});

describe('connection_process_exited (issue 32: one page per cause)', () => {
  /** rxe0 with pid 202's connection (it will be killed) and pid 205's (its QP will be destroyed while it runs), and 205's second QP, kept. */
  async function ends(metrics: string): Promise<FakeRestrackKernel> {
    proc = ProcFixture.create();
    proc.add({ pid: 202, comm: 'mxl-fabrics-dem', startTicks: 7n });
    proc.add({ pid: 205, comm: 'mxl-fabrics-dem', startTicks: 8n });
    const kernel = new FakeRestrackKernel();
    kernel.device(3, 'rxe0', [
      { lqpn: 33, sqPsn: 100, rqPsn: 1, rqpn: 33, pid: 202 },
      { lqpn: 34, sqPsn: 100, rqPsn: 1, rqpn: 34, pid: 205 },
      { lqpn: 35, sqPsn: 100, rqPsn: 1, rqpn: 35, pid: 205 },
    ], [
      { lqpn: 33, src: ['10.99.0.1', 48130], dst: ['10.99.0.2', 1312], pid: 202 },
      { lqpn: 34, src: ['10.99.0.1', 48131], dst: ['10.99.0.2', 1313], pid: 205 },
      { lqpn: 35, src: ['10.99.0.1', 48132], dst: ['10.99.0.3', 1313], pid: 205 },
    ]);
    run = await startDaemon('rxe_6_1', `${metrics}sampling: { interval: 1s, window: 4s }\n`, undefined, () => ({ restrack: () => ({ ok: true, transport: kernel.transport() }), procRoot: proc!.root }));
    await run.tick(1);
    return kernel;
  }
  /** pid 202 killed (its QP and /proc/202 gone), and pid 205's first QP destroyed while it runs. */
  function kill(kernel: FakeRestrackKernel): void {
    proc!.remove(202);
    kernel.qps.set('rxe0', kernel.qps.get('rxe0')!.slice(2));
    kernel.cmIds.set('rxe0', kernel.cmIds.get('rxe0')!.slice(2));
  }

  it('is 1 for the vanished connection whose process exited, absent for the one whose process runs and for a present one; gone with the connection', async () => {
    const kernel = await ends(PER_QP);
    expect([...series(await run!.scrape(), 'mxl_fabric_connection_process_exited')]).toEqual([]);
    kill(kernel);
    await run!.tick(1);
    const m = await run!.scrape();
    expect([...series(m, 'mxl_fabric_connection_process_exited')]).toEqual([
      ['mxl_fabric_connection_process_exited{device="rxe0",port="1",local="10.99.0.1:48130",peer="10.99.0.2:1312",pid="202"}', 1],
    ]);
    expect(one(m, 'mxl_fabric_connection_up', { local: '10.99.0.1:48130' })).toBe(0);
    expect(one(m, 'mxl_fabric_connection_up', { local: '10.99.0.1:48131' })).toBe(0);
    await run!.tick(1);
    expect([...series(await run!.scrape(), 'mxl_fabric_connection_process_exited').keys()]).toHaveLength(1);
    // Kept 10 minutes, then dropped with the connection.
    await run!.tick(601);
    expect([...series(await run!.scrape(), 'mxl_fabric_connection_process_exited')]).toEqual([]);
  });

  it('is not exported for connection groups (metrics.connection_series flow, the default)', async () => {
    const kernel = await ends('');
    kill(kernel);
    await run!.tick(1);
    const m = await run!.scrape();
    expect(one(m, 'mxl_fabric_connection_group_up', { pid: '202' })).toBe(0);
    expect([...series(m, 'mxl_fabric_connection_process_exited')]).toEqual([]);
  });
});

describe('connection_superseded (issue 32: one page per cause)', () => {
  /** Another flow in the same domain (the second camera's video). */
  const OTHER = { ...VIDEO, id: '7c1d2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e60', label: 'Camera 4 video' };
  const X = { lqpn: 33, sqPsn: 100, rqPsn: 1, rqpn: 33, pid: 202 };
  const X_CM = { lqpn: 33, src: ['10.99.0.1', 48130] as [string, number], dst: ['10.99.0.2', 1312] as [string, number], pid: 202 };
  /**
   * rxe0: X (pid 202) carries VIDEO on port 1, Z (pid 210) carries OTHER on port 1, W (pid 220)
   * carries VIDEO on port 2; pid 240 maps VIDEO and has no connection yet. Every PSN moved once
   * (all send: direction tx).
   */
  async function carriers(metrics: string): Promise<FakeRestrackKernel> {
    const domain = makeDomain();
    for (const f of [VIDEO, OTHER]) addFlow(domain, f, { id: f.id, format: 1, rate: [25n, 1n], grainCount: 2, headIndex: 5000n, lastWriteTime: 1n });
    proc = ProcFixture.create();
    const maps = (f: { id: string }): string => `${mapsLine(0x7f0000000000n, 1, 'rw-s', { path: `${domain}/${f.id}.mxl-flow/grains/data.0`, inode: 12 })}\n`;
    for (const [pid, f] of [[202, VIDEO], [210, OTHER], [220, VIDEO], [240, VIDEO]] as const) proc.add({ pid, comm: 'mxl-fabrics-dem', startTicks: 7n, maps: maps(f) });
    const kernel = new FakeRestrackKernel();
    kernel.device(3, 'rxe0', [
      { ...X },
      { lqpn: 36, sqPsn: 100, rqPsn: 1, rqpn: 36, pid: 210 },
      { lqpn: 37, sqPsn: 100, rqPsn: 1, rqpn: 37, pid: 220, port: 2 },
    ], [
      { ...X_CM },
      { lqpn: 36, src: ['10.99.0.1', 48140], dst: ['10.99.0.2', 1314], pid: 210 },
      { lqpn: 37, src: ['10.99.0.1', 48150], dst: ['10.99.0.3', 1312], pid: 220, port: 2 },
    ]);
    const config = `${metrics}sampling: { interval: 1s, window: 4s }
ports:
  - { device: rxe0, port: 1, provider: rdma_rocev2, mtu: auto, capacity: auto }
domains:
  - { path: ${domain}, device: rxe0, direction: tx }
`;
    run = await startDaemon('rxe_6_1', config, undefined, () => ({ restrack: () => ({ ok: true, transport: kernel.transport() }), procRoot: proc!.root }));
    await run.tick(1);
    await second(kernel, [100, 100, 100]);
    return kernel;
  }
  /** The QPs (lqpn) gone from rxe0's tables, their processes running on. */
  function destroy(kernel: FakeRestrackKernel, ...lqpns: number[]): void {
    kernel.qps.set('rxe0', kernel.qps.get('rxe0')!.filter((q) => !lqpns.includes(q.lqpn)));
    kernel.cmIds.set('rxe0', kernel.cmIds.get('rxe0')!.filter((c) => !lqpns.includes(c.lqpn)));
  }
  /** local -> value of each connection_superseded series. */
  const supersededNow = async (): Promise<Record<string, number>> =>
    Object.fromEntries([...series(await run!.scrape(), 'mxl_fabric_connection_superseded')].map(([k, v]) => [/local="([^"]+)"/.exec(k)![1]!, v]));

  it('marks a vanished connection once another carries its flow on its device, port and direction while up; for good, until it comes back', async () => {
    const kernel = await carriers(PER_QP);
    expect(await supersededNow()).toEqual({});
    // X and Z vanish: Z carries another flow on X's port, W carries X's flow on another port.
    destroy(kernel, 33);
    await run!.tick(1);
    let m = await run!.scrape();
    expect(one(m, 'mxl_fabric_connection_up', { local: '10.99.0.1:48130' })).toBe(0);
    expect(one(m, 'mxl_fabric_connection_info', { local: '10.99.0.1:48150', flow_id: VIDEO.id, direction: 'tx' })).toBe(1);
    expect(await supersededNow()).toEqual({});
    // Y (pid 240, a new source port) comes up carrying VIDEO on port 1 as Z goes; before its PSNs
    // move it sends nothing yet (direction ""), then it sends.
    destroy(kernel, 36);
    kernel.qps.get('rxe0')!.push({ lqpn: 41, sqPsn: 100, rqPsn: 1, rqpn: 41, pid: 240 });
    kernel.cmIds.get('rxe0')!.push({ lqpn: 41, src: ['10.99.0.1', 51007], dst: ['10.99.0.2', 1312], pid: 240 });
    await run!.tick(1);
    m = await run!.scrape();
    expect(one(m, 'mxl_fabric_connection_info', { local: '10.99.0.1:51007', flow_id: VIDEO.id, direction: '' })).toBe(1);
    expect(await supersededNow()).toEqual({});
    kernel.qps.get('rxe0')!.find((q) => q.lqpn === 41)!.sqPsn += 100;
    await run!.tick(1);
    expect(await supersededNow()).toEqual({ '10.99.0.1:48130': 1 }); // X, not Z: nothing carries OTHER
    // Y vanishes too: X stays superseded, Y is not (nothing carries VIDEO there since).
    destroy(kernel, 41);
    await run!.tick(1);
    m = await run!.scrape();
    expect(one(m, 'mxl_fabric_connection_up', { local: '10.99.0.1:51007' })).toBe(0);
    expect(await supersededNow()).toEqual({ '10.99.0.1:48130': 1 });
    await run!.tick(1);
    expect(await supersededNow()).toEqual({ '10.99.0.1:48130': 1 });
    // X back under its identity (a restart: a new QP): no longer superseded, and it carries VIDEO
    // again, which supersedes Y. Then X gone again with no carrier: not superseded; Y still is.
    kernel.qps.get('rxe0')!.push({ ...X, lqpn: 43 });
    kernel.cmIds.get('rxe0')!.push({ ...X_CM, lqpn: 43 });
    await run!.tick(1);
    m = await run!.scrape();
    expect(one(m, 'mxl_fabric_connection_restarts_total', { local: '10.99.0.1:48130' })).toBe(1);
    expect(await supersededNow()).toEqual({ '10.99.0.1:51007': 1 });
    destroy(kernel, 43);
    await run!.tick(1);
    expect(await supersededNow()).toEqual({ '10.99.0.1:51007': 1 });
  });

  // Measured in the soft-RoCE faults (issue 32): a killed initiator's QP was still in the tables at
  // one read after /proc/PID was gone (the kernel tears it down as the process exits). That read
  // gave it no flow, so it vanished carrying none, was never superseded, and its ConnectionDown
  // (which remembers the flow from connection_info) paged again at the flow's next fault.
  it('keeps the flow of a connection read once more after its process is gone, so that it is superseded when it vanishes', async () => {
    const kernel = await carriers(PER_QP);
    proc!.remove(202);
    await run!.tick(1);
    let m = await run!.scrape();
    expect(one(m, 'mxl_fabric_connection_info', { local: '10.99.0.1:48130', flow_id: VIDEO.id, direction: 'tx' })).toBe(1);
    expect(one(m, 'mxl_fabric_connection_info', { local: '10.99.0.1:48130', flow_id: '' })).toBeUndefined();
    destroy(kernel, 33);
    kernel.qps.get('rxe0')!.push({ lqpn: 41, sqPsn: 100, rqPsn: 1, rqpn: 41, pid: 240 });
    kernel.cmIds.get('rxe0')!.push({ lqpn: 41, src: ['10.99.0.1', 51007], dst: ['10.99.0.2', 1312], pid: 240 });
    await run!.tick(1);
    await second(kernel, [0, 0, 100]);
    m = await run!.scrape();
    expect(one(m, 'mxl_fabric_connection_up', { local: '10.99.0.1:48130' })).toBe(0);
    expect(await supersededNow()).toEqual({ '10.99.0.1:48130': 1 });
  });

  it('is dropped with the connection it marks (kept 10 minutes), and not exported for connection groups', async () => {
    const kernel = await carriers(PER_QP);
    destroy(kernel, 33);
    kernel.qps.get('rxe0')!.push({ lqpn: 41, sqPsn: 100, rqPsn: 1, rqpn: 41, pid: 240 });
    kernel.cmIds.get('rxe0')!.push({ lqpn: 41, src: ['10.99.0.1', 51007], dst: ['10.99.0.2', 1312], pid: 240 });
    await run!.tick(1);
    await second(kernel, [0, 0, 100]);
    expect(await supersededNow()).toEqual({ '10.99.0.1:48130': 1 });
    await run!.tick(601);
    expect(await supersededNow()).toEqual({});
    await run!.stop();
    proc!.close();
    const grouped = await carriers('');
    destroy(grouped, 33);
    grouped.qps.get('rxe0')!.push({ lqpn: 41, sqPsn: 100, rqPsn: 1, rqpn: 41, pid: 240 });
    grouped.cmIds.get('rxe0')!.push({ lqpn: 41, src: ['10.99.0.1', 51007], dst: ['10.99.0.2', 1312], pid: 240 });
    await run!.tick(1);
    await second(grouped, [0, 0, 100]);
    expect(await supersededNow()).toEqual({});
  });
});
