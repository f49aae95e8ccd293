/**
 * Up means working (issue 35): a responder in RTR receives (IBA: the receive queue is processed
 * from RTR on; a QP that only receives never needs RTS). Recorded in the soft-RoCE guest
 * (test/rxe/scale): `ib_write_bw -q 256` without RDMA CM beside real MXL, whose server's 256 QPs
 * on rxe1 stay in RTR (perftest's server never moves them on) while its client's 256 on rxe0 are
 * in RTS; before this issue all 256 server QPs read connection_up 0.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { one, series, startDaemon, type Running } from './harness.js';
import { recordedKernel } from '../sources/restrack/recorded-kernel.js';

let run: Running | undefined;
afterEach(async () => {
  await run?.stop();
  run = undefined;
});

const start = async (metrics: string): Promise<Running> =>
  (run = await startDaemon('rxe_6_1', `${metrics}sampling: { interval: 1s, window: 4s }\n`, undefined, () => ({ restrack: () => ({ ok: true, transport: recordedKernel('guest-perftest') }) })));

describe('a responder in RTR, as recorded in the guest', () => {
  it('is up: connection_up 1 for each of perftest\'s 256 server QPs in RTR, and the landing page says ok', async () => {
    await start('metrics: { connection_series: qp }\n');
    await run!.tick(1);
    const m = await run!.scrape();
    const rtr = [...series(m, 'mxl_fabric_connection_state', { state: 'RTR' }).keys()];
    expect(rtr).toHaveLength(256);
    const local = (k: string): string => /local="([^"]*)"/.exec(k)![1]!;
    expect(rtr.map((k) => one(m, 'mxl_fabric_connection_up', { device: 'rxe1', local: local(k) }))).toEqual(new Array(256).fill(1));
    // Every QP of the two dumps (258 each, less the kernel's GSI QPs) is up: 256 in RTS, 256 in RTR, MXL's two.
    expect([...series(m, 'mxl_fabric_connection_up').values()]).toEqual(new Array(514).fill(1));
    const page = await (await fetch(`${run!.base}/`)).text();
    expect(page.match(/<td class="bad">RTR<\/td>/g)).toBeNull();
    expect(page.match(/<td class="ok">RTR<\/td>/g)).toHaveLength(256);
  });

  it('counts them up in their process\'s group at the default series budget', async () => {
    await start('');
    await run!.tick(1);
    const m = await run!.scrape();
    const sum = (x: Map<string, number>): number => [...x.values()].reduce((a, b) => a + b, 0);
    expect(sum(series(m, 'mxl_fabric_connection_group_up', { device: 'rxe1', pid: '321' }))).toBe(256);
    expect(sum(series(m, 'mxl_fabric_connection_group_connections'))).toBe(514);
    expect(sum(series(m, 'mxl_fabric_connection_group_up'))).toBe(514);
  });
});
