/**
 * Measurement sources: what a NIC port is and what its counters say.
 *
 * Every source sits behind these small interfaces so the sampler never knows whether a number
 * came from libibverbs, RDMA netlink, sysfs or the netdev. Each read is a read program
 * (src/reads/program.ts): the sampler runs them on the bounded reader, off the event loop and
 * with a timeout; runSync() runs the same programs on the caller's thread (the CLI, tests).
 */
import type { ReadProgram } from '../reads/program.js';
import type { ReadError } from '../reads/errors.js';

import { type Direction, DIRECTIONS, type PortRef, portKey } from '../ports.js';
export { type Direction, DIRECTIONS, type PortRef, portKey };

import type { Layer } from '../model/bandwidth.js';
export type { Layer };

/** Where a counter value comes from, most preferred first. */
export type CounterSourceKind = 'netlink' | 'sysfs_counters' | 'sysfs_hw_counters' | 'netdev' | 'ethtool';


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
  /**
   * The active IB MTU, where the state's read answers it too (ibv_query_port: one struct). A
   * netdev MTU change moves it without a state change (rxe_notify NETDEV_CHANGEMTU, rxe_net.c):
   * the sampler reads the attributes again the same tick, not at the port's turn.
   */
  readonly activeIbMtu?: number;
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

type CounterBits = 4 | 8 | 16 | 32 | 64;

export interface CounterSpec {
  /** The driver's own name (port_xmit_data, sent_pkts, tx_bytes...). */
  readonly name: string;
  /**
   * PMA counters (IBA PortCounters: 4, 8, 16 or 32 bits) saturate at all ones of their width;
   * 32-bit Q-counters wrap; 64-bit ones do neither.
   */
  readonly bits: CounterBits;
  readonly overflow: 'saturate' | 'wrap';
  readonly meaning: CounterMeaning | undefined;
}

import type { CounterNumber } from '../reads/counter-bytes.js';
export type { CounterNumber };

/** One counter's read: the value, or why there is none (readErrorText() renders it for logs and `ports`). */
export type CounterValue =
  | { readonly ok: true; readonly value: CounterNumber }
  | { readonly ok: false; readonly error: ReadError };

/**
 * A set's values as numbers, read into typed arrays the set keeps and overwrites at its next
 * read: counter i's value is `high[i] * 2^32 + low[i]` when `errors[i]` is undefined. Nothing is
 * allocated per value.
 */
export interface CounterReadings {
  readonly low: Uint32Array;
  readonly high: Uint32Array;
  readonly errors: readonly (ReadError | undefined)[];
}

/** A u64 in 32-bit halves as a CounterNumber (a number below 2^53, else a bigint). */
function joinCounter(low: number, high: number): CounterNumber {
  return high < 2 ** 21 ? high * 2 ** 32 + low : (BigInt(high) << 32n) | BigInt(low);
}

/** What one read of a counter set found. */
export type SetRead =
  /** `values[i]` is the read of `counters[i]`; the list may differ from the last read (netlink). */
  | { readonly kind: 'values'; readonly counters: readonly CounterSpec[]; readonly values: readonly CounterValue[] }
  /** The same as numbers (sysfs: parsed by the reader); valid until the set is read again. */
  | { readonly kind: 'readings'; readonly counters: readonly CounterSpec[]; readonly readings: CounterReadings }
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
  close(): void;
}

/** Opens the counters it has for a port; undefined when it has none for that port. */
export interface CounterSource {
  readonly kind: CounterSourceKind;
  /** Sources whose counters this one's set already reports for the same port (not read twice). */
  readonly covers?: readonly CounterSourceKind[];
  openReads(attrs: PortAttributes): ReadProgram<PortCounterSet | undefined>;
  close(): void;
}

/** The values of a read that found its set gone, as people read them. */
function goneValues(read: Extract<SetRead, { kind: 'gone' }>, count: number): CounterValue[] {
  const error = goneError(read);
  return Array.from({ length: count }, () => ({ ok: false, error }));
}

/** Why a set that is gone has no values, as people read it. */
export function goneError(read: Extract<SetRead, { kind: 'gone' }>): ReadError {
  if (read.reason === 'changed') return { code: 'ESTALE', op: 'read', detail: `${read.what}; reopen` };
  return read.reason === 'vanished' ? { code: 'ENOENT', op: 'stat', path: read.dir, detail: `${read.dir} vanished` }
    : { code: 'ESTALE', op: 'stat', path: read.dir, detail: `${read.dir} was re-created; reopened` };
}

/** A SetRead as one value per counter. */
export function valuesOf(read: SetRead, count: number): CounterValue[] {
  if (read.kind === 'values') return [...read.values];
  if (read.kind === 'gone') return goneValues(read, count);
  const { low, high, errors } = read.readings;
  return read.counters.map((_, i): CounterValue => {
    const error = errors[i];
    return error === undefined ? { ok: true, value: joinCounter(low[i]!, high[i]!) } : { ok: false, error };
  });
}
