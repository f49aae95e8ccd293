/**
 * Two CounterSources over a port's sysfs directory:
 *  - sysfs_counters:    ports/N/counters/    (the IB PMA PortCounters[Ext] attributes)
 *  - sysfs_hw_counters: ports/N/hw_counters/ (the driver's rdma_hw_stats)
 * Every file found becomes a counter; unknown names are exported with no meaning rather than
 * dropped (node_exporter's infiniband collector drops them, so rxe's sent_pkts never appear).
 */
import * as path from 'node:path';
import type {
  CounterNumber,
  CounterMeaning,
  CounterSource,
  CounterSourceKind,
  CounterSpec,
  PortAttributes,
  PortCounterSet,
} from '../types.js';
import { driverReads, type RdmaDriver } from './driver.js';
import { type CounterFile, FileCounterSet } from './fileset.js';
import { parseCounterBytes } from '../../reads/counter-bytes.js';
import { DIR_READ_BYTES, ibPortDir, isSafeName, resolveRoot, type SysfsOptions } from './paths.js';
import { type ReadProgram, withoutReads, namesOf, read } from '../../reads/program.js';

// ---------------------------------------------------------------------------------------------
// counters/ (PMA)

/**
 * port_xmit_data/port_rcv_data count octets divided by 4 (Documentation/ABI/stable/
 * sysfs-class-infiniband; IBA PortCounters), hence scale 4. Layer 'l2', chosen because:
 *  - the IBA counts every octet of the link-layer packet between the start and end delimiters
 *    (LRH..VCRC on InfiniBand), i.e. the whole frame, not an L3 packet;
 *  - on RoCE, mlx5 fills it from the vport RDMA octet counters, (transmitted_ib_unicast.octets +
 *    transmitted_ib_multicast.octets) >> 2 (pma_cnt_ext_assign(), drivers/infiniband/hw/mlx5/
 *    mad.c), the counters ethtool calls tx_vport_rdma_unicast_bytes, siblings of the Ethernet
 *    vport byte counters that count frames like the netdev does (header, no FCS).
 * RDMA traffic only. This is inferred from the driver, not measured on hardware: if ConnectX
 * turns out to count from the IP header, measured bytes will sit 14 bytes per packet below l2.
 */
const PMA_MEANINGS: Readonly<Record<string, CounterMeaning>> = {
  port_xmit_data: { direction: 'tx', quantity: 'bytes', scale: 4, layer: 'l2' },
  port_rcv_data: { direction: 'rx', quantity: 'bytes', scale: 4, layer: 'l2' },
  port_xmit_packets: { direction: 'tx', quantity: 'packets', scale: 1 },
  port_rcv_packets: { direction: 'rx', quantity: 'packets', scale: 1 },
};

/**
 * Files whose width depends on the PMA's extended-width capability. drivers/infiniband/core/
 * sysfs.c get_counter_table() picks pma_group_ext (IB_PMA_CLASS_CAP_EXT_WIDTH: these four plus
 * unicast_/multicast_ packets, all 64-bit PortCountersExt), pma_group_noietf
 * (IB_PMA_CLASS_CAP_EXT_WIDTH_NOIETF: these four 64-bit, no unicast_/multicast_), or pma_group
 * (these four 32-bit from PortCounters, saturating at all ones).
 */
const PMA_WIDE_CAPABLE = ['port_xmit_data', 'port_rcv_data', 'port_xmit_packets', 'port_rcv_packets'];
const PMA_EXT_ONLY = ['unicast_xmit_packets', 'unicast_rcv_packets', 'multicast_xmit_packets', 'multicast_rcv_packets'];
const U32_MAX = 0xffff_ffff;

/** Which PMA attribute group the kernel created, inferred from the files it left us. */
export type PmaWidth = 'ext' | 'noietf' | 'legacy32';

/**
 * sysfs does not print the capability mask, but the groups differ in files: unicast_* exist only
 * in pma_group_ext. Without them the group is pma_group or pma_group_noietf, which have the same
 * file names; a value above 2^32-1 can only come from the 64-bit one, otherwise assume 32-bit
 * (the conservative reading: a saturated value is flagged rather than trusted).
 */
