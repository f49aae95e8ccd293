/** Dumps the kernel sent in the soft-RoCE guest with real MXL (test/fixtures/netlink/recorded/README.md). */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ReplyCollector, decodeCmIdDump, decodeMessages, decodeQpDump, type NlMessage } from '../../../src/sources/netlink/index.js';
import { joinDevice } from '../../../src/sources/restrack/join.js';

function recorded(name: string): NlMessage[] {
  const lines = readFileSync(new URL(`../../fixtures/netlink/recorded/guest-mxl-video-${name}.hex`, import.meta.url), 'utf8').trim().split('\n');
  const dgs = lines.map((l) => Uint8Array.from(Buffer.from(l, 'hex')));
  const c = new ReplyCollector(Buffer.from(dgs[0]!).readUInt32LE(8));
  for (const d of dgs) c.feed(decodeMessages(d));
  expect(c.done).toBe(true);
  expect(c.error).toBeUndefined();
  return c.data;
}

describe('restrack dumps recorded in the guest', () => {
  it('decode to the sender QP and cm_id, the GSI QP after it', () => {
    const qps = decodeQpDump(recorded('qp-rxe0'));
    expect([qps.devIndex, qps.devName]).toEqual([0, 'rxe0']);
    expect(qps.entries).toEqual([
      { port: 1, lqpn: 25, rqpn: 25, rqPsn: 13142719, sqPsn: 6472442, type: 2, state: 3, pathMigState: 0, pdn: 10, pid: 240, kernName: undefined },
      { port: 1, lqpn: 1, rqpn: undefined, rqPsn: undefined, sqPsn: 2, type: 1, state: 3, pathMigState: undefined, pdn: undefined, pid: undefined, kernName: 'ib_core' },
    ]);
    const cm = decodeCmIdDump(recorded('cm-id-rxe0'));
    expect(cm.entries).toEqual([{
      port: 1, lqpn: 25, qpType: 2, ps: 0x106, state: 5, cmIdn: 5, pid: 240, kernName: undefined,
      src: { family: 2, address: '192.168.77.1', port: 47267 }, dst: { family: 2, address: '192.168.77.2', port: 1312 },
    }]);
  });

  it('join to one connection per side, the receiver\'s rq_psn where the sender\'s sq_psn is', () => {
    const side = (dev: string) => joinDevice(dev, decodeQpDump(recorded(`qp-${dev}`)), decodeCmIdDump(recorded(`cm-id-${dev}`)));
    const [tx] = side('rxe0').observations;
    const [rx] = side('rxe1').observations;
    expect(side('rxe0').observations).toHaveLength(1);
    expect(tx).toMatchObject({ key: 'rxe0/1 192.168.77.1:47267 > 192.168.77.2:1312 pid 240', qpType: 'RC', state: 'RTS', cmState: 'CONNECT', sqPsn: 6472442 });
    expect(rx).toMatchObject({ key: 'rxe1/1 192.168.77.2:1312 > 192.168.77.1:47267 pid 175', local: '192.168.77.2:1312', peer: '192.168.77.1:47267', rqPsn: 6472442 });
  });
});
