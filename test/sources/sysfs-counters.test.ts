import * as fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import {
  detectPmaWidth,
  hwCounterSpec,
  pmaCounterSpec,
  SysfsCountersSource,
  SysfsHwCountersSource,
} from '../../src/sources/sysfs/counters.js';
import { SysfsInventory } from '../../src/sources/sysfs/inventory.js';
import type { CounterSpec, CounterValue, PortAttributes, PortCounterSet } from '../../src/sources/types.js';
import { SysfsFixture, type FixtureName } from '../fixtures/sysfs.js';
import { runSync } from '../../src/reads/program.js';
import { valuesOf } from '../../src/sources/types.js';
import { valuesNow } from './values-now.js';
import { readErrorText } from '../../src/reads/errors.js';
import { FileCounterSet } from '../../src/sources/sysfs/fileset.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

interface Opened {
  readonly f: SysfsFixture;
  readonly attrs: PortAttributes;
  readonly counters: SysfsCountersSource;
  readonly hw: SysfsHwCountersSource;
}

function setup(name: FixtureName, device: string, prepare?: (f: SysfsFixture) => void): Opened {
  const f = SysfsFixture.copy(name);
  prepare?.(f);
  const options = { sysfsRoot: f.root };
  const attrs = runSync(new SysfsInventory(options).attributeReads({ device, port: 1 }));
  if (!attrs) throw new Error(`fixture ${name} has no ${device}/1`);
  const counters = new SysfsCountersSource(options);
  const hw = new SysfsHwCountersSource(options);
  cleanups.push(() => {
    counters.close();
    hw.close();
    f.cleanup();
  });
  return { f, attrs, counters, hw };
}

/** name -> value (bigint) or error text, in counter order. */
function snapshot(set: PortCounterSet): Record<string, bigint | string> {
  const values = valuesNow(set);
  return Object.fromEntries(set.counters.map((c, i) => [c.name, show(values[i])]));
}
function show(v: CounterValue | undefined): bigint | string {
  if (!v) return 'missing';
  return v.ok ? BigInt(v.value) : `error: ${readErrorText(v.error)}`; // exact either way: numbers only below 2^53
}
function spec(set: PortCounterSet, name: string): CounterSpec | undefined {
  return set.counters.find((c) => c.name === name);
}
function openFds(): number {
  return fs.readdirSync('/proc/self/fd').length;
}

const PMA_ERRORS = [
  'VL15_dropped',
  'excessive_buffer_overrun_errors',
  'link_downed',
  'link_error_recovery',
  'local_link_integrity_errors',
  'port_rcv_constraint_errors',
  'port_rcv_errors',
  'port_rcv_remote_physical_errors',
  'port_rcv_switch_relay_errors',
  'port_xmit_constraint_errors',
  'port_xmit_discards',
  'symbol_error',
];

