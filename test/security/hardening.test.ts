/** Input hardening: no shell, no writes, no path that leaves --path.sysfs or the config's folder. */
import { describe, it, expect } from 'vitest';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseConfig } from '../../src/config/load.js';
import { InputError } from '../../src/input/problems.js';
import { SysfsInventory, SysfsCountersSource, isSafeName } from '../../src/sources/sysfs/index.js';
import { SysfsFixture } from '../fixtures/sysfs.js';
import { runSync } from '../../src/reads/program.js';

const SRC = path.join(__dirname, '../../src');

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []);
}

describe('what the exporter never does', () => {
  const files = sources(SRC).map((f) => ({ f: path.relative(SRC, f), text: fs.readFileSync(f, 'utf8') }));

  it('never runs a program or a shell', () => {
    const offenders = files.filter(({ text }) => /child_process|\bexecSync\b|\bexecFile\b|\bspawnSync?\b|\bfork\(/.test(text)).map((x) => x.f);
    expect(offenders).toEqual([]);
  });

  it('never writes, creates, renames or removes a file', () => {
    const writes = /\b(writeFile|writeFileSync|appendFile|appendFileSync|createWriteStream|mkdir|mkdirSync|rmSync|rmdir|unlink|unlinkSync|rename|renameSync|chmod|chown|truncate|copyFile|symlink|O_WRONLY|O_RDWR|O_CREAT|O_TRUNC)\b/;
    const offenders = files.filter(({ text }) => writes.test(text)).map((x) => x.f);
    expect(offenders).toEqual([]);
  });
});

describe('config paths stay in the config folder', () => {
  const problems = (flow: string): string[] => {
    try {
      parseConfig('/etc/mxl-fabric-exporter/config.yaml', `flows:\n  - { flow: ${JSON.stringify(flow)}, device: mlx5_0, direction: tx }\n`);
    } catch (e) {
      if (e instanceof InputError) return e.problems.map((p) => `${p.field}: ${p.reason}`);
      throw e;
    }
    return [];
  };

  it.each(['../flows/x.json', '/etc/passwd', 'flows/../../x.json', 'a\u0000b.json', '..', '/'])('refuses flow: %j', (p) => {
    expect(problems(p).join('\n')).toMatch(/flows\[0\]\.flow: .* is outside the config's folder/);
  });

  it('refuses device names that could walk a path', () => {
    for (const device of ['../mlx5_0', 'mlx5_0/../x', 'a b', 'x\ny', '']) {
      const text = `ports:\n  - { device: ${JSON.stringify(device)}, port: 1 }\n`;
      expect(() => parseConfig('/tmp/c.yaml', text)).toThrow(InputError);
    }
  });
});

describe('sysfs names stay under --path.sysfs', () => {
  it('isSafeName refuses separators, dot-dirs, NUL, control characters and overlong names', () => {
    for (const bad of ['..', '.', 'a/b', 'a\\b', 'a\u0000', 'a\nb', ' x', 'x'.repeat(65), '']) expect(isSafeName(bad)).toBe(false);
    for (const good of ['mlx5_0', 'rxe0', 'ens1f0np0', 'bnxt_re0', 'ib0.8001']) expect(isSafeName(good)).toBe(true);
  });

  it('a netdev name read from gid_attrs that points outside the root is ignored', () => {
    const fx = SysfsFixture.copy('rxe_6_1');
    try {
      const ndevs = fx.portPath('rxe0', 1, 'gid_attrs', 'ndevs');
      for (const f of fs.readdirSync(ndevs)) fs.writeFileSync(path.join(ndevs, f), '../../../../etc\n');
      const inv = new SysfsInventory({ sysfsRoot: fx.root });
      const attrs = runSync(inv.attributeReads({ device: 'rxe0', port: 1 }))!;
      expect(attrs.netdev).toBeUndefined();
      expect(attrs.activeIbMtu).toBeUndefined();
    } finally {
      fx.cleanup();
    }
  });

  it('device and port entries that are not names are skipped; counter sets refuse unsafe names', () => {
    const fx = SysfsFixture.copy('rxe_6_1');
    try {
      fs.mkdirSync(fx.path('class', 'infiniband', 'bad name'), { recursive: true });
      fs.mkdirSync(fx.path('class', 'infiniband', 'rxe0', 'ports', '..1'), { recursive: true });
      const inv = new SysfsInventory({ sysfsRoot: fx.root });
      expect(runSync(inv.listReads())).toEqual([{ device: 'rxe0', port: 1 }]);
      const attrs = runSync(inv.attributeReads({ device: 'rxe0', port: 1 }))!;
      expect(runSync(new SysfsCountersSource({ sysfsRoot: fx.root }).openReads({ ...attrs, device: '../../..' }))).toBeUndefined();
    } finally {
      fx.cleanup();
    }
  });
});
