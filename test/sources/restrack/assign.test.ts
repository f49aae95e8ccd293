import { describe, expect, it } from 'vitest';
import { type Connection, type ConnectionObservation, ConnectionTracker } from '../../../src/model/connections.js';
import { assignFlows, sharedByProcess } from '../../../src/sources/restrack/assign.js';
import type { MappedFlowsRead, ProcessRead } from '../../../src/sources/procfs/index.js';

const FLOW_A = '5fbec3b1-1b0f-417d-9059-8b94a47197ed';
const FLOW_B = '0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d21';

function obs(pid: number | undefined, local: string, peer: string, qpn: number, over: Partial<ConnectionObservation> = {}): ConnectionObservation {
  return {
    key: `rxe0/1 ${local} > ${peer} pid ${pid}`, device: 'rxe0', port: 1, qpn, rqpn: qpn, qpType: 'RC', state: 'RTS', cmState: 'CONNECT',
    local, peer, pid, kernName: undefined, sqPsn: 0, rqPsn: 0, ...over,
  };
}

/** Connections after two reads: each moves its sq_psn (`tx`) or rq_psn (`rx`) by 10. */
function connections(specs: readonly [ConnectionObservation, 'tx' | 'rx' | ''][]): Connection[] {
  const t = new ConnectionTracker();
  t.update(['rxe0'], specs.map(([o]) => o), 0);
  t.update(['rxe0'], specs.map(([o, d]) => ({ ...o, sqPsn: d === 'tx' ? 10 : 0, rqPsn: d === 'rx' ? 10 : 0 })), 1000);
  return t.connections();
}

const proc = (pid: number, comm: string, container: string | null = null): ProcessRead =>
  ({ ok: true, process: { pid, comm, cmdline: [comm], startTicks: 1n, container, podUid: null } });
const mapsOf = (...ids: string[]): MappedFlowsRead => ({ ok: true, flows: ids.map((flowId) => ({ domain: '/dev/shm/mxl-tx', flowId })) });

describe('which flow a connection carries', () => {
  it('gives a process\'s one flow to its one connection per direction, with its name and container', () => {
    const cs = connections([[obs(202, '10.99.0.1:48130', '10.99.0.2:1312', 33), 'tx']]);
    const owners = assignFlows(cs, new Map([[202, proc(202, 'mxl-fabrics-dem', 'ab'.repeat(32))]]), new Map([[202, mapsOf(FLOW_A, FLOW_A)]]), []);
    expect(owners.get(cs[0]!.key)).toEqual({
      process: 'mxl-fabrics-dem', container: 'ab'.repeat(32), podUid: '',
      carried: { flowId: FLOW_A, domain: '/dev/shm/mxl-tx', how: 'only-flow' },
    });
  });

  it('gives no flow when a process maps two and has two connections one way: no guess', () => {
    const cs = connections([
      [obs(205, '10.99.0.1:40001', '10.99.0.2:1312', 33), 'tx'],
      [obs(205, '10.99.0.1:40002', '10.99.0.2:1313', 34), 'tx'],
    ]);
    const owners = assignFlows(cs, new Map([[205, proc(205, 'mxl-fabrics-dem')]]), new Map([[205, mapsOf(FLOW_A, FLOW_B)]]), []);
    expect(cs.map((c) => owners.get(c.key)?.carried)).toEqual([undefined, undefined]);
  });

  it('follows `peer:` pins: each connection to a pinned target carries that flow', () => {
    const cs = connections([
      [obs(205, '10.99.0.1:40001', '10.99.0.2:1312', 33), 'tx'],
      [obs(205, '10.99.0.1:40002', '10.99.0.2:1313', 34), 'tx'],
    ]);
    const pins = [{ flowId: FLOW_B, peer: '10.99.0.2:1313' }];
    const owners = assignFlows(cs, new Map(), new Map([[205, mapsOf(FLOW_A, FLOW_B)]]), pins);
    // The pin takes FLOW_B; FLOW_A is then the one flow left, for the one connection left.
    expect(cs.map((c) => [owners.get(c.key)?.carried?.flowId, owners.get(c.key)?.carried?.how])).toEqual([[FLOW_A, 'only-flow'], [FLOW_B, 'pinned']]);
  });

  it('matches a pin on the target side by the local address', () => {
    const cs = connections([[obs(183, '10.99.0.2:1312', '10.99.0.1:48130', 33), 'rx']]);
    const owners = assignFlows(cs, new Map(), new Map([[183, mapsOf(FLOW_A, FLOW_B)]]), [{ flowId: FLOW_B, peer: '10.99.0.2:1312' }]);
    expect(owners.get(cs[0]!.key)?.carried).toMatchObject({ flowId: FLOW_B, how: 'pinned' });
  });

  it('gives no flow when maps could not be read, not even a pinned one', () => {
    const cs = connections([[obs(202, '10.99.0.1:48130', '10.99.0.2:1312', 33), 'tx']]);
    const denied: MappedFlowsRead = { ok: false, reason: 'denied', detail: "EACCES: read '/proc/202/maps'" };
    const owners = assignFlows(cs, new Map([[202, proc(202, 'mxl-fabrics-dem')]]), new Map([[202, denied]]), [{ flowId: FLOW_A, peer: '10.99.0.2:1312' }]);
    expect(owners.get(cs[0]!.key)).toEqual({ process: 'mxl-fabrics-dem', container: '', podUid: '', carried: undefined });
  });

  it('gives the one flow to the one connection of a process even before a PSN moved; to neither of two idle ones', () => {
    const one = connections([[obs(202, '10.99.0.1:48130', '10.99.0.2:1312', 33), '']]);
    expect(assignFlows(one, new Map(), new Map([[202, mapsOf(FLOW_A)]]), []).get(one[0]!.key)?.carried?.flowId).toBe(FLOW_A);
    const two = connections([[obs(202, '10.99.0.1:1', '10.99.0.2:1312', 33), ''], [obs(202, '10.99.0.1:2', '10.99.0.3:1312', 34), '']]);
    const owners = assignFlows(two, new Map(), new Map([[202, mapsOf(FLOW_A)]]), []);
    expect(two.map((c) => owners.get(c.key)?.carried)).toEqual([undefined, undefined]);
  });

  it('names a kernel QP by the kernel user and gives it no flow', () => {
    const cs = connections([[obs(undefined, 'qpn:5', 'rqpn:6', 5, { kernName: 'nvme-rdma' }), 'tx']]);
    expect(assignFlows(cs, new Map(), new Map(), []).get(cs[0]!.key)).toEqual({ process: 'nvme-rdma', container: '', podUid: '', carried: undefined });
  });
});

