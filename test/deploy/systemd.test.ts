/**
 * deploy/systemd: `systemd-analyze verify` on the unit (any warning fails: unknown keys and bad
 * values are only warnings to systemd), `systemd-analyze security --offline` for the exposure
 * score, and the hardening directives the deployment relies on.
 *
 * verify also checks that ExecStart's binary exists. The unit runs /usr/bin/node (Debian's nodejs);
 * where that path does not exist (node from elsewhere), the test verifies a copy of the unit
 * whose ExecStart names this test's own node binary instead. Nothing else is changed.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { needs, ROOT, tool } from './tools.js';

const UNIT_NAME = 'mxl-fabric-exporter.service';
const UNIT = join(ROOT, 'deploy', 'systemd', UNIT_NAME);
const analyze = tool('systemd-analyze', 'systemd');
const tmpfiles = tool('systemd-tmpfiles', 'systemd');
const DROP_IN = join(ROOT, 'deploy', 'systemd', `${UNIT_NAME}.d`);
const TMPFILES = join(ROOT, 'deploy', 'systemd', 'mxl-domain.tmpfiles.conf');

/** [section, key] -> values, in order (repeated keys accumulate). */
function parseUnit(text: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let section = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#') || line.startsWith(';')) continue;
    const s = /^\[(.+)\]$/.exec(line);
    if (s) { section = s[1]!; continue; }
    const i = line.indexOf('=');
    const key = `${section}.${line.slice(0, i)}`;
    out.set(key, [...(out.get(key) ?? []), line.slice(i + 1)]);
  }
  return out;
}

let dir = '';
beforeAll(() => { dir = mkdtempSync(join(tmpdir(), 'mfe-systemd-')); });
afterAll(() => { if (dir) rmSync(dir, { recursive: true, force: true }); });

/** The unit as it will be verified: ExecStart's node pointed at an existing binary if needed. */
function unitCopy(text = readFileSync(UNIT, 'utf8'), name = UNIT_NAME): string {
  const node = existsSync('/usr/bin/node') ? '/usr/bin/node' : process.execPath;
  const file = join(dir, name);
  writeFileSync(file, text.replace(/^ExecStart=\/usr\/bin\/node /m, `ExecStart=${node} `));
  return file;
}

function verify(file: string): { status: number | null; output: string } {
  const r = spawnSync(analyze.require(), ['verify', '--man=no', file], { encoding: 'utf8', env: { ...process.env, SYSTEMD_LOG_COLOR: '0' } });
  return { status: r.status, output: `${r.stdout}${r.stderr}`.trim() };
}

