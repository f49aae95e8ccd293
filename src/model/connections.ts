/**
 * RDMA connections over time: what each read of the kernel's QP and cm_id tables (one
 * observation per connection) adds to the packets each connection sent and received.
 *
 * - Identity: a connection with a cm_id is its device, port, local and peer address and pid; a
 *   QP without one (perftest without -R) is its device, port, QP number and pid. A QP number that
 *   changes under the same identity is a restart (MXL's RCInitiatorEndpoint::restart makes a new
 *   QP): counted, and the new QP's PSNs are a new baseline.
 * - The same QP (device and QP number) read again is the same connection while what it is read
 *   as agrees with what it was: a field the read no longer holds keeps its last value (the kernel
 *   drops the pid once the creating thread is gone, restrack-facts.md; a cm_id can be missing
 *   from one dump). Another peer, process or QP type under that number is a new QP that reused
 *   the number (the old one was destroyed between two dumps): its PSNs are a new baseline.
 * - Packets: sq_psn gives sent, rq_psn received (psn.ts); first sight sets the baseline.
 * Pure: the caller says which devices were read and when.
 */
import { type PsnCount, psnAdvance, psnBaseline, psnRebase, psnSafeByCount, psnSetIn } from './psn.js';

export interface ConnectionObservation {
  /** The identity (see above), as one string. */
  readonly key: string;
  readonly device: string;
  readonly port: number;
  readonly qpn: number;
  readonly rqpn: number | undefined;
  readonly qpType: string;
  /** QP state name (RTS, ERR...). */
  readonly state: string;
  /** The cm_id's state (CONNECT...), when the QP has one. */
  readonly cmState: string | undefined;
  /** `10.99.0.1:48130`, or `qpn:33` for a QP without cm_id. */
  readonly local: string;
  /** `10.99.0.2:1312`, `rqpn:33` without cm_id, or '' when unknown. */
  readonly peer: string;
  readonly pid: number | undefined;
  /** Kernel QPs: the kernel user's name. */
  readonly kernName: string | undefined;
  readonly sqPsn: number;
  /** RC/UC only. */
  readonly rqPsn: number | undefined;
}

/** Packets over the window between this connection's previous read and this one. */
interface ConnectionWindow {
  readonly sent: number;
  readonly received: number;
  readonly ms: number;
}

export interface Connection {
  readonly key: string;
  /** The latest observation, with what the kernel no longer says kept from before (see above). */
  readonly obs: ConnectionObservation;
  readonly sent: PsnCount;
  readonly received: PsnCount | undefined;
  readonly restarts: number;
  /** In the last read of its device. */
  readonly present: boolean;
  readonly lastSeenMs: number;
  /** Undefined on first sight, after a restart, when absent, when its device was not read this time, or after a late read. */
  readonly window: ConnectionWindow | undefined;
  /** The kernel no longer names the QP's creator (that thread exited): `obs.pid` is the last pid it named. */
  readonly pidKept: boolean;
  /**
   * A second live QP of an identity already live at its first sight: the QP number its key and
   * its series' `local` (`#qpn:N`) carry for the connection's life, restarts included.
   */
  readonly twinQpn: number | undefined;
}

/** Per device, what its reads were. */
export interface DeviceReads {
  /** Reads that came too late for the PSNs (psn.ts psnReadLimitMs): no packets were counted from them. */
  readonly lateReads: number;
  /** QPs its dumps held, summed over its reads: each one query the driver answered (mlx5: a QUERY_QP firmware command). */
  readonly qpQueries: number;
  /** How far apart its reads come on time (connections-schedule.ts deviceReadInterval), once scheduled. */
  readonly readIntervalMs: number | undefined;
  /** Its budget of QP queries asks for reads further apart than the PSN limit allows: read at the limit instead. */
  readonly overBudget: boolean;
  /** Unix time (ms) its last full read was asked for: what a connection shows was true then or later. */
  readonly lastReadUnixMs: number | undefined;
}

/** What one read cost a device and how it is paced, for DeviceReads. */
export interface DeviceReadCost {
  /** QPs its QP dump held (the kernel's own QPs included: each is queried too). */
  readonly qpQueries: number;
  readonly readIntervalMs: number | undefined;
  readonly overBudget: boolean;
  /** Unix time (ms) the read was asked for (before the dump began). */
  readonly readUnixMs?: number;
}

