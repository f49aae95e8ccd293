/**
 * Connections followed over time: each tick reads every device's restrack dumps on the bounded
 * reader (group `restrack`), joins them (join.ts) and hands them to the ConnectionTracker.
 * A read that blocks costs one timeout; the group is skipped until it returns and the socket is
 * replaced then. Each error is logged once, and "connections read again" when a read answers
 * after one. With FlowJoinOptions, the processes behind the connections and the flows they map
 * are read after the dumps, and each connection is given its owner and flow (assign.ts).
 */
import type { Logger } from '../../log.js';
import { type Connection, type ConnectionObservation, ConnectionTracker, type DeviceReadCost, type PortCountedSince, type ReadLimit, connectionUp, directionOf } from '../../model/connections.js';
import type { ConnectionSeries, Placement } from '../../config/types.js';
import { type ConnectionGroup, ConnectionGroups, type GroupLabels } from '../../model/connection-groups.js';
import type { BoundedReads, Job, Outcome, Pending } from '../../reads/bounded.js';
import { type ReadProgram, runSync } from '../../reads/program.js';
import { readErrorText } from '../../reads/errors.js';
import { DEFAULT_PROC_ROOT, type ExitRead, type MappedFlowsRead, type ProcessInfo, type ProcessRead, mappedFlowsReads, processAgainReads, processExitReads, processReads, sameProcess } from '../procfs/index.js';
import { type ConnectionOwner, type Pin, type ProcessShare, assignFlows, sharedByProcess } from './assign.js';
import { DeviceJoin, IdentityKeys } from './join.js';
import { decodeCmIdDumpSliced, decodeQpDumpSliced } from '../netlink/restrack.js';
import { NetlinkDecodeError } from '../netlink/codec.js';
import { loopTurn } from '../../event-loop.js';
import type { RestrackRead, RestrackSource } from './source.js';
import { PortTotalsByRead, type Snapshot, SameTickWindow, type TickReadings, TotalSlots, headKey } from '../../model/same-tick.js';
import { DevicePacing, type ReadPacing } from './pacing.js';
import { groupBy } from '../../group.js';
import { key } from '../../keys.js';
import { portKey } from '../types.js';

const RESTRACK_GROUP = 'restrack';

/** The longest a read's decoding, joining and tracking goes on before the event loop gets a turn. */
const SLICE_MS = 4;
/** Observations handed to the tracker between two looks at the time. */
const FEED_CHUNK = 512;
/** Connections few enough for one pass over them to take well under a slice. */
const FEW = 2000;

/** A pause() for one read's work: true once SLICE_MS has gone since the start or the last true. */
function slicer(): () => boolean {
  let start = performance.now();
  return () => {
    const now = performance.now();
    if (now - start < SLICE_MS) return false;
    start = now;
    return true;
  };
}

/** A generator of slices (each yield: the slice is over) as the monitor's rounds: an empty one a turn. */
function* turns<T>(g: Generator<void, T>): Generator<readonly Job<unknown>[], T, readonly Outcome<unknown>[]> {
  let step = g.next();
  while (!step.done) {
    yield [];
    step = g.next();
  }
  return step.value;
}

/**
 * How long a process's maps stand while its connections stay the same: MXL maps a flow when it
 * sets up the endpoint that carries it (a new QP: read at once); a flow mapped with no connection
 * change is found within this.
 */
