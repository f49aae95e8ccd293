/**
 * Measurement sources: what a NIC port is and what its counters say.
 *
 * Every source sits behind these two small interfaces so the sampler never
 * knows whether a number came from libibverbs, RDMA netlink, sysfs or the
 * netdev. Reads are synchronous on purpose: a sysfs pread or a netlink
 * round trip costs microseconds, and the sampler runs off the request path.
 */

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

/** Lists ports and reads their attributes (libibverbs, or sysfs). */
export interface PortInventory {
  readonly kind: 'verbs' | 'sysfs';
  listPorts(): PortRef[];
  /** Undefined when the port no longer exists. */
  readAttributes(ref: PortRef): PortAttributes | undefined;
  /**
   * Just the state, for the ticks between full attribute reads (a GID table scan is most of a
   * tick's cost on mlx5). Undefined when the port no longer exists. Without it every tick
   * reads the full attributes.
   */
  readState?(ref: PortRef): Pick<PortAttributes, 'state' | 'physState'> | undefined;
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

export type CounterValue =
  | { readonly ok: true; readonly value: bigint }
  | { readonly ok: false; readonly error: string };

/**
 * A set's reads as plain descriptors, so the sampler can run them on a worker thread and
 * bound a read that blocks (a hung driver's show()).
 */
export interface ReadPlan {
  /** Directory whose disappearance (or replacement: another dev/ino) means the set is gone. */
  readonly watch?: { readonly dir: string; readonly dev?: number; readonly ino?: number };
  /** One entry per counter, in counter order: an open descriptor, or the error its open gave. */
  readonly fds: readonly (number | string)[];
  /** 0: pread at offset 0 (a sysfs attribute runs show() again); null: read(2) a stream. */
  readonly position: 0 | null;
}

/** One source's open counters for one port; read() returns values in `counters` order. */
export interface PortCounterSet {
  readonly kind: CounterSourceKind;
  readonly port: PortRef;
  readonly counters: readonly CounterSpec[];
  read(): CounterValue[];
  /** File-backed sets describe their reads; undefined once closed. Others are read with read(). */
  readPlan?(): ReadPlan | undefined;
  close(): void;
}

/** Opens the counters it has for a port; undefined when it has none for that port. */
export interface CounterSource {
  readonly kind: CounterSourceKind;
  open(attrs: PortAttributes): PortCounterSet | undefined;
  close(): void;
}
