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
