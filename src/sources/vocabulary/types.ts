/**
 * The fabric-health vocabulary: one set of names for what every driver counts under its own.
 *
 * A driver counter either means one of these families (with its labels) or nothing here, in
 * which case it stays a raw `port_stat_total` series as before. The sets of `kind` and `reason`
 * values are defined once, here, and documented in docs/fabric-health.md.
 */
import type { Direction } from '../types.js';

/** Transport (RC) errors and retries, as `port_transport_errors_total{kind}`. */
export const TRANSPORT_ERROR_KINDS = {
  out_of_sequence: 'the responder received a packet with an unexpected PSN (a packet before it was lost)',
  packet_seq_err: 'the requester received a NAK-sequence-error and resends from the lost PSN',
  implied_nak: 'the requester inferred a lost packet from a later response (implied NAK) and resends',
  local_ack_timeout: 'the requester\'s ACK timer expired and it retransmitted',
  rnr_nak: 'the requester received an RNR NAK: the responder had no receive WQE posted',
  duplicate_request: 'the responder received a request it had already executed (a retransmission)',
  retries_exceeded: 'the requester gave up after its transport retry count: the QP went to the error state',
  rnr_retries_exceeded: 'the requester gave up after its RNR retry count: the QP went to the error state',
} as const;
export type TransportErrorKind = keyof typeof TRANSPORT_ERROR_KINDS;

/** Why a port dropped packets, as `port_discards_total{direction, reason}`. */
export const DISCARD_REASONS = {
  buffer: 'the port\'s packet buffer was full',
  congestion: 'dropped on transmission without an error (head-of-line drop, pause from the network)',
  no_receive_wqe: 'an RDMA packet arrived for a QP with no receive WQE posted',
  unspecified: 'the driver counts the drop without saying why',
} as const;
export type DiscardReason = keyof typeof DISCARD_REASONS;

/** `priority` label of the pause families: an 802.1Qbb PFC priority, or 802.3x link pause. */
export type PausePriority = '0' | '1' | '2' | '3' | '4' | '5' | '6' | '7' | 'global';
const PFC_PRIORITIES = [0, 1, 2, 3, 4, 5, 6, 7] as const;

/** What one driver counter means in the vocabulary: a family and that family's labels. */
export type HealthMeaning =
  | { readonly family: 'ecn_marked_packets' }
  | { readonly family: 'cnp_sent' }
  | { readonly family: 'cnp_handled' }
  | { readonly family: 'cnp_ignored' }
  | { readonly family: 'pause_frames'; readonly direction: Direction; readonly priority: PausePriority }
  /** `scale` turns the driver's unit into seconds (mlx5 and bnxt_en count microseconds). */
  | { readonly family: 'pause_duration'; readonly direction: Direction; readonly priority: PausePriority; readonly scale: number }
  | { readonly family: 'transport_errors'; readonly kind: TransportErrorKind }
  | { readonly family: 'discards'; readonly direction: Direction; readonly reason: DiscardReason };

export type HealthFamily = HealthMeaning['family'];

/** One driver counter name and what it means, with the kernel source the name comes from. */
export interface VocabularyEntry {
  readonly name: string;
  readonly meaning: HealthMeaning;
  /** Kernel file (and the table or function in it) that defines the name. */
  readonly from: string;
}

/**
 * One driver's names. `counters: 'rdma'` tables name hw counters (RDMA netlink, sysfs
 * hw_counters/); `counters: 'ethtool'` tables name the netdev's `ethtool -S` statistics.
 */
export interface DriverTable {
  readonly driver: string;
  readonly counters: 'rdma' | 'ethtool';
  /** Where the names were read: repository, commit, and what the table covers. */
  readonly source: string;
  readonly entries: readonly VocabularyEntry[];
}

// Small constructors, so the tables read as data.
export const ecnMarked = (): HealthMeaning => ({ family: 'ecn_marked_packets' });
export const cnp = (what: 'sent' | 'handled' | 'ignored'): HealthMeaning => ({ family: `cnp_${what}` });
export const transport = (kind: TransportErrorKind): HealthMeaning => ({ family: 'transport_errors', kind });
export const discard = (direction: Direction, reason: DiscardReason): HealthMeaning => ({ family: 'discards', direction, reason });
export const pauseFrames = (direction: Direction, priority: PausePriority): HealthMeaning => ({ family: 'pause_frames', direction, priority });
export const pauseDuration = (direction: Direction, priority: PausePriority, scale: number): HealthMeaning =>
  ({ family: 'pause_duration', direction, priority, scale });

/** Microseconds to seconds. */
export const MICROSECONDS = 1e-6;

/** One entry per PFC priority, for names the drivers print with the priority in them. */
export function perPriority(make: (p: PausePriority) => readonly VocabularyEntry[]): VocabularyEntry[] {
  return PFC_PRIORITIES.flatMap((p) => make(String(p) as PausePriority));
}

/** Receive first, as the drivers list their statistics. */
const RX_TX: readonly Direction[] = ['rx', 'tx'];

/** One entry per direction, for names the drivers print with `rx`/`tx` in them. */
export function perDirection(make: (d: Direction) => readonly VocabularyEntry[]): VocabularyEntry[] {
  return RX_TX.flatMap(make);
}

/** The entries of one kernel table (`from`): each name and its meaning, in the table's order. */
export function namesIn(from: string, names: Readonly<Record<string, HealthMeaning>>): VocabularyEntry[] {
  return Object.entries(names).map(([name, meaning]) => ({ name, meaning, from }));
}
