/**
 * The install layout every artefact ships (scripts/stage.sh: dist/, native/build/libmfe-reader.so,
 * config/, production node_modules; docs/install-systemd.md copies it to /opt), run for real
 * from a staged directory: `check` passes its reader check, `serve` exports
 * mxl_fabric_exporter_reads_bounded 1, and a hung read (an MXL domain on a FUSE mount whose
 * listing never returns, hungfs.c) costs one read timeout while /metrics keeps answering.
 * The npm package's `files` carry the reader too.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { parse } from 'yaml';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, IN_CI, need, needs, ROOT } from '../deploy/tools.js';
import { parseMetrics, one } from '../exporter/harness.js';
import { FIXTURES_DIR } from '../fixtures/sysfs.js';
import { hungfsMissing, mountHungfs } from './hungfs.mjs';

const READER = 'native/build/libmfe-reader.so';
const missing = hungfsMissing();
if (missing.length && IN_CI) throw new Error(`the install test needs ${missing.join(', ')} (.ci/run installs libfuse3-dev, fuse3)`);

describe('npm package', () => {
  it('files include the bounded reader beside dist/', () => {
    const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const files = (JSON.parse(r.stdout) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
    expect(files).toContain(READER);
    expect(files).toContain('dist/cli/main.js');
  });
});

needs(need(missing.length > 0, missing.join(', '))).describe('the staged install (scripts/stage.sh)', () => {
  let dir = '';
  let stage = '';
  let hung: Awaited<ReturnType<typeof mountHungfs>> | undefined;
  let serve: ChildProcess | undefined;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mfe-install-'));
    stage = join(dir, 'opt');
    const r = spawnSync('bash', [join(ROOT, 'scripts', 'stage.sh'), stage], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`stage.sh failed: ${r.stderr}`);
    hung = await mountHungfs();
  }, 120_000);
  afterAll(async () => {
    // A thread in a FUSE request already sent waits for its answer even when killed: the
    // server goes first, then the exporter can exit.
    const exited = serve && serve.exitCode === null && serve.signalCode === null ? new Promise((r) => serve!.once('exit', r)) : undefined;
    serve?.kill('SIGKILL');
    await hung?.unmount();
    await exited;
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const config = (): string => {
    const file = join(dir, 'config.yaml');
    writeFileSync(file, `sampling: { interval: 1s, window: 4s }
ports:
  - { device: mlx5_0, port: 1, mtu: 4096, capacity: auto }
flows:
  - { flow: ${join(stage, 'config', 'flows', 'seed-data-60.json')}, device: mlx5_0, direction: tx }
domains:
  - { path: ${hung!.mountpoint}, device: mlx5_0, direction: rx }
`);
    return file;
  };

  it('holds the reader where dist/ looks for it', () => {
    expect(existsSync(join(stage, READER))).toBe(true);
    expect(existsSync(join(stage, 'node_modules', 'koffi'))).toBe(true);
    expect(existsSync(join(stage, 'node_modules', 'vitest'))).toBe(false);
  });

  it('ships the packaged default config (config/default.yaml: every port found, /dev/shm/mxl with bind: auto), which check accepts', () => {
    const shipped = join(stage, 'config', 'default.yaml');
    expect(readFileSync(shipped, 'utf8')).toBe(readFileSync(join(ROOT, 'config', 'default.yaml'), 'utf8'));
    expect(parse(readFileSync(shipped, 'utf8'))).toEqual({ domains: [{ path: '/dev/shm/mxl', bind: 'auto' }] });
    const r = spawnSync(process.execPath, [join(stage, 'dist', 'cli', 'main.js'), 'check', `--config.file=${shipped}`, `--path.sysfs=${join(FIXTURES_DIR, 'mlx5_roce')}`], { cwd: dir, encoding: 'utf8' });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/provisioning: ok/);
  });

  it('check from the install: the reader is loaded (check on a host whose domain hangs is not the point: no domains here)', () => {
    const file = join(dir, 'check.yaml');
    writeFileSync(file, `ports:\n  - { device: mlx5_0, port: 1, mtu: 4096, capacity: auto }\nflows: []\n`);
    const r = spawnSync(process.execPath, [join(stage, 'dist', 'cli', 'main.js'), 'check', `--config.file=${file}`, `--path.sysfs=${join(FIXTURES_DIR, 'mlx5_roce')}`], { cwd: dir, encoding: 'utf8' });
    expect(r.stdout).toMatch(/^ {2}OK {6}reader +bounded reader loaded: every read has a timeout$/m);
  });

  it('serve from the install: reads_bounded 1; the hung domain costs one read timeout, /metrics keeps answering', async () => {
    const port = await freePort();
    serve = spawn(process.execPath, [join(stage, 'dist', 'cli', 'main.js'), 'serve', `--config.file=${config()}`,
      `--path.sysfs=${join(FIXTURES_DIR, 'mlx5_roce')}`, `--web.listen-address=127.0.0.1:${port}`], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    serve.stderr!.on('data', (d) => (log += String(d)));
    const scrape = async (): Promise<{ m: Map<string, number>; ms: number } | undefined> => {
      const t0 = performance.now();
      try {
        const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(2000) });
        return res.ok ? { m: parseMetrics(await res.text()), ms: performance.now() - t0 } : undefined;
      } catch {
        return undefined;
      }
    };
    let s: Awaited<ReturnType<typeof scrape>>;
    for (let i = 0; i < 100 && !(s && (one(s.m, 'mxl_fabric_exporter_read_timeouts_total') ?? 0) >= 1); i++) {
      await new Promise((r) => setTimeout(r, 100));
      s = await scrape();
    }
    expect(s, log).toBeDefined();
    expect(one(s!.m, 'mxl_fabric_exporter_reads_bounded')).toBe(1);
    expect(one(s!.m, 'mxl_fabric_exporter_read_timeouts_total'), log).toBe(1);
    // Three more ticks: the domain stays skipped until its read returns, no second timeout.
    await new Promise((r) => setTimeout(r, 3000));
    s = await scrape();
    expect(s!.ms).toBeLessThan(500);
    expect(one(s!.m, 'mxl_fabric_exporter_read_timeouts_total')).toBe(1);
    expect(one(s!.m, 'mxl_fabric_port_up', { device: 'mlx5_0', port: '1' })).toBe(1);
    expect(log).toMatch(/read blocked; skipped until it returns/);
    expect((await fetch(`http://127.0.0.1:${port}/-/ready`)).status).toBe(200);
  }, 30_000);
});
