import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { driverReads } from '../../src/sources/sysfs/driver.js';
import { SysfsInventory } from '../../src/sources/sysfs/inventory.js';
import type { PortAttributes } from '../../src/sources/types.js';
import { FIXTURES_DIR, SysfsFixture, type FixtureName } from '../fixtures/sysfs.js';
import { type ReadProgram, runSync } from '../../src/reads/program.js';
import { runDirect } from '../../src/reads/direct.js';
import { RXE0_PORT_1 } from '../fixtures/ports.js';

const copies: SysfsFixture[] = [];
function copy(name: FixtureName): SysfsFixture {
  const f = SysfsFixture.copy(name);
  copies.push(f);
  return f;
}
afterEach(() => {
  for (const f of copies.splice(0)) f.cleanup();
});

/** Read-only use of the checked-in tree. */
function inventoryOf(name: FixtureName): SysfsInventory {
  return new SysfsInventory({ sysfsRoot: path.join(FIXTURES_DIR, name) });
}

describe('SysfsInventory on the fixture trees', () => {
  it('mlx5_roce: ConnectX RoCE port, MTU from iboe_get_mtu(9000)', () => {
    const inv = inventoryOf('mlx5_roce');
    expect(inv.kind).toBe('sysfs');
    expect(runSync(inv.listReads())).toEqual([{ device: 'mlx5_0', port: 1 }]);
    expect(runSync(inv.attributeReads({ device: 'mlx5_0', port: 1 }))).toEqual<PortAttributes>({
      device: 'mlx5_0',
      port: 1,
      state: 'ACTIVE',
      physState: 'LinkUp',
      linkLayer: 'Ethernet',
      activeIbMtu: 4096,
      rateBitsPerSecond: 100e9,
      netdev: 'ens1f0np0',
      gidTypes: ['IB/RoCE v1', 'RoCE v2'],
      attributeSource: 'sysfs',
    });
  });

  it('rxe_6_1: measured rxe layout', () => {
    const inv = inventoryOf('rxe_6_1');
    expect(runSync(inv.listReads())).toEqual([{ device: 'rxe0', port: 1 }]);
    expect(runSync(inv.attributeReads({ device: 'rxe0', port: 1 }))).toEqual<PortAttributes>(RXE0_PORT_1);
  });

  it('bnxt_re: 25GbE, MTU 1500 -> 1024', () => {
    const attrs = runSync(inventoryOf('bnxt_re').attributeReads({ device: 'bnxt_re0', port: 1 }));
    expect(attrs).toMatchObject({
      state: 'ACTIVE',
      linkLayer: 'Ethernet',
      activeIbMtu: 1024,
      rateBitsPerSecond: 25e9,
      netdev: 'ens2f0np0',
      gidTypes: ['IB/RoCE v1', 'RoCE v2'],
    });
  });

  it('no_pma: old rxe on eth1, MTU 1500 -> 1024', () => {
    const attrs = runSync(inventoryOf('no_pma').attributeReads({ device: 'rxe0', port: 1 }));
    expect(attrs).toMatchObject({ netdev: 'eth1', activeIbMtu: 1024, rateBitsPerSecond: 10e9 });
  });

  it('saturated: InfiniBand port has no netdev and no derived MTU', () => {
    expect(runSync(inventoryOf('saturated').attributeReads({ device: 'mlx4_0', port: 1 }))).toEqual<PortAttributes>({
      device: 'mlx4_0',
      port: 1,
      state: 'ACTIVE',
      physState: 'LinkUp',
      linkLayer: 'InfiniBand',
      activeIbMtu: undefined,
      rateBitsPerSecond: 40e9,
      netdev: undefined,
      gidTypes: ['IB/RoCE v1'],
      attributeSource: 'sysfs',
    });
  });

  it('einval: skips the GID entry that errors and applies the mlx5 MTU rule', () => {
    const f = copy('einval');
    f.applyErrorInjections();
    const attrs = runSync(new SysfsInventory({ sysfsRoot: f.root }).attributeReads({ device: 'mlx5_2', port: 1 }));
    // ndevs/0 now fails to read (EISDIR), ndevs/1 names the netdev.
    expect(attrs?.netdev).toBe('ens3np0');
    // 4176: iboe_get_mtu() -> 2048 (rxe's rule would say 4096).
    expect(attrs?.activeIbMtu).toBe(2048);
    expect(attrs?.rateBitsPerSecond).toBe(400e9);
  });
});