/** Which devices a read covered besides those it read in full. */
export interface ReadScope {
  /** Devices not due at this read (their schedule): their connections keep their state and window. */
  readonly skipped?: ReadonlySet<string>;
  /** Per device read in full: what its read cost. */
  readonly costs?: ReadonlyMap<string, DeviceReadCost>;
  /**
   * What the ports counted since a connection's last read: a read later than `limit` still
   * counts when its port moved too few packets for any PSN to wrap (psn.ts psnSafeByCount).
   */
  readonly counted?: PortCountedSince;
}

/** The longest a port's PSNs may go unread (psn.ts psnReadLimitMs); undefined: unknown, no limit. */
export type ReadLimit = (device: string, port: number) => number | undefined;

/**
 * Packets a port's counters counted since its connections read at `sinceMs`, in the direction
 * that counted more (tx or rx); undefined when its counters cannot say (not read then, or now).
 */
export type PortCountedSince = (device: string, port: number, sinceMs: number) => number | undefined;

export type Direction = 'tx' | 'rx' | 'both' | '';

/** The side whose sq_psn moved sends, whose rq_psn moved receives. */
export function directionOf(c: Connection): Direction {
  const tx = c.sent.packets > 0;
  const rx = (c.received?.packets ?? 0) > 0;
  return tx && rx ? 'both' : tx ? 'tx' : rx ? 'rx' : '';
}

/**
 * QP states in which a connection works (IBA vol. 1, 10.3.1 and 11.2.4.2 modify QP): RTS sends
 * and receives; RTR receives (its responder answers requests and sends their ACKs) but posts no
 * request of its own: a QP that only receives never needs RTS (perftest's server stays in RTR).
 * RESET and INIT are not connected yet, SQD (draining), SQE (send queue error) and ERR are not
 * working as set up; a QP gone from the tables is down. docs/connections.md says the same.
 */
const QP_UP_STATES: ReadonlySet<string> = new Set(['RTR', 'RTS']);

/** Whether a QP in `state` is up (connection_up 1, the landing page's `ok`). */
export const qpStateUp = (state: string): boolean => QP_UP_STATES.has(state);

/** Whether the connection is up: in the tables, in a working state. */
export const connectionUp = (c: Pick<Connection, 'present' | 'obs'>): boolean => c.present && qpStateUp(c.obs.state);

/** `qpn:33`: the local side of a QP without cm_id. */
export const qpnLocal = (qpn: number): string => `qpn:${qpn}`;

/** Whether `local` is an address (from a cm_id), not qpnLocal()'s stand-in; no string made per QP. */
const hasAddresses = (o: Pick<ConnectionObservation, 'local'>): boolean => !o.local.startsWith('qpn:');

/** The identity as one string (ConnectionObservation.key). */
export function identityKey(o: Pick<ConnectionObservation, 'device' | 'port' | 'qpn' | 'local' | 'peer' | 'pid' | 'kernName'>): string {
  const owner = o.pid !== undefined ? `pid ${o.pid}` : o.kernName !== undefined ? `kernel ${o.kernName}` : 'pid ?';
  return hasAddresses(o) ? `${o.device}/${o.port} ${o.local} > ${o.peer} ${owner}` : `${o.device}/${o.port} qpn ${o.qpn} ${owner}`;
}

/** A remote QP number the QP was connected to: 0 is none yet (an RC QP before RTR). */
const remoteKnown = (rqpn: number | undefined): rqpn is number => rqpn !== undefined && rqpn !== 0;

/**
 * `next`, a read of the QP that `prev` was read from, with what it no longer holds taken from
 * `prev`; undefined when it names another connection: the number was reused by a new QP.
 */
function sameQpAgain(prev: ConnectionObservation, next: ConnectionObservation): ConnectionObservation | undefined {
  if (next.qpType !== prev.qpType) return undefined;
  const named = next.pid !== undefined || next.kernName !== undefined;
  const wasNamed = prev.pid !== undefined || prev.kernName !== undefined;
  if (named && wasNamed && (next.pid !== prev.pid || next.kernName !== prev.kernName)) return undefined;
  const addressed = hasAddresses(next);
  if (addressed && hasAddresses(prev) && (next.local !== prev.local || next.peer !== prev.peer)) return undefined;
  if (remoteKnown(next.rqpn) && remoteKnown(prev.rqpn) && next.rqpn !== prev.rqpn) return undefined;
  // The common case, read after read: the kernel still says everything; `next` as it is (its key too).
  if (named && (addressed || !hasAddresses(prev)) && (remoteKnown(next.rqpn) || !remoteKnown(prev.rqpn))) return next;
  const kept: ConnectionObservation = {
    ...next,
    pid: named ? next.pid : prev.pid,
    kernName: named ? next.kernName : prev.kernName,
    ...(!remoteKnown(next.rqpn) && remoteKnown(prev.rqpn) ? { rqpn: prev.rqpn, peer: prev.peer } : {}),
    ...(!addressed && hasAddresses(prev) ? { local: prev.local, peer: prev.peer } : {}),
  };
  return { ...kept, key: identityKey(kept) };
}