export function detectPmaWidth(names: readonly string[], readValue: (name: string) => CounterNumber | undefined): PmaWidth {
  if (PMA_EXT_ONLY.some((n) => names.includes(n))) return 'ext';
  const wide = PMA_WIDE_CAPABLE.some((n) => (readValue(n) ?? 0) > U32_MAX);
  return wide ? 'noietf' : 'legacy32';
}

/** detectPmaWidth() with the values read in one batch (none when the ext-only files say it). */
function* pmaWidthReads(dir: string, names: readonly string[]): ReadProgram<PmaWidth> {
  if (PMA_EXT_ONLY.some((n) => names.includes(n))) return 'ext';
  const wide = PMA_WIDE_CAPABLE.filter((n) => names.includes(n));
  const r = yield* read(wide.map((n) => ({ kind: 'readFile' as const, path: path.join(dir, n), max: 32 })));
  const values = new Map(wide.map((n, i) => [n, r.ok(i) ? parseCounterBytes(r.bytes(i)) : undefined]));
  return detectPmaWidth(names, (n) => values.get(n));
}

/**
 * The PortCounters fields narrower than 32 bits (IBA vol. 1, PortCounters; drivers/infiniband/
 * core/sysfs.c PORT_PMA_ATTR(name, counter, width, offset) reads each at its own width). Every
 * PortCounters field saturates at all ones; port_xmit_wait and the data and packet counters of
 * PortCounters are 32 bits, as is any file not named here.
 */
const PMA_NARROW: ReadonlyMap<string, 4 | 8 | 16> = new Map(Object.entries({
  symbol_error: 16,
  link_error_recovery: 8,
  link_downed: 8,
  port_rcv_errors: 16,
  port_rcv_remote_physical_errors: 16,
  port_rcv_switch_relay_errors: 16,
  port_xmit_discards: 16,
  port_xmit_constraint_errors: 8,
  port_rcv_constraint_errors: 8,
  local_link_integrity_errors: 4,
  excessive_buffer_overrun_errors: 4,
  VL15_dropped: 16,
} as const));

export function pmaCounterSpec(name: string, width: PmaWidth): CounterSpec {
  const is64 = PMA_EXT_ONLY.includes(name) || (width !== 'legacy32' && PMA_WIDE_CAPABLE.includes(name));
  return is64
    ? { name, bits: 64, overflow: 'wrap', meaning: PMA_MEANINGS[name] }
    : { name, bits: PMA_NARROW.get(name) ?? 32, overflow: 'saturate', meaning: PMA_MEANINGS[name] };
}

// ---------------------------------------------------------------------------------------------
// hw_counters/ (driver rdma_hw_stats)

/**
 * `lifespan` is not a counter: it is the writable cache period in milliseconds that the core adds
 * to every hw_counters group (alloc_hsa_lifespan()/ib_setup_device_attrs() in
 * drivers/infiniband/core/sysfs.c; Documentation/ABI/stable/sysfs-class-infiniband).
 */
const HW_NOT_COUNTERS = new Set(['lifespan']);

const HW_MEANINGS: Partial<Record<RdmaDriver, Readonly<Record<string, CounterMeaning>>>> = {
  // drivers/infiniband/sw/rxe/rxe_hw_counters.c; packets only (measured: sent_pkts counts one per
  // MTU-sized RoCE packet, rcvd_pkts includes ACKs). Bytes for rxe come from the netdev.
  rxe: {
    sent_pkts: { direction: 'tx', quantity: 'packets', scale: 1 },
    rcvd_pkts: { direction: 'rx', quantity: 'packets', scale: 1 },
  },
  // drivers/infiniband/hw/bnxt_re/hw_counters.c: tx_/rx_ pkts and bytes are the RoCE function's
  // ctx_hw_stats unicast counters, the same hardware statistics bnxt_en sums into the netdev's
  // rtnl byte counters, hence 'l2' (unverified on hardware).
  bnxt_re: {
    tx_pkts: { direction: 'tx', quantity: 'packets', scale: 1 },
    rx_pkts: { direction: 'rx', quantity: 'packets', scale: 1 },
    tx_bytes: { direction: 'tx', quantity: 'bytes', scale: 1, layer: 'l2' },
    rx_bytes: { direction: 'rx', quantity: 'bytes', scale: 1, layer: 'l2' },
  },
};

