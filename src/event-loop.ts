/**
 * Long work done beside the event loop (a reload of 10,000 flows, the exposition of 60,000
 * series) gives the loop a turn between slices, so scrapes and /-/healthy are never stalled
 * for long. One way to do it, here.
 */

/** Lets the event loop turn once (timers, I/O, a scrape) before the caller goes on. */
export function loopTurn(): Promise<void> {
  return new Promise<void>((resolve) => setImmediate(resolve));
}

/** Work in slices of about `sliceMs`: pause() lets the loop turn once the current slice has taken that long. */
export class TimeSlices {
  private start = performance.now();

  constructor(private readonly sliceMs: number) {}

  async pause(): Promise<void> {
    if (performance.now() - this.start < this.sliceMs) return;
    await loopTurn();
    this.restart();
  }

  /** A new slice starts now (the caller has just waited on something else, so the loop turned). */
  restart(): void {
    this.start = performance.now();
  }
}