describe('SysfsInventory changes and failures', () => {
  it('follows port state flips and MTU changes', () => {
    const f = copy('rxe_6_1');
    const inv = new SysfsInventory({ sysfsRoot: f.root });
    f.setPortState('rxe0', 1, 'DOWN');
    f.setNetdevMtu('veth0', 1500);
    expect(runSync(inv.attributeReads({ device: 'rxe0', port: 1 }))).toMatchObject({
      state: 'DOWN',
      physState: 'Disabled',
      activeIbMtu: 1024,
    });
  });

  it('state reads on kept descriptors: unchanged bytes give the same answer, every flip and MTU change is seen', () => {
    const f = copy('rxe_6_1');
    const inv = new SysfsInventory({ sysfsRoot: f.root });
    const ref = { device: 'rxe0', port: 1 };
    runSync(inv.attributeReads(ref));
    const first = runSync(inv.stateReads(ref));
    expect(first).toEqual({ state: 'ACTIVE', physState: 'LinkUp' });
    expect(runSync(inv.stateReads(ref))).toBe(first); // nothing decoded again
    f.setPortState('rxe0', 1, 'DOWN');
    expect(runSync(inv.stateReads(ref))).toEqual({ state: 'DOWN', physState: 'Disabled' });
    f.setPortState('rxe0', 1, 'ACTIVE');
    expect(runSync(inv.stateReads(ref))).toEqual({ state: 'ACTIVE', physState: 'LinkUp' });
    f.setNetdevMtu('veth0', 1500);
    expect(runSync(inv.stateReads(ref))).toEqual({ state: 'ACTIVE', physState: 'LinkUp', attributesStale: true });
    expect(runSync(inv.stateReads(ref))).toEqual({ state: 'ACTIVE', physState: 'LinkUp', attributesStale: true });
  });

  it('a refresh reads the GID types again through the table it listed once; a re-created port directory is listed again', () => {
    const f = copy('mlx5_roce');
    const inv = new SysfsInventory({ sysfsRoot: f.root });
    const ref = { device: 'mlx5_0', port: 1 };
    const types = (i: number): string => f.portPath('mlx5_0', 1, 'gid_attrs', 'types', String(i));
    expect(runSync(inv.attributeReads(ref))?.gidTypes).toEqual(['IB/RoCE v1', 'RoCE v2']);
    for (const i of [1, 3, 5, 7]) fs.writeFileSync(types(i), 'IB/RoCE v1\n');
    expect(runSync(inv.attributeReads(ref))?.gidTypes).toEqual(['IB/RoCE v1']);
    // The kernel never adds an entry to a live port's table (setup_gid_attrs()): an entry that
    // appears in the same directory is not looked for.
    const extra = fs.readdirSync(path.dirname(types(0))).length;
    fs.writeFileSync(types(extra), 'RoCE v2\n');
    expect(runSync(inv.attributeReads(ref))?.gidTypes).toEqual(['IB/RoCE v1']);
    // The port re-created (a driver reload): the old directory is kept until the copy exists, so
    // the new one cannot get its inode number back.
    const dir = f.portPath('mlx5_0', 1);
    fs.renameSync(dir, `${dir}.old`);
    fs.cpSync(`${dir}.old`, dir, { recursive: true });
    fs.rmSync(`${dir}.old`, { recursive: true });
    expect(runSync(inv.attributeReads(ref))?.gidTypes).toEqual(['IB/RoCE v1', 'RoCE v2']);
  });

  it('a refresh of a known table is one round; what its guesses miss (a new netdev, a changed MTU, a first entry gone) is read after', () => {
    const f = copy('mlx5_roce');
    const inv = new SysfsInventory({ sysfsRoot: f.root });
    const ref = { device: 'mlx5_0', port: 1 };
    const ndevs = (i: number): string => f.portPath('mlx5_0', 1, 'gid_attrs', 'ndevs', String(i));
    const types = (i: number): string => f.portPath('mlx5_0', 1, 'gid_attrs', 'types', String(i));
    /** The program's value and how many rounds of reads it took. */
    const rounds = <T,>(program: ReadProgram<T>): { value: T; rounds: number } => {
      let n = 0;
      let step = program.next();
      while (!step.done) {
        n++;
        step = program.next(runDirect(step.value));
      }
      return { value: step.value, rounds: n };
    };
    const first = rounds(inv.attributeReads(ref));
    expect(first.value).toMatchObject({ netdev: 'ens1f0np0', activeIbMtu: 4096, gidTypes: ['IB/RoCE v1', 'RoCE v2'] });
    expect(first.rounds).toBe(4); // attributes and the listing, the types, ndevs/, the netdev's mtu
    const again = rounds(inv.attributeReads(ref));
    expect(again).toEqual({ value: first.value, rounds: 1 });

    f.setNetdevMtu('ens1f0np0', 1500);
    expect(rounds(inv.attributeReads(ref))).toMatchObject({ value: { activeIbMtu: 1024 }, rounds: 1 });

    // The netdev renamed (its entries now name another one, whose mtu the guess did not read).
    fs.cpSync(f.path('class', 'net', 'ens1f0np0'), f.path('class', 'net', 'ens9'), { recursive: true });
    f.setNetdevMtu('ens9', 4200);
    for (const i of [0, 1, 2, 3]) fs.writeFileSync(ndevs(i), 'ens9\n');
    expect(rounds(inv.attributeReads(ref))).toMatchObject({ value: { netdev: 'ens9', activeIbMtu: 4096 }, rounds: 2 });
    expect(rounds(inv.attributeReads(ref))).toMatchObject({ value: { netdev: 'ens9', activeIbMtu: 4096 }, rounds: 1 });

    // Entry 0 deleted: the guessed ndevs/0 is no longer the first used entry, ndevs/ is read again.
    fs.writeFileSync(types(0), '');
    fs.writeFileSync(ndevs(0), '');
    expect(rounds(inv.attributeReads(ref))).toMatchObject({ value: { netdev: 'ens9', gidTypes: ['RoCE v2', 'IB/RoCE v1'] }, rounds: 2 });
    const fresh = runSync(new SysfsInventory({ sysfsRoot: f.root }).attributeReads(ref));
    expect(runSync(inv.attributeReads(ref))).toEqual(fresh);
  });

  it('a vanished device has no ports and no attributes; it comes back when re-added', () => {
    const f = copy('mlx5_roce');
    const inv = new SysfsInventory({ sysfsRoot: f.root });
    f.removeDevice('mlx5_0');
    expect(runSync(inv.listReads())).toEqual([]);
    expect(runSync(inv.attributeReads({ device: 'mlx5_0', port: 1 }))).toBeUndefined();
    f.readdDevice('mlx5_0');
    expect(runSync(inv.attributeReads({ device: 'mlx5_0', port: 1 }))?.state).toBe('ACTIVE');
  });

  it('missing files make attributes undefined or unknown, never throw', () => {
    const f = copy('mlx5_roce');
    for (const file of ['state', 'phys_state', 'rate', 'link_layer']) fs.rmSync(f.portPath('mlx5_0', 1, file));
    fs.rmSync(f.portPath('mlx5_0', 1, 'gid_attrs'), { recursive: true });
    expect(runSync(new SysfsInventory({ sysfsRoot: f.root }).attributeReads({ device: 'mlx5_0', port: 1 }))).toEqual({
      device: 'mlx5_0',
      port: 1,
      state: 'unknown',
      physState: undefined,
      linkLayer: 'unknown',
      activeIbMtu: undefined,
      rateBitsPerSecond: undefined,
      netdev: undefined,
      gidTypes: [],
      attributeSource: 'sysfs',
    });
  });

  it('a netdev without a readable mtu leaves activeIbMtu undefined', () => {
    const f = copy('rxe_6_1');
    fs.rmSync(f.path('class', 'net', 'veth0', 'mtu'));
    const attrs = runSync(new SysfsInventory({ sysfsRoot: f.root }).attributeReads({ device: 'rxe0', port: 1 }));
    expect(attrs?.netdev).toBe('veth0');
    expect(attrs?.activeIbMtu).toBeUndefined();
  });

  it('a missing root lists nothing', () => {
    const inv = new SysfsInventory({ sysfsRoot: '/nonexistent/sysfs/root' });
    expect(runSync(inv.listReads())).toEqual([]);
    expect(runSync(inv.attributeReads({ device: 'mlx5_0', port: 1 }))).toBeUndefined();
    inv.close();
  });

  it('defaults to /sys', () => {
    expect(new SysfsInventory().root).toBe('/sys');
  });
});

