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

/**
 * What paces one device's reads besides `connections.interval`: a driver that answers each QP
 * of a dump with a firmware command (mlx5: one QUERY_QP per QP) is asked for at most
 * `queriesPerSecond` QPs a second, so a device with more QPs is read further apart; but never
 * further apart than its fastest port may leave its PSNs unread (psn.ts psnReadLimitMs).
 */
export interface DeviceBudget {
  /** QPs in the device's last QP dump (each one query); undefined before its first read. */
  readonly qps: number | undefined;
  /** The budget; undefined when the driver answers from memory (rxe) and nothing is paced. */
  readonly queriesPerSecond: number | undefined;
  /** The PSN wrap limit of the device's fastest port; undefined while unknown. */
  readonly limitMs: number | undefined;
}

export interface DeviceInterval {
  /** The interval the device is read at (connectionsDue with it in place of connections.interval). */
  readonly intervalMs: number;
  /** How far apart its reads come when every tick is on time (connectionsReadGapMs). */
  readonly gapMs: number;
  /**
   * The interval the budget asks for is past what the PSN limit allows: the device is read at the
   * limit instead, more often than the budget (its queries per second above it).
   */
  readonly overBudget: boolean;
}

/**
 * The read interval of one device: the configured one, stretched to `qps / queriesPerSecond`
 * seconds (rounded up to whole sampling intervals), and capped so that its reads come at least half a sampling interval inside the PSN
 * limit (a tick that comes late then still reads in time). The cap never goes below the configured
 * interval (the config was checked against the limit: config/connections-gap.ts).
 */
export function deviceReadInterval(s: ConnectionsSchedule, b: DeviceBudget): DeviceInterval {
  const perBudgetMs = b.qps !== undefined && b.queriesPerSecond !== undefined && b.queriesPerSecond > 0 ? (b.qps * 1000) / b.queriesPerSecond : 0;
  // Whole ticks, rounded up: reads come on the ticks, and a gap shorter than asked is over budget.
  const budgetMs = Math.ceil(perBudgetMs / s.samplingIntervalMs - 1e-9) * s.samplingIntervalMs;
  let intervalMs = Math.max(s.connectionsIntervalMs, budgetMs);
  let overBudget = false;
  if (b.limitMs !== undefined) {
    const ticks = Math.max(1, Math.floor(b.limitMs / s.samplingIntervalMs - 0.5));
    const capMs = Math.max(s.connectionsIntervalMs, ticks * s.samplingIntervalMs);
    if (intervalMs > capMs) {
      overBudget = budgetMs > capMs;
      intervalMs = capMs;
    }
  }
  return { intervalMs, gapMs: connectionsReadGapMs({ samplingIntervalMs: s.samplingIntervalMs, connectionsIntervalMs: intervalMs }), overBudget };
}