const MAPS_REFRESH_MS = 10_000;

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
  /** Whether a vanished connection's process exited (tests: an answer a fixture cannot give, EACCES). */
  readonly exitReads?: typeof processExitReads;
  /** metrics.connection_series: how the connections are counted in groups (none for `qp`). */
  readonly series?: () => ConnectionSeries;
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
  /**
   * Per device, snapshots of its reads that came with the ports' and domains' counts of their tick
   * (a device is read at its own interval: pacing.ts).
   */
  private readonly windows = new Map<string, { readonly window: SameTickWindow; readonly slots: TotalSlots }>();
  /** What the ports had counted at each recent read: a read late by the clock may still count (psn.ts psnSafeByCount). */
  private readonly portTotalsByRead = new PortTotalsByRead();
  private pacing: { readonly config: ReadPacing; readonly devices: DevicePacing } | undefined;
  private readonly overBudget = new Set<string>();
  private readonly grouped = new ConnectionGroups();
  /** Per connection (key), the process it was last found to be of while present (pid and start). */
  private readonly ranBy = new Map<string, ProcessInfo>();
  /** Vanished connections (keys) whose process has exited since; an exit is for good. */
  private readonly exited = new Set<string>();
  /** Vanished connections (keys) whose flow a connection that is up has carried since (supersede()). */
  private supersededKeys: ReadonlySet<string> = new Set();
  /** Per pid, its maps as last read, when, with which connections (connectionSignatures) and domain paths. */
  private readonly mapsRead = new Map<number, { readonly maps: MappedFlowsRead; readonly atMs: number; readonly signature: string | undefined; readonly paths: string }>();
  /** carriedPlaces() of the owners of the last tick, once asked for. */
  private places: Map<string, Map<string, Placement>> | undefined;
  /** Per device, its QPs' identity keys as last joined (join.ts). */
  private readonly keys = new Map<string, IdentityKeys>();

  /**
   * `pacing`: the schedule each device is read at (asked at each tick: it follows reloads);
   * without it every tick reads every device.
   */
  constructor(
    private readonly source: RestrackSource,
    private readonly log?: Logger,
    retainMs?: number,
    private readonly flows?: FlowJoinOptions,
    private readonly readPacing?: () => ReadPacing,
  ) {
    this.tracker = new ConnectionTracker(retainMs);
  }

  /** The oldest and newest snapshot of a device's window (model/same-tick.ts); undefined until two. */
  span(device: string): { readonly oldest: Snapshot; readonly newest: Snapshot } | undefined {
    return this.windows.get(device)?.window.span();
  }

  /** Whether a tick at `nowMs` reads any device (none listed yet: yes). */
  due(nowMs: number, limit?: ReadLimit): boolean {
    const listed = this.source.devices();
    return listed.length === 0 || listed.some((d) => this.isDue(d.name, nowMs, limit));
  }

  private isDue(device: string, nowMs: number, limit: ReadLimit | undefined): boolean {
    const d = this.source.devices().find((x) => x.name === device);
    const p = this.pacingNow();
    return d === undefined || p === undefined || p.due(d, this.source.driver(device), limit, nowMs);
  }

  /** The schedule of the config now; a new one (a reload) keeps no device's last read. */
  private pacingNow(): DevicePacing | undefined {
    const config = this.readPacing?.();
    if (config === undefined) return undefined;
    const had = this.pacing;
    if (had === undefined || JSON.stringify(had.config) !== JSON.stringify(config)) this.pacing = { config, devices: new DevicePacing(config) };
    return this.pacing!.devices;
  }

  /**
   * One read of every device at `nowMs` (monotonic) on the bounded reader; `portPackets` decides
   * whether PSNs are live. `sameTick` is asked for only when the tables can be read. `limit`: how
   * long each port's PSNs may go unread (a read later than that counts nothing, a late read).
   */
  async tick(reader: BoundedReads, nowMs: number, portPackets?: PortPackets, sameTick?: () => SameTickReads, limit?: ReadLimit): Promise<void> {
    const steps = this.steps(nowMs, portPackets, sameTick, limit);
    let step = steps.next();
    // An empty round is a turn of the event loop between two slices of a large read's work.
    while (!step.done) step = steps.next(step.value.length === 0 ? (await loopTurn(), []) : await reader.run(step.value));
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
      yield* this.apply({ ok: false, error: ready.error.message }, nowMs, portPackets, limit);
    } else {
      const t = sameTick?.();
      const listed = new Set(this.source.devices().map((d) => d.name));
      const due = new Set([...listed].filter((d) => this.isDue(d, nowMs, limit)));
      // A device the last list did not hold is read now: the list is read with the dumps.
      const choose = (device: string): boolean => due.has(device) || !listed.has(device);
      // Taken before the dump is asked for: what it shows was true at this time or later.
      const askedUnixMs = Date.now();
      // The flows' headIndex in the same run, hence the same request, as the QP dumps.
      const [o] = (yield [{ group: RESTRACK_GROUP, program: this.source.reads(choose) }, ...(t?.heads ?? [])]) as readonly Outcome<RestrackRead>[];
      this.ticks++;
      if (o === undefined || o.kind !== 'done') {
        if (o?.kind === 'blocked' || o?.kind === 'paused' || o?.kind === 'deferred') this.source.abandon();
        const error = o === undefined ? 'not read' : o.kind === 'deferred' ? 'deferred: the reader gave this tick to other reads' : readErrorText(o.error);
        this.failed(error);
        const skipped = new Set([...listed].filter((n) => !due.has(n)));
        this.tracker.update([], [], nowMs, undefined, { skipped });
        return;
      }
      const counted: PortCountedSince | undefined = t && ((device, port, sinceMs) => this.portTotalsByRead.countedSince(key(device, port), sinceMs, t.ports));
      const read = yield* this.apply(o.value, nowMs, portPackets, limit, counted, askedUnixMs);
      // Only reads that saw some device's QPs: a failed or skipped dump is nobody's last read.
      if (t && read.length > 0) this.portTotalsByRead.remember(nowMs, t.ports);
      const all = this.tracker.connections();
      // Each pass over tens of thousands of connections in a turn of its own (FEW: passes this short).
      if (all.length > FEW) yield [];
      if (t) for (const device of read) this.snapshot(device, nowMs, t, all);
      if (all.length > FEW) yield [];
    }
    if (this.flows) yield* this.readProcesses(this.flows, nowMs);
  }

  /**
   * Who each connection's pid is and which flows it maps: one group per pid (a process stuck
   * with its mmap_lock held costs its own timeout), then the flows joined (assign.ts). A pid the
   * kernel no longer names (its thread exited, Connection.pidKept) is read as the process it was
   * last found to be, while that process lives (same pid and start).
   */
  private *readProcesses(flows: FlowJoinOptions, nowMs: number): Generator<readonly Job<unknown>[], void, readonly Outcome<unknown>[]> {
    const present = this.tracker.connections().filter((c) => c.present);
    const named = new Set(present.flatMap((c) => (c.obs.pid === undefined || c.pidKept ? [] : [c.obs.pid])));
    const pids = [...new Set(present.flatMap((c) => (c.obs.pid === undefined ? [] : [c.obs.pid])))].filter((pid) => named.has(pid) || this.lastProcess.has(pid));
    const root = flows.procRoot ?? DEFAULT_PROC_ROOT;
    const paths = flows.domainPaths();
    const read = flows.processReads ?? processAndMaps;
    const signatures = connectionSignatures(present);
    const again = (pid: number): ReadProgram<ProcessAndMaps> | undefined => {
      const last = this.lastProcess.get(pid);
      if (flows.processReads !== undefined || last === undefined) return undefined;
      const m = this.mapsRead.get(pid);
      const fresh = m !== undefined && m.paths === paths.join('\0') && m.signature === signatures.get(pid) && nowMs - m.atMs < MAPS_REFRESH_MS;
      return processAndMapsAgain(root, pid, paths, last, fresh ? m.maps : undefined);
    };
    const programs = pids.map((pid) => (named.has(pid) ? again(pid) ?? read(root, pid, paths) : lastKnown(this.lastProcess.get(pid)!, read(root, this.lastProcess.get(pid)!.pid, paths))));
    const series = flows.series?.() ?? 'qp';
    const checks = this.exitChecks(series === 'qp');
    const exitReads = flows.exitReads ?? processExitReads;
    const jobs = [
      ...pids.map((pid, i) => ({ group: `proc ${pid}`, program: programs[i]! })),
      ...checks.map((c) => ({ group: `proc ${c.process.pid}`, program: exitReads(root, c.process) })),
    ];
    const all = jobs.length === 0 ? [] : yield jobs;
    const outcomes = all.slice(0, pids.length) as readonly Outcome<ProcessAndMaps>[];
    checks.forEach((c, i) => {
      const o = all[pids.length + i] as Outcome<ExitRead> | undefined;
      // Not read (blocked, deferred), denied or an error: not known to have exited; asked again next read.
      if (o?.kind === 'done' && o.value.ok && o.value.exited) for (const k of c.keys) this.exited.add(k);
    });
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
      const m = this.mapsRead.get(pid);
      if (m === undefined || m.maps !== o.value.maps) this.mapsRead.set(pid, { maps: o.value.maps, atMs: nowMs, signature: signatures.get(pid), paths: paths.join('\0') });
      if (o.value.process.ok) lastProcess.set(pid, o.value.process.process);
      if (!o.value.maps.ok && o.value.maps.reason === 'denied' && this.mapsDenied === undefined) {
        this.mapsDenied = o.value.maps.detail;
        this.log?.warn({ pid, err: o.value.maps.detail },
          'reading another user\'s /proc/PID/maps needs CAP_SYS_PTRACE: connections of such processes are exported without their MXL flows (logged once)');
      }
    });
    this.processes = processes;
    this.lastProcess = lastProcess;
    this.recordOwners(present, processes);
    for (const pid of this.mapsRead.keys()) if (!processes.has(pid)) this.mapsRead.delete(pid);
    this.status = { ...this.status, mapsDenied: this.mapsDenied };
    const many = present.length > FEW;
    if (many) yield [];
    const owners = assignFlows(present, processes, maps, flows.pins());
    if (many) yield [];
    const vanished: Connection[] = [];
    for (const c of this.tracker.connections()) {
      const had = this.owners.get(c.key);
      if (had === undefined) continue;
      const now = owners.get(c.key);
      // A connection gone from the tables keeps its owner and flow while it is kept (its group,
      // the packets it moved in the window); one whose owner is as it was keeps the same object;
      // so does one whose process could not be read this time (unread says nothing new).
      if (now === undefined ? !c.present : sameOwner(had, now) || !ownerRead(c, processes, maps)) owners.set(c.key, had);
      if (!c.present && had.carried !== undefined) vanished.push(c);
    }
    this.owners = owners;
    this.places = undefined;
    if (many) yield [];
    yield* this.supersede(series === 'qp' ? vanished : [], present);
    this.shares = sharedByProcess(present, this.owners, maps);
    if (many) yield [];
    yield* turns(this.grouped.updateSliced(this.tracker.connections(), (c, had) => (series === 'qp' ? undefined : this.groupOf(c, series, had)), slicer()));
  }

  /**
   * The vanished connections to ask about (`ask`: at metrics.connection_series `qp`), one check
   * per process (many QPs of one process vanish together): those kept with a process they were
   * found to be of, not yet known to have exited. In the tables' normal course nothing vanished
   * and nothing is read. Connections no longer kept are forgotten here.
   */
  private exitChecks(ask: boolean): { readonly process: ProcessInfo; readonly keys: string[] }[] {
    const out = new Map<string, { process: ProcessInfo; keys: string[] }>();
    for (const [k, p] of this.ranBy) {
      const present = this.tracker.isPresent(k);
      if (present === undefined) {
        this.ranBy.delete(k);
        this.exited.delete(k);
        continue;
      }
      if (!ask || present || this.exited.has(k)) continue;
      const id = `${p.pid} ${p.startTicks}`;
      const had = out.get(id);
      if (had === undefined) out.set(id, { process: p, keys: [k] });
      else had.keys.push(k);
    }
    return [...out.values()];
  }

  /**
   * Which of the kept connections gone from the tables and carrying a flow (`vanished`: at
   * metrics.connection_series `qp`) are superseded: since they vanished, a present connection that
   * is up has carried the same flow on the same device, port and direction. For good while kept;
   * one in the tables again, or forgotten, is not. Nothing vanished, no pass over the connections.
   */
  private *supersede(vanished: readonly Connection[], present: readonly Connection[]): Generator<readonly Job<unknown>[], void, readonly Outcome<unknown>[]> {
    const now = new Set<string>();
    const open: Connection[] = [];
    for (const c of vanished) {
      if (this.supersededKeys.has(c.key)) now.add(c.key);
      else open.push(c);
    }
    if (open.length > 0) {
      const carriers = new Set(present.flatMap((c) => (connectionUp(c) ? this.carriedAt(c) ?? [] : [])));
      for (const c of open) if (carriers.has(this.carriedAt(c)!)) now.add(c.key);
      if (present.length > FEW) yield [];
    }
    this.supersededKeys = now;
  }

  /** The flow a connection carries where it runs (device, port, direction), as one key; undefined when it carries none. */
  private carriedAt(c: Connection): string | undefined {
    const carried = this.owners.get(c.key)?.carried;
    return carried === undefined ? undefined : key(c.obs.device, c.obs.port, directionOf(c), headKey(carried.domain, carried.flowId));
  }

  /**
   * Each present connection's process as just read (kept when the read failed: the last one
   * found stands); a connection in the tables again is not one whose process exited.
   */
  private recordOwners(present: readonly Connection[], processes: ReadonlyMap<number, ProcessRead>): void {
    for (const c of present) {
      if (this.exited.size > 0) this.exited.delete(c.key);
      const p = c.obs.pid === undefined ? undefined : processes.get(c.obs.pid);
      if (p?.ok && this.ranBy.get(c.key) !== p.process) this.ranBy.set(c.key, p.process);
    }
  }

  /**
   * Whether a connection gone from the tables is kept with its process exited since (its pid gone
   * from /proc, a zombie, or another process's now): procfs processExitReads, checked at each read
   * at metrics.connection_series `qp` for vanished connections only.
   */
  processExited(key: string): boolean {
    return this.exited.has(key);
  }

  /** Whether any kept connection's process is known to have exited (none: nothing to export). */
  anyProcessExited(): boolean {
    return this.exited.size > 0;
  }

  /**
   * Whether a connection gone from the tables is kept superseded: a connection that is up has
   * carried its flow on its device, port and direction since it vanished (at
   * metrics.connection_series `qp`; supersede()).
   */
  superseded(key: string): boolean {
    return this.supersededKeys.has(key);
  }

  /** Whether any kept connection is superseded (none: nothing to export). */
  anySuperseded(): boolean {
    return this.supersededKeys.size > 0;
  }

  /**
   * `flow`: a connection carrying a flow is counted with the flow's other connections on its port
   * and direction, whatever their process; one carrying none, with its process's. `process`: by
   * process. The labels it had stand (the same object) while what they came from does.
   */
  private groupOf(c: Connection, series: Exclude<ConnectionSeries, 'qp'>, had: GroupLabels | undefined): GroupLabels {
    const owner = this.owners.get(c.key);
    const direction = directionOf(c);
    const flowId = series === 'flow' ? owner?.carried?.flowId : undefined;
    const pid = flowId !== undefined || c.obs.pid === undefined ? '' : String(c.obs.pid);
    const process = flowId !== undefined ? '' : owner?.process ?? c.obs.kernName ?? '';
    if (had !== undefined && had.direction === direction && had.flowId === (flowId ?? '') && had.pid === pid && had.process === process && had.port === c.obs.port) return had;
    return { device: c.obs.device, port: c.obs.port, direction, flowId: flowId ?? '', pid, process };
  }

  /** The connection groups of the last tick (metrics.connection_series `flow` or `process`). */
  groups(): readonly ConnectionGroup[] {
    return this.grouped.groups();
  }

  /**
   * Where the connections carrying a flow found under `domain` run (bind: auto): the port and the
   * direction its PSNs move in; none while no connection is known to carry it.
   */
  placements(domain: string, flowId: string): Placement[] {
    const carried = this.carriedPlaces().get(headKey(domain, flowId));
    return carried !== undefined ? [...carried.values()] : this.sharedPlacement(domain, flowId);
  }

  /**
   * Per flow (`domain\0flowId`), the places its present carrying connections run: made once per
   * tick (bind: auto asks for every flow of every domain; one pass over the connections each
   * would be flows x connections).
   */
  private carriedPlaces(): ReadonlyMap<string, Map<string, Placement>> {
    if (this.places !== undefined) return this.places;
    const out = new Map<string, Map<string, Placement>>();
    for (const c of this.tracker.connections()) {
      const carried = this.owners.get(c.key)?.carried;
      const direction = directionOf(c);
      if (!c.present || carried === undefined || (direction !== 'tx' && direction !== 'rx')) continue;
      const k = headKey(carried.domain, carried.flowId);
      let at = out.get(k);
      if (at === undefined) out.set(k, (at = new Map<string, Placement>()));
      at.set(key(c.obs.device, c.obs.port, direction), { device: c.obs.device, port: c.obs.port, direction });
    }
    return (this.places = out);
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
   * A device's connections' totals now, with the counts of the same tick. A connection gone from
   * the tables keeps its last totals (what it moved before it went is still its).
   */
  private snapshot(device: string, nowMs: number, t: SameTickReads, all: readonly Connection[]): void {
    const mine = all.filter((c) => c.obs.device === device).map((c) => ({ key: c.key, sent: c.sent.packets, received: c.received?.packets ?? 0 }));
    const heads = new Map(t.heads.flatMap((j) => [...(j.value ?? [])]));
    let w = this.windows.get(device);
    if (w === undefined) this.windows.set(device, (w = { window: new SameTickWindow(), slots: new TotalSlots() }));
    let connections = w.slots.pack(mine);
    if (connections === undefined) {
      // Slots of connections long gone outnumber the live ones: the window starts again with new ones.
      w.window.clear();
      w.slots.reset();
      connections = w.slots.pack(mine)!;
    }
    w.window.push({ atMs: nowMs, connections, readings: { ports: t.ports, heads } }, t.windowMs);
  }

  private keysOf(device: string): IdentityKeys {
    let k = this.keys.get(device);
    if (k === undefined) this.keys.set(device, (k = new IdentityKeys()));
    return k;
  }

  /**
   * Applies one read; the devices read in full. The dumps are decoded, joined and tracked in
   * slices of SLICE_MS with a turn of the event loop between (an empty round): a read of tens of
   * thousands of QPs never holds the loop for long.
   */
  private *apply(r: RestrackRead, nowMs: number, portPackets: PortPackets | undefined, limit: ReadLimit | undefined, counted?: PortCountedSince, askedUnixMs?: number): Generator<readonly Job<unknown>[], readonly string[], readonly Outcome<unknown>[]> {
    if (!r.ok) {
      this.failed(r.error);
      this.tracker.update([], [], nowMs);
      return [];
    }
    const pause = slicer();
    // Each device's QPs decoded and joined message by message, held only as observations.
    const decoded: { readonly device: string; readonly observations: readonly ConnectionObservation[] }[] = [];
    const deviceErrors = new Map(r.devices.flatMap((d) => (d.ok ? [] : [[d.device, d.error] as const])));
    for (const d of r.devices) {
      if (!d.ok) continue;
      try {
        const cmIds = yield* turns(decodeCmIdDumpSliced(d.messages.cmId, pause));
        const join = new DeviceJoin(d.device, cmIds.entries, this.keysOf(d.device));
        yield* turns(decodeQpDumpSliced(d.messages.qp, pause, (qps) => join.add(qps)));
        decoded.push({ device: d.device, observations: join.done().observations });
      } catch (e) {
        if (!(e instanceof NetlinkDecodeError)) throw e;
        deviceErrors.set(d.device, this.source.decodeFailed(e));
      }
    }
    for (const [device, error] of deviceErrors) this.sayOnce(`${device} ${error}`, { device, err: error }, 'restrack dump failed; that device’s connections keep their last counts (logged once)');
    if (this.status.error !== undefined) this.log?.info({ devices: decoded.length }, 'connections read again');
    this.status = { ...this.status, error: undefined, deviceErrors, devicesRead: decoded.length };
    const costs = this.paced(r, nowMs, limit, askedUnixMs);
    const update = this.tracker.begin(decoded.map((d) => d.device), nowMs, limit, { skipped: new Set(r.skipped), costs, ...(counted ? { counted } : {}) });
    for (const { observations } of decoded) {
      for (let i = 0; i < observations.length; i += FEED_CHUNK) {
        update.feed(observations.slice(i, i + FEED_CHUNK));
        if (pause()) yield [];
      }
    }
    const late = yield* turns(update.finish(pause));
    // What a late read moved is not counted: that device's same-tick window starts again from it.
    for (const device of late) this.windows.get(device)?.window.clear();
    const listed = new Set(this.source.devices().map((d) => d.name));
    for (const device of this.windows.keys()) if (!listed.has(device)) this.windows.delete(device);
    for (const device of this.keys.keys()) if (!listed.has(device)) this.keys.delete(device);
    if (portPackets) {
      yield [];
      this.decidePsnLive(portPackets);
    }
    return decoded.map((d) => d.device);
  }

  /**
   * Each device read (in full or not) is read again at its interval from now; the QPs of its dump
   * are its queries, and set its interval (pacing.ts); each cost carries when its dump was asked for
   * (`askedUnixMs`). Going over budget is said once each time.
   */
  private paced(r: Extract<RestrackRead, { ok: true }>, nowMs: number, limit: ReadLimit | undefined, askedUnixMs: number | undefined): Map<string, DeviceReadCost> {
    const costs = new Map<string, DeviceReadCost>();
    const pacing = this.pacingNow();
    pacing?.keep(this.source.devices());
    for (const d of r.devices) {
      const qps = d.ok ? d.qpCount : undefined;
      pacing?.read(d.device, nowMs, qps);
      const info = this.source.devices().find((x) => x.name === d.device);
      const interval = pacing && info ? pacing.interval(info, this.source.driver(d.device), limit) : undefined;
      if (interval) this.sayBudget(d.device, interval.overBudget, qps, interval.gapMs);
      if (qps !== undefined) costs.set(d.device, { qpQueries: qps, readIntervalMs: interval?.gapMs, overBudget: interval?.overBudget ?? false, ...(askedUnixMs === undefined ? {} : { readUnixMs: askedUnixMs }) });
    }
    return costs;
  }

  private sayBudget(device: string, over: boolean, qps: number | undefined, gapMs: number): void {
    if (over === this.overBudget.has(device)) return;
    if (over) {
      this.overBudget.add(device);
      const perSecond = this.pacing?.config.qpQueriesPerSecond;
      this.log?.warn({ device, qps, qp_queries_per_second: perSecond, read_interval_ms: gapMs },
        'connections.qp_queries_per_second would read this device further apart than its fastest port may leave its PSNs unread: read at that limit instead, over budget');
    } else {
      this.overBudget.delete(device);
      this.log?.info({ device, qps, read_interval_ms: gapMs }, 'connections read within connections.qp_queries_per_second again');
    }
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

const sameOwner = (a: ConnectionOwner, b: ConnectionOwner): boolean =>
  a.process === b.process && a.container === b.container && a.podUid === b.podUid &&
  a.carried?.flowId === b.carried?.flowId && a.carried?.domain === b.carried?.domain && a.carried?.how === b.carried?.how;


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

/**
 * The reads of a pid found before to be `last`: its stat (procfs processAgainReads), and its maps
 * unless `maps`, read since it last changed its connections and within MAPS_REFRESH_MS, stands.
 */
function* processAndMapsAgain(root: string, pid: number, paths: readonly string[], last: ProcessInfo, maps: MappedFlowsRead | undefined): ReadProgram<ProcessAndMaps> {
  const process = pid === last.pid ? yield* processAgainReads(root, last) : yield* processReads(root, pid);
  if (maps !== undefined && process.ok && process.process === last) return { process, maps };
  return { process, maps: yield* mappedFlowsReads(root, process.ok ? process.process.pid : pid, paths) };
}

/** Per pid, its present connections' QP numbers as one string: a new or closed one changes it. */
function connectionSignatures(present: readonly Connection[]): Map<number, string> {
  const qpns = new Map<number, number[]>();
  for (const c of present) {
    if (c.obs.pid === undefined) continue;
    let l = qpns.get(c.obs.pid);
    if (l === undefined) qpns.set(c.obs.pid, (l = []));
    l.push(c.obs.qpn);
  }
  return new Map([...qpns].map(([pid, l]) => [pid, l.sort((a, b) => a - b).join(',')]));
}

/** The reads of a process found before, answered 'gone' when its pid is now another process's. */
function* lastKnown(last: ProcessInfo, reads: ReadProgram<ProcessAndMaps>): ReadProgram<ProcessAndMaps> {
  const r = yield* reads;
  if (!r.process.ok || sameProcess(r.process.process, last)) return r;
  const gone = { ok: false, reason: 'gone', detail: `pid ${last.pid} is another process now (started at ${r.process.process.startTicks}, not ${last.startTicks})` } as const;
  return { process: gone, maps: gone };
}

/**
 * Whether this read saw the owner of connection `c`: its process and the flows it maps. A process
 * that exits before the kernel has torn down its QPs leaves them in the tables for a read or two
 * with /proc/PID gone (measured with real MXL, issue 32): such a read must not take their flow away.
 */
function ownerRead(c: Connection, processes: ReadonlyMap<number, ProcessRead>, maps: ReadonlyMap<number, MappedFlowsRead>): boolean {
  const pid = c.obs.pid;
  return pid === undefined || (processes.get(pid)?.ok === true && maps.get(pid)?.ok === true);
}
