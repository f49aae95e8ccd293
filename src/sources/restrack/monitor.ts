/**
 * Connections followed over time: each tick reads every device's restrack dumps on the bounded
 * reader (group `restrack`), joins them (join.ts) and hands them to the ConnectionTracker.
 * A read that blocks costs one timeout; the group is skipped until it returns and the socket is
 * replaced then. Each error is logged once, and "connections read again" when a read answers
 * after one. With FlowJoinOptions, the processes behind the connections and the flows they map
 * are read after the dumps, and each connection is given its owner and flow (assign.ts).
 */
import type { Logger } from '../../log.js';
import { type Connection, ConnectionTracker, type ReadLimit, directionOf } from '../../model/connections.js';
import type { Placement } from '../../config/types.js';
import type { BoundedReads, Job, Outcome, Pending } from '../../reads/bounded.js';
import { type ReadProgram, runSync } from '../../reads/program.js';
import { readErrorText } from '../../reads/errors.js';
import { DEFAULT_PROC_ROOT, type MappedFlowsRead, type ProcessInfo, type ProcessRead, mappedFlowsReads, processReads, sameProcess } from '../procfs/index.js';
import { type ConnectionOwner, type Pin, type ProcessShare, assignFlows, sharedByProcess } from './assign.js';
import { joinDevice } from './join.js';
import type { DeviceDump, RestrackRead, RestrackSource } from './source.js';
import { SameTickWindow, type TickReadings } from '../../model/same-tick.js';
import { groupBy } from '../../group.js';
import { key } from '../../keys.js';
import { portKey } from '../types.js';

const RESTRACK_GROUP = 'restrack';

/** Port packets in a connections window below which a still PSN says nothing (CM MADs, idle links). */
const PSN_LIVE_MIN_PACKETS = 1000;

/** Packets per second a port counted in one direction, from its counters (undefined: unknown). */
export type PortPackets = (device: string, port: number, direction: 'tx' | 'rx') => number | undefined;

/**
 * What a connections read is set against (model/same-tick.ts): the ports' packet totals the
 * sampling tick just read, the flows' headIndex read in the same request as the QP dumps, and
 * the window over which they are compared with the connections'.
 */
export interface SameTickReads {
  readonly ports: TickReadings['ports'];
  /** One job per domain folder (DomainMonitor.headJobs), run with the dumps. */
  readonly heads: readonly Pending<TickReadings['heads']>[];
  readonly windowMs: number;
}

/** What the flows join needs from the config, asked at each tick (it follows reloads). */
export interface FlowJoinOptions {
  /** The configured MXL domain paths, matched in /proc/PID/maps. */
  readonly domainPaths: () => readonly string[];
  /** The config's `peer:` pins (assign.ts pinsOf). */
  readonly pins: () => readonly Pin[];
  readonly procRoot?: string;
  /** The reads of one pid (tests: a process whose maps the kernel refuses). */
  readonly processReads?: typeof processAndMaps;
}

export interface ConnectionStatus {
  /** Why the last read gave nothing (no RDMA netlink, blocked...), or undefined. */
  readonly error: string | undefined;
  /** Per device, the error of its last read, when it failed. */
  readonly deviceErrors: ReadonlyMap<string, string>;
  readonly devicesRead: number;
  /**
   * Set once a process's maps could not be read for lack of ptrace access (CAP_SYS_PTRACE, or the
   * same uid): its connections carry no flow. Said once in the log, and on the status page.
   */
  readonly mapsDenied: string | undefined;
}

export class ConnectionMonitor {
  ticks = 0;
  readonly tracker: ConnectionTracker;
  private readonly psnLive = new Map<string, 0 | 1>();
  private status: ConnectionStatus = { error: undefined, deviceErrors: new Map(), devicesRead: 0, mapsDenied: undefined };
  private processes = new Map<number, ProcessRead>();
  /** Per restrack pid of a present connection, the process it was last found to be. */
  private lastProcess = new Map<number, ProcessInfo>();
  private owners = new Map<string, ConnectionOwner>();
  private shares: ProcessShare[] = [];
  private mapsDenied: string | undefined;
  private readonly loggedOnce = new Set<string>();
  /** Snapshots of the reads that came with the ports' and domains' counts of their tick. */
  readonly sameTickWindow = new SameTickWindow();

