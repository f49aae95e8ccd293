/**
 * Measurement sources: what a NIC port is and what its counters say.
 *
 * Every source sits behind these small interfaces so the sampler never knows whether a number
 * came from libibverbs, RDMA netlink, sysfs or the netdev. Each read is a read program
 * (src/reads/program.ts): the sampler runs them on the bounded reader, off the event loop and
 * with a timeout; the synchronous methods run the same programs on the caller's thread (the
 * CLI, tests).
 */
import type { ReadProgram } from '../reads/program.js';

export type Direction = 'tx' | 'rx';
export const DIRECTIONS: readonly Direction[] = ['tx', 'rx'];

import type { Layer } from '../model/bandwidth.js';
export type { Layer };

/** Where a counter value comes from, most preferred first. */
export type CounterSourceKind = 'netlink' | 'sysfs_counters' | 'sysfs_hw_counters' | 'netdev' | 'ethtool';

export interface PortRef {
  readonly device: string;
  readonly port: number;
}

/** "mlx5_0/1": the one key a port goes by in maps, logs and messages. */
export const portKey = (p: PortRef): string => `${p.device}/${p.port}`;

export type LinkLayer = 'Ethernet' | 'InfiniBand' | 'unknown';

/** What a port is, as read this tick. */
export interface PortAttributes extends PortRef {
  /** IB port state name: DOWN, INIT, ARMED, ACTIVE, ACTIVE_DEFER, NOP. */
  readonly state: string;
  readonly physState: string | undefined;
  readonly linkLayer: LinkLayer;
  /** Active IB MTU in bytes (256..4096): RDMA payload per packet. */
  readonly activeIbMtu: number | undefined;
  /** Link rate in bits per second. */
  readonly rateBitsPerSecond: number | undefined;
  /** The Ethernet netdev behind a RoCE port (gid_attrs/ndevs), if any. */
  readonly netdev: string | undefined;
  /** Distinct GID types in the port's table, e.g. "RoCE v2". */
  readonly gidTypes: readonly string[];
  /** Which inventory produced these attributes. */
  readonly attributeSource: 'verbs' | 'sysfs';
}

export type PortState = Pick<PortAttributes, 'state' | 'physState'> & {
  /** Something the attributes come from changed without the state (the netdev's MTU): read them again. */
  readonly attributesStale?: boolean;
  /** The port's directory was re-created (driver reload): descriptors held on its files are stale. */
  readonly recreated?: boolean;
};

/** Lists ports and reads their attributes (libibverbs, or sysfs). */
export interface PortInventory {
  readonly kind: 'verbs' | 'sysfs';
  listReads(): ReadProgram<PortRef[]>;
  /** Whether the list may differ from `known` (a device came or went): a cheap check for every tick. */
  listChangedReads(known: readonly PortRef[]): ReadProgram<boolean>;
  /** Undefined when the port no longer exists. */
  attributeReads(ref: PortRef): ReadProgram<PortAttributes | undefined>;
  /**
   * Just the state, for the ticks between full attribute reads (a GID table scan is most of a
   * tick's cost on mlx5). Undefined when the port no longer exists.
   */
  stateReads(ref: PortRef): ReadProgram<PortState | undefined>;
  /** The port went away: let go of whatever is kept open for it. */
  forget(ref: PortRef): void;
  /** listReads() and attributeReads() run here and now. */
  listPorts(): PortRef[];
  readAttributes(ref: PortRef): PortAttributes | undefined;
  close(): void;
}

export type Quantity = 'bytes' | 'packets';

/** How a named counter maps onto the model, when it does. */
export interface CounterMeaning {
  readonly direction: Direction;
  readonly quantity: Quantity;
  /** Multiply the raw value by this to get the quantity (port_xmit_data counts octets / 4). */
  readonly scale: number;
  /** For bytes: which model layer the counter is comparable to. */
  readonly layer?: Layer;
}

export interface CounterSpec {
  /** The driver's own name (port_xmit_data, sent_pkts, tx_bytes...). */
  readonly name: string;
  /** 32-bit PMA counters saturate at all-ones; 32-bit Q-counters wrap; 64-bit ones do neither. */
  readonly bits: 32 | 64;
  readonly overflow: 'saturate' | 'wrap';
  readonly meaning: CounterMeaning | undefined;
}

/** A raw counter value: a number while it is exact (below 2^53), a bigint above. */
export type CounterNumber = number | bigint;

/** One counter's read: the value, or why there is none (for people: logs and `ports`). */
export type CounterValue =
  | { readonly ok: true; readonly value: CounterNumber }
  | { readonly ok: false; readonly error: string };

/** What one read of a counter set found. */
export type SetRead =
  /** `values[i]` is the read of `counters[i]`; the list may differ from the last read (netlink). */
  | { readonly kind: 'values'; readonly counters: readonly CounterSpec[]; readonly values: readonly CounterValue[] }
  /** The set's directory vanished, or was re-created (driver reload): its descriptors are stale. */
  | { readonly kind: 'gone'; readonly reason: 'vanished' | 'recreated'; readonly dir: string }
  /** The driver's list of counters changed under the set (ethtool: channels added): reopen it. */
  | { readonly kind: 'gone'; readonly reason: 'changed'; readonly what: string };

/** One source's open counters for one port. */
export interface PortCounterSet {
  readonly kind: CounterSourceKind;
  readonly port: PortRef;
  /** As of the last read (RDMA netlink reports counters an operator enabled since). */
  readonly counters: readonly CounterSpec[];
  reads(): ReadProgram<SetRead>;
  /** reads() here and now, as one value per counter (a set that is gone: every value an error). */
  read(): CounterValue[];
  close(): void;
}

/** Opens the counters it has for a port; undefined when it has none for that port. */
export interface CounterSource {
  readonly kind: CounterSourceKind;
  /** Sources whose counters this one's set already reports for the same port (not read twice). */
  readonly covers?: readonly CounterSourceKind[];
  openReads(attrs: PortAttributes): ReadProgram<PortCounterSet | undefined>;
  /** openReads() here and now. */
  open(attrs: PortAttributes): PortCounterSet | undefined;
  close(): void;
}

/** The values of a read that found its set gone, as people read them. */
export function goneValues(read: Extract<SetRead, { kind: 'gone' }>, count: number): CounterValue[] {
  const error = read.reason === 'changed' ? `ESTALE: ${read.what}; reopen`
    : read.reason === 'vanished' ? `ENOENT: ${read.dir} vanished` : `ESTALE: ${read.dir} was re-created; reopened`;
  return Array.from({ length: count }, () => ({ ok: false, error }));
}

/** A SetRead as one value per counter (set.read()). */
export function valuesOf(read: SetRead, count: number): CounterValue[] {
  return read.kind === 'values' ? [...read.values] : goneValues(read, count);
}
