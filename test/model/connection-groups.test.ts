import { describe, expect, it } from 'vitest';
import { ConnectionGroups, type GroupLabels } from '../../src/model/connection-groups.js';
import { ConnectionTracker, type ConnectionObservation } from '../../src/model/connections.js';

function obs(qpn: number, sqPsn: number, over: Partial<ConnectionObservation> = {}): ConnectionObservation {
  return {
    key: `rxe0/1 qpn ${qpn} pid 202`, device: 'rxe0', port: 1, qpn, rqpn: qpn + 1, qpType: 'RC', state: 'RTS', cmState: undefined,
    local: `qpn:${qpn}`, peer: `rqpn:${qpn + 1}`, pid: 202, kernName: undefined, sqPsn, rqPsn: 10, ...over,
  };
}

const place = { device: 'rxe0', port: 1, direction: 'tx', pid: '', process: '' };
const flowA: GroupLabels = { ...place, flowId: 'A' };
const flowB: GroupLabels = { ...place, flowId: 'B' };

describe('connections counted by group (metrics.connection_series flow / process)', () => {
  it('sums what each connection moved while in its group; a connection leaving takes nothing back', () => {
    const t = new ConnectionTracker(5000);
    const g = new ConnectionGroups();
    let groupOf = (_qpn: number): GroupLabels => flowA;
    const read = (at: number, ...qps: ConnectionObservation[]): void => {
      t.update(['rxe0'], qps, at);
      g.update(t.connections(), (c) => groupOf(c.obs.qpn));
    };
    read(0, obs(1, 100), obs(2, 500));
    read(1000, obs(1, 150), obs(2, 530));
    expect(g.groups()).toEqual([{ labels: flowA, connections: 2, up: 2, sent: 80, received: 0, rewinds: 0, restarts: 0 }]);
    // QP 2 is found to carry flow B: what it moves from now on is B's; A keeps what it counted.
    groupOf = (qpn) => (qpn === 2 ? flowB : flowA);
    read(2000, obs(1, 160), obs(2, 600));
    expect(g.groups()).toEqual([
      { labels: flowA, connections: 1, up: 1, sent: 90, received: 0, rewinds: 0, restarts: 0 },
      { labels: flowB, connections: 1, up: 1, sent: 70, received: 0, rewinds: 0, restarts: 0 },
    ]);
    // QP 1 vanishes: kept (up 0) while the tracker keeps it; then its group goes.
    read(3000, obs(2, 610));
    expect(g.groups()[0]).toEqual({ labels: flowA, connections: 0, up: 0, sent: 90, received: 0, rewinds: 0, restarts: 0 });
    read(9000, obs(2, 620));
    expect(g.groups()).toEqual([{ labels: flowB, connections: 1, up: 1, sent: 90, received: 0, rewinds: 0, restarts: 0 }]);
  });

  it('counts a QP in RTR as up and one in ERR as down; rewinds and restarts too', () => {
    const t = new ConnectionTracker();
    const g = new ConnectionGroups();
    t.update(['rxe0'], [obs(1, 100, { state: 'RTR' }), obs(2, 100, { state: 'ERR' })], 0);
    // An RTR QP's sq_psn is not set yet (psnSetIn): its move back is no rewind; the ERR QP's, set before, is.
    t.update(['rxe0'], [obs(1, 90, { state: 'RTR' }), obs(2, 90, { state: 'ERR' })], 1000);
    g.update(t.connections(), () => flowA);
    expect(g.groups()).toEqual([{ labels: flowA, connections: 2, up: 1, sent: 0, received: 0, rewinds: 1, restarts: 0 }]);
  });

  it('counts nothing for connections in no group (metrics.connection_series qp)', () => {
    const t = new ConnectionTracker();
    const g = new ConnectionGroups();
    t.update(['rxe0'], [obs(1, 100)], 0);
    g.update(t.connections(), () => undefined);
    expect(g.groups()).toEqual([]);
  });
});
