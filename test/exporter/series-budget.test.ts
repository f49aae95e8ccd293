/**
 * The series budget (docs/configuration.md, "Series budget"): series per configured flow binding and per port,
 * counted on a live scrape of the real daemon, at the default `metrics.flow_layers`, at its
 * minimum (`[]`) and with every layer. Per-flow series are those with a `flow_id` label; the
 * per-port ones have `device` and `port` and no `flow_id`.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { startDaemon, stopDaemons, type Running } from './harness.js';
import { addFlow, commit, makeDomain } from '../domain/mxl-domain.mjs';
import { FakeRestrackKernel } from '../sources/restrack/fake-kernel.js';

const FLOWS = ['v210_1080p2997.json', 'data_60.json', 'audio_2ch_48k.json'];
const config = (metrics: string, provider: string) => `
sampling: { interval: 1s, window: 4s }
drift: { tolerance: 1 }   # the fixture's counters stand still: no drift culprits (3 per port direction at most)
${metrics}
ports:
  - { device: mlx5_0, port: 1, provider: ${provider}, mtu: 4096, capacity: 100Gbps }
flows:
  - { flow: flows/${FLOWS[0]}, device: mlx5_0, direction: tx }
  - { flow: flows/${FLOWS[1]}, device: mlx5_0, direction: tx }
  - { flow: flows/${FLOWS[2]}, device: mlx5_0, direction: rx }
`;

let run: Running | undefined;
afterEach(stopDaemons);

/** Series per flow binding, by family, and the per-port series count. */
async function count(metrics: string, provider = 'rdma_rocev2'): Promise<{ perFlow: number; families: Record<string, number>; perPort: number }> {
  run = await startDaemon('mlx5_roce', config(metrics, provider));
  await run.tick(1);
  await run.tick(1);
  const series = [...(await run.scrape()).keys()].filter((s) => s.startsWith('mxl_fabric_'));
  const flow = series.filter((s) => /[{,]flow_id="/.test(s));
  const families: Record<string, number> = {};
  for (const s of flow) {
    const name = s.slice(0, s.indexOf('{')).replace(/^mxl_fabric_/, '');
    families[name] = (families[name] ?? 0) + 1 / FLOWS.length;
  }
  const port = series.filter((s) => !/[{,]flow_id="/.test(s) && /[{,]device="mlx5_0"/.test(s) && /[{,]port="1"/.test(s));
  return { perFlow: flow.length / FLOWS.length, families, perPort: port.length };
}

describe('series budget', () => {
  it('default flow_layers (payload, l2, wire): 5 series per flow binding', async () => {
    const c = await count('');
    expect(c.families).toEqual({ flow_info: 1, flow_predicted_bytes_per_second: 3, flow_predicted_packets_per_second: 1 });
    expect(c.perFlow).toBe(5);
    // mlx5_roce: one port with its PMA, hw_counters and netdev counters
    expect(c.perPort).toBe(PER_PORT_MLX5);
  });

  it('flow_layers: [] (the minimum): 2 series per flow binding, the port unchanged', async () => {
    const c = await count('metrics: { flow_layers: [] }');
    expect(c.families).toEqual({ flow_info: 1, flow_predicted_packets_per_second: 1 });
    expect(c.perFlow).toBe(2);
    expect(c.perPort).toBe(PER_PORT_MLX5);
  });

  it('every layer: 7 series per flow binding (as before metrics.flow_layers)', async () => {
    const c = await count('metrics: { flow_layers: [media, payload, l3, l2, wire] }');
    expect(c.perFlow).toBe(7);
  });

  it('a profile that models ACKs (rdma_rocev2_mxl_v1) adds 4 per flow: ACK packets and ACK bytes at l3, l2, wire', async () => {
    expect((await count('', 'rdma_rocev2_mxl_v1')).perFlow).toBe(9);
    await run!.stop();
    run = undefined;
    expect((await count('metrics: { flow_layers: [] }', 'rdma_rocev2_mxl_v1')).perFlow).toBe(6);
  });

  it('a flow found in an MXL domain adds its state (3 series) and its measurement (6 series) per domain folder', async () => {
    const domain = makeDomain();
    const id = '0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d31';
    const def = { id, label: 'Camera 3 video', format: 'urn:x-nmos:format:video', tags: { 'urn:x-nmos:tag:grouphint/v1.0': ['Camera 3:Video'] },
      media_type: 'video/v210', grain_rate: { numerator: 25 },
      frame_width: 1920, frame_height: 1080, interlace_mode: 'progressive' };
    const dir = addFlow(domain, def, { id, format: 1, rate: [25n, 1n], grainCount: 2, headIndex: 100n, lastWriteTime: 1n });
    run = await startDaemon('mlx5_roce', `
sampling: { interval: 1s, window: 4s }
drift: { tolerance: 1 }
ports:
  - { device: mlx5_0, port: 1, provider: rdma_rocev2, mtu: 4096, capacity: 100Gbps }
domains:
  - { path: ${domain}, device: mlx5_0, port: 1, direction: tx }
`);
    for (let i = 1; i <= 3; i++) {
      commit(dir, 100n + 25n * BigInt(i), 1n);
      await run.tick(1);
    }
    const families: Record<string, number> = {};
    for (const s of (await run.scrape()).keys()) {
      if (!s.includes(`flow_id="${id}"`)) continue;
      const name = s.slice(0, s.indexOf('{')).replace(/^mxl_fabric_/, '');
      families[name] = (families[name] ?? 0) + 1;
    }
    expect(families).toEqual({
      flow_info: 1, flow_predicted_bytes_per_second: 3, flow_predicted_packets_per_second: 1,
      flow_state: 1, flow_live: 1, flow_expected: 1,
      flow_measured_grains_per_second: 1, flow_measured_bytes_per_second: 1, flow_drift_ratio: 1, flow_writer_active: 1,
      flow_last_write_age_seconds: 1, domain_flow_definition_valid: 1,
    });
  });
});

/**
 * The mlx5_roce fixture's port with flows both ways: 197 series, 125 of them for its 56 counters
 * (port_stat_total and port_stat_up each, port_stat_saturated for the 13 32-bit PMA ones).
 */
const PER_PORT_MLX5 = 197;

describe('series budget of connections (metrics.connection_series, issue 35)', () => {
  /** Connection series (per QP, per group) with `qps` RC QPs that send, from two processes (no flow), at `setting`. */
  async function connectionSeries(setting: string, qps: number): Promise<Record<string, number>> {
    const kernel = new FakeRestrackKernel();
    kernel.device(3, 'rxe0', Array.from({ length: qps }, (_, i) => ({ lqpn: 100 + i, sqPsn: 1000, rqPsn: 1, rqpn: 500 + i, pid: 300 + (i % 2) })));
    run = await startDaemon('rxe_6_1', `metrics: { connection_series: ${setting} }\nsampling: { interval: 1s, window: 4s }\n`, undefined,
      () => ({ restrack: () => ({ ok: true, transport: kernel.transport() }) }));
    await run.tick(1);
    for (const q of kernel.qps.get('rxe0')!) q.sqPsn += 10;
    await run.tick(1);
    const out: Record<string, number> = {};
    for (const s of (await run.scrape()).keys()) {
      const name = s.slice(0, s.indexOf('{')).replace(/^mxl_fabric_/, '');
      if (/^connection(s|_group)?_/.test(name)) out[name] = (out[name] ?? 0) + 1;
    }
    await stopDaemons();
    return out;
  }

  it('qp: 7 series per RC QP; flow and process: 6 per group, none per QP', async () => {
    const perDevice = { connections_late_reads_total: 1, connections_read_interval_seconds: 1, connections_last_read_timestamp_seconds: 1, connections_qp_queries_total: 1 };
    const perQp = (n: number) => ({
      connection_info: n, connection_up: n, connection_state: n, connection_sent_packets_total: n, connection_received_packets_total: n,
      connection_psn_rewinds_total: n, connection_restarts_total: n, ...perDevice,
    });
    expect(await connectionSeries('qp', 40)).toEqual(perQp(40));
    expect(await connectionSeries('qp', 80)).toEqual(perQp(80));
    // Two processes' connections, all sending on rxe0/1 and carrying no flow: two groups.
    const groups = {
      connection_group_connections: 2, connection_group_up: 2, connection_group_sent_packets_total: 2, connection_group_received_packets_total: 2,
      connection_group_psn_rewinds_total: 2, connection_group_restarts_total: 2, ...perDevice,
    };
    for (const setting of ['flow', 'process']) {
      expect(await connectionSeries(setting, 40)).toEqual(groups);
      expect(await connectionSeries(setting, 80)).toEqual(groups);
    }
  });
});