describe('sysfs_counters (PMA counters/)', () => {
  it('mlx5_roce: extended set, 64-bit data and packets, data x4 at l2', () => {
    const { attrs, counters } = setup('mlx5_roce', 'mlx5_0');
    const set = runSync(counters.openReads(attrs));
    expect(set?.kind).toBe('sysfs_counters');
    expect(set?.port).toEqual({ device: 'mlx5_0', port: 1 });
    expect(set?.counters.map((c) => c.name)).toEqual(
      [
        ...PMA_ERRORS,
        'multicast_rcv_packets',
        'multicast_xmit_packets',
        'port_rcv_data',
        'port_rcv_packets',
        'port_xmit_data',
        'port_xmit_packets',
        'port_xmit_wait',
        'unicast_rcv_packets',
        'unicast_xmit_packets',
      ].sort(),
    );
    if (!set) return;
    expect(spec(set, 'port_xmit_data')).toEqual({
      name: 'port_xmit_data',
      bits: 64,
      overflow: 'wrap',
      meaning: { direction: 'tx', quantity: 'bytes', scale: 4, layer: 'l2' },
    });
    expect(spec(set, 'port_rcv_data')?.meaning).toEqual({ direction: 'rx', quantity: 'bytes', scale: 4, layer: 'l2' });
    expect(spec(set, 'port_xmit_packets')).toEqual({
      name: 'port_xmit_packets',
      bits: 64,
      overflow: 'wrap',
      meaning: { direction: 'tx', quantity: 'packets', scale: 1 },
    });
    expect(spec(set, 'unicast_xmit_packets')).toEqual({ name: 'unicast_xmit_packets', bits: 64, overflow: 'wrap', meaning: undefined });
    expect(spec(set, 'multicast_rcv_packets')?.meaning).toBeUndefined();
    expect(spec(set, 'port_xmit_wait')).toEqual({ name: 'port_xmit_wait', bits: 32, overflow: 'saturate', meaning: undefined });
    expect(spec(set, 'symbol_error')).toEqual({ name: 'symbol_error', bits: 16, overflow: 'saturate', meaning: undefined });
    expect(snapshot(set)).toMatchObject({
      port_xmit_data: 2880761508848n,
      port_rcv_data: 18126345378n,
      port_xmit_packets: 10907922116n,
      port_rcv_packets: 541889824n,
      unicast_xmit_packets: 10907922000n,
      multicast_xmit_packets: 116n,
      symbol_error: 0n,
    });
  });

  it('re-reads the open descriptors: values written in place show up', () => {
    const { f, attrs, counters } = setup('mlx5_roce', 'mlx5_0');
    const set = runSync(counters.openReads(attrs));
    if (!set) throw new Error('no set');
    f.setCounter('mlx5_0', 1, 'counters', 'port_xmit_data', 2880761600000n);
    f.setCounter('mlx5_0', 1, 'counters', 'port_rcv_packets', '18446744073709551615');
    expect(snapshot(set)).toMatchObject({ port_xmit_data: 2880761600000n, port_rcv_packets: 18446744073709551615n });
  });

  it('saturated: 32-bit PMA set, port_xmit_data stuck at all ones', () => {
    const { attrs, counters, hw } = setup('saturated', 'mlx4_0');
    const set = runSync(counters.openReads(attrs));
    if (!set) throw new Error('no set');
    expect(set.counters.map((c) => c.name)).toEqual(
      [...PMA_ERRORS, 'port_rcv_data', 'port_rcv_packets', 'port_xmit_data', 'port_xmit_packets', 'port_xmit_wait'].sort(),
    );
    expect(spec(set, 'port_xmit_data')).toEqual({
      name: 'port_xmit_data',
      bits: 32,
      overflow: 'saturate',
      meaning: { direction: 'tx', quantity: 'bytes', scale: 4, layer: 'l2' },
    });
    expect(spec(set, 'port_rcv_packets')).toMatchObject({ bits: 32, overflow: 'saturate' });
    expect(snapshot(set)).toMatchObject({
      port_xmit_data: 4294967295n,
      port_rcv_data: 3221225472n,
      port_xmit_packets: 4000000000n,
      symbol_error: 65535n,
    });
    expect(runSync(hw.openReads(attrs))).toBeUndefined();
  });

  it('a value above 2^32-1 without unicast_* files means the 64-bit NOIETF group', () => {
    const { attrs, counters } = setup('saturated', 'mlx4_0', (f) =>
      f.setCounter('mlx4_0', 1, 'counters', 'port_rcv_data', 1n << 40n),
    );
    const set = runSync(counters.openReads(attrs));
    expect(set && spec(set, 'port_xmit_data')).toMatchObject({ bits: 64, overflow: 'wrap' });
    expect(set && spec(set, 'port_xmit_wait')).toMatchObject({ bits: 32, overflow: 'saturate' });
  });

  it('no_pma: every counters/ file says "N/A (no PMA)" -> per-counter errors, 32-bit assumed', () => {
    const { attrs, counters } = setup('no_pma', 'rxe0');
    const set = runSync(counters.openReads(attrs));
    if (!set) throw new Error('no set');
    expect(set.counters).toHaveLength(16);
    expect(spec(set, 'port_xmit_data')).toMatchObject({ bits: 32, overflow: 'saturate' });
    for (const v of valuesNow(set)) expect(v).toEqual({ ok: false, error: { code: 'NOTACOUNTER', op: 'read', detail: 'not a counter: "N/A (no PMA)"' } });
  });

  it('rxe_6_1 and bnxt_re have no counters/ directory', () => {
    const r = setup('rxe_6_1', 'rxe0');
    expect(runSync(r.counters.openReads(r.attrs))).toBeUndefined();
    const b = setup('bnxt_re', 'bnxt_re0');
    expect(runSync(b.counters.openReads(b.attrs))).toBeUndefined();
  });
});

