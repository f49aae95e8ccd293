import * as fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { NetdevSource } from '../../src/sources/netdev.js';
import { SysfsInventory } from '../../src/sources/sysfs/inventory.js';
import type { PortAttributes, PortCounterSet } from '../../src/sources/types.js';
import { SysfsFixture, type FixtureName } from '../fixtures/sysfs.js';
import { runSync } from '../../src/reads/program.js';
import { valuesNow } from './values-now.js';
import { readErrorText } from '../../src/reads/errors.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

function setup(name: FixtureName, device: string): { f: SysfsFixture; attrs: PortAttributes; source: NetdevSource } {
  const f = SysfsFixture.copy(name);
  const attrs = runSync(new SysfsInventory({ sysfsRoot: f.root }).attributeReads({ device, port: 1 }));
  if (!attrs) throw new Error('no port');
  const source = new NetdevSource({ sysfsRoot: f.root });
  cleanups.push(() => {
    source.close();
    f.cleanup();
  });
  return { f, attrs, source };
}

function values(set: PortCounterSet): Record<string, bigint | string> {
  const read = valuesNow(set);
  return Object.fromEntries(set.counters.map((c, i) => {
    const v = read[i];
    return [c.name, v === undefined ? 'missing' : v.ok ? BigInt(v.value) : readErrorText(v.error)];
  }));
}

describe('netdev source', () => {
  it('rxe_6_1: veth0 statistics as 64-bit l2 bytes and packets', () => {
    const { attrs, source } = setup('rxe_6_1', 'rxe0');
    const set = runSync(source.openReads(attrs));
    if (!set) throw new Error('no set');
    expect(source.kind).toBe('netdev');
    expect(set.kind).toBe('netdev');
    expect(set.port).toEqual({ device: 'rxe0', port: 1 });
    expect(set.counters).toEqual([
      { name: 'tx_bytes', bits: 64, overflow: 'wrap', meaning: { direction: 'tx', quantity: 'bytes', scale: 1, layer: 'l2' } },
      { name: 'rx_bytes', bits: 64, overflow: 'wrap', meaning: { direction: 'rx', quantity: 'bytes', scale: 1, layer: 'l2' } },
      { name: 'tx_packets', bits: 64, overflow: 'wrap', meaning: { direction: 'tx', quantity: 'packets', scale: 1 } },
      { name: 'rx_packets', bits: 64, overflow: 'wrap', meaning: { direction: 'rx', quantity: 'packets', scale: 1 } },
    ]);
    expect(values(set)).toEqual({ tx_bytes: 13420822n, rx_bytes: 215404n, tx_packets: 3233n, rx_packets: 3233n });
  });

  it('sees values rewritten in place, up to 2^64-1', () => {
    const { f, attrs, source } = setup('mlx5_roce', 'mlx5_0');
    const set = runSync(source.openReads(attrs));
    if (!set) throw new Error('no set');
    f.setNetdevStat('ens1f0np0', 'tx_bytes', 18446744073709551615n);
    f.setNetdevStat('ens1f0np0', 'rx_packets', 71554301);
    expect(values(set)).toMatchObject({ tx_bytes: 18446744073709551615n, rx_packets: 71554301n });
  });

  it('no netdev (InfiniBand port), an unsafe name or a missing netdev: nothing to open', () => {
    const { attrs, source } = setup('saturated', 'mlx4_0');
    expect(attrs.netdev).toBeUndefined();
    expect(runSync(source.openReads(attrs))).toBeUndefined();
    expect(runSync(source.openReads({ ...attrs, netdev: '../../class/net/ib0' }))).toBeUndefined();
    expect(runSync(source.openReads({ ...attrs, netdev: '..' }))).toBeUndefined();
    expect(runSync(source.openReads({ ...attrs, netdev: 'eth9' }))).toBeUndefined();
    expect(runSync(source.openReads({ ...attrs, netdev: 'ib0' }))).toBeDefined();
  });

  it('a netdev that disappears turns every counter into an error', () => {
    const { f, attrs, source } = setup('bnxt_re', 'bnxt_re0');
    const set = runSync(source.openReads(attrs));
    if (!set) throw new Error('no set');
    fs.rmSync(f.path('class', 'net', 'ens2f0np0'), { recursive: true });
    for (const v of valuesNow(set)) expect(v.ok).toBe(false);
  });

  it('a missing statistics file is an error for that counter only', () => {
    const { f, attrs, source } = setup('rxe_6_1', 'rxe0');
    fs.rmSync(f.path('class', 'net', 'veth0', 'statistics', 'rx_bytes'));
    const set = runSync(source.openReads(attrs));
    expect(set && values(set)).toEqual({ tx_bytes: 13420822n, rx_bytes: 'ENOENT: open', tx_packets: 3233n, rx_packets: 3233n });
  });
});
