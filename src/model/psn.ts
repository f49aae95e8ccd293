/**
 * Packets from packet sequence numbers. A PSN is 24 bits (IBTA BTH; rxe BTH_PSN_MASK 0xffffff)
 * and advances by one per packet a QP sends (sq_psn) or accepts (rq_psn), so the packets between
 * two reads are the forward distance modulo 2^24, counted from the highest PSN seen: a retry
 * moves the PSN back (rxe req_retry() sets req.psn to comp.psn) and the packets it resends are
 * not new traffic. A backwards move is a rewind, counted, never negative traffic.
 *
 * "Forward" is the nearer way round: a distance of 2^23 or more is taken as a move backwards.
 * A QP that sends 2^23 packets (8,388,608) between two reads would be read wrong; at 100 Gb/s
 * with 4 KiB payloads that is about 2.7 s, so reads must come more often than that
 * (psnReadLimitMs): config/load.ts refuses a set schedule that cannot, and a read that comes later
 * counts nothing (model/connections.ts) unless the port's own counters show that it moved fewer
 * than PSN_COUNTED_SAFE packets each way between the two reads (psnSafeByCount).
 */
const PSN_BITS = 24;
export const PSN_MODULUS = 2 ** PSN_BITS;
const HALF = PSN_MODULUS / 2;

export interface PsnCount {
  /** The highest PSN seen (modulo 2^24, in the forward sense). */
  readonly highest: number;
  /**
   * Whether the PSN has been read in a state that sets it (psnSetIn): until then the kernel
   * reports a value no packet moved (rxe: 0), and nothing is counted from it.
   */
  readonly started: boolean;
  /** Packets counted since the baseline. */
  readonly packets: number;
  /** Reads that found the PSN behind the highest. */
  readonly rewinds: number;
}

/**
 * Whether a QP in `state` holds a PSN the traffic set. IBA vol. 1 11.2.4.2 (modify QP): the receive
 * PSN is an attribute of the move to RTR, the send PSN of the move to RTS; before, a QP reports
 * whatever it was created with (rxe_qp_to_attr reports resp.psn and req.psn, zero until
 * rxe_qp_from_attr sets them, while rdma_cm starts each side at a random 24-bit PSN). A state the
 * tracker does not know counts as set, as before it knew any.
 */
export function psnSetIn(state: string, which: 'sq' | 'rq'): boolean {
  if (state === 'RESET' || state === 'INIT') return false;
  return which === 'rq' || state !== 'RTR';
}

/** First sight: the baseline, no packets; `started` false when the QP's state has not set the PSN yet. */
export function psnBaseline(psn: number, started = true): PsnCount {
  return { highest: psn % PSN_MODULUS, started, packets: 0, rewinds: 0 };
}

/** The forward distance from `from` to `to` modulo 2^24, or a negative one when `to` is behind. */
export function psnDistance(from: number, to: number): number {
  const d = (((to - from) % PSN_MODULUS) + PSN_MODULUS) % PSN_MODULUS;
  return d >= HALF ? d - PSN_MODULUS : d;
}

/**
 * The count after a read of `psn`; `set`: the QP's state sets the PSN (psnSetIn). A read of an
 * unset PSN counts nothing; the first set one is the baseline (the jump from the creation value
 * to the random start is no traffic: counted, it invented up to 2^23 packets or a rewind that
 * held every later packet uncounted).
 */
export function psnAdvance(c: PsnCount, psn: number, set = true): PsnCount {
  if (!set) return c;
  if (!c.started) return { highest: psn % PSN_MODULUS, started: true, packets: c.packets, rewinds: c.rewinds };
  const d = psnDistance(c.highest, psn);
  if (d > 0) return { highest: psn % PSN_MODULUS, started: true, packets: c.packets + d, rewinds: c.rewinds };
  if (d < 0) return { ...c, rewinds: c.rewinds + 1 };
  return c;
}

/** A new QP behind the same connection (or a read too late to count): its own PSN space, the counts go on from it. */
export function psnRebase(c: PsnCount, psn: number, set = true): PsnCount {
  return { highest: psn % PSN_MODULUS, started: set, packets: c.packets, rewinds: c.rewinds };
}

/**
 * The longest two reads of a QP's PSNs may be apart: under the time its port takes to send 2^23
 * packets of `payloadBytes` (its MTU) at `bitsPerSecond` (its link rate). MTU-sized packets are
 * what MXL's grain transfers send; headers are not counted, so the limit errs early.
 */
export function psnReadLimitMs(bitsPerSecond: number, payloadBytes: number): number {
  return (HALF * payloadBytes * 8 * 1000) / bitsPerSecond;
}

/**
 * Packets a port may count, in one direction, between two reads of its QPs for those reads to be
 * usable however long apart they were: no QP of the port can have sent (or received) more than
 * the port did, and half of 2^23 leaves the other half for the packets of the skew between the
 * counters' read and the dump's (both in one tick, milliseconds apart).
 */
export const PSN_COUNTED_SAFE = HALF / 2;

/** Whether what a port counted between two reads of its QPs (`counted`: the larger direction) rules a wrap out. */
export function psnSafeByCount(counted: number | undefined): boolean {
  return counted !== undefined && counted >= 0 && counted < PSN_COUNTED_SAFE;
}
