import { describe, expect, it } from 'vitest';
import { type ConnectionObservation, ConnectionTracker, directionOf } from '../../src/model/connections.js';

function obs(over: Partial<ConnectionObservation> = {}): ConnectionObservation {
  return {
    key: 'rxe0/1 10.99.0.1:48130 > 10.99.0.2:1312 pid 202',
    device: 'rxe0', port: 1, qpn: 33, rqpn: 33, qpType: 'RC', state: 'RTS', cmState: 'CONNECT',
    local: '10.99.0.1:48130', peer: '10.99.0.2:1312', pid: 202, kernName: undefined,
    sqPsn: 100, rqPsn: 5000, ...over,
  };
}

const only = (t: ConnectionTracker) => {
  const all = t.connections();
  expect(all).toHaveLength(1);
  return all[0]!;
};

describe('connections over time', () => {
  it('counts sent from sq_psn and received from rq_psn, with the window since the last read', () => {
    const t = new ConnectionTracker();
    t.update(['rxe0'], [obs()], 0);
    expect(only(t)).toMatchObject({ sent: { packets: 0 }, received: { packets: 0 }, window: undefined, present: true });
    t.update(['rxe0'], [obs({ sqPsn: 12_338 })], 1000);
    expect(only(t)).toMatchObject({ sent: { packets: 12_238 }, received: { packets: 0 }, window: { sent: 12_238, received: 0, ms: 1000 } });
    expect(directionOf(only(t))).toBe('tx');
  });

  it('counts a new QP number under the same identity as a restart, the new QP a new baseline', () => {
    const t = new ConnectionTracker();
    t.update(['rxe0'], [obs()], 0);
    t.update(['rxe0'], [obs({ sqPsn: 150 })], 1000);
    t.update(['rxe0'], [obs({ qpn: 40, sqPsn: 9000, rqPsn: 77 })], 2000);
    expect(only(t)).toMatchObject({ restarts: 1, sent: { packets: 50, highest: 9000 }, window: undefined });
    t.update(['rxe0'], [obs({ qpn: 40, sqPsn: 9010, rqPsn: 77 })], 3000);
    expect(only(t)).toMatchObject({ restarts: 1, sent: { packets: 60 }, received: { packets: 0 }, window: { sent: 10, received: 0, ms: 1000 } });
  });

  it('keeps a vanished connection as gone, and counts its return with a new QP as a restart', () => {
    const t = new ConnectionTracker(60_000);
    t.update(['rxe0'], [obs()], 0);
    t.update(['rxe0'], [obs({ sqPsn: 130 })], 1000);
    t.update(['rxe0'], [], 2000);
    expect(only(t)).toMatchObject({ present: false, window: undefined, sent: { packets: 30 } });
    t.update(['rxe0'], [obs({ qpn: 41, sqPsn: 1 })], 3000);
    expect(only(t)).toMatchObject({ present: true, restarts: 1, sent: { packets: 30, highest: 1 }, window: undefined });
  });

  it('forgets a vanished connection after the retention', () => {
    const t = new ConnectionTracker(1000);
    t.update(['rxe0'], [obs()], 0);
    t.update(['rxe0'], [], 500);
    t.update(['rxe0'], [], 1500);
    expect(t.connections()).toEqual([]);
  });

  it('does not give a reused QP number to the connection that had it', () => {
    const t = new ConnectionTracker();
    t.update(['rxe0'], [obs()], 0);
    t.update(['rxe0'], [], 1000);
    const other = obs({ key: 'rxe0/1 10.99.0.1:50000 > 10.99.0.3:1312 pid 300', local: '10.99.0.1:50000', peer: '10.99.0.3:1312', pid: 300, sqPsn: 7 });
    t.update(['rxe0'], [other], 2000);
    const all = t.connections();
    expect(all.map((c) => [c.key, c.present, c.restarts])).toEqual([
      ['rxe0/1 10.99.0.1:48130 > 10.99.0.2:1312 pid 202', false, 0],
      ['rxe0/1 10.99.0.1:50000 > 10.99.0.3:1312 pid 300', true, 0],
    ]);
  });

  it('keeps the same QP one connection when the kernel drops its pid', () => {
    const t = new ConnectionTracker();
    t.update(['rxe0'], [obs()], 0);
    t.update(['rxe0'], [obs({ key: 'rxe0/1 10.99.0.1:48130 > 10.99.0.2:1312 pid ?', pid: undefined, sqPsn: 110 })], 1000);
    expect(only(t)).toMatchObject({ key: 'rxe0/1 10.99.0.1:48130 > 10.99.0.2:1312 pid 202', sent: { packets: 10 }, restarts: 0 });
  });

  it('leaves the connections of a device whose read failed as they were, without a window', () => {
    const t = new ConnectionTracker();
    t.update(['rxe0'], [obs()], 0);
    t.update(['rxe0'], [obs({ sqPsn: 110 })], 1000);
    t.update([], [], 2000);
    expect(only(t)).toMatchObject({ present: true, window: undefined, sent: { packets: 10 } });
    t.update(['rxe0'], [obs({ sqPsn: 130 })], 3000);
    expect(only(t)).toMatchObject({ sent: { packets: 30 }, window: { sent: 20, ms: 2000 } });
  });

  it('keeps two live QPs of one identity apart', () => {
    const t = new ConnectionTracker();
    t.update(['rxe0'], [obs(), obs({ qpn: 34, sqPsn: 0 })], 0);
    expect(t.connections().map((c) => [c.key, c.obs.qpn])).toEqual([
      ['rxe0/1 10.99.0.1:48130 > 10.99.0.2:1312 pid 202', 33],
      ['rxe0/1 10.99.0.1:48130 > 10.99.0.2:1312 pid 202 qpn:34', 34],
    ]);
  });

  it('names the direction by which PSN moved', () => {
    const t = new ConnectionTracker();
    t.update(['rxe1'], [obs({ device: 'rxe1', key: 'b', sqPsn: 5000, rqPsn: 100 })], 0);
    expect(directionOf(only(t))).toBe('');
    t.update(['rxe1'], [obs({ device: 'rxe1', key: 'b', sqPsn: 5000, rqPsn: 200 })], 1000);
    expect(directionOf(only(t))).toBe('rx');
    t.update(['rxe1'], [obs({ device: 'rxe1', key: 'b', sqPsn: 5001, rqPsn: 200 })], 2000);
    expect(directionOf(only(t))).toBe('both');
  });
});