const twinKey = (o: ConnectionObservation): string => `${o.key} qpn:${o.qpn}`;

export class ConnectionTracker {
  private readonly byKey = new Map<string, Connection>();
  /** Per device, per QP number: the key of the connection that QP is (no string made per QP per read). */
  private readonly keyOfQp = new Map<string, Map<number, string>>();
  private readonly byDevice = new Map<string, DeviceReads>();

  /** `retainMs`: how long a vanished connection's counts are kept for its return (a restart). */
  constructor(private readonly retainMs = 10 * 60_000) {}

  /**
   * One read: `devices` were read in full at `nowMs` and hold exactly `observations`.
   * Connections of other devices keep their state (their read failed) but lose their window.
   * A connection last read longer ago than `limit` allows for its port counts nothing from this
   * read (its PSNs are a new baseline) and makes this a late read of its device: those devices
   * are returned. `scope`: devices this read skipped by schedule (their connections keep their
   * windows: nothing failed), and what each device read cost (DeviceReads).
   */
  update(devices: readonly string[], observations: readonly ConnectionObservation[], nowMs: number, limit?: ReadLimit, scope: ReadScope = {}): ReadonlySet<string> {
    const u = this.begin(devices, nowMs, limit, scope);
    u.feed(observations);
    const finish = u.finish(() => false);
    let step = finish.next();
    while (!step.done) step = finish.next();
    return step.value;
  }

  /**
   * update() in parts, for reads of tens of thousands of QPs done beside the event loop: feed()
   * the observations in as many chunks as wanted, then run finish(), which yields whenever
   * `pause()` says a slice of time is over. The result is update()'s.
   */
  begin(devices: readonly string[], nowMs: number, limit?: ReadLimit, scope: ReadScope = {}): TrackerUpdate {
    return new TrackerUpdate(this, devices, nowMs, limit, scope);
  }

  /** TrackerUpdate.feed(): the same QPs first, so that a new QP meets its identity only once the old QP is known gone. */
  feedOne(u: UpdateState, o: ConnectionObservation): void {
    const held = this.heldQp(o);
    const again = held === undefined ? undefined : sameQpAgain(held.obs, o);
    if (held !== undefined && again !== undefined) {
      const ms = u.limit?.(o.device, o.port);
      const tooLate = ms !== undefined && u.nowMs - held.lastSeenMs >= ms && !psnSafeByCount(u.scope.counted?.(o.device, o.port, held.lastSeenMs));
      if (tooLate) u.late.add(o.device);
      if (again === o && !tooLate && held.present && o.key === held.key) u.seen.add(this.readAgain(held, o, u.nowMs));
      else u.seen.add(this.again(held, again, o.pid === undefined && again.pid !== undefined, tooLate, u.nowMs));
    } else {
      // A number reused between two dumps: the QP that had it was destroyed.
      if (held !== undefined) this.vanish(held);
      u.fresh.push(o);
    }
  }

  /** TrackerUpdate.finish()'s part for one new QP. */
  meetOne(u: UpdateState, o: ConnectionObservation): void {
    u.seen.add(this.meet(o, u.nowMs, u.seen));
  }

  /** TrackerUpdate.finish()'s last part: what the read did not meet, and each device's reads. */
  settle(u: UpdateState, devices: readonly string[]): ReadonlySet<string> {
    for (const [key, c] of this.byKey) {
      if (u.seen.has(key)) continue;
      if (!u.read.has(c.obs.device)) {
        if (c.window !== undefined && !u.scope.skipped?.has(c.obs.device)) (c as Mutable<Connection>).window = undefined;
      } else if (u.nowMs - c.lastSeenMs > this.retainMs) {
        this.byKey.delete(key);
        this.releaseQp(c);
      } else if (c.present) {
        // Gone from a complete dump: the QP was destroyed, and its number may be reused.
        this.vanish(c);
      }
    }
    for (const d of devices) {
      const had = this.byDevice.get(d);
      const cost = u.scope.costs?.get(d);
      this.byDevice.set(d, {
        lateReads: (had?.lateReads ?? 0) + (u.late.has(d) ? 1 : 0),
        qpQueries: (had?.qpQueries ?? 0) + (cost?.qpQueries ?? 0),
        readIntervalMs: cost?.readIntervalMs ?? had?.readIntervalMs,
        overBudget: cost?.overBudget ?? had?.overBudget ?? false,
        lastReadUnixMs: cost?.readUnixMs ?? had?.lastReadUnixMs,
      });
    }
    return u.late;
  }

