import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import { existsSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it, expect, beforeAll } from 'vitest';
import {
  COMPAT_PORT_ATTR_SIZE,
  VerbsLayoutError,
  decodeGidEntry,
  decodeGidTable,
  decodePhysPortCount,
  decodePortAttr,
  gidTypeName,
  linkLayerName,
  mtuBytes,
  openVerbsReads,
  physStateName,
  portRateBitsPerSecond,
  portStateName,
  toPortAttributes,
} from '../../src/sources/verbs/index.js';
import { runSync } from '../../src/reads/program.js';
import { RXE0_PORT_1 } from '../fixtures/ports.js';
import { need, needs } from '../deploy/tools.js';

/*
 * Struct bytes below were written by a C program that filled the real structs and dumped them
 * (gcc, x86_64): struct _compat_ibv_port_attr copied from rdma-core libibverbs/verbs.c,
 * struct ibv_port_attr / ibv_gid_entry / ibv_device_attr from rdma-core 691953d8
 * libibverbs/verbs.h (sizeof 56 / 32 / 232; active_speed_ex at offset 52).
 */
function bytes(hex: string): Uint8Array {
  return Uint8Array.from(Buffer.from(hex, 'hex'));
}

/** rxe0 on a veth with MTU 9000, as ibv_devinfo would show it: ACTIVE, 4096, 1X FDR10, Ethernet. */
const COMPAT_RXE = bytes('040000000500000005000000000400000000010000008000020000000300000001000000000000010000000108050201');
/** A full ibv_port_attr: InfiniBand 4X with active_speed 0 and active_speed_ex 256 (XDR). */
const FULL_XDR = bytes(
  '0400000005000000040000000001000000000104000000400000000000000000800034120100000400120002000501003412000000010000',
);
const GID_V2 = bytes('00000000000000000000ffff0a00000101000000010000000200000005000000');
const GID_V1 = bytes('fe80000000000000505400fffe12345600000000010000000100000005000000');
const DEVICE_ATTR = bytes(
  '312e300000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000' +
    '0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000400' +
    '0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000' +
    '0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000' +
    '40000f0200000000',
);

describe('decodePortAttr', () => {
  it('decodes the 48-byte compat struct field by field', () => {
    expect(COMPAT_RXE.length).toBe(COMPAT_PORT_ATTR_SIZE);
    expect(decodePortAttr(COMPAT_RXE)).toEqual({
      state: 4,
      maxMtu: 5,
      activeMtu: 5,
      gidTblLen: 1024,
      portCapFlags: 0x00010000,
      maxMsgSz: 0x800000,
      badPkeyCntr: 2,
      qkeyViolCntr: 3,
      pkeyTblLen: 1,
      lid: 0,
      smLid: 0,
      lmc: 0,
      maxVlNum: 1,
      smSl: 0,
      subnetTimeout: 0,
      initTypeReply: 0,
      activeWidth: 1,
      activeSpeed: 8,
      physState: 5,
      linkLayer: 2,
      flags: 1,
      portCapFlags2: undefined,
      activeSpeedEx: undefined,
    });
  });

  it('reads port_cap_flags2 and active_speed_ex from a 56-byte struct', () => {
    const a = decodePortAttr(FULL_XDR);
    expect(a.lid).toBe(0x1234);
    expect(a.smLid).toBe(1);
    expect(a.activeMtu).toBe(4);
    expect(a.gidTblLen).toBe(256);
    expect(a.portCapFlags).toBe(0x04010000);
    expect(a.maxMsgSz).toBe(0x40000000);
    expect(a.pkeyTblLen).toBe(128);
    expect(a.subnetTimeout).toBe(18);
    expect(a.activeWidth).toBe(2);
    expect(a.activeSpeed).toBe(0);
    expect(a.linkLayer).toBe(1);
    expect(a.portCapFlags2).toBe(0x1234);
    expect(a.activeSpeedEx).toBe(256);
  });

  it('rejects a short buffer', () => {
    expect(() => decodePortAttr(new Uint8Array(47))).toThrow(VerbsLayoutError);
  });
});

