import { existsSync } from 'node:fs';
import { describe, it, expect } from 'vitest';
import {
  COMPAT_PORT_ATTR_SIZE,
  type VerbsNative,
  VerbsInventory,
  VerbsLayoutError,
  decodeGidEntry,
  decodeGidTable,
  decodePhysPortCount,
  decodePortAttr,
  gidTypeName,
  linkLayerName,
  mtuBytes,
  openVerbsInventory,
  physStateName,
  portRateBitsPerSecond,
  portStateName,
  toPortAttributes,
} from '../../src/sources/verbs/index.js';

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
    expect(attrs).toEqual({
      device: 'rxe0',
      port: 1,
      state: 'ACTIVE',
      physState: 'LinkUp',
      linkLayer: 'Ethernet',
      activeIbMtu: 4096,
      rateBitsPerSecond: 10_000_000_000,
      netdev: 'veth0',
      gidTypes: ['RoCE v1', 'RoCE v2'],
      attributeSource: 'verbs',
    });
  });

  it('falls back to ibv_query_port_speed when the speed enum is unknown', () => {
    const attr = { ...decodePortAttr(COMPAT_RXE), activeSpeed: 0 };
    const attrs = toPortAttributes({ device: 'x', port: 1 }, attr, [], () => undefined, () => 2000n);
    expect(attrs.rateBitsPerSecond).toBe(200_000_000_000);
    expect(attrs.netdev).toBeUndefined();
    expect(attrs.gidTypes).toEqual([]);
  });
});

/** A fake libibverbs: one device "rxe0", one port, answering with the captured structs. */
function fakeNative(overrides: Partial<VerbsNative> = {}): VerbsNative & { calls: string[] } {
  const calls: string[] = [];
  const native: VerbsNative = {
    getDeviceList: () => ({ list: 0x1000n, devices: [0x2000n], errno: 0 }),
    freeDeviceList: () => void calls.push('free'),
    deviceName: () => 'rxe0',
    openDevice: () => ({ ctx: 0x3000n, errno: 0 }),
    closeDevice: () => {
      calls.push('close');
      return 0;
    },
    queryDevice: (_ctx, out) => {
      out.set(DEVICE_ATTR.subarray(0, 227));
      out[227] = 1;
      return 0;
    },
    queryPort: (_ctx, port, out) => {
      if (port !== 1) return 22;
      out.set(COMPAT_RXE);
      return 0;
    },
    queryGidEx: (_ctx, _port, index, out) => {
      if (index === 0) out.set(GID_V1);
      else if (index === 1) out.set(GID_V2);
      else return 61; // ENODATA
      return 0;
    },
    queryGidTable: (_ctx, out, max) => {
      calls.push(`table ${max}`);
      out.set(GID_V1, 0);
      out.set(GID_V2, 32);
      return 2;
    },
    queryPortSpeed: () => undefined,
    ifIndexToName: (i) => (i === 5 ? 'veth0' : undefined),
    ...overrides,
  };
  return Object.assign(native, { calls });
}

