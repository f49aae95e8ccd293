/**
 * A newcomer's run of the README on a host without RDMA: `npm start` (serve on the shipped
 * config/example.yaml, which names mlx5_0) scraped by a real Prometheus with the shipped rules.
 * It pages nobody: the only alert is the warning MxlFabricPortAbsent (mlx5_0/1 is configured but
 * absent), never the critical MxlFabricPortDown ("mlx5_0/1 is down") it used to be.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SysfsFixture } from '../fixtures/sysfs.js';
import { freePort, needs, ROOT, tool } from './tools.js';

const prometheus = tool('prometheus', 'prometheus');
const JOB = 'mxl-fabric-exporter';

interface Alert { labels: Record<string, string>; annotations: Record<string, string>; state: string }

needs(prometheus).describe('the shipped example on a host without RDMA, with the shipped rules', { timeout: 60_000 }, () => {
  const children: ChildProcess[] = [];
  let dir = '';
  let fx: SysfsFixture | undefined;
  let promBase = '';
  const logs: string[] = [];
  const start = (cmd: string, args: string[]): void => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (d) => logs.push(String(d)));
    child.stderr!.on('data', (d) => logs.push(String(d)));
    children.push(child);
  };
  const alerts = async (): Promise<Alert[]> =>
    ((await (await fetch(`${promBase}/api/v1/alerts`)).json()) as { data: { alerts: Alert[] } }).data.alerts;
  const until = async <T>(what: string, fn: () => Promise<T | undefined>, ms: number): Promise<T> => {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      const v = await fn().catch(() => undefined);
      if (v !== undefined) return v;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`timed out waiting for ${what}\n${logs.join('')}`);
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mfe-newcomer-'));
    fx = SysfsFixture.empty();
    const exporterPort = await freePort();
    start(process.execPath, [join(ROOT, 'dist', 'cli', 'main.js'), 'serve', `--config.file=${join(ROOT, 'config', 'example.yaml')}`,
      `--path.sysfs=${fx.root}`, `--web.listen-address=127.0.0.1:${exporterPort}`]);
    const promPort = await freePort();
    promBase = `http://127.0.0.1:${promPort}`;
    writeFileSync(join(dir, 'prometheus.yml'), [
      'global: { scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s }',
      'rule_files:',
      ...['recording.yml', 'alerts.yml'].map((f) => `  - ${JSON.stringify(join(ROOT, 'deploy', 'prometheus', 'rules', f))}`),
      'scrape_configs:',
      `  - { job_name: ${JOB}, static_configs: [{ targets: ["127.0.0.1:${exporterPort}"] }] }`,
      '',
    ].join('\n'));
    start(prometheus.require(), [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'tsdb')}`,
      `--web.listen-address=127.0.0.1:${promPort}`, '--log.level=warn']);
    await until('Prometheus to be ready', async () => ((await fetch(`${promBase}/-/ready`)).ok ? true : undefined), 20_000);
  }, 60_000);

  afterAll(async () => {
    for (const c of children) {
      if (c.exitCode !== null || c.signalCode !== null) continue;
      const exited = new Promise((r) => c.once('exit', r));
      c.kill('SIGTERM');
      await exited;
    }
    fx?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('raises only the warning MxlFabricPortAbsent for mlx5_0/1: nothing critical, no "is down"', async () => {
    const absent = await until('MxlFabricPortAbsent to pend', async () => (await alerts()).find((a) => a.labels.alertname === 'MxlFabricPortAbsent'), 30_000);
    expect(absent.labels).toMatchObject({ severity: 'warning', device: 'mlx5_0', port: '1' });
    expect(absent.annotations.summary).toMatch(/has no RDMA port mlx5_0\/1, which its config names$/);
    // Five more evaluations with data: still nothing else, nothing critical.
    await new Promise((r) => setTimeout(r, 5000));
    const now = await alerts();
    expect(now.map((a) => a.labels.alertname)).toEqual(['MxlFabricPortAbsent']);
    expect(now.filter((a) => a.labels.severity === 'critical')).toEqual([]);
  });
});