describe('decodeGidEntry', () => {
  it('decodes a RoCE v2 entry for ::ffff:10.0.0.1', () => {
    const g = decodeGidEntry(GID_V2);
    expect(g.gidText).toBe('0000:0000:0000:0000:0000:ffff:0a00:0001');
    expect(g.gidIndex).toBe(1);
    expect(g.portNum).toBe(1);
    expect(g.gidType).toBe(2);
    expect(g.ndevIfindex).toBe(5);
    expect(Array.from(g.gid)).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 10, 0, 0, 1]);
  });

  it('decodes a link-local RoCE v1 entry', () => {
    const g = decodeGidEntry(GID_V1);
    expect(g.gidText).toBe('fe80:0000:0000:0000:5054:00ff:fe12:3456');
    expect(g.gidIndex).toBe(0);
    expect(g.gidType).toBe(1);
  });

  it('splits a gid table into entries', () => {
    const table = new Uint8Array(96);
    table.set(GID_V1, 0);
    table.set(GID_V2, 32);
    expect(decodeGidTable(table, 2).map((g) => [g.gidIndex, g.gidType])).toEqual([
      [0, 1],
      [1, 2],
    ]);
  });

  it('rejects a short buffer', () => {
    expect(() => decodeGidEntry(new Uint8Array(31))).toThrow(VerbsLayoutError);
  });
});

describe('enums', () => {
  it('maps ibv_device_attr.phys_port_cnt at offset 227', () => {
    expect(DEVICE_ATTR.length).toBe(232);
    expect(decodePhysPortCount(DEVICE_ATTR)).toBe(2);
  });

  it('names port states, physical states, link layers and GID types', () => {
    expect([0, 1, 2, 3, 4, 5].map(portStateName)).toEqual(['NOP', 'DOWN', 'INIT', 'ARMED', 'ACTIVE', 'ACTIVE_DEFER']);
    expect(portStateName(9)).toBe('UNKNOWN(9)');
    expect(physStateName(5)).toBe('LinkUp');
    expect(physStateName(2)).toBe('Polling');
    expect(physStateName(0)).toBeUndefined();
    expect([0, 1, 2, 3].map(linkLayerName)).toEqual(['InfiniBand', 'InfiniBand', 'Ethernet', 'unknown']);
    expect([0, 1, 2].map(gidTypeName)).toEqual(['IB', 'RoCE v1', 'RoCE v2']);
  });

  it('maps active_mtu to bytes', () => {
    expect([1, 2, 3, 4, 5].map(mtuBytes)).toEqual([256, 512, 1024, 2048, 4096]);
    expect(mtuBytes(0)).toBeUndefined();
    expect(mtuBytes(6)).toBeUndefined();
  });

  it('computes lanes x per-lane rate', () => {
    const rate = (activeWidth: number, activeSpeed: number, activeSpeedEx?: number) =>
      portRateBitsPerSecond({ activeWidth, activeSpeed, activeSpeedEx });
    expect(rate(1, 8)).toBe(10_000_000_000); // 1X FDR10: what rxe reports on a veth
    expect(rate(1, 1)).toBe(2_500_000_000); // 1X SDR
    expect(rate(2, 2)).toBe(20_000_000_000); // 4X DDR
    expect(rate(2, 16)).toBe(56_000_000_000); // 4X FDR
    expect(rate(2, 32)).toBe(100_000_000_000); // 4X EDR
    expect(rate(16, 64)).toBe(100_000_000_000); // 2X HDR
    expect(rate(2, 128)).toBe(400_000_000_000); // 4X NDR
    expect(rate(8, 4)).toBe(120_000_000_000); // 12X QDR
    expect(rate(2, 0, 256)).toBe(800_000_000_000); // 4X XDR, only in active_speed_ex
    expect(rate(2, 0, 0)).toBeUndefined();
    expect(rate(3, 8)).toBeUndefined();
  });
});