describe('VerbsInventory over a fake libibverbs', () => {
  it('lists ports and reads attributes with one GID table query', () => {
    const native = fakeNative();
    const opened = openVerbsInventory(native);
    expect(opened.ok).toBe(true);
    if (!opened.ok) return;
    const inv: VerbsInventory = opened.inventory;
    expect(native.calls).toEqual(['free']);
    expect(inv.listPorts()).toEqual([{ device: 'rxe0', port: 1 }]);
    const attrs = inv.readAttributes({ device: 'rxe0', port: 1 });
    expect(native.calls).toEqual(['free', 'table 1024']);
    expect(inv.ifName(5)).toBe('veth0');
    expect(attrs?.netdev).toBe('veth0');
    expect(attrs?.gidTypes).toEqual(['RoCE v1', 'RoCE v2']);
    expect(attrs?.activeIbMtu).toBe(4096);
    expect(inv.readGidEntries({ device: 'rxe0', port: 1 })?.map((g) => [g.gidIndex, g.gidText, g.ndevIfindex])).toEqual([
      [0, 'fe80:0000:0000:0000:5054:00ff:fe12:3456', 5],
      [1, '0000:0000:0000:0000:0000:ffff:0a00:0001', 5],
    ]);
    expect(inv.readAttributes({ device: 'rxe0', port: 2 })).toBeUndefined();
    expect(inv.readAttributes({ device: 'mlx5_0', port: 1 })).toBeUndefined();
    inv.close();
    inv.close();
    expect(native.calls.filter((c) => c === 'close')).toHaveLength(1);
    expect(inv.readAttributes({ device: 'rxe0', port: 1 })).toBeUndefined();
  });

  it('falls back to one _ibv_query_gid_ex per index without the table symbol', () => {
    let queried = 0;
    const native = fakeNative({
      queryGidTable: () => undefined,
      queryGidEx: (_c, _p, index, out) => {
        queried++;
        if (index > 1) return 61;
        out.set(index === 0 ? GID_V1 : GID_V2);
        return 0;
      },
    });
    const opened = openVerbsInventory(native);
    if (!opened.ok) throw opened.error;
    expect(opened.inventory.readAttributes({ device: 'rxe0', port: 1 })?.gidTypes).toEqual(['RoCE v1', 'RoCE v2']);
    expect(queried).toBe(1024);
  });

  it('reports ENOSYS from ibv_get_device_list as no-devices', () => {
    const opened = openVerbsInventory(fakeNative({ getDeviceList: () => ({ list: null, devices: [], errno: 38 }) }));
    expect(opened.ok).toBe(false);
    if (opened.ok) return;
    expect(opened.error.reason).toBe('no-devices');
    expect(opened.error.errno).toBe(38);
    expect(opened.error.message).toBe(
      'libibverbs unavailable (no-devices): ibv_get_device_list() failed with ENOSYS: the kernel has no RDMA/uverbs support',
    );
  });

  it('reports an empty list as no-devices and frees it', () => {
    const native = fakeNative({ getDeviceList: () => ({ list: 0x1000n, devices: [], errno: 0 }) });
    const opened = openVerbsInventory(native);
    expect(opened.ok ? undefined : [opened.error.reason, opened.error.errno]).toEqual(['no-devices', 0]);
    expect(native.calls).toEqual(['free']);
  });

  it('reports devices that cannot be opened', () => {
    const opened = openVerbsInventory(fakeNative({ openDevice: () => ({ ctx: null, errno: 13 }) }));
    expect(opened.ok ? undefined : [opened.error.reason, opened.error.message]).toEqual([
      'open-failed',
      'libibverbs unavailable (open-failed): rxe0: ibv_open_device failed with EACCES',
    ]);
  });
});

const LIB_DIRS = ['/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/usr/lib64', '/usr/lib', '/lib/x86_64-linux-gnu'];
const libibverbsInstalled = LIB_DIRS.some((d) => existsSync(`${d}/libibverbs.so.1`));
const mustRun = libibverbsInstalled || process.env.CI !== undefined;

describe('the real libibverbs.so.1', () => {
  it.skipIf(!mustRun)('loads, and on a host without RDMA devices reports no-devices without throwing', () => {
    const opened = openVerbsInventory();
    if (opened.ok) {
      // A host with RDMA devices: the inventory must at least list and describe its ports.
      const ports = opened.inventory.listPorts();
      expect(ports.length).toBeGreaterThan(0);
      expect(opened.inventory.readAttributes(ports[0]!)?.attributeSource).toBe('verbs');
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
  it.skipIf(!mustRun)('summarises both native sources as JSON-safe data', async () => {
    const { probeNative } = await import('../../src/sources/probe.js');
    const probe = await probeNative();
    expect(() => JSON.stringify(probe)).not.toThrow();
    if (existsSync('/sys/module/ib_core')) return;
    // No RDMA in this kernel: both sources say why, neither throws.
    expect(probe.verbs).toMatchObject({ available: false, reason: 'no-devices', errno: 38 });
    expect(probe.netlink).toMatchObject({ available: false, reason: 'family-unsupported', errno: 93 });
  });
});
