/**
 * The machine a run is on, and how busy other work keeps it: on this shared 2-core VM other
 * processes skew every number, so each case waits for a quiet spell (within a budget) and records
 * the share of the CPU others took while it ran.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { CLK_TCK, round } from './stats.mjs';

export const NODE_EXPORTER = '/usr/bin/prometheus-node-exporter';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Read-only git queries (the benchmarked tree may have uncommitted work: `--dirty`). */
function git(root, args) {
  const r = spawnSync('git', args, { cwd: root, encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : 'unknown';
}

export function machine(root) {
  const cpuinfo = fs.readFileSync('/proc/cpuinfo', 'utf8');
  const meminfo = fs.readFileSync('/proc/meminfo', 'utf8');
  const osRelease = fs.existsSync('/etc/os-release') ? fs.readFileSync('/etc/os-release', 'utf8') : '';
  const ne = spawnSync(NODE_EXPORTER, ['--version'], { encoding: 'utf8' });
  const gcc = spawnSync('gcc', ['--version'], { encoding: 'utf8' });
  return {
    cpuModel: /^model name\s*:\s*(.*)$/m.exec(cpuinfo)?.[1] ?? 'unknown',
    cores: os.cpus().length,
    memoryBytes: Number(/^MemTotal:\s+(\d+) kB/m.exec(meminfo)?.[1] ?? 0) * 1024,
    node: process.version,
    kernel: `${os.type()} ${os.release()}`,
    os: /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(osRelease)?.[1] ?? os.platform(),
    revision: git(root, ['describe', '--always', '--dirty']),
    nodeExporter: /version (\S+)/.exec(`${ne.stdout}${ne.stderr}`)?.[1] ?? 'unavailable',
    gcc: gcc.stdout?.split('\n')[0] ?? 'unavailable',
    autocannon: JSON.parse(fs.readFileSync(path.join(root, 'node_modules/autocannon/package.json'), 'utf8')).version,
  };
}

export const loadavg = () => fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number);

/** Busy jiffies of the whole machine, and of this process plus its reaped children (/proc/stat, /proc/self/stat). */
export function jiffies() {
  const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const self = fs.readFileSync('/proc/self/stat', 'utf8');
  const g = self.slice(self.lastIndexOf(')') + 2).split(' ').map(Number);
  return { machine: f.reduce((a, b) => a + b, 0) - f[3] - f[4], ours: g[11] + g[12] + g[13] + g[14] };
}

/** Share of all CPUs busy over `ms` (from /proc/stat): other work on the machine skews every number. */
export async function cpuBusy(ms = 1000) {
  const read = () => {
    const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    return { idle: f[3] + f[4], total: f.reduce((a, b) => a + b, 0) };
  };
  const a = read();
  await sleep(ms);
  const b = read();
  return round(1 - (b.idle - a.idle) / Math.max(1, b.total - a.total), 3);
}

/** CPU seconds other processes used since `j0` (a jiffies() reading; steal not counted). */
export function otherCpuSecondsSince(j0) {
  const j1 = jiffies();
  return round(((j1.machine - j0.machine) - (j1.ours - j0.ours)) / CLK_TCK, 1);
}

/**
 * Before each case, wait while the CPUs are busy without us (at most `budgetSeconds` over the
 * whole run); during each case, record the share of the machine's CPU that other processes took
 * (`otherCpuShare`).
 */
export class Contention {
  constructor(budgetSeconds, log) {
    this.budgetMs = budgetSeconds * 1000;
    this.log = log;
  }

  async waitQuiet() {
    let busy = await cpuBusy(500);
    if (busy > 0.15 && this.budgetMs > 0) this.log(`  ${Math.round(busy * 100)} % of the CPUs busy with other work; waiting (budget left ${Math.round(this.budgetMs / 1000)} s)`);
    while (busy > 0.15 && this.budgetMs > 0) {
      const t = Date.now();
      await sleep(2000);
      busy = await cpuBusy(500);
      this.budgetMs -= Date.now() - t;
    }
    return busy;
  }

  /** fn's result, with the share of the CPUs other processes took while it ran. */
  async measured(fn) {
    const busyBefore = await this.waitQuiet();
    const j0 = jiffies();
    const t0 = Date.now();
    const r = await fn();
    const j1 = jiffies();
    const others = (j1.machine - j0.machine) - (j1.ours - j0.ours);
    const share = others / CLK_TCK / (((Date.now() - t0) / 1000) * os.cpus().length);
    return { ...r, otherCpuShare: round(Math.max(0, share), 3), otherCpuBusyBefore: busyBefore };
  }
}