  constructor(
    private readonly source: RestrackSource,
    private readonly log?: Logger,
    retainMs?: number,
    private readonly flows?: FlowJoinOptions,
  ) {
    this.tracker = new ConnectionTracker(retainMs);
  }

  /**
   * One read of every device at `nowMs` (monotonic) on the bounded reader; `portPackets` decides
   * whether PSNs are live. `sameTick` is asked for only when the tables can be read. `limit`: how
   * long each port's PSNs may go unread (a read later than that counts nothing, a late read).
   */
  async tick(reader: BoundedReads, nowMs: number, portPackets?: PortPackets, sameTick?: () => SameTickReads, limit?: ReadLimit): Promise<void> {
    const steps = this.steps(nowMs, portPackets, sameTick, limit);
    let step = steps.next();
    while (!step.done) step = steps.next(await reader.run(step.value));
  }

  /** tick() with every read here and now (the CLI: `connections`, `check`). */
  tickSync(nowMs: number, portPackets?: PortPackets): void {
    const steps = this.steps(nowMs, portPackets, undefined, undefined);
    let step = steps.next();
    while (!step.done) step = steps.next(step.value.map((j) => ({ kind: 'done', value: runSync(j.program) })));
  }

  /**
   * A tick as rounds of jobs: the restrack dumps, then the processes behind the connections. A
   * host without RDMA netlink costs no read (the source asks the kernel again every 30 s).
   */
  private *steps(nowMs: number, portPackets: PortPackets | undefined, sameTick: (() => SameTickReads) | undefined, limit: ReadLimit | undefined): Generator<readonly Job<unknown>[], void, readonly Outcome<unknown>[]> {
    const ready = this.source.ready();
    if (!ready.ok) {
      this.ticks++;
      this.apply({ ok: false, error: ready.error.message }, nowMs, portPackets, limit);
    } else {
      const t = sameTick?.();
      // The flows' headIndex in the same run, hence the same request, as the QP dumps.
      const [o] = (yield [{ group: RESTRACK_GROUP, program: this.source.reads() }, ...(t?.heads ?? [])]) as readonly Outcome<RestrackRead>[];
      this.ticks++;
      if (o === undefined || o.kind !== 'done') {
        if (o?.kind === 'blocked' || o?.kind === 'paused' || o?.kind === 'deferred') this.source.abandon();
        const error = o === undefined ? 'not read' : o.kind === 'deferred' ? 'deferred: the reader gave this tick to other reads' : readErrorText(o.error);
        this.failed(error);
        this.tracker.update([], [], nowMs);
        return;
      }
      const complete = this.apply(o.value, nowMs, portPackets, limit);
      if (complete && t) this.snapshot(nowMs, t);
    }
    if (this.flows) yield* this.readProcesses(this.flows);
  }