describe('names that try to escape the root', () => {
  it('readAttributes rejects traversal in device names and bad port numbers', () => {
    const f = copy('mlx5_roce');
    // A tree outside class/infiniband that a traversal would reach.
    fs.mkdirSync(f.path('evil', 'ports', '1'), { recursive: true });
    fs.writeFileSync(f.path('evil', 'ports', '1', 'state'), '4: ACTIVE\n');
    const inv = new SysfsInventory({ sysfsRoot: f.root });
    for (const device of ['../../evil', '..', '.', 'mlx5_0/../../../evil', '', 'a\0b', 'x'.repeat(65)]) {
      expect(runSync(inv.attributeReads({ device, port: 1 }))).toBeUndefined();
    }
    for (const port of [-1, 1.5, Number.NaN, 1000]) {
      expect(runSync(inv.attributeReads({ device: 'mlx5_0', port }))).toBeUndefined();
    }
  });

  it('listPorts skips device and port entries that are not safe names', () => {
    const f = copy('rxe_6_1');
    fs.mkdirSync(f.path('class', 'infiniband', 'bad name', 'ports', '1'), { recursive: true });
    fs.mkdirSync(f.path('class', 'infiniband', 'rxe0', 'ports', 'x1'), { recursive: true });
    fs.mkdirSync(f.path('class', 'infiniband', 'rxe0', 'ports', '01'), { recursive: true });
    fs.mkdirSync(f.portPath('rxe0', 2), { recursive: true });
    fs.mkdirSync(f.portPath('rxe0', 10), { recursive: true });
    expect(runSync(new SysfsInventory({ sysfsRoot: f.root }).listReads())).toEqual([
      { device: 'rxe0', port: 1 },
      { device: 'rxe0', port: 2 },
      { device: 'rxe0', port: 10 },
    ]);
  });

  it('a gid_attrs netdev name with a path in it is ignored', () => {
    const f = copy('rxe_6_1');
    fs.writeFileSync(f.portPath('rxe0', 1, 'gid_attrs', 'ndevs', '0'), '../../../etc\n');
    fs.writeFileSync(f.portPath('rxe0', 1, 'gid_attrs', 'ndevs', '1'), '../../../etc\n');
    const attrs = runSync(new SysfsInventory({ sysfsRoot: f.root }).attributeReads({ device: 'rxe0', port: 1 }));
    expect(attrs?.netdev).toBeUndefined();
    expect(attrs?.activeIbMtu).toBeUndefined();
  });
});

