/**
 * RDMA connections over time: what each read of the kernel's QP and cm_id tables (one
 * observation per connection) adds to the packets each connection sent and received.
 *
 * - Identity: a connection with a cm_id is its device, port, local and peer address and pid; a
 *   QP without one (perftest without -R) is its device, port, QP number and pid. A QP number that
 *   changes under the same identity is a restart (MXL's RCInitiatorEndpoint::restart makes a new
 *   QP): counted, and the new QP's PSNs are a new baseline.
 * - The same QP (device and QP number) read again is the same connection, whatever else changed
 *   (the kernel drops the pid once the creating thread is gone).
 * - Packets: sq_psn gives sent, rq_psn received (psn.ts); first sight sets the baseline.
 * Pure: the caller says which devices were read and when.
 */
import { type PsnCount, psnAdvance, psnBaseline, psnRebase } from './psn.js';
import { key as compositeKey } from '../keys.js';

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
  /** The latest observation. */
  readonly obs: ConnectionObservation;
  readonly sent: PsnCount;
  readonly received: PsnCount | undefined;
  readonly restarts: number;
  /** In the last read of its device. */
  readonly present: boolean;
  readonly lastSeenMs: number;
  /** Undefined on first sight, after a restart, when absent, or when its device was not read this time. */
  readonly window: ConnectionWindow | undefined;
}

export type Direction = 'tx' | 'rx' | 'both' | '';

/** The side whose sq_psn moved sends, whose rq_psn moved receives. */
export function directionOf(c: Connection): Direction {
  const tx = c.sent.packets > 0;
  const rx = (c.received?.packets ?? 0) > 0;
  return tx && rx ? 'both' : tx ? 'tx' : rx ? 'rx' : '';
}

export const QP_UP_STATE = 'RTS';

const qpKey = (device: string, qpn: number): string => compositeKey(device, qpn);

export class ConnectionTracker {
  private readonly byKey = new Map<string, Connection>();
  private readonly keyOfQp = new Map<string, string>();

  /** `retainMs`: how long a vanished connection's counts are kept for its return (a restart). */
  constructor(private readonly retainMs = 10 * 60_000) {}

  /**
   * One read: `devices` were read in full at `nowMs` and hold exactly `observations`.
   * Connections of other devices keep their state (their read failed) but lose their window.
   */
  update(devices: readonly string[], observations: readonly ConnectionObservation[], nowMs: number): void {
    const read = new Set(devices);
    const seen = new Set<string>();
    // QPs read before first, so that a new QP meets its identity only once the old QP is known gone.
    const known = (o: ConnectionObservation): boolean => this.keyOfQp.has(qpKey(o.device, o.qpn));
    for (const o of observations.filter(known)) seen.add(this.observe(o, nowMs, seen));
    for (const o of observations.filter((o) => !known(o))) seen.add(this.observe(o, nowMs, seen));
    for (const [key, c] of this.byKey) {
      if (seen.has(key)) continue;
      if (!read.has(c.obs.device)) {
        if (c.window !== undefined) this.byKey.set(key, { ...c, window: undefined });
      } else if (nowMs - c.lastSeenMs > this.retainMs) {
        this.byKey.delete(key);
        this.keyOfQp.delete(qpKey(c.obs.device, c.obs.qpn));
      } else if (c.present) {
        // Gone from a complete dump: the QP was destroyed, and its number may be reused.
        this.keyOfQp.delete(qpKey(c.obs.device, c.obs.qpn));
        this.byKey.set(key, { ...c, present: false, window: undefined });
      }
    }
  }

  private observe(o: ConnectionObservation, nowMs: number, seen: ReadonlySet<string>): string {
    const sameQp = this.keyOfQp.get(qpKey(o.device, o.qpn));
    let prev = sameQp !== undefined ? this.byKey.get(sameQp) : this.byKey.get(o.key);
    // Two live QPs with one identity in one read: the second is a connection of its own.
    if (sameQp === undefined && prev !== undefined && seen.has(prev.key)) prev = this.byKey.get(`${o.key} qpn:${o.qpn}`);
    const key = prev?.key ?? (seen.has(o.key) ? `${o.key} qpn:${o.qpn}` : o.key);
    if (prev === undefined) {
      this.set(key, o, { sent: psnBaseline(o.sqPsn), received: rqBaseline(o), restarts: 0, window: undefined }, nowMs);
    } else if (sameQp === undefined) {
      this.keyOfQp.delete(qpKey(prev.obs.device, prev.obs.qpn));
      const received = o.rqPsn === undefined ? undefined : prev.received ? psnRebase(prev.received, o.rqPsn) : psnBaseline(o.rqPsn);
      this.set(key, o, { sent: psnRebase(prev.sent, o.sqPsn), received, restarts: prev.restarts + 1, window: undefined }, nowMs);
    } else {
      const sent = psnAdvance(prev.sent, o.sqPsn);
      const received = o.rqPsn === undefined ? prev.received : prev.received ? psnAdvance(prev.received, o.rqPsn) : psnBaseline(o.rqPsn);
      const window = prev.present
        ? { sent: sent.packets - prev.sent.packets, received: (received?.packets ?? 0) - (prev.received?.packets ?? 0), ms: nowMs - prev.lastSeenMs }
        : undefined;
      this.set(key, o, { sent, received, restarts: prev.restarts, window }, nowMs);
    }
    return key;
  }

  private set(key: string, obs: ConnectionObservation, c: Pick<Connection, 'sent' | 'received' | 'restarts' | 'window'>, nowMs: number): void {
    this.byKey.set(key, { key, obs, ...c, present: true, lastSeenMs: nowMs });
    this.keyOfQp.set(qpKey(obs.device, obs.qpn), key);
  }

  /** Every connection known, present or recently gone, in first-seen order. */
  connections(): Connection[] {
    return [...this.byKey.values()];
  }
}

function rqBaseline(o: ConnectionObservation): PsnCount | undefined {
  return o.rqPsn === undefined ? undefined : psnBaseline(o.rqPsn);
}
