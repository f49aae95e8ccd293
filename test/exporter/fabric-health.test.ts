/** The fabric-health families as the daemon serves them: exact lines, and promtool's lint. */
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { series, startDaemon } from './harness.js';
import { mlx5EthtoolAndDcb } from './fabric-measurement.js';
import { needs, tool } from '../deploy/tools.js';

const CONFIG = `ports:\n  - { device: mlx5_0, port: 1 }\nflows:\n  - { flow: flows/data_60.json, device: mlx5_0, port: 1, direction: tx }\n`;

async function mlx5WithEthtoolAndDcb() {
  return startDaemon('mlx5_roce', CONFIG, undefined, mlx5EthtoolAndDcb);
}

describe('fabric-health exposition', () => {
  it('serves the vocabulary with driver names, the PFC and VLAN gauges', async () => {
    const d = await mlx5WithEthtoolAndDcb();
    try {
      d.tick();
      const m = await d.scrape();
      const lines = (name: string): string[] => [...series(m, name)].map(([k, v]) => `${k} ${v}`).sort();
      expect(lines('mxl_fabric_port_ecn_marked_packets_total')).toEqual([
        'mxl_fabric_port_ecn_marked_packets_total{device="mlx5_0",port="1",source="sysfs_hw_counters",counter="np_ecn_marked_roce_packets"} 5123456000',
      ]);
      expect(lines('mxl_fabric_port_cnp_ignored_total')).toEqual([
        'mxl_fabric_port_cnp_ignored_total{device="mlx5_0",port="1",source="sysfs_hw_counters",counter="rp_cnp_ignored"} 0',
      ]);
      expect(lines('mxl_fabric_port_pause_frames_total')).toEqual([
        'mxl_fabric_port_pause_frames_total{device="mlx5_0",port="1",direction="rx",priority="3",source="ethtool",counter="rx_prio3_pause"} 52441',
        'mxl_fabric_port_pause_frames_total{device="mlx5_0",port="1",direction="rx",priority="global",source="ethtool",counter="rx_pause_ctrl_phy"} 0',
        'mxl_fabric_port_pause_frames_total{device="mlx5_0",port="1",direction="tx",priority="3",source="ethtool",counter="tx_prio3_pause"} 310',
        'mxl_fabric_port_pause_frames_total{device="mlx5_0",port="1",direction="tx",priority="global",source="ethtool",counter="tx_pause_ctrl_phy"} 0',
      ]);
      expect(lines('mxl_fabric_port_pause_duration_seconds_total')).toEqual([
        'mxl_fabric_port_pause_duration_seconds_total{device="mlx5_0",port="1",direction="rx",priority="3",source="ethtool",counter="rx_prio3_pause_duration"} 2.5',
        'mxl_fabric_port_pause_duration_seconds_total{device="mlx5_0",port="1",direction="tx",priority="3",source="ethtool",counter="tx_prio3_pause_duration"} 0.00125',
      ]);
      expect(lines('mxl_fabric_port_discards_total')).toEqual([
        'mxl_fabric_port_discards_total{device="mlx5_0",port="1",direction="rx",reason="buffer",source="ethtool",counter="rx_discards_phy"} 17',
        'mxl_fabric_port_discards_total{device="mlx5_0",port="1",direction="rx",reason="no_receive_wqe",source="sysfs_hw_counters",counter="out_of_buffer"} 0',
        'mxl_fabric_port_discards_total{device="mlx5_0",port="1",direction="tx",reason="congestion",source="ethtool",counter="tx_discards_phy"} 5',
      ]);
      expect([...series(m, 'mxl_fabric_port_transport_errors_total')].length).toBe(8);
      expect(m.get('mxl_fabric_port_transport_errors_total{device="mlx5_0",port="1",kind="local_ack_timeout",source="sysfs_hw_counters",counter="local_ack_timeout_err"}')).toBe(131);
      expect(lines('mxl_fabric_port_pfc_enabled')).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((p) =>
        `mxl_fabric_port_pfc_enabled{device="mlx5_0",port="1",priority="${p}"} ${p === 3 ? 1 : 0}`).sort());
      expect(lines('mxl_fabric_port_vlan_tagged')).toEqual(['mxl_fabric_port_vlan_tagged{device="mlx5_0",port="1"} 0']);
      // Nothing is dropped: the same counters stay in the raw family too, under the new name only.
      expect(m.get('mxl_fabric_port_stat_total{device="mlx5_0",port="1",source="ethtool",counter="rx_prio3_pause"}')).toBe(52441);
      expect(m.get('mxl_fabric_port_stat_total{device="mlx5_0",port="1",source="sysfs_hw_counters",counter="roce_adp_retrans"}')).toBe(99);
      expect([...m.keys()].filter((k) => k.startsWith('mxl_fabric_port_counter_'))).toEqual([]);
    } finally {
      await d.stop();
    }
  });

  it('without DCB (fake sysfs, no netlink) the PFC gauge is absent, not 0', async () => {
    const d = await startDaemon('rxe_6_1', `ports:\n  - { device: rxe0, port: 1 }\n`);
    try {
      d.tick();
      const m = await d.scrape();
      expect(series(m, 'mxl_fabric_port_pfc_enabled').size).toBe(0);
      expect(series(m, 'mxl_fabric_port_transport_errors_total').size).toBe(6);
    } finally {
      await d.stop();
    }
  });

  const promtool = tool('promtool', 'prometheus');
  needs(promtool).it('promtool check metrics finds nothing to complain about in these families', async () => {
    const d = await mlx5WithEthtoolAndDcb();
    try {
      d.tick();
      const text = await (await d.get('/metrics')).text();
      const mine = text.split('\n').filter((l) => /mxl_fabric_port_(ecn|cnp|pause|transport|discards|pfc|vlan)/.test(l)).join('\n') + '\n';
      const r = spawnSync(promtool.require(), ['check', 'metrics'], { input: mine, encoding: 'utf8' });
      expect(r.stdout + r.stderr).toBe('');
      expect(r.status).toBe(0);
    } finally {
      await d.stop();
    }
  });
});
