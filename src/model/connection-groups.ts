/**
 * Connections counted by group instead of one by one (metrics.connection_series `flow` or
 * `process`): one set of series per flow's connections on a port and direction, or per process,
 * so that a host with thousands of QPs does not export thousands of series sets.
 *
 * A group's counters add what each of its connections moved while it was in the group, read by
 * read (the packets since that connection's last read): they never go back when a connection
 * leaves (it vanished and its 10 minutes are over, or it was found to carry a flow and moved to
 * that flow's group). A group is kept while one of its connections is known (present, or gone and
 * kept); then it goes, and a group of the same labels later starts from 0 (a counter reset).
 * Pure: the caller says which group each connection is in.
 */
import { type Connection, connectionUp } from './connections.js';

/** A group's labels: device, port and direction, and either a flow or a process (the other ''). */
export interface GroupLabels {
  readonly device: string;
  readonly port: number;
  readonly direction: string;
  readonly flowId: string;
  readonly pid: string;
  readonly process: string;
}

export interface ConnectionGroup {
  readonly labels: GroupLabels;
  /** Its connections in the kernel's tables now. */
  readonly connections: number;
  /** Of them, up (model/connections.ts connectionUp). */
  readonly up: number;
  readonly sent: number;
  readonly received: number;
  readonly rewinds: number;
  readonly restarts: number;
}

/** A group as it counts: its labels, what it counted, and its members at the update under way. */
interface Group {
  readonly labels: GroupLabels;
  sent: number;
  received: number;
  rewinds: number;
  restarts: number;
  connections: number;
  up: number;
  members: number;
}

/** A connection as last added: its totals then, its group, and the update that last met it. */
interface Member {
  sent: number;
  received: number;
  rewinds: number;
  restarts: number;
  update: number;
  labels: GroupLabels | undefined;
  group: Group | undefined;
}

const groupKey = (l: GroupLabels): string => `${l.device}\0${l.port}\0${l.direction}\0${l.flowId}\0${l.pid}\0${l.process}`;

/**
 * Which group a connection is in now; `had`: the labels it was given at the last update, to hand
 * back when nothing changed (the same object: its group is then found without a lookup).
 */
export type GroupOf = (c: Connection, had: GroupLabels | undefined) => GroupLabels | undefined;

export class ConnectionGroups {
  private readonly byKey = new Map<string, Group>();
  private readonly members = new Map<string, Member>();
  private updates = 0;
  private current: ConnectionGroup[] = [];

  /** One read: every connection known now, each with its group (undefined: counted in none). */
  update(connections: readonly Connection[], groupOf: GroupOf): void {
    const g = this.updateSliced(connections, groupOf, () => false);
    let step = g.next();
    while (!step.done) step = g.next();
  }

  /** update(), yielding whenever `pause()` says a slice of time is over (it asks every 1,024 connections). */
  *updateSliced(connections: readonly Connection[], groupOf: GroupOf, pause: () => boolean): Generator<void, void> {
    const update = ++this.updates;
    for (const g of this.byKey.values()) g.connections = g.up = g.members = 0;
    const order: Group[] = [];
    for (let i = 0; i < connections.length; i++) {
      const c = connections[i]!;
      if ((i & 1023) === 1023 && pause()) yield;
      let m = this.members.get(c.key);
      if (m === undefined) this.members.set(c.key, (m = { sent: 0, received: 0, rewinds: 0, restarts: 0, update, labels: undefined, group: undefined }));
      m.update = update;
      const sent = c.sent.packets;
      const received = c.received?.packets ?? 0;
      const rewinds = c.sent.rewinds + (c.received?.rewinds ?? 0);
      const labels = groupOf(c, m.labels);
      if (labels === undefined) {
        m.labels = m.group = undefined;
      } else {
        if (labels !== m.labels || m.group === undefined) {
          const k = groupKey(labels);
          let g = this.byKey.get(k);
          if (g === undefined) this.byKey.set(k, (g = { labels, sent: 0, received: 0, rewinds: 0, restarts: 0, connections: 0, up: 0, members: 0 }));
          [m.labels, m.group] = [labels, g];
        }
        const g = m.group;
        // A count never goes back (psn.ts: rewinds are counted, not subtracted); max() keeps a group
        // monotonic should a connection's totals ever be rebuilt lower.
        g.sent += Math.max(0, sent - m.sent);
        g.received += Math.max(0, received - m.received);
        g.rewinds += Math.max(0, rewinds - m.rewinds);
        g.restarts += Math.max(0, c.restarts - m.restarts);
        if (g.members++ === 0) order.push(g);
        if (c.present) g.connections++;
        if (connectionUp(c)) g.up++;
      }
      [m.sent, m.received, m.rewinds, m.restarts] = [sent, received, rewinds, c.restarts];
    }
    for (const [k, m] of this.members) if (m.update !== update) this.members.delete(k);
    for (const [k, g] of this.byKey) if (g.members === 0) this.byKey.delete(k);
    this.current = order.map((g) => ({ labels: g.labels, connections: g.connections, up: g.up, sent: g.sent, received: g.received, rewinds: g.rewinds, restarts: g.restarts }));
  }

  /** The groups after the last update, in the order their first connection was met. */
  groups(): readonly ConnectionGroup[] {
    return this.current;
  }
}