describe('toPortAttributes', () => {
  it('maps rxe0 port 1 the way sysfs would describe it', () => {
    const gids = [decodeGidEntry(GID_V2), decodeGidEntry(GID_V1)];
    const names: Record<number, string> = { 5: 'veth0' };
    const attrs = toPortAttributes({ device: 'rxe0', port: 1 }, decodePortAttr(COMPAT_RXE), gids, (i) => names[i]);
    expect(attrs).toEqual({ ...RXE0_PORT_1, gidTypes: ['RoCE v1', 'RoCE v2'], attributeSource: 'verbs' });
  });

  it('falls back to ibv_query_port_speed when the speed enum is unknown', () => {
    const attr = { ...decodePortAttr(COMPAT_RXE), activeSpeed: 0 };
    const attrs = toPortAttributes({ device: 'x', port: 1 }, attr, [], () => undefined, () => 2000n);
    expect(attrs.rateBitsPerSecond).toBe(200_000_000_000);
    expect(attrs.netdev).toBeUndefined();
    expect(attrs.gidTypes).toEqual([]);
  });
});

/*
 * The inventory over a stand-in libibverbs.so.1 (native/reader/fake-libibverbs.c, built by
 * `make -C native fake-verbs`), in a child process whose loader finds it first. Its ports answer
 * as RoCE v2 4X EDR (100 Gb/s) ports with MTU 4096 and four GIDs (RoCE v1/v2 of fe80::P and
 * ::ffff:10.0.0.P, index 0..3).
 */
const ROOT = path.join(__dirname, '../..');
const FAKE_DIR = path.join(ROOT, 'native/build/fake-verbs');
const fakeFile = (name: string): string => path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'mfe-fakeverbs-')), name);

interface ChildReport {
  ok: boolean;
  reason?: string;
  errno?: number;
  message?: string;
  ports?: { device: string; port: number }[];
  skipped?: { device: string; error: string }[];
  direct?: { attrs: Record<string, unknown>; gids: [number, string, number, number][] }[];
  mode?: string;
  states?: { kind: string; value?: unknown }[];
  attributes?: { kind: string; value?: unknown }[];
  gone?: unknown;
  afterClose?: unknown;
}

function runChild<T = ChildReport>(env: Record<string, string>, child = 'verbs-child.ts'): T {
  const r = spawnSync(path.join(ROOT, 'node_modules/.bin/vite-node'), [path.join(__dirname, child)], {
    env: { ...process.env, LD_LIBRARY_PATH: FAKE_DIR, ...env }, encoding: 'utf8', timeout: 60_000, killSignal: 'SIGKILL',
  });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as T;
}

type Ref = { device: string; port: number };
interface Round { changed: boolean; ports?: Ref[] }
interface RescanReport {
  start: { ports: Ref[]; states: (string | null)[]; calls: string[] };
  steady: Round;
  deleted: Round & { states: (string | null)[]; attrsA: string | null; attrsB: unknown; calls: string[] };
  afterDelete: Round;
  added: { changed: unknown; listed: unknown; attributes: (string | null)[]; calls: string[] };
  replaced: Round & { state: string | null; calls: string[] };
  calls: string[];
}

const port = (device: string, n: number, netdev?: string): Record<string, unknown> => ({
  device, port: n, state: 'ACTIVE', physState: 'LinkUp', linkLayer: 'Ethernet', activeIbMtu: 4096,
  rateBitsPerSecond: 100_000_000_000, ...(netdev ? { netdev } : {}), gidTypes: ['RoCE v1', 'RoCE v2'], attributeSource: 'verbs',
});
const gids = (n: number, ifindex: number): [number, string, number, number][] => [
  [0, `fe80:0000:0000:0000:0000:0000:0000:000${n}`, 1, ifindex],
  [1, `fe80:0000:0000:0000:0000:0000:0000:000${n}`, 2, ifindex],
  [2, `0000:0000:0000:0000:0000:ffff:0a00:000${n}`, 1, ifindex],
  [3, `0000:0000:0000:0000:0000:ffff:0a00:000${n}`, 2, ifindex],
];

