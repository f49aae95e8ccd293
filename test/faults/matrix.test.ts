/**
 * Fault matrix, on the real daemon over HTTP: each fault must leave the scrape working and
 * change only the series of what it touched. (Already covered in test/exporter/daemon.test.ts:
 * a device removed with ticks in between, a port going down once, EISDIR/ENOENT/ELOOP files,
 * a counter reset, a saturated PMA counter, bad YAML / a bad flow / a deleted file on reload.)
 */
import { describe, it, expect, afterEach } from 'vitest';
import * as fs from 'node:fs';
import { one, series, startDaemon, stopDaemons, type Running } from '../exporter/harness.js';
import type { SysfsFixture } from '../fixtures/sysfs.js';
import { readErrorText } from '../../src/reads/errors.js';
import { need, needs } from '../deploy/tools.js';

const TWO_RXE = `
sampling: { interval: 1s, window: 4s }
ports:
  - { device: rxe0, port: 1, provider: rdma_rocev2, mtu: 4096 }
  - { device: rxe1, port: 1, provider: rdma_rocev2, mtu: 4096 }
flows:
  - { flow: flows/data_60.json, device: rxe0, port: 1, direction: tx }
  - { flow: flows/data_60.json, device: rxe1, port: 1, direction: tx }
`;

function twoDevices(fx: SysfsFixture): void {
  fs.cpSync(fx.path('class', 'infiniband', 'rxe0'), fx.path('class', 'infiniband', 'rxe1'), { recursive: true });
}

let run: Running | undefined;
afterEach(stopDaemons);

/** sent_pkts of both devices advance by 60 per second; returns the scrape after `ticks` ticks. */
async function traffic(r: Running, state: Record<string, bigint>, ticks: number, between?: (i: number) => void): Promise<Map<string, number>[]> {
  const scrapes: Map<string, number>[] = [];
  for (let i = 0; i < ticks; i++) {
    between?.(i);
    for (const dev of Object.keys(state)) {
      state[dev]! += 60n;
      if (fs.existsSync(r.fx.portPath(dev, 1, 'hw_counters'))) r.fx.setCounter(dev, 1, 'hw_counters', 'sent_pkts', state[dev]!);
    }
    await r.tick();
    const res = await r.get('/metrics');
    expect(res.status).toBe(200);
    scrapes.push(await r.scrape());
  }
  return scrapes;
}

const pps = (m: Map<string, number>, device: string): number | undefined =>
  one(m, 'mxl_fabric_port_measured_packets_per_second', { device, direction: 'tx', source: 'sysfs_hw_counters' });

