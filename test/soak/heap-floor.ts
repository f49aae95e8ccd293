/** What the soak reads of the daemon's heap: the lowest it reported in a stretch of the run. */

export interface HeapSample {
  /** Seconds since the soak started. */
  readonly t: number;
  readonly heap: number;
}

/** The lowest heap reported in [from, to); throws when no scrape reported one there (a check on nothing is no check). */
export function heapFloor(samples: readonly HeapSample[], from: number, to: number): number {
  let floor: number | undefined;
  for (const s of samples) if (s.t >= from && s.t < to && (floor === undefined || s.heap < floor)) floor = s.heap;
  if (floor === undefined) throw new Error(`no scrape reported the daemon's heap between ${from} s and ${to} s`);
  return floor;
}