describe('the same QP read again (issue 33)', () => {
  const PSN_MODULUS = 2 ** 24;

  it('keeps the last pid the kernel named for the life of the QP, and says it is kept', () => {
    const t = new ConnectionTracker();
    t.update(['rxe0'], [obs()], 0);
    // The creating thread exited: restrack names no pid (nldev.c fill_res_name_pid, task_pid_vnr() 0).
    t.update(['rxe0'], [obs({ key: 'rxe0/1 10.99.0.1:48130 > 10.99.0.2:1312 pid ?', pid: undefined, sqPsn: 110 })], 1000);
    expect(only(t)).toMatchObject({ obs: { pid: 202, key: 'rxe0/1 10.99.0.1:48130 > 10.99.0.2:1312 pid 202' }, pidKept: true, sent: { packets: 10 } });
    t.update(['rxe0'], [obs({ key: 'rxe0/1 10.99.0.1:48130 > 10.99.0.2:1312 pid ?', pid: undefined, sqPsn: 130 })], 2000);
    expect(only(t)).toMatchObject({ obs: { pid: 202 }, pidKept: true, sent: { packets: 30 }, window: { sent: 20, ms: 1000 } });
  });

  it('keeps the addresses while the cm_id is missing from one dump', () => {
    const t = new ConnectionTracker();
    t.update(['rxe0'], [obs()], 0);
    t.update(['rxe0'], [obs({ key: 'rxe0/1 qpn 33 pid 202', local: 'qpn:33', peer: 'rqpn:33', cmState: undefined, sqPsn: 110 })], 1000);
    expect(only(t)).toMatchObject({ obs: { local: '10.99.0.1:48130', peer: '10.99.0.2:1312' }, sent: { packets: 10 }, restarts: 0 });
  });

  // A QP destroyed and its number reused between two dumps (ib_core hands QP numbers out again).
  const reused = [
    ['another peer', { key: 'rxe0/1 10.99.0.1:50000 > 10.99.0.3:1312 pid 202', local: '10.99.0.1:50000', peer: '10.99.0.3:1312' }],
    ['another process', { key: 'rxe0/1 10.99.0.1:48130 > 10.99.0.2:1312 pid 300', pid: 300 }],
    ['another remote QP (no cm_id)', { key: 'rxe0/1 qpn 33 pid 202', local: 'qpn:33', peer: 'rqpn:90', rqpn: 90, cmState: undefined }],
  ] as const;
  const before = { key: 'rxe0/1 qpn 33 pid 202', local: 'qpn:33', peer: 'rqpn:33', cmState: undefined };

  for (const [what, next] of reused) {
    const first = what.includes('no cm_id') ? before : {};
    it(`takes a reused QP number with ${what} for a new QP: a PSN ahead invents no packets`, () => {
      const t = new ConnectionTracker();
      t.update(['rxe0'], [obs({ ...first, sqPsn: 100 })], 0);
      t.update(['rxe0'], [obs({ ...first, sqPsn: 200 })], 1000);
      // The new QP's random initial PSN, 2^23 - 1 ahead of the old one's.
      t.update(['rxe0'], [obs({ ...next, sqPsn: 200 + 2 ** 23 - 1 })], 2000);
      const sent = t.connections().map((c) => c.sent.packets);
      expect(sent.reduce((a, b) => a + b, 0)).toBe(100);
      const now = t.connections().find((c) => c.present)!;
      expect(now).toMatchObject({ obs: { ...next }, window: undefined });
      t.update(['rxe0'], [obs({ ...next, sqPsn: 200 + 2 ** 23 - 1 + 50 })], 3000);
      expect(t.connections().find((c) => c.present)).toMatchObject({ window: { sent: 50 } });
    });

    it(`takes a reused QP number with ${what} for a new QP: a PSN behind records no rewind and counts what follows`, () => {
      const t = new ConnectionTracker();
      t.update(['rxe0'], [obs({ ...first, sqPsn: 5000 })], 0);
      t.update(['rxe0'], [obs({ ...first, sqPsn: 6000 })], 1000);
      const behind = (6000 - 4000 + PSN_MODULUS) % PSN_MODULUS;
      t.update(['rxe0'], [obs({ ...next, sqPsn: behind })], 2000);
      expect(t.connections().reduce((a, c) => a + c.sent.rewinds, 0)).toBe(0);
      t.update(['rxe0'], [obs({ ...next, sqPsn: behind + 70 })], 3000);
      expect(t.connections().find((c) => c.present)).toMatchObject({ window: { sent: 70 } });
      expect(t.connections().reduce((a, c) => a + c.sent.packets, 0)).toBe(1000 + 70);
    });
  }
});