/**
 * mlx5 (drivers/infiniband/hw/mlx5/counters.c): Q-counters are 32-bit hardware fields read with
 * be32_to_cpu() in mlx5_ib_query_q_counters() and wrap; the congestion counters (cong_cnts,
 * read from query_cong_statistics_out *_high/_low), the PPCNT extended counter
 * rx_icrc_encapsulated (be64) and the optional op counters (flow counters, u64) are 64-bit.
 */
const MLX5_64BIT = new Set([
  'rp_cnp_ignored',
  'rp_cnp_handled',
  'np_ecn_marked_roce_packets',
  'np_cnp_sent',
  'rx_icrc_encapsulated',
  'cc_rx_ce_pkts',
  'cc_rx_cnp_pkts',
  'cc_tx_cnp_pkts',
  'rdma_tx_packets',
  'rdma_tx_bytes',
  'rdma_rx_packets',
  'rdma_rx_bytes',
]);

export function hwCounterSpec(driver: RdmaDriver, name: string): CounterSpec {
  const meaning = HW_MEANINGS[driver]?.[name];
  if (driver === 'mlx5' && !MLX5_64BIT.has(name)) {
    return { name, bits: 32, overflow: 'wrap', meaning };
  }
  // rxe keeps atomic64_t counters (rxe_hw_counters.c), bnxt_re copies le64 hardware stats, and
  // the core stores every hw_counters value as u64 (struct rdma_hw_stats). An unknown driver
  // whose hardware field is narrower would wrap earlier; sysfs cannot tell us, so assume 64.
  return { name, bits: 64, overflow: 'wrap', meaning };
}

// ---------------------------------------------------------------------------------------------
// Sources

abstract class PortDirSource implements CounterSource {
  abstract readonly kind: CounterSourceKind;
  protected readonly root: string;
  private readonly sets = new Set<FileCounterSet>();

  constructor(options?: SysfsOptions) {
    this.root = resolveRoot(options);
  }

  openReads(attrs: PortAttributes): ReadProgram<PortCounterSet | undefined> {
    const portDir = this.portDir(attrs);
    return portDir === undefined ? withoutReads(undefined) : this.openDir(attrs, portDir);
  }

  close(): void {
    for (const set of [...this.sets]) set.close();
  }

  protected abstract readonly subdir: string;
  protected abstract specReads(attrs: PortAttributes, dir: string, names: readonly string[]): ReadProgram<CounterSpec[]>;

  private *openDir(attrs: PortAttributes, portDir: string): ReadProgram<PortCounterSet | undefined> {
    const dir = path.join(portDir, this.subdir);
    const listing = yield* read([{ kind: 'readDir', path: dir, max: DIR_READ_BYTES }]);
    const names = ((yield* namesOf(listing, 0, dir)) ?? []).filter((n) => isSafeName(n) && !HW_NOT_COUNTERS.has(n)).sort();
    if (names.length === 0) return undefined;
    const specs = yield* this.specReads(attrs, dir, names);
    const files: CounterFile[] = specs.map((spec) => ({ spec, file: path.join(dir, spec.name) }));
    const port = { device: attrs.device, port: attrs.port };
    const set = yield* FileCounterSet.openReads(this.kind, port, files, portDir, (s) => this.sets.delete(s));
    this.sets.add(set);
    return set;
  }

  private portDir(attrs: PortAttributes): string | undefined {
    try {
      return ibPortDir(this.root, attrs.device, attrs.port);
    } catch {
      return undefined;
    }
  }
}

export class SysfsCountersSource extends PortDirSource {
  readonly kind = 'sysfs_counters' as const;
  protected readonly subdir = 'counters';

  protected *specReads(_attrs: PortAttributes, dir: string, names: readonly string[]): ReadProgram<CounterSpec[]> {
    const width = yield* pmaWidthReads(dir, names);
    return names.map((n) => pmaCounterSpec(n, width));
  }
}

export class SysfsHwCountersSource extends PortDirSource {
  readonly kind = 'sysfs_hw_counters' as const;
  protected readonly subdir = 'hw_counters';

  protected *specReads(attrs: PortAttributes, _dir: string, names: readonly string[]): ReadProgram<CounterSpec[]> {
    const driver = yield* driverReads(this.root, attrs.device, names);
    return names.map((n) => hwCounterSpec(driver, n));
  }
}