describe('driverReads', () => {
  it('uses rxe\'s parent attribute, then the PCI driver link, then the name', () => {
    const f = copy('mlx5_roce');
    const ib = (...p: string[]): string => f.path('class', 'infiniband', ...p);
    fs.renameSync(ib('mlx5_0'), ib('roce7'));
    expect(runSync(driverReads(f.root, 'roce7'))).toBe('unknown');
    fs.mkdirSync(ib('roce7', 'device'));
    fs.symlinkSync('../../../../bus/pci/drivers/mlx5_core', ib('roce7', 'device', 'driver'));
    expect(runSync(driverReads(f.root, 'roce7'))).toBe('mlx5');
    // rxe stacked on a ConnectX netdev: its device link leads to mlx5_core, but parent says rxe.
    fs.writeFileSync(ib('roce7', 'parent'), 'ens1f0np0\n');
    expect(runSync(driverReads(f.root, 'roce7'))).toBe('rxe');
  });

  it('falls back to the name and then to rxe\'s counter names', () => {
    const f = SysfsFixture.empty();
    copies.push(f);
    expect(runSync(driverReads(f.root, 'mlx5_3'))).toBe('mlx5');
    expect(runSync(driverReads(f.root, 'mlx4_0'))).toBe('mlx4');
    expect(runSync(driverReads(f.root, 'bnxt_re1'))).toBe('bnxt_re');
    expect(runSync(driverReads(f.root, 'rxe_eth0'))).toBe('rxe');
    expect(runSync(driverReads(f.root, 'soft0', ['sent_pkts', 'rcvd_pkts']))).toBe('rxe');
    expect(runSync(driverReads(f.root, 'irdma0', ['ip4InOctets']))).toBe('unknown');
    expect(runSync(driverReads(f.root, '../x'))).toBe('unknown');
  });
});
