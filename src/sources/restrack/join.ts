/**
 * One device's QP and cm_id dumps joined into connection observations (pure).
 *
 * A cm_id names its QP by number (LQPN, set once connected): the two meet on device and QP
 * number. SMI and GSI QPs (QP0/QP1, the kernel's management QPs) are not connections; every
 * other QP is, with or without a cm_id. A cm_id whose QP is not in the QP dump (destroyed
 * between the two dumps, or never created: a listener) is no connection.
 */
import { type ConnectionObservation, identityKey, qpnLocal } from '../../model/connections.js';
import { type CmIdEntry, type QpEntry, type ResDump, cmStateName, qpStateName, qpTypeName, sockAddrText } from '../netlink/restrack.js';

const QPT_SMI = 0;
const QPT_GSI = 1;
/** RDMA_CM_CONNECT: an established cm_id (cma_priv.h enum rdma_cm_state). */
const CM_CONNECT = 5;

export interface JoinedDevice {
  readonly observations: readonly ConnectionObservation[];
  /** cm_ids naming a QP number the QP dump does not hold. */
  readonly cmIdsWithoutQp: number;
}

/**
 * The identity keys of a device's QPs as last joined, by QP number: a QP read again with the same
 * port, addresses and owner keeps its key string (identityKey() builds one per QP otherwise).
 */
export class IdentityKeys {
  private readonly byQpn = new Map<number, { readonly port: number; readonly local: string; readonly peer: string; readonly pid: number | undefined; readonly kernName: string | undefined; readonly key: string }>();
  private seen = new Set<number>();

  keyOf(o: Parameters<typeof identityKey>[0]): string {
    this.seen.add(o.qpn);
    const had = this.byQpn.get(o.qpn);
    if (had !== undefined && had.port === o.port && had.local === o.local && had.peer === o.peer && had.pid === o.pid && had.kernName === o.kernName) return had.key;
    const key = identityKey(o);
    this.byQpn.set(o.qpn, { port: o.port, local: o.local, peer: o.peer, pid: o.pid, kernName: o.kernName, key });
    return key;
  }

  /** After a join: QP numbers it did not meet are forgotten. */
  settle(): void {
    for (const qpn of this.byQpn.keys()) if (!this.seen.has(qpn)) this.byQpn.delete(qpn);
    this.seen = new Set();
  }
}

export function joinDevice(device: string, qps: ResDump<QpEntry>, cmIds: ResDump<CmIdEntry>, keys?: IdentityKeys): JoinedDevice {
  const join = new DeviceJoin(device, cmIds.entries, keys);
  join.add(qps.entries);
  return join.done();
}

/** One device's join, its QPs added in as many parts as they come (netlink/restrack.ts decodeQpDumpSliced `each`). */
export class DeviceJoin {
  private readonly byQpn = new Map<number, CmIdEntry>();
  private readonly joined = new Set<number>();
  readonly observations: ConnectionObservation[] = [];

  constructor(private readonly device: string, cmIds: readonly CmIdEntry[], private readonly keys: IdentityKeys | undefined) {
    for (const c of cmIds) {
      if (c.lqpn === undefined) continue;
      const had = this.byQpn.get(c.lqpn);
      if (had === undefined || (had.state !== CM_CONNECT && c.state === CM_CONNECT)) this.byQpn.set(c.lqpn, c);
    }
  }

  add(qps: readonly QpEntry[]): void {
    for (const qp of qps) {
      if (qp.type === QPT_SMI || qp.type === QPT_GSI) continue;
      const cm = this.byQpn.get(qp.lqpn);
      if (cm !== undefined) this.joined.add(qp.lqpn);
      this.observations.push(observation(this.device, qp, cm, this.keys));
    }
  }

  done(): JoinedDevice {
    this.keys?.settle();
    return { observations: this.observations, cmIdsWithoutQp: [...this.byQpn.keys()].filter((n) => !this.joined.has(n)).length };
  }
}

function observation(device: string, qp: QpEntry, cm: CmIdEntry | undefined, keys: IdentityKeys | undefined): ConnectionObservation {
  const port = qp.port ?? cm?.port ?? 0;
  const pid = qp.pid ?? cm?.pid;
  const kernName = qp.kernName ?? cm?.kernName;
  const withAddrs = cm?.src !== undefined && cm.dst !== undefined;
  const local = withAddrs ? sockAddrText(cm.src) : qpnLocal(qp.lqpn);
  const peer = withAddrs ? sockAddrText(cm.dst) : qp.rqpn !== undefined ? `rqpn:${qp.rqpn}` : '';
  const fields = { device, port, qpn: qp.lqpn, local, peer, pid, kernName };
  return {
    key: keys ? keys.keyOf(fields) : identityKey(fields),
    device,
    port,
    qpn: qp.lqpn,
    rqpn: qp.rqpn,
    qpType: qpTypeName(qp.type),
    state: qpStateName(qp.state),
    cmState: cm === undefined ? undefined : cmStateName(cm.state),
    local,
    peer,
    pid,
    kernName,
    sqPsn: qp.sqPsn,
    rqPsn: qp.rqPsn,
  };
}
