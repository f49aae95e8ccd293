/** The vocabulary tables: consistent across drivers, every name cited, kinds and reasons from the defined sets. */
import { describe, expect, it } from 'vitest';
import { DISCARD_REASONS, DRIVER_TABLES, TRANSPORT_ERROR_KINDS, healthMeaning } from '../../src/sources/vocabulary/index.js';

describe('vocabulary tables', () => {
  it('a name means the same in every table of its kind (no driver detection needed)', () => {
    for (const kind of ['rdma', 'ethtool'] as const) {
      const seen = new Map<string, { driver: string; meaning: string }>();
      for (const t of DRIVER_TABLES.filter((x) => x.counters === kind)) {
        for (const e of t.entries) {
          const prev = seen.get(e.name);
          const meaning = JSON.stringify(e.meaning);
          if (prev) expect(meaning, `${e.name}: ${prev.driver} and ${t.driver} disagree`).toBe(prev.meaning);
          seen.set(e.name, { driver: t.driver, meaning });
        }
      }
    }
  });

  it('no table lists a name twice, and every entry cites the kernel file or patch it comes from', () => {
    for (const t of DRIVER_TABLES) {
      const names = t.entries.map((e) => e.name);
      expect(new Set(names).size, t.driver).toBe(names.length);
      for (const e of t.entries) expect(e.from, `${t.driver} ${e.name}`).toMatch(/^drivers\/\S+\.c |^rdma-next patch /);
      expect(t.source).toMatch(/torvalds\/linux/);
    }
  });

  it('kinds and reasons come from the defined sets', () => {
    for (const t of DRIVER_TABLES) {
      for (const { meaning: m } of t.entries) {
        if (m.family === 'transport_errors') expect(Object.keys(TRANSPORT_ERROR_KINDS)).toContain(m.kind);
        if (m.family === 'discards') expect(Object.keys(DISCARD_REASONS)).toContain(m.reason);
      }
    }
  });

  it('mapped names per driver (the README table)', () => {
    const counts = Object.fromEntries(DRIVER_TABLES.map((t) => [t.driver, t.entries.length]));
    expect(counts).toEqual({ mlx5: 22, bnxt_re: 23, irdma: 6, rxe: 7, efa: 1, mlx5_core: 38, bnxt_en: 34, ice: 19 });
  });

  it('lookups depend on the source: RDMA names are not ethtool names and byte sources map nothing', () => {
    expect(healthMeaning('netlink', 'np_cnp_sent')).toEqual({ family: 'cnp_sent' });
    expect(healthMeaning('sysfs_hw_counters', 'np_cnp_sent')).toEqual({ family: 'cnp_sent' });
    expect(healthMeaning('ethtool', 'np_cnp_sent')).toBeUndefined();
    expect(healthMeaning('ethtool', 'rx_prio3_pause_duration')).toEqual({ family: 'pause_duration', direction: 'rx', priority: '3', scale: 1e-6 });
    expect(healthMeaning('netdev', 'rx_dropped')).toBeUndefined();
    expect(healthMeaning('sysfs_counters', 'port_xmit_discards')).toBeUndefined();
  });
});