describe('a read later than the PSN wrap allows (issue 33)', () => {
  it('counts nothing from it, starts its PSNs again from there, and is a late read of its device', () => {
    const t = new ConnectionTracker();
    const limit = (device: string, port: number): number | undefined => (device === 'rxe0' && port === 1 ? 1500 : undefined);
    expect([...t.update(['rxe0'], [obs({ sqPsn: 100 })], 0, limit)]).toEqual([]);
    t.update(['rxe0'], [obs({ sqPsn: 1100 })], 1000, limit);
    expect(only(t)).toMatchObject({ sent: { packets: 1000 }, window: { sent: 1000 } });
    // 1.5 s or more since the last read: the PSN may have gone round (here 2^23 + 7 packets, read as 7).
    const wrapped = (1100 + 2 ** 23 + 7) % 2 ** 24;
    expect([...t.update(['rxe0'], [obs({ sqPsn: wrapped })], 2500, limit)]).toEqual(['rxe0']);
    expect(only(t)).toMatchObject({ sent: { packets: 1000, rewinds: 0, highest: wrapped }, window: undefined });
    t.update(['rxe0'], [obs({ sqPsn: wrapped + 30 })], 3500, limit);
    expect(only(t)).toMatchObject({ sent: { packets: 1030 }, window: { sent: 30, ms: 1000 } });
    expect(t.devices()).toEqual(new Map([['rxe0', { lateReads: 1, qpQueries: 0, readIntervalMs: undefined, overBudget: false }]]));
  });

  it('counts a read late by the clock when the port counted fewer than 2^22 packets each way since the last one', () => {
    const t = new ConnectionTracker();
    const limit = (): number => 687; // 400 Gb/s, 4,096-byte packets
    // What the port counted between the reads at `since` and now: the larger direction.
    let counted: number | undefined = 120_000;
    const since: number[] = [];
    const countedSince = (device: string, port: number, sinceMs: number): number | undefined => (since.push(sinceMs), device === 'rxe0' && port === 1 ? counted : undefined);
    t.update(['rxe0'], [obs({ sqPsn: 100 })], 0, limit, { counted: countedSince });
    expect([...t.update(['rxe0'], [obs({ sqPsn: 100 + 90_000 })], 1000, limit, { counted: countedSince })]).toEqual([]);
    expect(only(t)).toMatchObject({ sent: { packets: 90_000 }, window: { sent: 90_000, ms: 1000 } });
    expect(since).toEqual([0]);
    // 2^22 - 1 counted: still safe. 2^22: may have wrapped with the skew between the reads; late.
    counted = 2 ** 22 - 1;
    expect([...t.update(['rxe0'], [obs({ sqPsn: 100 + 190_000 })], 2000, limit, { counted: countedSince })]).toEqual([]);
    counted = 2 ** 22;
    expect([...t.update(['rxe0'], [obs({ sqPsn: 100 + 290_000 })], 3000, limit, { counted: countedSince })]).toEqual(['rxe0']);
    expect(only(t)).toMatchObject({ sent: { packets: 190_000 }, window: undefined });
    // Counters that cannot say: the clock decides.
    counted = undefined;
    expect([...t.update(['rxe0'], [obs({ sqPsn: 100 + 390_000 })], 4000, limit, { counted: countedSince })]).toEqual(['rxe0']);
    expect(t.devices().get('rxe0')).toMatchObject({ lateReads: 2 });
  });

  it('counts a device whose dump failed until too late as late when it reads again', () => {
    const t = new ConnectionTracker();
    const limit = (): number => 1500;
    t.update(['rxe0'], [obs({ sqPsn: 100 })], 0, limit);
    t.update([], [], 1000, limit);
    t.update(['rxe0'], [obs({ sqPsn: 200 })], 2000, limit);
    expect(only(t)).toMatchObject({ sent: { packets: 0 }, window: undefined });
    expect(t.devices().get('rxe0')).toMatchObject({ lateReads: 1 });
  });
});