  private heldQp(o: ConnectionObservation): Connection | undefined {
    const key = this.keyOfQp.get(o.device)?.get(o.qpn);
    return key === undefined ? undefined : this.byKey.get(key);
  }

  private releaseQp(c: Connection): void {
    const qps = this.keyOfQp.get(c.obs.device);
    if (qps?.get(c.obs.qpn) === c.key) qps.delete(c.obs.qpn);
  }

  private vanish(c: Connection): void {
    this.releaseQp(c);
    const m = c as Mutable<Connection>;
    m.present = false;
    m.window = undefined;
  }

  /**
   * The common case of again(), read after read: the same QP of a present connection, read in
   * time, that the kernel describes as before (sameQpAgain() gave `o` itself). Its counts and
   * observation are updated in place: thousands of QPs read every second leave no garbage that
   * lives to the next read (what outlives V8's young generation costs a full collection).
   */
  private readAgain(c: Mutable<Connection>, o: ConnectionObservation, nowMs: number): string {
    const sent0 = c.sent.packets;
    const received0 = c.received?.packets ?? 0;
    const sent = psnAdvance(c.sent, o.sqPsn, sqSet(o));
    if (sent !== c.sent) Object.assign(c.sent, sent);
    if (o.rqPsn !== undefined) {
      const received = rqCount(c.received, o.rqPsn, o.state, psnAdvance);
      if (c.received === undefined) c.received = received;
      else if (received !== c.received) Object.assign(c.received, received);
    }
    const window: Mutable<ConnectionWindow> | undefined = c.window;
    const sentNow = c.sent.packets - sent0;
    const receivedNow = (c.received?.packets ?? 0) - received0;
    if (window === undefined) c.window = { sent: sentNow, received: receivedNow, ms: nowMs - c.lastSeenMs };
    else [window.sent, window.received, window.ms] = [sentNow, receivedNow, nowMs - c.lastSeenMs];
    const obs = c.obs as Mutable<ConnectionObservation>;
    [obs.sqPsn, obs.rqPsn, obs.rqpn, obs.state, obs.cmState] = [o.sqPsn, o.rqPsn, o.rqpn, o.state, o.cmState];
    c.pidKept = false;
    c.lastSeenMs = nowMs;
    return c.key;
  }

  /** The same QP read again; `late`: read too long after the last time to count its packets. */
  private again(prev: Connection, o: ConnectionObservation, pidKept: boolean, late: boolean, nowMs: number): string {
    const { restarts, twinQpn } = prev;
    if (late) {
      const received = o.rqPsn === undefined ? prev.received : rqCount(prev.received, o.rqPsn, o.state, psnRebase);
      this.set(prev.key, o, { sent: psnRebase(prev.sent, o.sqPsn, sqSet(o)), received, restarts, window: undefined, pidKept, twinQpn }, nowMs);
      return prev.key;
    }
    const sent = psnAdvance(prev.sent, o.sqPsn, sqSet(o));
    const received = o.rqPsn === undefined ? prev.received : rqCount(prev.received, o.rqPsn, o.state, psnAdvance);
    const window = prev.present
      ? { sent: sent.packets - prev.sent.packets, received: (received?.packets ?? 0) - (prev.received?.packets ?? 0), ms: nowMs - prev.lastSeenMs }
      : undefined;
    this.set(prev.key, o, { sent, received, restarts, window, pidKept, twinQpn }, nowMs);
    return prev.key;
  }

