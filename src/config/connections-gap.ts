/**
 * A config whose connections reads come further apart than a configured port can send 2^23
 * packets in is refused when it sets that schedule (model/psn.ts psnReadLimitMs): its PSN counts
 * could be wrong; with the default schedule it is a warning. The port
 * is taken at its link rate where the running exporter knows it (`links`), at its configured
 * capacity otherwise, with its configured MTU, or its active one.
 */
import type { Fields } from '../input/fields.js';
import { MtuError, payloadPerPacket } from '../model/mtu.js';
import { PSN_COUNTED_SAFE, psnReadLimitMs } from '../model/psn.js';
import { connectionsReadGapMs } from '../model/connections-schedule.js';
import type { Config, PortConfig } from './types.js';
import { key } from '../keys.js';

/** What the running exporter read of a port (its PortAttributes). */
export interface PortLink {
  readonly rateBitsPerSecond: number | undefined;
  readonly activeIbMtu: number | undefined;
}

export type PortLinks = (device: string, port: number) => PortLink | undefined;

interface PortLimit {
  readonly port: PortRef;
  readonly bitsPerSecond: number;
  readonly payloadBytes: number;
  readonly limitMs: number;
}

type PortRef = Pick<PortConfig, 'device' | 'port'>;

/** How far apart a schedule reads connections, and the fastest-wrapping port it reads too late. */
interface Gap {
  readonly gapMs: number;
  readonly worst: PortLimit;
}

/**
 * How long a port's PSNs may go unread (psnReadLimitMs): at its link rate, else its configured
 * capacity; at its configured MTU, else its active one. Undefined while either is unknown.
 */
export function portReadLimit(ref: PortRef, p: PortConfig | undefined, link: PortLink | undefined): PortLimit | undefined {
  const capacity = p === undefined || p.capacityBitsPerSecond === 'auto' ? undefined : p.capacityBitsPerSecond;
  const bitsPerSecond = link?.rateBitsPerSecond ?? capacity;
  let payloadBytes: number | undefined;
  try {
    payloadBytes = p === undefined || p.mtu === 'auto' ? link?.activeIbMtu : payloadPerPacket(p.mtu, p.provider);
  } catch (e) {
    if (!(e instanceof MtuError)) throw e;
  }
  if (bitsPerSecond === undefined || payloadBytes === undefined || bitsPerSecond <= 0) return undefined;
  return { port: ref, bitsPerSecond, payloadBytes, limitMs: psnReadLimitMs(bitsPerSecond, payloadBytes) };
}

/** The fastest-wrapping configured port a connections schedule reads too late, with its gap; undefined when none. */
function worstGap(config: Pick<Config, 'sampling' | 'connections' | 'ports'>, links: PortLinks | undefined): Gap | undefined {
  if (!config.connections.enabled) return undefined;
  const gapMs = connectionsReadGapMs({ samplingIntervalMs: config.sampling.intervalMs, connectionsIntervalMs: config.connections.intervalMs });
  const limits = config.ports.flatMap((p) => portReadLimit(p, p, links?.(p.device, p.port)) ?? []);
  const worst = limits.reduce<PortLimit | undefined>((a, b) => (a === undefined || b.limitMs < a.limitMs ? b : a), undefined);
  return worst === undefined || gapMs < worst.limitMs ? undefined : { gapMs, worst };
}

function gapText({ gapMs, worst }: Gap): string {
  return `connections are read every ${gapMs} ms (on the sampling ticks, at least connections.interval apart); port ` +
    `${key(worst.port.device, worst.port.port)} (${worst.bitsPerSecond / 1e9} Gb/s, ${worst.payloadBytes}-byte packets) can send 2^23 packets, ` +
    `the most a 24-bit PSN tells apart, in ${Math.floor(worst.limitMs)} ms`;
}

/** The refusal of a schedule that reads a port too late, with what to set instead. */
const refusedText = (gap: Gap): string => `${gapText(gap)}: set sampling.interval and connections.interval below that, or connections.enabled: false`;

/** Why the connections schedule reads the fastest configured port's PSNs too late; undefined when it does not. */
export function connectionsGapProblem(config: Pick<Config, 'sampling' | 'connections' | 'ports'>, links: PortLinks | undefined): string | undefined {
  const gap = worstGap(config, links);
  return gap === undefined ? undefined : refusedText(gap);
}

/**
 * connectionsGapProblem() reported at `connections.interval` or `sampling.interval`, whichever is
 * set. With both at their defaults it is a warning at `connections`: the shipped defaults must
 * start on a 400 Gb/s port, and a read the clock calls late still counts while the port's own
 * counters show too few packets for a PSN to wrap (model/psn.ts psnSafeByCount).
 */
export function checkConnectionsGap(root: Fields, config: Pick<Config, 'sampling' | 'connections' | 'ports'>, links: PortLinks | undefined): void {
  const gap = worstGap(config, links);
  if (gap === undefined) return;
  // A `connections:` or `sampling:` that is no mapping was reported as such already.
  const section = (name: string): Fields | undefined => (root.isObject(root.at(name)) ? root.object(name, false) : undefined);
  const c = section('connections');
  const s = section('sampling');
  if (c?.has('interval')) c.report('interval', refusedText(gap));
  else if (s?.has('interval')) s.report('interval', refusedText(gap));
  else {
    const warning = `${gapText(gap)} at its link rate: with the default intervals its connections' reads count only while its counters show fewer than ` +
      `${PSN_COUNTED_SAFE} packets each way between two reads (the others count in mxl_fabric_connections_late_reads_total); set sampling.interval and connections.interval below ${Math.floor(gap.worst.limitMs)} ms to count at any rate`;
    root.warn('connections', warning);
  }
}