describe('devices read at their own interval (issue 35)', () => {
  it('keeps the windows of a device this read skipped by schedule; a failed one loses them', () => {
    const t = new ConnectionTracker();
    const a = (sqPsn: number) => obs({ sqPsn });
    const b = (sqPsn: number) => obs({ key: 'mlx5_0/1 10.99.0.1:48131 > 10.99.0.2:1312 pid 202', device: 'mlx5_0', qpn: 40, sqPsn });
    t.update(['rxe0', 'mlx5_0'], [a(100), b(100)], 0);
    t.update(['rxe0', 'mlx5_0'], [a(200), b(300)], 1000);
    // mlx5_0 not due at 2000: rxe0 read alone, mlx5_0's window stands.
    t.update(['rxe0'], [a(250)], 2000, undefined, { skipped: new Set(['mlx5_0']) });
    const byDevice = (d: string) => t.connections().find((c) => c.obs.device === d)!;
    expect(byDevice('mlx5_0')).toMatchObject({ present: true, window: { sent: 200, ms: 1000 } });
    expect(byDevice('rxe0')).toMatchObject({ window: { sent: 50, ms: 1000 } });
    // Not read and not skipped: its read failed.
    t.update(['rxe0'], [a(300)], 3000);
    expect(byDevice('mlx5_0').window).toBeUndefined();
  });

  it('sums the QP queries of each device\'s reads and keeps the interval it is read at', () => {
    const t = new ConnectionTracker();
    const cost = (qpQueries: number, readIntervalMs: number, overBudget = false) => ({ qpQueries, readIntervalMs, overBudget });
    t.update(['mlx5_0'], [obs({ device: 'mlx5_0', sqPsn: 1 })], 0, undefined, { costs: new Map([['mlx5_0', cost(1501, 2000)]]) });
    t.update(['mlx5_0'], [obs({ device: 'mlx5_0', sqPsn: 2 })], 2000, undefined, { costs: new Map([['mlx5_0', cost(10_001, 2000, true)]]) });
    expect(t.devices().get('mlx5_0')).toEqual({ lateReads: 0, qpQueries: 11_502, readIntervalMs: 2000, overBudget: true });
  });
});