describe('VerbsInventory over a stand-in libibverbs.so.1 (the reader library\'s verbs ops)', () => {
  beforeAll(() => {
    execFileSync('make', ['-s', '-C', path.join(ROOT, 'native'), 'reader', 'fake-verbs']);
  });

  it('lists and describes every port the same on this thread and on the reader threads; closes each device once', () => {
    const log = fakeFile('calls.log');
    // ifindex 1 is the loopback device on every Linux host: the netdev comes from if_indextoname().
    const r = runChild({ FAKE_IBV_DEVICES: 'mlx5_0:1,mlx5_1:2', FAKE_IBV_NDEV_IFINDEX: '1', FAKE_IBV_LOG: log });
    expect(r.ok).toBe(true);
    expect(r.ports).toEqual([{ device: 'mlx5_0', port: 1 }, { device: 'mlx5_1', port: 1 }, { device: 'mlx5_1', port: 2 }]);
    expect(r.skipped).toEqual([]);
    const expected = [port('mlx5_0', 1, 'lo'), port('mlx5_1', 1, 'lo'), port('mlx5_1', 2, 'lo')];
    expect(r.direct).toEqual([
      { attrs: expected[0], gids: gids(1, 1) },
      { attrs: expected[1], gids: gids(1, 1) },
      { attrs: expected[2], gids: gids(2, 1) },
    ]);
    expect(r.mode).toBe('native');
    expect(r.states).toEqual(Array(3).fill({ kind: 'done', value: { state: 'ACTIVE', physState: 'LinkUp', activeIbMtu: 4096 } }));
    expect(r.attributes).toEqual(expected.map((value) => ({ kind: 'done', value })));
    expect(r.gone).toBeNull();
    expect(r.afterClose).toBeNull();
    expect(fs.readFileSync(log, 'utf8')).toBe('open mlx5_0\nopen mlx5_1\nclose mlx5_0\nclose mlx5_1\n');
  });

  it('opens the devices again when a uverbs node goes or comes (issue 32): a deleted device is closed within one round and its ports unlisted, an added one listed and read', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mfe-verbs-rescan-'));
    const r = runChild<RescanReport>({
      MFE_TEST_SYSFS: path.join(dir, 'sys'), FAKE_IBV_DEVICES_FILE: path.join(dir, 'devices'), FAKE_IBV_LOG: path.join(dir, 'calls.log'),
    }, 'verbs-rescan-child.ts');
    fs.rmSync(dir, { recursive: true, force: true });
    const A = { device: 'mlx5_0', port: 1 };
    const B = [{ device: 'mlx5_1', port: 1 }, { device: 'mlx5_1', port: 2 }];
    const opened = ['open mlx5_0', 'open mlx5_1'];
    expect(r.start).toEqual({ ports: [A, ...B], states: ['ACTIVE', 'ACTIVE', 'ACTIVE'], calls: opened });
    expect(r.steady).toEqual({ changed: false });

    // mlx5_1's node gone: in that one round its context is closed (what lets `rdma link delete`
    // finish), its ports are no longer listed, and mlx5_0 answers through its new context.
    expect(r.deleted).toEqual({
      changed: true, ports: [A], states: ['ACTIVE', null], attrsA: 'ACTIVE', attrsB: null,
      calls: [...opened, 'open mlx5_0', 'close mlx5_0', 'close mlx5_1'],
    });
    expect(r.afterDelete).toEqual({ changed: false });

    // Back: listed, opened and read again (on the reader threads), without a new inventory.
    expect(r.added).toEqual({
      changed: { kind: 'done', value: true }, listed: { kind: 'done', value: [A, ...B] }, attributes: ['ACTIVE', 'ACTIVE', 'ACTIVE'],
      calls: [...r.deleted.calls, ...opened, 'close mlx5_0'],
    });

    // The same node name for a new device between two looks (a driver reload): its inode tells.
    expect(r.replaced).toEqual({ changed: true, ports: [A, ...B], state: 'ACTIVE', calls: [...r.added.calls, ...opened, 'close mlx5_0', 'close mlx5_1'] });
    expect(r.calls).toEqual([...r.replaced.calls, 'close mlx5_0', 'close mlx5_1']);
    expect(r.calls.filter((c) => c.startsWith('used after close'))).toEqual([]);
  });

  it('without _ibv_query_gid_table reads the GIDs one _ibv_query_gid_ex per index', () => {
    const r = runChild({ FAKE_IBV_DEVICES: 'mlx5_0:1', FAKE_IBV_NO_GID_TABLE: '1' });
    expect(r.direct).toEqual([{ attrs: port('mlx5_0', 1), gids: gids(1, 0) }]);
  });

  it('reports ENOSYS from ibv_get_device_list as no-devices', () => {
    expect(runChild({ FAKE_IBV_LIST_ERRNO: '38' })).toEqual({
      ok: false, reason: 'no-devices', errno: 38,
      message: 'libibverbs unavailable (no-devices): ibv_get_device_list() failed with ENOSYS: the kernel has no RDMA/uverbs support',
    });
  });

  it('reports an empty list as no-devices', () => {
    expect(runChild({ FAKE_IBV_DEVICES: '' })).toMatchObject({ ok: false, reason: 'no-devices', errno: 0 });
  });

  it('reports devices that cannot be opened', () => {
    expect(runChild({ FAKE_IBV_DEVICES: 'rxe0:1', FAKE_IBV_OPEN_ERRNO: '13' })).toMatchObject({
      ok: false, reason: 'open-failed', message: 'libibverbs unavailable (open-failed): rxe0: ibv_open_device failed with EACCES',
    });
  });

  it('reports a libibverbs.so.1 that cannot be loaded as library-missing, with the loader\'s reason', () => {
    const bogus = fakeFile('libibverbs.so.1');
    fs.writeFileSync(bogus, 'not a shared object\n');
    const r = runChild({ LD_LIBRARY_PATH: path.dirname(bogus) });
    expect(r).toMatchObject({ ok: false, reason: 'library-missing' });
    expect(r.message).toMatch(/^libibverbs unavailable \(library-missing\): .*libibverbs\.so\.1: .*(invalid ELF header|file too short)/);
  });
});

