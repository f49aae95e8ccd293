/**
 * When each device's connection tables are read (model/connections-schedule.ts): on the sampling
 * ticks, at least `connections.interval` apart, and, on a driver that answers every QP of a dump
 * with a firmware command, far enough apart that the device is asked for at most
 * `connections.qp_queries_per_second` QPs a second; never further apart than its fastest port's
 * PSN wrap limit allows (then it is read at that limit, over budget).
 *
 * What each driver pays per dumped QP (nldev.c fill_res_qp_entry_query() calls ib_query_qp() on
 * every QP of a dump, one at a time): mlx5 one QUERY_QP command on the firmware's command queue
 * (mlx5_ib_query_qp, drivers/infiniband/hw/mlx5/qp.c), mlx4 one QUERY_QP mailbox command
 * (mlx4_ib_query_qp), bnxt_re one firmware QUERY_QP (bnxt_qplib_query_qp); rxe copies the QP's
 * fields from memory (rxe_qp_to_attr) and is not paced. A driver not told apart is taken as one
 * that pays.
 */
import { type DeviceInterval, connectionsDue, deviceReadInterval } from '../../model/connections-schedule.js';
import type { ReadLimit } from '../../model/connections.js';
import type { RdmaDriver } from '../sysfs/driver.js';
import type { RdmaDeviceInfo } from '../netlink/rdma.js';

/** The config the schedule follows (asked at each tick: it follows reloads). */
export interface ReadPacing {
  readonly samplingIntervalMs: number;
  readonly connectionsIntervalMs: number;
  /** Per device whose driver pays a command per QP. */
  readonly qpQueriesPerSecond: number;
}

/** Whether each QP of a dump costs the device a command (see above). */
const paysPerQp = (driver: RdmaDriver | undefined): boolean => driver !== 'rxe';

interface DeviceState {
  readonly lastReadMs: number;
  /** QPs in its last QP dump. */
  readonly qps: number | undefined;
}

export class DevicePacing {
  private readonly state = new Map<string, DeviceState>();

  constructor(private readonly pacing: ReadPacing) {}

  /** The interval `device` is read at now, with `qps` QPs (undefined: its last count). */
  interval(d: RdmaDeviceInfo, driver: RdmaDriver | undefined, limit: ReadLimit | undefined, qps?: number): DeviceInterval {
    const p = this.pacing;
    return deviceReadInterval(
      { samplingIntervalMs: p.samplingIntervalMs, connectionsIntervalMs: p.connectionsIntervalMs },
      { qps: qps ?? this.state.get(d.name)?.qps, queriesPerSecond: paysPerQp(driver) ? p.qpQueriesPerSecond : undefined, limitMs: fastestPortLimit(d, limit) },
    );
  }

  /** Whether a tick at `nowMs` reads `device` (never read yet: yes). */
  due(d: RdmaDeviceInfo, driver: RdmaDriver | undefined, limit: ReadLimit | undefined, nowMs: number): boolean {
    const s = this.state.get(d.name);
    if (s === undefined) return true;
    const { intervalMs } = this.interval(d, driver, limit);
    return connectionsDue({ samplingIntervalMs: this.pacing.samplingIntervalMs, connectionsIntervalMs: intervalMs }, nowMs - s.lastReadMs);
  }

  /** A read of `device` at `nowMs`: its QP count when its dump was read, else the last one stands. */
  read(device: string, nowMs: number, qps: number | undefined): void {
    this.state.set(device, { lastReadMs: nowMs, qps: qps ?? this.state.get(device)?.qps });
  }

  /** Devices no longer listed are forgotten. */
  keep(listed: readonly RdmaDeviceInfo[]): void {
    const names = new Set(listed.map((d) => d.name));
    for (const name of this.state.keys()) if (!names.has(name)) this.state.delete(name);
  }
}

/** The shortest PSN limit of the device's ports (1..its last port); undefined while none is known. */
function fastestPortLimit(d: RdmaDeviceInfo, limit: ReadLimit | undefined): number | undefined {
  if (limit === undefined) return undefined;
  let least: number | undefined;
  for (let port = 1; port <= (d.lastPort ?? 1); port++) {
    const ms = limit(d.name, port);
    if (ms !== undefined && (least === undefined || ms < least)) least = ms;
  }
  return least;
}
