/**
 * `check`'s host-assumption findings: PFC where the kernel says so (DCB netlink), ECN/CNP from
 * the congestion counters, and VLAN tagging against the provider profile's l2HeaderBytes.
 * Each is one entry of `check`'s PORT_CHECKS (src/cli/checks.ts). None of them fails
 * provisioning: a host without DCB is "unknown", a doubtful one "warn".
 */
import { DcbNetlinkReader } from '../sources/dcb/reader.js';
import { DEFAULT_SYSFS_ROOT } from '../sources/sysfs/paths.js';
import type { SampledPort } from '../sampler/sampler.js';
import { portKey } from '../sources/types.js';
import { assessPortReads, type PortAssumptions } from './assumptions.js';
import { runSync } from '../reads/program.js';
import { healthSeries } from './vocabulary-series.js';

type HostVerdict = 'ok' | 'warn' | 'unknown';
export interface HostFinding {
  readonly check: 'pfc' | 'ecn' | 'vlan';
  readonly verdict: HostVerdict;
  readonly detail: string;
  /** The numbers behind the verdict, as numbers (`check --output json`). */
  readonly values?: Readonly<Record<string, number | string | boolean | null>>;
}

/** Ethernet header with one 802.1Q tag (IEEE 802.1Q: 4 bytes after the source MAC). */
const VLAN_L2_HEADER_BYTES = 18;

/** Reads every port's assumptions once; DCB netlink only on the real /sys. */
export function assumptionsOnce(sysfsRoot: string, ports: readonly SampledPort[]): Map<string, PortAssumptions> {
  const opened = sysfsRoot === DEFAULT_SYSFS_ROOT ? DcbNetlinkReader.open() : undefined;
  const dcb = opened && 'reader' in opened ? opened.reader : undefined;
  try {
    return new Map(ports.map((p) => [portKey(p.ref), runSync(assessPortReads(p.attrs, sysfsRoot, dcb))]));
  } finally {
    dcb?.close();
  }
}

export function pfcFinding(a: PortAssumptions): HostFinding {
  const pfc = a.pfc;
  if (!pfc.known) return { check: 'pfc', verdict: 'unknown', detail: `PFC state unknown: ${pfc.reason}`, values: { netdev: pfc.netdev ?? null } };
  const on = pfc.enabled.flatMap((e, p) => (e ? [p] : []));
  const dcbx = pfc.dcbx && pfc.dcbx.length > 0 ? `, DCBX ${pfc.dcbx.join('+')}` : '';
  const values = { netdev: pfc.netdev, pfcEnabledPriorities: on.join(','), pfcCap: pfc.pfcCap };
  if (on.length === 0) {
    return { check: 'pfc', verdict: 'warn', values, detail: `PFC is off on every priority of ${pfc.netdev}${dcbx}: RoCE runs lossy, a drop costs a retransmission` };
  }
  return { check: 'pfc', verdict: 'ok', values, detail: `PFC enabled on priority ${on.join(', ')} of ${pfc.netdev} (pfc_cap ${pfc.pfcCap}${dcbx}); RoCE traffic must use one of them` };
}

export function ecnFinding(port: SampledPort): HostFinding {
  const total = (family: string): number | undefined => {
    const s = healthSeries(port).filter((x) => x.family === family);
    return s.length === 0 ? undefined : s.reduce((n, x) => n + x.value, 0);
  };
  const [marked, sent, handled, ignored] = ['ecn_marked_packets', 'cnp_sent', 'cnp_handled', 'cnp_ignored'].map(total);
  if ([marked, sent, handled, ignored].every((v) => v === undefined)) {
    return { check: 'ecn', verdict: 'unknown', detail: 'the driver exposes no ECN or CNP counters for this port' };
  }
  const values = { ecnMarkedPackets: marked ?? null, cnpSent: sent ?? null, cnpHandled: handled ?? null, cnpIgnored: ignored ?? null };
  const fmt = (v: number | undefined): string => (v === undefined ? 'n/a' : String(v));
  const counts = `ECN-marked ${fmt(marked)}, CNP sent ${fmt(sent)}, handled ${fmt(handled)}, ignored ${fmt(ignored)} since the driver loaded`;
  if ((ignored ?? 0) > 0 && (handled ?? 0) === 0) {
    return { check: 'ecn', verdict: 'warn', values, detail: `every CNP received was ignored: the adapter's ECN reaction point (DCQCN) is off (${counts})` };
  }
  return { check: 'ecn', verdict: 'ok', values, detail: counts };
}

export function vlanFinding(a: PortAssumptions, l2HeaderBytes: number): HostFinding {
  const values = { netdev: a.netdev ?? null, vlan: a.vlan ?? null, l2HeaderBytes };
  if (a.vlan === undefined) return { check: 'vlan', verdict: 'unknown', values, detail: a.netdev === undefined ? 'the port has no netdev' : `sysfs does not say whether ${a.netdev} is a VLAN` };
  const tagged = l2HeaderBytes >= VLAN_L2_HEADER_BYTES;
  if (a.vlan && !tagged) {
    return { check: 'vlan', verdict: 'warn', values, detail: `${a.netdev} is a VLAN on ${a.lowerNetdev ?? 'another netdev'}: every frame carries a 4-byte 802.1Q tag, but the profile counts l2HeaderBytes ${l2HeaderBytes}; use ${VLAN_L2_HEADER_BYTES}` };
  }
  if (!a.vlan && tagged) {
    return { check: 'vlan', verdict: 'warn', values, detail: `${a.netdev} is not a VLAN, but the profile counts l2HeaderBytes ${l2HeaderBytes} (a tagged header); untagged frames have 14` };
  }
  return { check: 'vlan', verdict: 'ok', values, detail: `${a.netdev} ${a.vlan ? 'is a VLAN' : 'is untagged'}, as the profile's l2HeaderBytes ${l2HeaderBytes} assumes` };
}