describe('processes compared as a whole', () => {
  it('keeps the flows and connections the per-flow join left unpaired, the pinned pair out', () => {
    const cs = connections([
      [obs(205, '10.99.0.1:40001', '10.99.0.2:1312', 33), 'tx'],
      [obs(205, '10.99.0.1:40002', '10.99.0.2:1313', 34), 'tx'],
      [obs(205, '10.99.0.1:40003', '10.99.0.2:1314', 35), 'tx'],
      [obs(205, '10.99.0.1:40004', '10.99.0.2:1315', 36), ''],
      [obs(202, '10.99.0.1:40005', '10.99.0.2:1316', 37), 'tx'],
    ]);
    const maps = new Map([[205, mapsOf(FLOW_A, FLOW_B, FLOW_A)], [202, mapsOf(FLOW_A)]]);
    const owners = assignFlows(cs, new Map(), maps, [{ flowId: FLOW_B, peer: '10.99.0.2:1313' }]);
    const shares = sharedByProcess(cs, owners, maps);
    // pid 202 pairs its one flow with its one connection; pid 205's pin takes FLOW_B and QP 34,
    // leaving FLOW_A against QPs 33 and 35 (QP 36 has moved no PSN: no direction, not compared).
    expect(shares.map((s) => [s.pid, [...s.flows], s.connections.map((c) => c.obs.qpn)])).toEqual([[205, [[FLOW_A, '/dev/shm/mxl-tx']], [33, 35]]]);
  });

  it('compares no process whose maps are unreadable', () => {
    const cs = connections([[obs(205, '10.99.0.1:40001', '10.99.0.2:1312', 33), 'tx'], [obs(205, '10.99.0.1:40002', '10.99.0.2:1313', 34), 'tx']]);
    const maps = new Map<number, MappedFlowsRead>([[205, { ok: false, reason: 'denied', detail: 'EACCES' }]]);
    expect(sharedByProcess(cs, assignFlows(cs, new Map(), maps, []), maps)).toEqual([]);
  });
});
