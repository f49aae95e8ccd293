/**
 * Counts read together: at each connections read (the daemon reads the ports, then the MXL
 * domains, then the connection tables, in one sampling tick), the connections' packet counts,
 * the ports' packet counters of that tick and the flows' headIndex read in the same reader
 * request as the QP dumps. Ratios between them (coverage, packets per grain) are then deltas
 * between two such snapshots: every term over the same pair of ticks, never a rate over one
 * window divided by a rate over another. Under a loaded host the time between two reads of one
 * tick varies (soft-RoCE in a TCG guest: up to ~0.4 s between the domains' read and the last
 * device's dump), and that variation over a 60 s window was +0.7 % per grain: hence the
 * headIndex and every device's PSNs in one request, read back to back by one reader thread.
 * Pure: the caller says what was read and when.
 */

/** Packet totals of one port and direction as the tick read them. */
export interface PortTotals {
  readonly tx: number | undefined;
  readonly rx: number | undefined;
  /**
   * Set when both counters were read fine at this tick: the resets they have seen, so that two
   * totals with the same `unbroken` count every packet between them (no reset skipped a delta).
   */
  readonly unbroken?: number;
}

/** Packets a port counted from `then` to `now`, in the direction that counted more; undefined when the totals cannot say. */
export function countedBetween(then: PortTotals | undefined, now: PortTotals | undefined): number | undefined {
  if (then?.unbroken === undefined || then.unbroken !== now?.unbroken) return undefined;
  if (then.tx === undefined || then.rx === undefined || now.tx === undefined || now.rx === undefined) return undefined;
  return Math.max(now.tx - then.tx, now.rx - then.rx);
}

/** The port totals of the last few connections reads, by the time of the read. */
export class PortTotalsByRead {
  private readonly reads = new Map<number, ReadonlyMap<string, PortTotals>>();

  constructor(private readonly keep = 16) {}

  remember(atMs: number, ports: ReadonlyMap<string, PortTotals>): void {
    this.reads.set(atMs, ports);
    if (this.reads.size > this.keep) this.reads.delete(this.reads.keys().next().value!);
  }

  /** What port `portKey` counted since the read at `sinceMs`, up to `now` (this read's totals). */
  countedSince(portKey: string, sinceMs: number, now: ReadonlyMap<string, PortTotals>): number | undefined {
    return countedBetween(this.reads.get(sinceMs)?.get(portKey), now.get(portKey));
  }
}

/** What the ports and domains read in the tick of a connections read. */
export interface TickReadings {
  /** `device/port` -> packet counter totals (the port's preferred packet counters). */
  readonly ports: ReadonlyMap<string, PortTotals>;
  /** `domain\0flowId` -> headIndex (grains; samples for audio) as MXL wrote it, when the flow has committed. */
  readonly heads: ReadonlyMap<string, number>;
}

/** A connection's packet totals at a snapshot. */
interface ConnectionTotals {
  readonly sent: number;
  readonly received: number;
}

/** By connection key: the totals of the connections known at that read (a Map, or PackedTotals). */
interface TotalsAt {
  get(key: string): ConnectionTotals | undefined;
}

export interface Snapshot {
  readonly atMs: number;
  readonly connections: TotalsAt;
  readonly readings: TickReadings;
}

/**
 * A snapshot's totals packed in one Float64Array, two numbers a connection at the slot its key
 * has in TotalSlots: the window holds a snapshot a read (at 10,000 QPs and a 10 s window, five to
 * ten of them), and a Map of objects each would be megabytes that outlive V8's young generation.
 */
export class PackedTotals implements TotalsAt {
  constructor(private readonly slots: TotalSlots, private readonly totals: Float64Array) {}

  get(key: string): ConnectionTotals | undefined {
    const i = this.slots.slotOf(key);
    if (i === undefined || 2 * i + 1 >= this.totals.length || Number.isNaN(this.totals[2 * i]!)) return undefined;
    return { sent: this.totals[2 * i]!, received: this.totals[2 * i + 1]! };
  }
}

/** Slots by connection key, shared by one window's PackedTotals (a key keeps its slot while the window lasts). */
export class TotalSlots {
  private readonly slots = new Map<string, number>();

  slotOf(key: string): number | undefined {
    return this.slots.get(key);
  }

  /**
   * `connections`' totals packed; undefined when the slots must be made anew first (more than
   * half of them are keys no longer met): the caller clears its window, and this.reset().
   */
  pack(connections: readonly { readonly key: string; readonly sent: number; readonly received: number }[]): PackedTotals | undefined {
    if (this.slots.size > 1024 && this.slots.size > 2 * connections.length) return undefined;
    for (const c of connections) if (!this.slots.has(c.key)) this.slots.set(c.key, this.slots.size);
    const totals = new Float64Array(2 * this.slots.size).fill(Number.NaN);
    for (const c of connections) {
      const i = this.slots.get(c.key)!;
      totals[2 * i] = c.sent;
      totals[2 * i + 1] = c.received;
    }
    return new PackedTotals(this, totals);
  }

  reset(): void {
    this.slots.clear();
  }
}

export const headKey = (domain: string, flowId: string): string => `${domain}\0${flowId}`;

/** The snapshots of the last window, oldest first. */
export class SameTickWindow {
  private snapshots: Snapshot[] = [];

  /** Adds the newest and forgets those older than `windowMs` before it. */
  push(s: Snapshot, windowMs: number): void {
    this.snapshots = [...this.snapshots.filter((o) => o.atMs >= s.atMs - windowMs && o.atMs < s.atMs), s];
  }

  /** Oldest and newest of the window; undefined until there are two. */
  span(): { readonly oldest: Snapshot; readonly newest: Snapshot } | undefined {
    const n = this.snapshots.length;
    return n < 2 ? undefined : { oldest: this.snapshots[0]!, newest: this.snapshots[n - 1]! };
  }

  clear(): void {
    this.snapshots = [];
  }
}

/**
 * Packets a connection moved between two snapshots in one direction. A connection first seen
 * after `oldest` counts from its first sight (its baseline); one gone by `newest` counts nothing.
 */
export function connectionDelta(oldest: Snapshot, newest: Snapshot, key: string, direction: 'tx' | 'rx'): number | undefined {
  const b = newest.connections.get(key);
  if (b === undefined) return undefined;
  const a = oldest.connections.get(key);
  const pick = (t: ConnectionTotals | undefined): number => (t === undefined ? 0 : direction === 'tx' ? t.sent : t.received);
  return Math.max(0, pick(b) - pick(a));
}

/** The port's packets between two snapshots; undefined when either did not read it. */
export function portDelta(oldest: Snapshot, newest: Snapshot, port: string, direction: 'tx' | 'rx'): number | undefined {
  const a = oldest.readings.ports.get(port)?.[direction];
  const b = newest.readings.ports.get(port)?.[direction];
  return a === undefined || b === undefined ? undefined : b - a;
}

/** headIndex advance between two snapshots; undefined when either has none for the flow. */
export function headDelta(oldest: Snapshot, newest: Snapshot, domain: string, flowId: string): number | undefined {
  const k = headKey(domain, flowId);
  const a = oldest.readings.heads.get(k);
  const b = newest.readings.heads.get(k);
  return a === undefined || b === undefined ? undefined : b - a;
}