  /** A QP not read before: a restart of the connection of its identity, or a new connection. */
  private meet(o: ConnectionObservation, nowMs: number, seen: ReadonlySet<string>): string {
    let prev = this.byKey.get(o.key);
    // Two live QPs with one identity in one read: the second is a connection of its own.
    if (prev !== undefined && seen.has(prev.key)) prev = this.byKey.get(twinKey(o));
    if (prev === undefined) {
      const key = seen.has(o.key) ? twinKey(o) : o.key;
      this.set(key, o, { sent: psnBaseline(o.sqPsn, sqSet(o)), received: rqBaseline(o), restarts: 0, window: undefined, pidKept: false, twinQpn: key !== o.key ? o.qpn : undefined }, nowMs);
      return key;
    }
    this.releaseQp(prev);
    const received = o.rqPsn === undefined ? undefined : rqCount(prev.received, o.rqPsn, o.state, psnRebase);
    this.set(prev.key, o, { sent: psnRebase(prev.sent, o.sqPsn, sqSet(o)), received, restarts: prev.restarts + 1, window: undefined, pidKept: false, twinQpn: prev.twinQpn }, nowMs);
    return prev.key;
  }

  private set(key: string, obs: ConnectionObservation, c: Pick<Connection, 'sent' | 'received' | 'restarts' | 'window' | 'pidKept' | 'twinQpn'>, nowMs: number): void {
    this.byKey.set(key, {
      key, obs, sent: c.sent, received: c.received, restarts: c.restarts, present: true, lastSeenMs: nowMs, window: c.window, pidKept: c.pidKept, twinQpn: c.twinQpn,
    });
    let qps = this.keyOfQp.get(obs.device);
    if (qps === undefined) this.keyOfQp.set(obs.device, (qps = new Map<number, string>()));
    qps.set(obs.qpn, key);
  }

  /** Whether the connection of `key` is in its device's last read; undefined when it is not kept at all. */
  isPresent(key: string): boolean | undefined {
    return this.byKey.get(key)?.present;
  }

  /** Every connection known, present or recently gone, in first-seen order. */
  connections(): Connection[] {
    return [...this.byKey.values()];
  }

  /** Every device read so far, with what its reads were. */
  devices(): ReadonlyMap<string, DeviceReads> {
    return this.byDevice;
  }
}

/** What one update of the tracker carries from its first part to its last. */
interface UpdateState {
  readonly read: ReadonlySet<string>;
  readonly seen: Set<string>;
  readonly late: Set<string>;
  readonly fresh: ConnectionObservation[];
  readonly nowMs: number;
  readonly limit: ReadLimit | undefined;
  readonly scope: ReadScope;
}

/** One update of a ConnectionTracker in parts (ConnectionTracker.begin). */
export class TrackerUpdate {
  private readonly state: UpdateState;
  private result: ReadonlySet<string> | undefined;

  constructor(private readonly tracker: ConnectionTracker, private readonly devices: readonly string[], nowMs: number, limit: ReadLimit | undefined, scope: ReadScope) {
    this.state = { read: new Set(devices), seen: new Set(), late: new Set(), fresh: [], nowMs, limit, scope };
  }

  feed(observations: readonly ConnectionObservation[]): void {
    for (const o of observations) this.tracker.feedOne(this.state, o);
  }

  /** The new QPs met, then the rest; yields when `pause()` says so; the devices read late. */
  *finish(pause: () => boolean): Generator<void, ReadonlySet<string>> {
    if (this.result !== undefined) return this.result;
    const fresh = this.state.fresh;
    for (let i = 0; i < fresh.length; i++) {
      this.tracker.meetOne(this.state, fresh[i]!);
      if (pause()) yield;
    }
    fresh.length = 0;
    return (this.result = this.tracker.settle(this.state, this.devices));
  }
}

/** The tracker's own records are updated in place (readAgain); what it hands out is readonly. */
type Mutable<T> = { -readonly [K in keyof T]: T[K] };

function rqBaseline(o: ConnectionObservation): PsnCount | undefined {
  return o.rqPsn === undefined ? undefined : psnBaseline(o.rqPsn, psnSetIn(o.state, 'rq'));
}

/**
 * The receive count after a read of `rqPsn` in `state`: `step` (psnAdvance, or psnRebase for a
 * new PSN space) from what was counted, or the baseline when no rq_psn was read before.
 */
function rqCount(had: PsnCount | undefined, rqPsn: number, state: string, step: typeof psnAdvance): PsnCount {
  const set = psnSetIn(state, 'rq');
  return had ? step(had, rqPsn, set) : psnBaseline(rqPsn, set);
}

/** Whether the QP's state has set its send PSN (RTS and after). */
const sqSet = (o: Pick<ConnectionObservation, 'state'>): boolean => psnSetIn(o.state, 'sq');