  /**
   * Who each connection's pid is and which flows it maps: one group per pid (a process stuck
   * with its mmap_lock held costs its own timeout), then the flows joined (assign.ts). A pid the
   * kernel no longer names (its thread exited, Connection.pidKept) is read as the process it was
   * last found to be, while that process lives (same pid and start).
   */
  private *readProcesses(flows: FlowJoinOptions): Generator<readonly Job<unknown>[], void, readonly Outcome<unknown>[]> {
    const present = this.tracker.connections().filter((c) => c.present);
    const named = new Set(present.flatMap((c) => (c.obs.pid === undefined || c.pidKept ? [] : [c.obs.pid])));
    const pids = [...new Set(present.flatMap((c) => (c.obs.pid === undefined ? [] : [c.obs.pid])))].filter((pid) => named.has(pid) || this.lastProcess.has(pid));
    const root = flows.procRoot ?? DEFAULT_PROC_ROOT;
    const paths = flows.domainPaths();
    const read = flows.processReads ?? processAndMaps;
    const programs = pids.map((pid) => (named.has(pid) ? read(root, pid, paths) : lastKnown(this.lastProcess.get(pid)!, read(root, this.lastProcess.get(pid)!.pid, paths))));
    const outcomes = (pids.length === 0 ? [] : yield pids.map((pid, i) => ({ group: `proc ${pid}`, program: programs[i]! }))) as readonly Outcome<ProcessAndMaps>[];
    const processes = new Map<number, ProcessRead>();
    const maps = new Map<number, MappedFlowsRead>();
    const lastProcess = new Map<number, ProcessInfo>();
    pids.forEach((pid, i) => {
      const o = outcomes[i]!;
      if (o.kind !== 'done') {
        const last = this.lastProcess.get(pid);
        if (last) lastProcess.set(pid, last);
        return;
      }
      processes.set(pid, o.value.process);
      maps.set(pid, o.value.maps);
      if (o.value.process.ok) lastProcess.set(pid, o.value.process.process);
      if (!o.value.maps.ok && o.value.maps.reason === 'denied' && this.mapsDenied === undefined) {
        this.mapsDenied = o.value.maps.detail;
        this.log?.warn({ pid, err: o.value.maps.detail },
          'reading another user\'s /proc/PID/maps needs CAP_SYS_PTRACE: connections of such processes are exported without their MXL flows (logged once)');
      }
    });
    this.processes = processes;
    this.lastProcess = lastProcess;
    this.status = { ...this.status, mapsDenied: this.mapsDenied };
    this.owners = assignFlows(present, processes, maps, flows.pins());
    this.shares = sharedByProcess(present, this.owners, maps);
  }

  /**
   * Where the connections carrying a flow found under `domain` run (bind: auto): the port and the
   * direction its PSNs move in; none while no connection is known to carry it.
   */
  placements(domain: string, flowId: string): Placement[] {
    const out = new Map<string, Placement>();
    for (const c of this.tracker.connections()) {
      const carried = this.owners.get(c.key)?.carried;
      const direction = directionOf(c);
      if (!c.present || carried?.flowId !== flowId || carried.domain !== domain || (direction !== 'tx' && direction !== 'rx')) continue;
      out.set(key(c.obs.device, c.obs.port, direction), { device: c.obs.device, port: c.obs.port, direction });
    }
    return out.size > 0 ? [...out.values()] : this.sharedPlacement(domain, flowId);
  }

  /**
   * A flow no connection carries, mapped by processes compared as a whole: bound, per process,
   * where all of its unpaired connections run when that is one port and one direction; else not
   * by that process (a sender and a receiver on one host give two places).
   */
  private sharedPlacement(domain: string, flowId: string): Placement[] {
    const out = new Map<string, Placement>();
    for (const s of this.shares) {
      if (s.flows.get(flowId) !== domain) continue;
      const places = s.connections.map((c) => ({ device: c.obs.device, port: c.obs.port, direction: directionOf(c) }));
      const keys = new Set(places.map((p) => key(p.device, p.port, p.direction)));
      const p = places[0];
      if (keys.size === 1 && p && (p.direction === 'tx' || p.direction === 'rx')) out.set([...keys][0]!, { device: p.device, port: p.port, direction: p.direction });
    }
    return [...out.values()];
  }

  /** The processes compared as a whole at the last tick (assign.ts sharedByProcess). */
  processShares(): readonly ProcessShare[] {
    return this.shares;
  }

  /** Process, container and carried flow of a connection (by key), from the last tick. */
  ownerOf(key: string): ConnectionOwner | undefined {
    return this.owners.get(key);
  }

  /** The last process read of a restrack pid. */
  processOf(pid: number): ProcessRead | undefined {
    return this.processes.get(pid);
  }

  /**
   * Every connection's totals now, with the counts of the same tick. A connection gone from the
   * tables keeps its last totals (what it moved before it went is still its).
   */
  private snapshot(nowMs: number, t: SameTickReads): void {
    const connections = new Map(this.tracker.connections().map((c) => [c.key, { sent: c.sent.packets, received: c.received?.packets ?? 0 }]));
    const heads = new Map(t.heads.flatMap((j) => [...(j.value ?? [])]));
    this.sameTickWindow.push({ atMs: nowMs, connections, readings: { ports: t.ports, heads } }, t.windowMs);
  }