describe('device churn', () => {
  it('a device removed and re-added between two ticks (re-created files): only its series restart', async () => {
    run = await startDaemon('rxe_6_1', TWO_RXE, twoDevices);
    const c = { rxe0: 1000n, rxe1: 5000n };
    await traffic(run, c, 5);
    const before = await run.scrape();
    expect(pps(before, 'rxe0')).toBe(60);
    expect(pps(before, 'rxe1')).toBe(60);
    const totalBefore = one(before, 'mxl_fabric_port_transmitted_packets_total', { device: 'rxe1', source: 'sysfs_hw_counters' })!;

    // Unbind and rebind inside one interval: same names, new inodes, counters from zero.
    run.fx.removeDevice('rxe1');
    run.fx.readdDevice('rxe1');
    c.rxe1 = 0n;
    const after = await traffic(run, c, 3);
    for (const m of after) {
      expect(pps(m, 'rxe0')).toBe(60);
      expect(one(m, 'mxl_fabric_port_up', { device: 'rxe0' })).toBe(1);
      expect(one(m, 'mxl_fabric_port_up', { device: 'rxe1' })).toBe(1);
    }
    const last = after.at(-1)!;
    expect(pps(last, 'rxe1')).toBe(60); // a fresh window after the reopen, never a negative or huge rate
    // The re-opened counters start a new total from their first reading (a new series for Prometheus' rate()).
    expect(one(last, 'mxl_fabric_port_transmitted_packets_total', { device: 'rxe1', source: 'sysfs_hw_counters' })).toBeLessThan(totalBefore);
    expect(run.logs.join('')).toMatch(/msg="port vanished" device=rxe1[^\n]*\n(.*\n)*.*msg="port found" device=rxe1/);
    expect(run.logs.join('')).not.toMatch(/port vanished" device=rxe0/);
  });
});

describe('port flapping', () => {
  it('a port bouncing DOWN/ACTIVE every tick keeps its counters and leaves the other port alone', async () => {
    run = await startDaemon('rxe_6_1', TWO_RXE, twoDevices);
    const c = { rxe0: 1000n, rxe1: 5000n };
    const scrapes = await traffic(run, c, 8, (i) => run!.fx.setPortState('rxe1', 1, i % 2 === 0 ? 'DOWN' : 'ACTIVE'));
    scrapes.forEach((m, i) => {
      expect(one(m, 'mxl_fabric_port_up', { device: 'rxe1' })).toBe(i % 2 === 0 ? 0 : 1);
      expect(one(m, 'mxl_fabric_port_info', { device: 'rxe1', state: i % 2 === 0 ? 'DOWN' : 'ACTIVE' })).toBe(1);
      expect(one(m, 'mxl_fabric_port_up', { device: 'rxe0' })).toBe(1);
      expect([...series(m, 'mxl_fabric_port_stat_up', { device: 'rxe1' }).values()].every((v) => v === 1)).toBe(true);
      expect(one(m, 'mxl_fabric_flow_predicted_packets_per_second', { device: 'rxe1', direction: 'tx' })).toBe(120); // mtu 4096: 2 packets a grain
    });
    const last = scrapes.at(-1)!;
    expect(pps(last, 'rxe0')).toBe(60);
    expect(pps(last, 'rxe1')).toBe(60);
    expect(run.logs.join('')).not.toContain('port vanished');
  });
});

/** A real kernel file that fails the way a driver does, or undefined if this host has none. */
function failing(file: string, code: string): string | undefined {
  try {
    fs.readFileSync(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === code) return file;
  }
  return undefined;
}
// show() returning -EINVAL (net/core/net-sysfs.c speed_show() on a device without link settings).
const EINVAL_FILE = failing('/sys/class/net/lo/speed', 'EINVAL');
// A write-only sysctl: proc_sys_permission() refuses reads even to root with EACCES.
const EACCES_FILE = failing('/proc/sys/vm/drop_caches', 'EACCES');

describe('files that fail for real', () => {
  needs(need(!EINVAL_FILE || !EACCES_FILE, 'a kernel file that fails with EINVAL and one with EACCES')).it('EINVAL from read, EACCES from open and "N/A (no PMA)" fail only their own counters', async () => {
    run = await startDaemon('mlx5_roce', 'ports: [{ device: mlx5_0, port: 1, mtu: 4096 }]\nflows: []\n', (fx) => {
      const link = (dir: 'counters' | 'hw_counters', name: string, target: string): void => {
        fs.rmSync(fx.portPath('mlx5_0', 1, dir, name));
        fs.symlinkSync(target, fx.portPath('mlx5_0', 1, dir, name));
      };
      link('counters', 'port_rcv_data', EINVAL_FILE!);
      link('hw_counters', 'out_of_buffer', EACCES_FILE!);
      fx.setCounter('mlx5_0', 1, 'counters', 'symbol_error', 'N/A (no PMA)');
    });
    await run.tick();
    await run.tick();
    const m = await run.scrape();
    const up = (counter: string): number | undefined => one(m, 'mxl_fabric_port_stat_up', { device: 'mlx5_0', counter });
    expect(up('port_rcv_data')).toBe(0);
    expect(up('out_of_buffer')).toBe(0);
    expect(up('symbol_error')).toBe(0);
    const down = [...series(m, 'mxl_fabric_port_stat_up', { device: 'mlx5_0' })].filter(([, v]) => v === 0);
    expect(down).toHaveLength(3);
    expect(one(m, 'mxl_fabric_port_measured_bytes_per_second', { device: 'mlx5_0', direction: 'tx', source: 'sysfs_counters' })).toBe(0);
    expect(one(m, 'mxl_fabric_port_measured_bytes_per_second', { device: 'mlx5_0', direction: 'rx', source: 'sysfs_counters' })).toBeUndefined();
    const errors = new Map(run.daemon.state().sampler!.ports.get('mlx5_0/1')!.counters.map((c) => [c.series.spec.name, c.series.lastError && readErrorText(c.series.lastError)]));
    expect(errors.get('port_rcv_data')).toBe('EINVAL: read');
    expect(errors.get('out_of_buffer')).toBe('EACCES: open');
    expect(errors.get('symbol_error')).toBe('not a counter: "N/A (no PMA)"');
    // Three ticks (start and two more): two failing counters/ files, one failing hw_counters/ file.
    expect(one(m, 'mxl_fabric_exporter_read_errors_total', { device: 'mlx5_0', source: 'sysfs_counters' })).toBe(6);
    expect(one(m, 'mxl_fabric_exporter_read_errors_total', { device: 'mlx5_0', source: 'sysfs_hw_counters' })).toBe(3);
  });
});

describe('counter width', () => {
  it('an mlx5 32-bit Q-counter going from near 2^32 to small gives the exact unwrapped delta', async () => {
    run = await startDaemon('mlx5_roce', 'sampling: { interval: 1s, window: 2s }\nports: [{ device: mlx5_0, port: 1, mtu: 4096 }]\nflows: []\n');
    const name = 'rx_write_requests';
    run.fx.setCounter('mlx5_0', 1, 'hw_counters', name, 4_294_967_290n);
    await run.tick();
    const base = one(await run.scrape(), 'mxl_fabric_port_stat_total', { device: 'mlx5_0', counter: name })!;
    run.fx.setCounter('mlx5_0', 1, 'hw_counters', name, 10n); // 2^32 - 6 -> 10: 16 requests
    await run.tick();
    let m = await run.scrape();
    expect(one(m, 'mxl_fabric_port_stat_total', { device: 'mlx5_0', counter: name })).toBe(base + 16);
    run.fx.setCounter('mlx5_0', 1, 'hw_counters', name, 4_294_967_295n); // all ones is a value here, not saturation
    await run.tick();
    run.fx.setCounter('mlx5_0', 1, 'hw_counters', name, 0n);
    await run.tick();
    m = await run.scrape();
    expect(one(m, 'mxl_fabric_port_stat_total', { device: 'mlx5_0', counter: name })).toBe(base + 16 + 4_294_967_285 + 1);
    expect(one(m, 'mxl_fabric_port_stat_up', { device: 'mlx5_0', counter: name })).toBe(1);
    // The 64-bit congestion counters of the same port going back are a reset, not a wrap.
    run.fx.setCounter('mlx5_0', 1, 'hw_counters', 'np_cnp_sent', 5_000_000_000n);
    await run.tick();
    const cnp = one(await run.scrape(), 'mxl_fabric_port_stat_total', { device: 'mlx5_0', counter: 'np_cnp_sent' })!;
    run.fx.setCounter('mlx5_0', 1, 'hw_counters', 'np_cnp_sent', 7n);
    await run.tick();
    expect(one(await run.scrape(), 'mxl_fabric_port_stat_total', { device: 'mlx5_0', counter: 'np_cnp_sent' })).toBe(cnp);
  });
});