describe('a connection read before its QP state sets its PSNs', () => {
  // Real MXL's initiator read while it connects (`rdma res show qp` polled in the soft-RoCE guest,
  // 2026-12-03): `lqpn 25 rqpn 0 type RC state INIT rq-psn 0 sq-psn 0`, then `state RTS rq-psn
  // 5263149 sq-psn 5886142` (rdma_cm's random starts, the target's send PSN its receive PSN).
  // Before, the jumps from 0 read as 5,886,142 packets sent and 5,263,149 received: the sender
  // also "received" (direction both, so bind: auto placed its flow nowhere).
  const connecting = [
    obs({ state: 'INIT', cmState: 'ROUTE_RESOLVED', sqPsn: 0, rqPsn: 0 }),
    obs({ state: 'RTS', sqPsn: 5_886_142, rqPsn: 5_263_149 }),
    obs({ state: 'RTS', sqPsn: 5_886_184, rqPsn: 5_263_149 }),
  ];

  it('counts only the packets sent after RTS, and the sender stays tx', () => {
    const t = new ConnectionTracker();
    connecting.forEach((o, i) => t.update(['rxe0'], [o], i * 1000));
    expect(only(t)).toMatchObject({ sent: { packets: 42, rewinds: 0 }, received: { packets: 0, rewinds: 0 }, window: { sent: 42, received: 0 } });
    expect(directionOf(only(t))).toBe('tx');
  });

  it('counts nothing from a start 2^23 or more ahead of the creation value (read as a rewind before, every later packet held uncounted)', () => {
    const t = new ConnectionTracker();
    [obs({ state: 'INIT', sqPsn: 0, rqPsn: 0 }), obs({ state: 'RTS', sqPsn: 0xc0ffee, rqPsn: 0 }), obs({ state: 'RTS', sqPsn: 0xc0ffee + 4200, rqPsn: 0 })]
      .forEach((o, i) => t.update(['rxe0'], [o], i * 1000));
    expect(only(t)).toMatchObject({ sent: { packets: 4200, rewinds: 0 }, window: { sent: 4200 } });
  });

  it('starts the receive PSN at RTR and the send PSN only at RTS (a responder in RTR)', () => {
    const t = new ConnectionTracker();
    const rx = (state: string, sqPsn: number, rqPsn: number) => obs({ state, sqPsn, rqPsn });
    [rx('INIT', 0, 0), rx('RTR', 0, 0x800001), rx('RTR', 0, 0x800001 + 99), rx('RTS', 0x654321, 0x800001 + 150)].forEach((o, i) => t.update(['rxe0'], [o], i * 1000));
    expect(only(t)).toMatchObject({ sent: { packets: 0, rewinds: 0 }, received: { packets: 150, rewinds: 0 } });
    expect(directionOf(only(t))).toBe('rx');
  });

  it('does the same for a QP first read in RESET, then met again after a late read', () => {
    const t = new ConnectionTracker();
    const limit = () => 1500;
    t.update(['rxe0'], [obs({ state: 'RESET', sqPsn: 0, rqPsn: 0 })], 0, limit);
    t.update(['rxe0'], [obs({ state: 'INIT', sqPsn: 0, rqPsn: 0 })], 5000, limit);
    t.update(['rxe0'], [obs({ state: 'RTS', sqPsn: 0xfffff0, rqPsn: 7 })], 6000, limit);
    t.update(['rxe0'], [obs({ state: 'RTS', sqPsn: 0x10, rqPsn: 7 })], 7000, limit);
    expect(only(t)).toMatchObject({ sent: { packets: 32, rewinds: 0 }, received: { packets: 0, rewinds: 0 } });
  });
});
