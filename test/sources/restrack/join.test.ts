import { describe, expect, it } from 'vitest';
import { ReplyCollector, decodeCmIdDump, decodeMessages, decodeQpDump } from '../../../src/sources/netlink/index.js';
import { joinDevice } from '../../../src/sources/restrack/join.js';
import { ConnectionTracker } from '../../../src/model/connections.js';
import { datagrams } from './kernel-peer.js';

function messages(name: string) {
  const c = new ReplyCollector(0x11223344);
  for (const d of datagrams(name)) c.feed(decodeMessages(d));
  return c.data;
}
const joined = (qp: string, cm: string) => joinDevice(decodeQpDump(messages(qp)).devName, decodeQpDump(messages(qp)), decodeCmIdDump(messages(cm)));

describe('QPs joined with cm_ids', () => {
  it('makes the guest sender one RC connection with its addresses; the GSI QP is none', () => {
    const j = joined('restrack-qp-rxe0.hex', 'restrack-cm-id-rxe0.hex');
    expect(j.cmIdsWithoutQp).toBe(0);
    expect(j.observations).toEqual([{
      key: 'rxe0/1 10.99.0.1:48130 > 10.99.0.2:1312 pid 202', device: 'rxe0', port: 1, qpn: 33, rqpn: 33,
      qpType: 'RC', state: 'RTS', cmState: 'CONNECT', local: '10.99.0.1:48130', peer: '10.99.0.2:1312',
      pid: 202, kernName: undefined, sqPsn: 8619382, rqPsn: 16724105,
    }]);
  });

  it('identifies a QP without cm_id by device, port, QP number and pid; a cm_id whose QP is gone is no connection', () => {
    const j = joined('restrack-qp-mlx5_0-t0.hex', 'restrack-cm-id-mlx5_0.hex');
    expect(j.observations).toHaveLength(204);
    expect(j.cmIdsWithoutQp).toBe(1);
    const by = new Map(j.observations.map((o) => [o.qpn, o]));
    expect(by.get(0x100)).toMatchObject({ key: 'mlx5_0/1 qpn 256 pid 4000', local: 'qpn:256', peer: 'rqpn:2304' });
    expect(by.get(0x300)).toMatchObject({ key: 'mlx5_0/1 192.168.10.1:40001 > 192.168.10.2:1312 pid 5000', cmState: 'CONNECT' });
    expect(by.get(0x304)).toMatchObject({ key: 'mlx5_0/1 qpn 772 pid ?', pid: undefined });
    expect(by.get(0x306)).toMatchObject({ key: 'mlx5_0/0 qpn 774 pid 5001', qpType: 'UD', state: 'RTR', peer: '', rqPsn: undefined });
  });

  it('counts exact packets over three mlx5-like dumps: 200 senders, a wrap, a rewind, a QP without pid', () => {
    const t = new ConnectionTracker();
    for (const tick of [0, 1, 2]) {
      const j = joined(`restrack-qp-mlx5_0-t${tick}.hex`, 'restrack-cm-id-mlx5_0.hex');
      t.update(['mlx5_0'], j.observations, tick * 1000);
    }
    const by = new Map(t.connections().map((c) => [c.obs.qpn, c]));
    // QP 0x100+i moved 1000*(i+1) per tick: 2000*(i+1) after two windows.
    for (let i = 0; i < 200; i++) expect(by.get(0x100 + i)?.sent.packets).toBe(2000 * (i + 1));
    expect([...by.values()].reduce((n, c) => n + c.sent.packets, 0)).toBe(40_200_000 + 48 + 10 + 2);
    expect(by.get(0x300)).toMatchObject({ sent: { packets: 48, rewinds: 0 }, window: { sent: 16, received: 0, ms: 1000 } });
    expect(by.get(0x302)).toMatchObject({ sent: { packets: 10, rewinds: 1 } });
    expect(by.get(0x304)?.sent.packets).toBe(2);
    expect(by.get(0x306)).toMatchObject({ sent: { packets: 0 }, received: undefined });
    expect([...by.values()].every((c) => c.restarts === 0 && (c.received?.packets ?? 0) === 0)).toBe(true);
  });
});
