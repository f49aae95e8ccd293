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

export function joinDevice(device: string, qps: ResDump<QpEntry>, cmIds: ResDump<CmIdEntry>): JoinedDevice {
  const byQpn = new Map<number, CmIdEntry>();
  for (const c of cmIds.entries) {
    if (c.lqpn === undefined) continue;
    const had = byQpn.get(c.lqpn);
    if (had === undefined || (had.state !== CM_CONNECT && c.state === CM_CONNECT)) byQpn.set(c.lqpn, c);
  }
  const observations: ConnectionObservation[] = [];
  const joined = new Set<number>();
  for (const qp of qps.entries) {
    if (qp.type === QPT_SMI || qp.type === QPT_GSI) continue;
    const cm = byQpn.get(qp.lqpn);
    if (cm !== undefined) joined.add(qp.lqpn);
    observations.push(observation(device, qp, cm));
  }
  return { observations, cmIdsWithoutQp: [...byQpn.keys()].filter((n) => !joined.has(n)).length };
}

function observation(device: string, qp: QpEntry, cm: CmIdEntry | undefined): ConnectionObservation {
  const port = qp.port ?? cm?.port ?? 0;
  const pid = qp.pid ?? cm?.pid;
  const kernName = qp.kernName ?? cm?.kernName;
  const withAddrs = cm?.src !== undefined && cm.dst !== undefined;
  const local = withAddrs ? sockAddrText(cm.src) : qpnLocal(qp.lqpn);
  const peer = withAddrs ? sockAddrText(cm.dst) : qp.rqpn !== undefined ? `rqpn:${qp.rqpn}` : '';
  return {
    key: identityKey({ device, port, qpn: qp.lqpn, local, peer, pid, kernName }),
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