  /** Applies one read; true when every device was read in full. */
  private apply(r: RestrackRead, nowMs: number, portPackets: PortPackets | undefined, limit: ReadLimit | undefined): boolean {
    if (!r.ok) {
      this.failed(r.error);
      this.tracker.update([], [], nowMs);
      return false;
    }
    const ok = r.devices.filter((d): d is Extract<DeviceDump, { ok: true }> => d.ok);
    const deviceErrors = new Map(r.devices.flatMap((d) => (d.ok ? [] : [[d.device, d.error] as const])));
    for (const [device, error] of deviceErrors) this.sayOnce(`${device} ${error}`, { device, err: error }, 'restrack dump failed; that device’s connections keep their last counts (logged once)');
    if (this.status.error !== undefined) this.log?.info({ devices: ok.length }, 'connections read again');
    this.status = { ...this.status, error: undefined, deviceErrors, devicesRead: ok.length };
    const observations = ok.flatMap((d) => joinDevice(d.device, d.qps, d.cmIds).observations);
    const late = this.tracker.update(ok.map((d) => d.device), observations, nowMs, limit);
    // What a late read moved is not counted: the same-tick window starts again from it.
    if (late.size > 0) this.sameTickWindow.clear();
    if (portPackets) this.decidePsnLive(portPackets);
    return deviceErrors.size === 0;
  }

  private failed(error: string): void {
    this.sayOnce(error, { err: error }, 'connections cannot be read; their counts stand still (logged once)');
    this.status = { ...this.status, error, devicesRead: 0 };
  }

  private sayOnce(key: string, fields: Record<string, unknown>, msg: string): void {
    if (this.loggedOnce.has(key)) return;
    this.loggedOnce.add(key);
    this.log?.warn(fields, msg);
  }

  /**
   * A port's PSNs are live once one of its connections' PSNs moved over a window; dead when the
   * port counted at least PSN_LIVE_MIN_PACKETS over a window in which none of its connections
   * moved (irdma: the PSN cached at modify time). Otherwise the last decision stands.
   */
  private decidePsnLive(portPackets: PortPackets): void {
    const byPort = groupBy(this.tracker.connections(), (c) => (c.present && c.window !== undefined ? portKey(c.obs) : undefined));
    for (const [k, cs] of byPort) {
      const { device, port } = cs[0]!.obs;
      if (cs.some((c) => c.window!.sent > 0 || c.window!.received > 0)) {
        this.psnLive.set(k, 1);
        continue;
      }
      const ms = Math.max(...cs.map((c) => c.window!.ms));
      const rate = (portPackets(device, port, 'tx') ?? 0) + (portPackets(device, port, 'rx') ?? 0);
      if (rate * (ms / 1000) >= PSN_LIVE_MIN_PACKETS) this.psnLive.set(k, 0);
    }
  }

  /** 1 or 0 per port (`device/port`) once decided. */
  psnLiveOf(device: string, port: number): 0 | 1 | undefined {
    return this.psnLive.get(portKey({ device, port }));
  }

  connections(): Connection[] {
    return this.tracker.connections();
  }

  get lastStatus(): ConnectionStatus {
    return this.status;
  }

  close(): void {
    this.source.close();
  }
}

export interface ProcessAndMaps {
  readonly process: ProcessRead;
  readonly maps: MappedFlowsRead;
}

export function* processAndMaps(root: string, pid: number, paths: readonly string[]): ReadProgram<ProcessAndMaps> {
  const process = yield* processReads(root, pid);
  // A thread's pid is read as its process; its maps are the process's own.
  const maps = yield* mappedFlowsReads(root, process.ok ? process.process.pid : pid, paths);
  return { process, maps };
}

/** The reads of a process found before, answered 'gone' when its pid is now another process's. */
function* lastKnown(last: ProcessInfo, reads: ReadProgram<ProcessAndMaps>): ReadProgram<ProcessAndMaps> {
  const r = yield* reads;
  if (!r.process.ok || sameProcess(r.process.process, last)) return r;
  const gone = { ok: false, reason: 'gone', detail: `pid ${last.pid} is another process now (started at ${r.process.process.startTicks}, not ${last.startTicks})` } as const;
  return { process: gone, maps: gone };
}
