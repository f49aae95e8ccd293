/**
 * Which MXL flow a connection carries (pure): from the flows its process maps
 * (/proc/PID/maps, src/sources/procfs) and the `peer:` pins of the config.
 *
 * - A flow pinned with `peer:` (the target's address:port) is carried by the process's
 *   connection whose peer (the initiator's side) or local address (the target's side) is that
 *   address, when the process maps the flow, and by no other connection.
 * - Otherwise a process that maps exactly one (unpinned) flow and owns one connection per
 *   direction: each of those connections carries it. A connection whose PSNs have not moved yet
 *   carries it only when it is the process's one connection.
 * - Anything else (several flows, several connections one way, maps unreadable) is no flow: the
 *   comparison is then per process, never a guess.
 */
import { type Connection, directionOf } from '../../model/connections.js';
import type { MappedFlowsRead, ProcessRead } from '../procfs/index.js';
import type { Config } from '../../config/types.js';
import { groupBy } from '../../group.js';

/** `peer:` on a flows[] entry (its flow id) or on a domains[] entry (every flow mapped under its path). */
export type Pin = { readonly peer: string } & ({ readonly flowId: string } | { readonly domain: string });

const pinned = (pin: Pin, flowId: string, domain: string): boolean => ('flowId' in pin ? pin.flowId === flowId : pin.domain === domain);

/** `peer:` pins of a config: its flows' by flow id, its domains' by domain path. */
export function pinsOf(config: Pick<Config, 'flows' | 'domains'> | undefined): Pin[] {
  if (!config) return [];
  return [
    ...config.flows.flatMap((b) => (b.peer ? [{ flowId: b.flow.id, peer: b.peer }] : [])),
    ...config.domains.flatMap((d) => (d.peer ? [{ domain: d.path, peer: d.peer }] : [])),
  ];
}

interface Carried {
  readonly flowId: string;
  /** The domain path the process maps it under. */
  readonly domain: string;
  readonly how: 'pinned' | 'only-flow';
}

export interface ConnectionOwner {
  /** /proc/PID/comm, or the kernel user's name for a kernel QP; '' when unknown. */
  readonly process: string;
  readonly container: string;
  readonly podUid: string;
  readonly carried: Carried | undefined;
}

export function assignFlows(
  connections: readonly Connection[],
  processes: ReadonlyMap<number, ProcessRead>,
  maps: ReadonlyMap<number, MappedFlowsRead>,
  pins: readonly Pin[],
): Map<string, ConnectionOwner> {
  const out = new Map<string, ConnectionOwner>();
  for (const c of connections) {
    if (c.obs.pid === undefined) out.set(c.key, { process: c.obs.kernName ?? '', container: '', podUid: '', carried: undefined });
  }
  for (const [pid, cs] of groupBy(connections, (c) => c.obs.pid)) {
    const p = processes.get(pid);
    const who = p?.ok ? { process: p.process.comm, container: p.process.container ?? '', podUid: p.process.podUid ?? '' } : { process: '', container: '', podUid: '' };
    const carried = carriedIn(cs, maps.get(pid), pins);
    // One owner object for the process's connections that carry nothing (most of thousands).
    const none: ConnectionOwner = { ...who, carried: undefined };
    for (const c of cs) {
      const flow = carried.get(c.key);
      out.set(c.key, flow === undefined ? none : { ...who, carried: flow });
    }
  }
  return out;
}

function carriedIn(cs: readonly Connection[], mapped: MappedFlowsRead | undefined, pins: readonly Pin[]): Map<string, Carried> {
  const out = new Map<string, Carried>();
  if (!mapped?.ok) return out;
  const flows = new Map<string, string>();
  for (const f of mapped.flows) if (!flows.has(f.flowId)) flows.set(f.flowId, f.domain);
  const taken = new Set<string>();
  for (const pin of pins) {
    for (const [flowId, domain] of flows) {
      if (!pinned(pin, flowId, domain)) continue;
      taken.add(flowId);
      for (const c of cs) {
        if (!out.has(c.key) && (c.obs.peer === pin.peer || c.obs.local === pin.peer)) out.set(c.key, { flowId, domain, how: 'pinned' });
      }
    }
  }
  const rest = [...flows].filter(([id]) => !taken.has(id));
  const free = cs.filter((c) => !out.has(c.key));
  if (rest.length !== 1 || free.length === 0) return out;
  const [flowId, domain] = rest[0]!;
  const carry = (c: Connection): void => void out.set(c.key, { flowId, domain, how: 'only-flow' });
  if (free.length === 1) {
    carry(free[0]!);
    return out;
  }
  for (const d of ['tx', 'rx'] as const) {
    const one = free.filter((c) => directionOf(c) === d);
    if (one.length === 1) carry(one[0]!);
  }
  return out;
}

/**
 * A process whose flows and connections the per-flow join could not pair (several flows and
 * several connections one way, no `peer:` pin deciding): compared as a whole instead, its flows'
 * predictions summed against its connections' packets (docs/connections.md).
 */
export interface ProcessShare {
  readonly pid: number;
  /** The flows it maps that none of its connections carries: flow id -> domain path. */
  readonly flows: ReadonlyMap<string, string>;
  /** Its present connections whose PSNs moved, carrying no flow. */
  readonly connections: readonly Connection[];
}

export function sharedByProcess(
  connections: readonly Connection[],
  owners: ReadonlyMap<string, ConnectionOwner>,
  maps: ReadonlyMap<number, MappedFlowsRead>,
): ProcessShare[] {
  const out: ProcessShare[] = [];
  for (const [pid, cs] of groupBy(connections, (c) => (c.present ? c.obs.pid : undefined))) {
    const mapped = maps.get(pid);
    if (!mapped?.ok) continue;
    const carried = new Set(cs.flatMap((c) => owners.get(c.key)?.carried?.flowId ?? []));
    const flows = new Map<string, string>();
    for (const f of mapped.flows) if (!carried.has(f.flowId) && !flows.has(f.flowId)) flows.set(f.flowId, f.domain);
    const free = cs.filter((c) => owners.get(c.key)?.carried === undefined && directionOf(c) !== '');
    if (flows.size > 0 && free.length > 0) out.push({ pid, flows, connections: free });
  }
  return out;
}