describe('sysfs_hw_counters', () => {
  it('rxe_6_1: exactly the measured names, lifespan skipped, packets meanings, 64-bit', () => {
    const { attrs, hw } = setup('rxe_6_1', 'rxe0');
    const set = runSync(hw.openReads(attrs));
    if (!set) throw new Error('no set');
    expect(set.kind).toBe('sysfs_hw_counters');
    expect(set.counters.map((c) => c.name)).toEqual([
      'ack_deferred',
      'completer_retry_err',
      'duplicate_request',
      'link_downed',
      'out_of_seq_request',
      'rcvd_pkts',
      'rcvd_rnr_err',
      'rcvd_seq_err',
      'rdma_recvs',
      'rdma_sends',
      'retry_exceeded_err',
      'retry_rnr_exceeded_err',
      'send_err',
      'send_rnr_err',
      'sent_pkts',
    ]);
    expect(spec(set, 'sent_pkts')).toEqual({
      name: 'sent_pkts',
      bits: 64,
      overflow: 'wrap',
      meaning: { direction: 'tx', quantity: 'packets', scale: 1 },
    });
    expect(spec(set, 'rcvd_pkts')?.meaning).toEqual({ direction: 'rx', quantity: 'packets', scale: 1 });
    expect(set.counters.filter((c) => c.meaning).map((c) => c.name)).toEqual(['rcvd_pkts', 'sent_pkts']);
    expect(set.counters.every((c) => c.bits === 64 && c.overflow === 'wrap')).toBe(true);
    expect(snapshot(set)).toMatchObject({ sent_pkts: 200n, rcvd_pkts: 100n, send_err: 0n });
  });

  it('no_pma: older rxe spellings are exported by name, not dropped', () => {
    const { attrs, hw } = setup('no_pma', 'rxe0');
    const set = runSync(hw.openReads(attrs));
    const names = set?.counters.map((c) => c.name) ?? [];
    expect(names).toContain('out_of_sequence');
    expect(names).toContain('ack_deffered');
    expect(names).toHaveLength(12);
    expect(set && spec(set, 'sent_pkts')?.meaning).toEqual({ direction: 'tx', quantity: 'packets', scale: 1 });
  });

  it('mlx5_roce: 32-bit wrapping Q-counters, 64-bit congestion counters, no meanings', () => {
    const { f, attrs, hw } = setup('mlx5_roce', 'mlx5_0');
    const set = runSync(hw.openReads(attrs));
    if (!set) throw new Error('no set');
    expect(set.counters).toHaveLength(31);
    expect(set.counters.map((c) => c.name)).not.toContain('lifespan');
    expect(set.counters.every((c) => c.meaning === undefined)).toBe(true);
    const wide = set.counters.filter((c) => c.bits === 64).map((c) => c.name);
    expect(wide).toEqual(['np_cnp_sent', 'np_ecn_marked_roce_packets', 'rp_cnp_handled', 'rp_cnp_ignored', 'rx_icrc_encapsulated']);
    expect(spec(set, 'rx_write_requests')).toEqual({ name: 'rx_write_requests', bits: 32, overflow: 'wrap', meaning: undefined });
    expect(snapshot(set)).toMatchObject({ rx_write_requests: 4294967290n, rp_cnp_handled: 5123456789n });
    f.setCounter('mlx5_0', 1, 'hw_counters', 'rx_write_requests', 3);
    expect(snapshot(set)).toMatchObject({ rx_write_requests: 3n });
  });

  it('bnxt_re: all 67 names from hw_counters.c, tx/rx pkts and bytes carry meanings', () => {
    const { attrs, hw } = setup('bnxt_re', 'bnxt_re0');
    const set = runSync(hw.openReads(attrs));
    if (!set) throw new Error('no set');
    expect(set.counters).toHaveLength(67);
    expect(set.counters.every((c) => c.bits === 64)).toBe(true);
    expect(spec(set, 'tx_bytes')?.meaning).toEqual({ direction: 'tx', quantity: 'bytes', scale: 1, layer: 'l2' });
    expect(spec(set, 'rx_bytes')?.meaning).toEqual({ direction: 'rx', quantity: 'bytes', scale: 1, layer: 'l2' });
    expect(spec(set, 'tx_pkts')?.meaning).toEqual({ direction: 'tx', quantity: 'packets', scale: 1 });
    expect(spec(set, 'rx_roce_good_bytes')?.meaning).toBeUndefined();
    expect(snapshot(set)).toMatchObject({ tx_bytes: 9834005111n, rx_pkts: 1200345n, rx_out_of_buffer: 0n });
  });

  it('unknown drivers keep every name, 64-bit, no meanings', () => {
    expect(hwCounterSpec('unknown', 'sent_pkts')).toEqual({ name: 'sent_pkts', bits: 64, overflow: 'wrap', meaning: undefined });
    expect(hwCounterSpec('mlx5', 'tx_bytes')).toEqual({ name: 'tx_bytes', bits: 32, overflow: 'wrap', meaning: undefined });
  });
});