describe('deploy/systemd unit', () => {
  needs(analyze).it('systemd-analyze verify passes without a single warning', () => {
    const r = verify(unitCopy());
    expect(r.status, r.output).toBe(0);
    expect(r.output).toBe('');
  });

  needs(analyze).it('verify does report a misspelt directive and a bad value (control)', () => {
    const text = readFileSync(UNIT, 'utf8').replace('NoNewPrivileges=yes', 'NoNewPrivilege=yes').replace('ProtectSystem=strict', 'ProtectSystem=strictly');
    const r = verify(unitCopy(text, 'broken.service'));
    expect(r.output).toMatch(/NoNewPrivilege/);
    expect(r.output).toMatch(/strictly/);
  });

  needs(analyze).it('systemd-analyze security rates the exposure low', () => {
    const r = spawnSync(analyze.require(), ['security', '--offline=yes', '--no-pager', unitCopy()], { encoding: 'utf8', env: { ...process.env, SYSTEMD_COLORS: '0' } });
    const m = /Overall exposure level for \S+: ([\d.]+)/.exec(r.stdout + r.stderr);
    expect(m, r.stdout + r.stderr).not.toBeNull();
    expect(Number(m![1])).toBeLessThanOrEqual(2.5);
  });

  it('is hardened the way docs/install-systemd.md says', () => {
    const u = parseUnit(readFileSync(UNIT, 'utf8'));
    const get = (k: string) => u.get(`Service.${k}`);
    expect(get('ExecStart')).toEqual(['/usr/bin/node /opt/mxl-fabric-exporter/dist/cli/main.js serve --config.file=/etc/mxl-fabric-exporter/config.yaml --web.listen-address=:9842']);
    expect(get('ExecReload')).toEqual(['/bin/kill -HUP $MAINPID']);
    expect(get('DynamicUser')).toEqual(['yes']);
    expect(get('User')).toEqual(['mxl-fabric-exporter']);
    for (const [k, v] of Object.entries({
      // CAP_SYS_PTRACE only: another user's /proc/PID/maps (docs/connections.md).
      NoNewPrivileges: 'yes', CapabilityBoundingSet: 'CAP_SYS_PTRACE', AmbientCapabilities: 'CAP_SYS_PTRACE', ProtectProc: 'ptraceable', ProtectSystem: 'strict', ProtectHome: 'yes',
      PrivateTmp: 'yes', ReadOnlyPaths: '/sys', PrivateDevices: 'no', DevicePolicy: 'closed', DeviceAllow: 'char-infiniband_verbs rw',
      RestrictAddressFamilies: 'AF_INET AF_INET6 AF_UNIX AF_NETLINK',
    })) expect(get(k), k).toEqual([v]);
    expect(u.get('Install.WantedBy')).toEqual(['multi-user.target']);
    // POST /-/reload needs --web.enable-lifecycle; systemctl reload uses SIGHUP, which always works.
    expect(get('ExecStart')![0]).not.toContain('--web.enable-lifecycle');
  });
});

describe('deploy/systemd: MXL domain access and the command on PATH (docs/install-systemd.md)', () => {
  needs(analyze).it('the drop-in that adds the domain group verifies without a warning, and is read (control)', () => {
    const unit = unitCopy();
    cpSync(DROP_IN, `${unit}.d`, { recursive: true });
    expect(parseUnit(readFileSync(join(DROP_IN, 'mxl-domain.conf'), 'utf8')).get('Service.SupplementaryGroups')).toEqual(['mxl']);
    const r = verify(unit);
    expect(r.output).toBe('');
    writeFileSync(join(`${unit}.d`, 'zz-control.conf'), '[Service]\nSupplementaryGroup=mxl\n');
    expect(verify(unit).output).toMatch(/zz-control.conf:2: Unknown key 'SupplementaryGroup'/);
    rmSync(`${unit}.d`, { recursive: true, force: true });
  });

  needs(tmpfiles).it('tmpfiles.d makes /dev/shm/mxl group mxl, setgid, no access for others', () => {
    const root = mkdtempSync(join(tmpdir(), 'mfe-tmpfiles-'));
    mkdirSync(join(root, 'etc'));
    mkdirSync(join(root, 'dev', 'shm'), { recursive: true });
    writeFileSync(join(root, 'etc', 'group'), 'root:x:0:\nmxl:x:2110:\n');
    writeFileSync(join(root, 'etc', 'passwd'), 'root:x:0:0::/root:/bin/sh\n');
    const r = spawnSync(tmpfiles.require(), ['--create', `--root=${root}`, TMPFILES], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const st = statSync(join(root, 'dev', 'shm', 'mxl'));
    expect(st.isDirectory()).toBe(true);
    expect(st.mode & 0o7777).toBe(0o2770);
    expect([st.uid, st.gid]).toEqual([0, 2110]);
    rmSync(root, { recursive: true, force: true });
  });

  it('a symlink on PATH to dist/cli/main.js runs the CLI (the build makes it executable)', () => {
    const bin = join(dir, 'bin');
    mkdirSync(bin, { recursive: true });
    symlinkSync(join(ROOT, 'dist', 'cli', 'main.js'), join(bin, 'mxl-fabric-exporter'));
    const r = spawnSync('mxl-fabric-exporter', ['version'], { encoding: 'utf8', env: { ...process.env, PATH: `${bin}:${process.env.PATH}` } });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^mxl-fabric-exporter, version \d+\.\d+\.\d+ \(revision: /);
  });
});
