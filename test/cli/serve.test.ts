/** `serve` as a process: safe defaults, errors said once, the lifecycle flag, SIGHUP, version. */
import { describe, it, expect, afterEach } from 'vitest';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { main } from '../../src/cli/commands.js';
import { DEFAULT_CONFIG } from '../../src/cli/serve.js';
import { parseListenAddress } from '../../src/exporter/http.js';
import { BUILD } from '../../src/build-info.js';
import { writeConfig } from '../exporter/harness.js';
import { FIXTURES_DIR } from '../fixtures/sysfs.js';
import { freePort, ROOT } from '../deploy/tools.js';

const MAIN = join(ROOT, 'dist', 'cli', 'main.js');
const SYSFS = join(FIXTURES_DIR, 'rxe_6_1');
const CONFIG = 'ports: [{ device: rxe0, port: 1, mtu: 4096 }]\nflows:\n  - { flow: flows/data_60.json, device: rxe0, direction: tx }\n';

let child: ChildProcess | undefined;
afterEach(() => {
  child?.kill('SIGKILL');
  child = undefined;
});

async function serve(args: string[]): Promise<{ base: string; stderr: () => string }> {
  const port = await freePort();
  let err = '';
  child = spawn(process.execPath, [MAIN, 'serve', `--web.listen-address=127.0.0.1:${port}`, `--path.sysfs=${SYSFS}`, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    if (err.includes('msg=listening')) return { base, stderr: () => err };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`serve did not start: ${err}`);
}

const flowCount = async (base: string): Promise<number> =>
  (await (await fetch(`${base}/metrics`)).text()).split('\n').filter((l) => l.startsWith('mxl_fabric_flow_info{')).length;

describe('serve', () => {
  it('without --config.file it wants /etc/mxl-fabric-exporter/config.yaml, not the shipped example', () => {
    expect(DEFAULT_CONFIG).toBe('/etc/mxl-fabric-exporter/config.yaml');
    if (existsSync(DEFAULT_CONFIG)) return; // a host that has one really runs it
    const r = spawnSync(process.execPath, [MAIN, 'serve', `--path.sysfs=${SYSFS}`], { encoding: 'utf8', timeout: 10_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toBe('serve: config file /etc/mxl-fabric-exporter/config.yaml (the default --config.file) does not exist; give --config.file=FILE. ' +
      'To try the exporter, the shipped example is config/example.yaml (npm start uses it); docs/configuration.md describes the keys\n');
  });

  it('a bad --web.listen-address exits 2 saying what is wrong with it, before loading or probing anything', () => {
    const file = writeConfig(CONFIG);
    const form = (addr: string): string => `--web.listen-address "${addr}" is not [host]:port: give host:port or :port, e.g. --web.listen-address=:9842 or 127.0.0.1:9842`;
    const cases: [string, string][] = [
      ['9842', form('9842')],
      ['localhost', form('localhost')],
      [':99999', '--web.listen-address ":99999": port 99999 is out of range 0..65535'],
      ['1.2.3.4.5:80', '--web.listen-address "1.2.3.4.5:80": "1.2.3.4.5" is not an IPv4 address'],
      ['256.1.1.1:80', '--web.listen-address "256.1.1.1:80": "256.1.1.1" is not an IPv4 address'],
      ['[fe80::zz]:80', '--web.listen-address "[fe80::zz]:80": "fe80::zz" is not an IPv6 address'],
      ['my_host:80', '--web.listen-address "my_host:80": "my_host" is not a host name (letters, digits and hyphens, dot-separated)'],
    ];
    for (const [addr, why] of cases) {
      const r = spawnSync(process.execPath, [MAIN, 'serve', `--config.file=${file}`, `--path.sysfs=${SYSFS}`, '--web.listen-address', addr], { encoding: 'utf8', timeout: 10_000 });
      expect(r.status, addr).toBe(2);
      // One line, no log: nothing was started (the port probing logs "port found" and the like).
      expect(r.stderr, addr).toBe(`serve: ${why}\n`);
    }
  });

  it('takes the address forms it documents', () => {
    for (const addr of [':9842', '127.0.0.1:9842', '[::1]:9842', 'localhost:9842', 'media-host-1.example.net:0', ':65535']) expect(() => parseListenAddress(addr), addr).not.toThrow();
    expect(parseListenAddress('[::1]:9842')).toEqual({ host: '::1', port: 9842 });
    expect(parseListenAddress(':9842')).toEqual({ host: undefined, port: 9842 });
  });

  it('an invalid config at start is said once per problem (it was printed twice)', () => {
    const file = writeConfig('drfit: { tolerance: 0.05 }\n');
    const r = spawnSync(process.execPath, [MAIN, 'serve', `--config.file=${file}`, `--path.sysfs=${SYSFS}`, '--web.listen-address=127.0.0.1:0'], { encoding: 'utf8', timeout: 10_000 });
    expect(r.status).toBe(2);
    const mentions = r.stderr.split('\n').filter((l) => l.includes('drfit: unknown field'));
    expect(mentions).toHaveLength(1);
    expect(mentions[0]).toMatch(/level=error msg="invalid config" problem=".*config\.yaml:1:1: drfit: unknown field \(did you mean \\"drift\\"\?\)"/);
  });

  it('POST /-/reload is 403 by default and SIGHUP still reloads; with --web.enable-lifecycle POST reloads', async () => {
    const file = writeConfig(CONFIG);
    const s = await serve([`--config.file=${file}`]);
    expect(await flowCount(s.base)).toBe(1);
    writeFileSync(file, `${CONFIG}  - { flow: flows/audio_2ch_48k.json, device: rxe0, direction: tx }\n`);
    expect((await fetch(`${s.base}/-/reload`, { method: 'POST' })).status).toBe(403);
    expect(await flowCount(s.base)).toBe(1);
    child!.kill('SIGHUP');
    for (let i = 0; i < 50 && !s.stderr().includes('msg="config reloaded"'); i++) await new Promise((r) => setTimeout(r, 100));
    expect(await flowCount(s.base)).toBe(2);
    child!.kill('SIGKILL');

    const t = await serve([`--config.file=${file}`, '--web.enable-lifecycle']);
    writeFileSync(file, CONFIG);
    const res = await fetch(`${t.base}/-/reload`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(await flowCount(t.base)).toBe(1);
  });

  it('version and --version print the version and the git revision of the build', async () => {
    for (const arg of ['version', '--version']) {
      const r = spawnSync(process.execPath, [MAIN, arg], { encoding: 'utf8' });
      expect(r.status).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^mxl-fabric-exporter, version ${BUILD.version.replace(/\./g, '\\.')} \\(revision: [0-9a-f]{40}\\)\n  node: v\\d+\\.\\d+\\.\\d+\n$`));
    }
    let err = '';
    expect(await main(['version', 'extra'], { stdout: () => undefined, stderr: (t) => void (err += t) })).toBe(2);
    expect(err).toBe('version: takes no arguments, got "extra"\n');
  });
});
