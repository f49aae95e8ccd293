/**
 * `check`'s host-assumption checks (pfc, ecn, vlan entries of PORT_CHECKS) from captured and
 * dcbnl-shaped DCB answers and fixture trees.
 */
import { describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import { SysfsFixture } from '../fixtures/sysfs.js';
import { Sampler, type SampledPort } from '../../src/sampler/sampler.js';
import { selectSources } from '../../src/sources/select.js';
import { assessPortReads } from '../../src/health/assumptions.js';
import { runSync } from '../../src/reads/program.js';
import { ecnFinding, pfcFinding, vlanFinding } from '../../src/health/check.js';
import { dcbReader } from './dcb-replies.js';
import type { DcbReader } from '../../src/sources/dcb/reader.js';

function findingsFor(f: SysfsFixture, key: string, dcb: DcbReader, l2HeaderBytes = 14): Record<string, string> {
  const m = selectSources({ sysfsRoot: f.root });
  const sampler = new Sampler({ inventory: m.inventory, sources: m.sources, intervalMs: 1000, windowMs: 10_000, reads: 'direct' });
  sampler.sampleOnce();
  const port = sampler.ports.get(key) as SampledPort;
  const assumptions = runSync(assessPortReads(port.attrs, f.root, dcb));
  const out = [pfcFinding(assumptions), ecnFinding(port), vlanFinding(assumptions, l2HeaderBytes)];
  sampler.stop();
  return Object.fromEntries(out.map((x) => [x.check, `${x.verdict.toUpperCase()} ${x.detail}`]));
}

describe('check: host assumptions', () => {
  it('PFC on the priority DCB reports, ECN counters, untagged netdev', () => {
    const f = SysfsFixture.copy('mlx5_roce');
    try {
      expect(findingsFor(f, 'mlx5_0/1', dcbReader({ ens1f0np0: { pfcEn: 0b1000, dcbx: 0x8 | 0x1 } }))).toEqual({
        pfc: 'OK PFC enabled on priority 3 of ens1f0np0 (pfc_cap 8, DCBX host+ieee); RoCE traffic must use one of them',
        ecn: 'OK ECN-marked 5123456000, CNP sent 5123455000, handled 5123456789, ignored 0 since the driver loaded',
        vlan: 'OK ens1f0np0 is untagged, as the profile\'s l2HeaderBytes 14 assumes',
      });
    } finally {
      f.cleanup();
    }
  });

  it('a host without DCB says unknown (captured EOPNOTSUPP); PFC off everywhere warns', () => {
    const f = SysfsFixture.copy('mlx5_roce');
    try {
      expect(findingsFor(f, 'mlx5_0/1', dcbReader({})).pfc).toBe('UNKNOWN PFC state unknown: ens1f0np0 has no DCB support (the kernel answered EOPNOTSUPP)');
      expect(findingsFor(f, 'mlx5_0/1', dcbReader({ ens1f0np0: { pfcEn: 0 } })).pfc).toBe('WARN PFC is off on every priority of ens1f0np0: RoCE runs lossy, a drop costs a retransmission');
    } finally {
      f.cleanup();
    }
  });

  it('CNPs ignored and none handled: the ECN reaction point is off', () => {
    const f = SysfsFixture.copy('mlx5_roce');
    try {
      f.setCounter('mlx5_0', 1, 'hw_counters', 'rp_cnp_handled', 0);
      f.setCounter('mlx5_0', 1, 'hw_counters', 'rp_cnp_ignored', 7712);
      expect(findingsFor(f, 'mlx5_0/1', dcbReader({})).ecn).toMatch(/^WARN every CNP received was ignored: the adapter's ECN reaction point \(DCQCN\) is off/);
    } finally {
      f.cleanup();
    }
  });

  it('a VLAN netdev against an untagged profile warns; DCB is asked of the lower device', () => {
    const f = SysfsFixture.copy('mlx5_roce');
    try {
      // A VLAN 100 on ens1f0np0 carries the RoCE GIDs, as `ip link add link ens1f0np0 name ens1f0np0.100 type vlan id 100` makes it.
      const vlan = f.path('class', 'net', 'ens1f0np0.100');
      fs.mkdirSync(vlan);
      fs.writeFileSync(`${vlan}/uevent`, 'DEVTYPE=vlan\nINTERFACE=ens1f0np0.100\nIFINDEX=9\n');
      fs.writeFileSync(`${vlan}/mtu`, '9000\n');
      fs.symlinkSync('../ens1f0np0', `${vlan}/lower_ens1f0np0`);
      for (const i of [0, 1, 2, 3]) fs.writeFileSync(f.portPath('mlx5_0', 1, 'gid_attrs', 'ndevs', String(i)), 'ens1f0np0.100\n');
      const got = findingsFor(f, 'mlx5_0/1', dcbReader({ ens1f0np0: { pfcEn: 0b1000 } }));
      expect(got.vlan).toBe('WARN ens1f0np0.100 is a VLAN on ens1f0np0: every frame carries a 4-byte 802.1Q tag, but the profile counts l2HeaderBytes 14; use 18');
      expect(got.pfc).toMatch(/^OK PFC enabled on priority 3 of ens1f0np0 /);
      expect(findingsFor(f, 'mlx5_0/1', dcbReader({}), 18).vlan).toBe('OK ens1f0np0.100 is a VLAN, as the profile\'s l2HeaderBytes 18 assumes');
    } finally {
      f.cleanup();
    }
  });

  it('rxe without congestion counters: ECN unknown', () => {
    const f = SysfsFixture.copy('rxe_6_1');
    try {
      expect(findingsFor(f, 'rxe0/1', dcbReader({})).ecn).toBe('UNKNOWN the driver exposes no ECN or CNP counters for this port');
    } finally {
      f.cleanup();
    }
  });
});
