/** The ethtool reader: captured kernel answers, driver tables, the counter source, and a live veth. */
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ETHTOOL_FIXTURES, ReplayTransport, TableKernel, loadCapture, loadTable } from '../fixtures/ethtool.js';
import { FIXTURES_DIR } from '../fixtures/sysfs.js';
import { ethtoolStatsReads, stringSetReads } from '../../src/sources/ethtool/read.js';
import { EthtoolCounterSource } from '../../src/sources/ethtool/source.js';
import { Sampler } from '../../src/sampler/sampler.js';
import { SysfsInventory, SysfsCountersSource, SysfsHwCountersSource } from '../../src/sources/sysfs/index.js';
import { healthSeries } from '../../src/health/vocabulary-series.js';
import type { PortAttributes } from '../../src/sources/types.js';
import { runSync } from '../../src/reads/program.js';
import { valuesNow } from './values-now.js';
import { readErrorText } from '../../src/reads/errors.js';
import { need, needs } from '../deploy/tools.js';

/** `ethtool -S` text to name -> value. */
function parseEthtoolS(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n').slice(1)) {
    const m = /^\s+(.+): (\d+)$/.exec(line);
    if (m) out[m[1]!] = m[2]!;
  }
  return out;
}

const attrs = (device: string, netdev: string | undefined): PortAttributes => ({
  device, port: 1, state: 'ACTIVE', physState: '5: LinkUp', linkLayer: 'Ethernet', activeIbMtu: 4096,
  rateBitsPerSecond: 100e9, netdev, gidTypes: ['RoCE v2'], attributeSource: 'sysfs',
});

describe('ethtool reader on captured kernel answers', () => {
  it('veth: names and values decode to exactly what ethtool -S printed', () => {
    const cap = loadCapture('veth');
    const r = runSync(ethtoolStatsReads(new ReplayTransport(cap), 'veth0'));
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.driver).toBe('veth');
    const ours = Object.fromEntries(r.value.names.map((n, i) => [n, r.value.values[i]!.toString()]));
    expect(ours).toEqual(parseEthtoolS(fs.readFileSync(path.join(ETHTOOL_FIXTURES, 'veth.ethtool-S.txt'), 'utf8')));
    expect(r.value.names).toHaveLength(10);
  });

  it('virtio_net: 20 statistics, driver name from ETHTOOL_GDRVINFO', () => {
    const cap = loadCapture('virtio_net');
    const r = runSync(ethtoolStatsReads(new ReplayTransport(cap), 'eth0'));
    expect(r.ok && r.value.driver).toBe('virtio_net');
    expect(r.ok && Object.fromEntries(r.value.names.map((n, i) => [n, r.value.values[i]!.toString()]))).toEqual(cap.stats);
    expect(r.ok && r.value.names.length).toBe(20);
  });

  it('an unknown netdev is no-device; a netdev without statistics is not-supported', () => {
    const t = new TableKernel({ ifname: 'lo', driver: '', stats: {} });
    expect(runSync(stringSetReads(t, 'eth9'))).toMatchObject({ ok: false, reason: 'no-device', errno: 19 });
    expect(runSync(stringSetReads(t, 'lo'))).toMatchObject({ ok: false, reason: 'not-supported' });
  });
});