const LIB_DIRS = ['/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/usr/lib64', '/usr/lib', '/lib/x86_64-linux-gnu'];
const libibverbsInstalled = LIB_DIRS.some((d) => existsSync(`${d}/libibverbs.so.1`));
const mustRun = libibverbsInstalled || process.env.CI !== undefined;

describe('the real libibverbs.so.1', () => {
  needs(need(!mustRun, 'libibverbs.so.1 (Debian package libibverbs1)')).it('loads, and on a host without RDMA devices reports no-devices without throwing', () => {
    const opened = runSync(openVerbsReads());
    if (opened.ok) {
      // A host with RDMA devices: the inventory must at least list and describe its ports.
      const ports = runSync(opened.inventory.listReads());
      expect(ports.length).toBeGreaterThan(0);
      expect(runSync(opened.inventory.attributeReads(ports[0]!))?.attributeSource).toBe('verbs');
      opened.inventory.close();
      return;
    }
    expect(opened.error.name).toBe('VerbsUnavailable');
    expect(opened.error.reason).toBe('no-devices');
    if (!existsSync('/sys/class/infiniband_verbs')) {
      // No uverbs in the kernel (this project's build hosts): libibverbs says ENOSYS.
      expect(opened.error.errno).toBe(38);
    }
  });
});

describe('probeNative', () => {
  needs(need(!mustRun, 'libibverbs.so.1 (Debian package libibverbs1)')).it('summarises both native sources as JSON-safe data', async () => {
    const { probeNative } = await import('../../src/sources/probe.js');
    const probe = await probeNative();
    expect(() => JSON.stringify(probe)).not.toThrow();
    if (existsSync('/sys/module/ib_core')) return;
    // No RDMA in this kernel: both sources say why, neither throws.
    expect(probe.verbs).toMatchObject({ available: false, reason: 'no-devices', errno: 38 });
    expect(probe.netlink).toMatchObject({ available: false, reason: 'family-unsupported', errno: 93 });
  });
});