describe('read errors stay per counter', () => {
  it('einval: EISDIR at read, ENOENT and ELOOP at open, the rest reads fine', () => {
    const { f, attrs, counters, hw } = setup('einval', 'mlx5_2', (fx) => fx.applyErrorInjections());
    const set = runSync(counters.openReads(attrs));
    if (!set) throw new Error('no set');
    expect(set.counters).toHaveLength(21);
    const snap = snapshot(set);
    expect(snap.port_rcv_data).toBe('error: EISDIR: read');
    expect(snap.symbol_error).toBe('error: ENOENT: open');
    expect(snap.link_downed).toBe('error: ELOOP: open');
    expect(snap).toMatchObject({ port_xmit_data: 1000n, port_xmit_packets: 10n, port_rcv_packets: 20n });
    const hwSet = runSync(hw.openReads(attrs));
    expect(hwSet && snapshot(hwSet)).toEqual({
      duplicate_request: 0n,
      np_cnp_sent: 'error: EISDIR: read',
      out_of_buffer: 0n,
      out_of_sequence: 0n,
      rp_cnp_handled: 3n,
    });
    // A counter that recovers (the file comes back) reads again only after reopening.
    fs.rmSync(f.portPath('mlx5_2', 1, 'counters', 'port_rcv_data'), { recursive: true });
    f.setCounter('mlx5_2', 1, 'counters', 'port_rcv_data', 2500);
    expect(snapshot(set).port_rcv_data).toBe('error: EISDIR: read');
    expect(snapshot(runSync(counters.openReads(attrs)) as PortCounterSet).port_rcv_data).toBe(2500n);
  });

  it('text that is not a number is an error for that counter only', () => {
    const { f, attrs, hw } = setup('rxe_6_1', 'rxe0');
    const set = runSync(hw.openReads(attrs));
    if (!set) throw new Error('no set');
    f.setCounter('rxe0', 1, 'hw_counters', 'send_err', 'garbage');
    const snap = snapshot(set);
    expect(snap.send_err).toBe('error: not a counter: "garbage"');
    expect(snap.sent_pkts).toBe(200n);
  });
});

