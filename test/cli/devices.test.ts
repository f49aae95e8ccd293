/** `devices` on fixture sysfs trees: the ports it lists, and exit 1 when it finds none. */
import { describe, it, expect } from 'vitest';
import { join } from 'node:path';
import { runDevices } from '../../src/cli/devices.js';
import { FIXTURES_DIR, SysfsFixture } from '../fixtures/sysfs.js';

function devices(...argv: string[]): { code: number; out: string; err: string } {
  let out = '';
  let err = '';
  const code = runDevices(argv, { stdout: (t) => void (out += t), stderr: (t) => void (err += t) });
  return { code, out, err };
}

describe('devices', () => {
  it('exit 0 and one line per port on a host with RDMA ports', () => {
    const r = devices('--path.sysfs', join(FIXTURES_DIR, 'mlx5_roce'));
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/^mlx5_0\/1 {2}state ACTIVE/m);
  });

  it('exit 1 when it finds no RDMA port, text and JSON alike (a script can test for it)', () => {
    const empty = SysfsFixture.empty();
    try {
      const r = devices('--path.sysfs', empty.root);
      expect(r.code).toBe(1);
      expect(r.err).toBe(`devices: no RDMA port found under ${empty.root}/class/infiniband (no RDMA driver loaded, or for soft-RoCE: rdma link add rxe0 type rxe netdev IFACE)\n`);
      const j = devices('--path.sysfs', empty.root, '--output', 'json');
      expect(j.code).toBe(1);
      expect((JSON.parse(j.out) as { ports: unknown[] }).ports).toEqual([]);
    } finally {
      empty.cleanup();
    }
  });
});