describe('ethtool counter source', () => {
  it('keeps only the vocabulary names of mlx5_core, and repeats values within the minimum period', () => {
    const kernel = new TableKernel(loadTable('mlx5_core'));
    let now = 0;
    const src = new EthtoolCounterSource(kernel, { sysfsRoot: path.join(FIXTURES_DIR, 'mlx5_roce'), now: () => now, minPeriodMs: 5000 });
    const set = runSync(src.openReads(attrs('mlx5_0', 'ens1f0np0')))!;
    expect(set.counters.map((c) => c.name)).toEqual([
      'rx_discards_phy', 'tx_discards_phy', 'rx_pause_ctrl_phy', 'tx_pause_ctrl_phy',
      'rx_prio3_pause', 'rx_prio3_pause_duration', 'tx_prio3_pause', 'tx_prio3_pause_duration',
    ]);
    expect(valuesNow(set).map((v) => v.ok && v.value)).toEqual([17n, 5n, 0n, 0n, 52441n, 2500000n, 310n, 1250n]);
    kernel.table = { ...kernel.table, stats: { ...kernel.table.stats, rx_prio3_pause: 60000 } };
    now = 4999;
    expect(valuesNow(set)[4]).toEqual({ ok: true, value: 52441n });
    now = 5000;
    expect(valuesNow(set)[4]).toEqual({ ok: true, value: 60000n });
    expect(kernel.calls.filter((c) => c === 0x1d)).toHaveLength(2);
  });

  it('a statistics set that changed size reads as ESTALE (the sampler reopens the port)', () => {
    const kernel = new TableKernel(loadTable('ice'));
    const src = new EthtoolCounterSource(kernel, { sysfsRoot: path.join(FIXTURES_DIR, 'irdma'), minPeriodMs: 0 });
    const set = runSync(src.openReads(attrs('irdma0', 'ens801f0np0')))!;
    kernel.table = { ...kernel.table, stats: { ...kernel.table.stats, 'rx_queue_9_packets': 0 } };
    const v = valuesNow(set)[0]!;
    expect(v.ok).toBe(false);
    expect(!v.ok && v.error.code).toBe('ESTALE');
    expect(!v.ok && readErrorText(v.error)).toBe('ESTALE: ens801f0np0: the number of ethtool statistics changed; reopen');
  });

  it('no set for a port without netdev or with no vocabulary names (veth)', () => {
    const src = new EthtoolCounterSource(new ReplayTransport(loadCapture('veth')), { sysfsRoot: path.join(FIXTURES_DIR, 'rxe_6_1') });
    expect(runSync(src.openReads(attrs('rxe0', undefined)))).toBeUndefined();
    expect(runSync(src.openReads(attrs('rxe0', 'veth0')))).toBeUndefined();
    expect(src.lastOpen.get('veth0')?.reason).toBe('no-known-stats');
  });

  /** A fixture tree plus its NIC's ethtool table, sampled once: the pause and discard vocabulary, exact. */
  function sampled(tree: string, table: string): string[] {
    const root = path.join(FIXTURES_DIR, tree);
    const sources = [new SysfsCountersSource({ sysfsRoot: root }), new SysfsHwCountersSource({ sysfsRoot: root }),
      new EthtoolCounterSource(new TableKernel(loadTable(table)), { sysfsRoot: root })];
    const sampler = new Sampler({ inventory: new SysfsInventory({ sysfsRoot: root }), sources, intervalMs: 1000, windowMs: 10_000, reads: 'direct' });
    sampler.sampleOnce();
    const out = [...sampler.ports.values()].flatMap((p) => healthSeries(p).filter((s) => s.source === 'ethtool')
      .map((s) => `${s.family}${JSON.stringify(s.labels)} ${s.counter}=${s.value}`));
    sampler.stop();
    return out.sort();
  }

  it('mlx5_core on mlx5_roce: PFC on priority 3 in frames and seconds, link pause, physical discards', () => {
    expect(sampled('mlx5_roce', 'mlx5_core')).toEqual([
      'discards{"direction":"rx","reason":"buffer"} rx_discards_phy=17',
      'discards{"direction":"tx","reason":"congestion"} tx_discards_phy=5',
      'pause_duration{"direction":"rx","priority":"3"} rx_prio3_pause_duration=2.5',
      'pause_duration{"direction":"tx","priority":"3"} tx_prio3_pause_duration=0.00125',
      'pause_frames{"direction":"rx","priority":"3"} rx_prio3_pause=52441',
      'pause_frames{"direction":"rx","priority":"global"} rx_pause_ctrl_phy=0',
      'pause_frames{"direction":"tx","priority":"3"} tx_prio3_pause=310',
      'pause_frames{"direction":"tx","priority":"global"} tx_pause_ctrl_phy=0',
    ]);
  });

  it('bnxt_en on bnxt_re: every priority, durations in microseconds', () => {
    const got = sampled('bnxt_re', 'bnxt_en');
    expect(got).toHaveLength(34);
    expect(got.filter((l) => !/=0$/.test(l))).toEqual([
      'pause_duration{"direction":"rx","priority":"3"} pfc_pri3_rx_duration_us=0.42',
      'pause_duration{"direction":"tx","priority":"3"} pfc_pri3_tx_duration_us=0.0033',
      'pause_frames{"direction":"rx","priority":"3"} rx_pfc_ena_frames_pri3=1804',
      'pause_frames{"direction":"rx","priority":"global"} rx_pause_frames=7',
      'pause_frames{"direction":"tx","priority":"3"} tx_pfc_ena_frames_pri3=66',
    ]);
  });

  it('ice on irdma: XOFF frames per priority and link, receive drops', () => {
    const got = sampled('irdma', 'ice');
    expect(got).toHaveLength(19);
    expect(got.filter((l) => !/=0$/.test(l))).toEqual([
      'discards{"direction":"rx","reason":"unspecified"} rx_dropped.nic=23',
      'pause_frames{"direction":"rx","priority":"3"} rx_priority_3_xoff.nic=640',
      'pause_frames{"direction":"rx","priority":"global"} link_xoff_rx.nic=4',
      'pause_frames{"direction":"tx","priority":"3"} tx_priority_3_xoff.nic=19',
    ]);
  });
});

const canNetns = process.getuid?.() === 0 && ['unshare', 'ip', 'ethtool'].every((t) => spawnSync('sh', ['-c', `command -v ${t}`]).status === 0);

describe('ethtool reader on a real veth (host kernel, private network namespace)', () => {
  needs(need(!canNetns && !process.env.CI, 'root with unshare, ip and ethtool (a private network namespace)')).it('lists exactly what ethtool -S lists', () => {
    const probe = path.resolve('dist/sources/ethtool/probe.js');
    expect(fs.existsSync(probe), 'npm run build first').toBe(true);
    const script = `set -e; ip link add vt0 type veth peer name vt1; ip link set vt0 up; ip link set vt1 up;
      ethtool -S vt0 > "$1/ethtool.txt"; node ${probe} vt0 > "$1/probe.json"`;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ethtool-veth-'));
    const r = spawnSync('unshare', ['--net', 'sh', '-c', script, 'sh', dir], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const probeOut = JSON.parse(fs.readFileSync(path.join(dir, 'probe.json'), 'utf8')) as { driver: string; stats: Record<string, string> };
    expect(probeOut.driver).toBe('veth');
    expect(probeOut.stats).toEqual(parseEthtoolS(fs.readFileSync(path.join(dir, 'ethtool.txt'), 'utf8')));
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