describe('vanished devices and descriptor lifetime', () => {
  it('a read that checks the directory reports every counter as an error once the port directory is gone', () => {
    const { f, attrs, hw } = setup('rxe_6_1', 'rxe0');
    const set = runSync(hw.openReads(attrs));
    if (!(set instanceof FileCounterSet)) throw new Error('no file set');
    expect(snapshot(set).sent_pkts).toBe(200n);
    f.removeDevice('rxe0');
    const values = valuesOf(runSync(set.reads(true)), set.counters.length);
    expect(values).toHaveLength(15);
    for (const v of values) {
      expect(v.ok).toBe(false);
      if (!v.ok) expect(v.error).toMatchObject({ code: 'ENOENT', op: 'stat', path: set.watchDir });
      if (!v.ok) expect(readErrorText(v.error)).toBe(`ENOENT: ${set.watchDir} vanished`);
    }
    expect(runSync(hw.openReads(attrs))).toBeUndefined();
    f.readdDevice('rxe0');
    const again = runSync(hw.openReads(attrs));
    expect(again && snapshot(again).sent_pkts).toBe(200n);
  });

  it('a port directory re-created under the open set is reported as stale, not read', () => {
    const { f, attrs, hw } = setup('rxe_6_1', 'rxe0');
    const set = runSync(hw.openReads(attrs));
    if (!set) throw new Error('no set');
    const dir = f.portPath('rxe0', 1);
    // Keep the old directory alive so the new one cannot reuse its inode number.
    fs.renameSync(dir, `${dir}.old`);
    fs.cpSync(`${dir}.old`, dir, { recursive: true });
    f.setCounter('rxe0', 1, 'hw_counters', 'sent_pkts', 7);
    const first = valuesNow(set)[0];
    expect(first?.ok).toBe(false);
    if (first && !first.ok) expect(first.error).toMatchObject({ code: 'ESTALE', op: 'stat' });
    if (first && !first.ok) expect(readErrorText(first.error)).toMatch(/^ESTALE: .* was re-created; reopened$/);
    const fresh = runSync(hw.openReads(attrs));
    expect(fresh && snapshot(fresh).sent_pkts).toBe(7n);
  });

  it('close() releases every descriptor; the source closes what it opened', () => {
    const { attrs, counters, hw } = setup('mlx5_roce', 'mlx5_0');
    const before = openFds();
    const a = runSync(counters.openReads(attrs));
    const b = runSync(hw.openReads(attrs));
    expect(openFds()).toBe(before + 21 + 31);
    a?.close();
    expect(openFds()).toBe(before + 31);
    a?.close();
    hw.close();
    expect(openFds()).toBe(before);
    expect(valuesNow(b!)[0]).toEqual({ ok: false, error: { code: 'CLOSED', op: 'read', detail: 'closed' } });
  });

  it('open() refuses names that would leave the root', () => {
    const { attrs, counters, hw } = setup('mlx5_roce', 'mlx5_0');
    for (const device of ['../mlx5_0', '..', 'mlx5_0/../mlx5_0']) {
      expect(runSync(counters.openReads({ ...attrs, device }))).toBeUndefined();
      expect(runSync(hw.openReads({ ...attrs, device }))).toBeUndefined();
    }
    expect(runSync(counters.openReads({ ...attrs, port: -1 }))).toBeUndefined();
  });
});

describe('PMA width rules', () => {
  it('unicast_* files mean the extended group, regardless of values', () => {
    expect(detectPmaWidth(['port_xmit_data', 'unicast_xmit_packets'], () => 0n)).toBe('ext');
    expect(detectPmaWidth(['port_xmit_data'], () => 0xffffffffn)).toBe('legacy32');
    expect(detectPmaWidth(['port_xmit_data'], () => 0x100000000n)).toBe('noietf');
    expect(detectPmaWidth(['port_xmit_data'], () => undefined)).toBe('legacy32');
  });

  // IBA PortCounters field widths, as drivers/infiniband/core/sysfs.c PORT_PMA_ATTR(name, counter, width, offset) prints them.
  const WIDTHS: readonly [string, 4 | 8 | 16 | 32][] = [
    ['symbol_error', 16], ['link_error_recovery', 8], ['link_downed', 8], ['port_rcv_errors', 16],
    ['port_rcv_remote_physical_errors', 16], ['port_rcv_switch_relay_errors', 16], ['port_xmit_discards', 16],
    ['port_xmit_constraint_errors', 8], ['port_rcv_constraint_errors', 8], ['local_link_integrity_errors', 4],
    ['excessive_buffer_overrun_errors', 4], ['VL15_dropped', 16], ['port_xmit_wait', 32],
  ];

  it('gives each PortCounters error counter its own width, saturating, in every group (issue 33)', () => {
    for (const width of ['ext', 'noietf', 'legacy32'] as const) {
      for (const [name, bits] of WIDTHS) expect(pmaCounterSpec(name, width)).toEqual({ name, bits, overflow: 'saturate', meaning: undefined });
    }
    expect(pmaCounterSpec('port_xmit_data', 'legacy32')).toMatchObject({ bits: 32, overflow: 'saturate' });
    expect(pmaCounterSpec('unicast_rcv_packets', 'ext')).toMatchObject({ bits: 64 });
  });
});
