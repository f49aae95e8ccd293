/**
 * When the connections are read: on the sampling ticks (after the ports and domains of the tick,
 * model/same-tick.ts), at least `connections.interval` apart within half a sampling interval, so
 * an interval below the sampling interval reads on every tick. Pure.
 */
export interface ConnectionsSchedule {
  readonly samplingIntervalMs: number;
  readonly connectionsIntervalMs: number;
}

/** Whether a tick `sinceLastMs` after the last connections read (undefined: none yet) reads them. */
export function connectionsDue(s: ConnectionsSchedule, sinceLastMs: number | undefined): boolean {
  return sinceLastMs === undefined || sinceLastMs >= s.connectionsIntervalMs - s.samplingIntervalMs / 2;
}

/** How far apart connections reads are when every tick comes on time: the first tick due. */
export function connectionsReadGapMs(s: ConnectionsSchedule): number {
  const ticks = Math.max(1, Math.ceil((2 * s.connectionsIntervalMs - s.samplingIntervalMs) / (2 * s.samplingIntervalMs)));
  return ticks * s.samplingIntervalMs;
}
