/**
 * The cost of bounded reads: ticks per second and CPU per tick on 32 mlx5 ports (~1,900 counter
 * files), reads on the native reader threads (default) against reads on the sampler's thread
 * (the fallback without libmfe-reader). Run: npx vite-node test/soak/sampler-cost.ts [ticks]
 * (the benchmark, npm run bench, has the numbers that count).
 */
import * as fs from 'node:fs';
import { Sampler } from '../../src/sampler/sampler.js';
import { SysfsInventory, SysfsCountersSource, SysfsHwCountersSource } from '../../src/sources/sysfs/index.js';
import { NetdevSource } from '../../src/sources/netdev.js';
import { SysfsFixture } from '../fixtures/sysfs.js';

export interface Cost {
  readonly mode: 'native' | 'direct';
  readonly ports: number;
  readonly counters: number;
  readonly ticksPerSecond: number;
  readonly meanTickMs: number;
  readonly p99TickMs: number;
  /** Process CPU (all threads) per tick. */
  readonly cpuMsPerTick: number;
  /** CPU of the 1 s interval the daemon runs at, in %. */
  readonly cpuPercentAt1s: number;
}

export function fixture32(): SysfsFixture {
  const fx = SysfsFixture.copy('mlx5_roce');
  for (let i = 1; i < 32; i++) fs.cpSync(fx.path('class', 'infiniband', 'mlx5_0'), fx.path('class', 'infiniband', `mlx5_${i}`), { recursive: true });
  return fx;
}

export async function measure(fx: SysfsFixture, mode: 'native' | 'direct', ticks: number): Promise<Cost & { readonly totals: readonly (number | undefined)[] }> {
  const sysfs = { sysfsRoot: fx.root };
  const s = new Sampler({
    inventory: new SysfsInventory(sysfs), sources: [new SysfsCountersSource(sysfs), new SysfsHwCountersSource(sysfs), new NetdevSource(sysfs)],
    intervalMs: 1000, windowMs: 10_000, reads: mode,
  });
  for (let i = 0; i < 20; i++) await s.tick(); // warm up (and start the reader thread)
  const times: number[] = [];
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < ticks; i++) {
    const t = performance.now();
    await s.tick();
    times.push(performance.now() - t);
  }
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const counters = [...s.ports.values()].reduce((n, p) => n + p.counters.length, 0);
  const ports = s.ports.size;
  const totals = [...s.ports.values()].flatMap((p) => p.counters.map((c) => c.series.total));
  s.stop();
  times.sort((a, b) => a - b);
  const cpuMsPerTick = (cpu.user + cpu.system) / 1000 / ticks;
  return {
    mode, ports, counters, totals, ticksPerSecond: +(ticks / (wall / 1000)).toFixed(1), meanTickMs: +(wall / ticks).toFixed(3),
    p99TickMs: +times[Math.floor(ticks * 0.99)]!.toFixed(3), cpuMsPerTick: +cpuMsPerTick.toFixed(3), cpuPercentAt1s: +(cpuMsPerTick / 10).toFixed(3),
  };
}

if (!process.env.VITEST) {
  const ticks = Number(process.argv.at(-1)?.match(/^\d+$/) ? process.argv.at(-1) : 300);
  const fx = fixture32();
  try {
    for (const mode of ['direct', 'native', 'direct', 'native'] as const) {
      const { totals: _totals, ...cost } = await measure(fx, mode, ticks);
      console.log(JSON.stringify(cost));
    }
  } finally {
    fx.cleanup();
  }
}
