/**
 * Packets and bytes per second for one flow (seed sections 2 and 3), from the RDMA writes MXL
 * issues (transfer.ts), the packets each write takes at the payload per packet, and the layers
 * around them; plus the acknowledgements that come back the other way. Pure.
 */
import { type Rational, rational, add, scale, mul, ceilDiv, ZERO, parseRational } from './rational.js';
import { type MediaFlow, type Grain, grainOf } from './media.js';
import type { ProviderProfile } from './provider.js';
import { type Mtu, payloadPerPacket, l3Mtu } from './mtu.js';
import { type RdmaWrite, type TransferOptions, grainWrites, audioBatchWrites } from './transfer.js';
import { type RingCycle, defaultRingLength, ringCycle, wrapsPerBatch } from './ring.js';

/**
 * media: the essence only; payload: what the RDMA writes carry (media + MXL's headers);
 * l3: + per-packet IP/UDP/BTH/ICRC and per-write RETH/ImmDt; l2: + Ethernet header (what
 * /sys/class/net/X/statistics counts); wire: the seed's wire rate (+ preamble, IFG, FCS).
 */
export const LAYERS = ['media', 'payload', 'l3', 'l2', 'wire'] as const;
export type Layer = (typeof LAYERS)[number];
type Bytes = Readonly<Record<Layer, Rational>>;

/** Where an audio flow's batches fall in its ring (ring.ts). */
export interface RingModel {
  readonly lengthSamples: bigint;
  /** `flow`: read from the flow's header in a domain; `default`: MXL's default for the rate. */
  readonly from: 'flow' | 'default';
  /** `known` when a batch's head index fixed the phase, else the average over all phases. */
  readonly phase: 'known' | 'unknown';
  readonly wrapsPerBatch: Rational;
  /** The writes of a batch that wraps halfway through the batch (an example; sizes vary with the split). */
  readonly wrappingWrites: readonly RdmaWrite[];
}

/** The acknowledgements a flow's writes draw, on the opposite direction of its port. */
export interface ReversePrediction {
  readonly acksPerEvent: Rational;
  readonly packetsPerSecond: Rational;
  readonly bytesPerSecond: Bytes;
}

export interface Prediction {
  readonly provider: string;
  readonly mtu: number;
  readonly payloadPerPacket: number;
  readonly grain: Grain;
  /** Media bytes per grain (the seed's payloadBytesPerEvent). */
  readonly payloadBytesPerEvent: bigint;
  /** Bytes the RDMA writes of one grain or batch carry: media plus MXL's headers. */
  readonly writeBytesPerEvent: bigint;
  /** The writes of one grain or batch (for audio: a batch that does not wrap the ring). */
  readonly writes: readonly RdmaWrite[];
  /** Packets of `writes`. */
  readonly packetsPerEvent: bigint;
  /** Writes and packets per grain or batch on average, ring wraps included. */
  readonly writesPerEvent: Rational;
  readonly expectedPacketsPerEvent: Rational;
  readonly ring: RingModel | undefined;
  readonly eventRate: Rational;
  readonly packetsPerSecond: Rational;
  readonly mediaBytesPerSecond: Rational;
  /** wire - media: everything the transport and MXL add. */
  readonly overheadBytesPerSecond: Rational;
  readonly bytesPerSecond: Bytes;
  readonly reverse: ReversePrediction;
}

/** One transfer unit's cost, in whole numbers. */
interface UnitCost {
  readonly writes: bigint;
  readonly packets: bigint;
  readonly ackRequests: bigint;
  readonly payload: bigint;
  readonly l3: bigint;
  readonly l2: bigint;
  readonly wire: bigint;
}

const COST_KEYS = ['writes', 'packets', 'ackRequests', 'payload', 'l3', 'l2', 'wire'] as const;

/** Packets per write: a zero-byte write is still one packet (RDMA WRITE Only). */
const writePackets = (bytes: bigint, perPacket: number): bigint => (bytes === 0n ? 1n : ceilDiv(bytes, BigInt(perPacket)));

function unitCost(writes: readonly RdmaWrite[], profile: ProviderProfile, perPacket: number): UnitCost {
  let packets = 0n, ackRequests = 0n, payload = 0n, headers = 0n;
  for (const w of writes) {
    const n = writePackets(w.bytes, perPacket);
    packets += n;
    ackRequests += profile.ackEveryPackets > 0 ? ceilDiv(n, BigInt(profile.ackEveryPackets)) : 1n;
    payload += w.bytes;
    headers += BigInt(profile.writeHeaderBytes + (w.immediate ? profile.immediateDataBytes : 0));
  }
  const l3 = payload + headers + packets * BigInt(profile.mtuOverheadBytes);
  return {
    writes: BigInt(writes.length), packets, ackRequests, payload, l3,
    l2: l3 + packets * BigInt(profile.l2HeaderBytes),
    wire: payload + headers + packets * BigInt(profile.wireOverheadBytes),
  };
}

type Expected = Readonly<Record<(typeof COST_KEYS)[number], Rational>>;

const exactly = (c: UnitCost): Expected =>
  Object.fromEntries(COST_KEYS.map((k) => [k, rational(c[k])])) as Expected;

/** The average cost per batch over one ring cycle: non-wrapping positions plus each split once. */
function averageOverRing(plain: UnitCost, cycle: RingCycle, wrapped: (split: bigint) => UnitCost): Expected {
  const sums = Object.fromEntries(COST_KEYS.map((k) => [k, plain[k] * (cycle.positions - BigInt(cycle.splits.length))])) as Record<(typeof COST_KEYS)[number], bigint>;
  for (const split of cycle.splits) {
    const c = wrapped(split);
    for (const k of COST_KEYS) sums[k] += c[k];
  }
  return Object.fromEntries(COST_KEYS.map((k) => [k, rational(sums[k], cycle.positions)])) as Expected;
}

interface Transfer {
  readonly writes: readonly RdmaWrite[];
  readonly plain: UnitCost;
  readonly expected: Expected;
  readonly ring: RingModel | undefined;
}

function transferOf(media: MediaFlow, grain: Grain, profile: ProviderProfile, perPacket: number, opts: TransferOptions): Transfer {
  if (media.format !== 'audio') {
    const writes = grainWrites(media, grain, profile, opts);
    const plain = unitCost(writes, profile, perPacket);
    return { writes, plain, expected: exactly(plain), ring: undefined };
  }
  const samples = grain.linesOrSamples!;
  const sampleBytes = BigInt(media.bitDepth / 8);
  const batch = (split?: bigint): RdmaWrite[] => audioBatchWrites(media.channels, samples, sampleBytes, profile, split);
  const writes = batch();
  const plain = unitCost(writes, profile, perPacket);
  const lengthSamples = opts.ringLengthSamples ?? defaultRingLength(media.sampleRate, media.bitDepth);
  const cycle = ringCycle(samples, lengthSamples, opts.batchEndIndex);
  const wrappedCost = (split: bigint): UnitCost => unitCost(batch(split), profile, perPacket);
  // Without an iov limit a wrapped batch is still one write of the same bytes: nothing to average.
  const expected = profile.txIovLimit > 0 ? averageOverRing(plain, cycle, wrappedCost) : exactly(plain);
  return {
    writes, plain, expected,
    ring: {
      lengthSamples, from: opts.ringLengthSamples === undefined ? 'default' : 'flow',
      phase: opts.batchEndIndex === undefined ? 'unknown' : 'known',
      wrapsPerBatch: wrapsPerBatch(cycle), wrappingWrites: batch(samples / 2n),
    },
  };
}

function reverseOf(expected: Expected, rate: Rational, profile: ProviderProfile): ReversePrediction {
  const acksPerEvent = mul(expected.ackRequests, parseRational(String(profile.acksPerMessage)));
  const packetsPerSecond = mul(acksPerEvent, rate);
  const perAck = (bytes: number): Rational => scale(packetsPerSecond, bytes);
  const l3 = perAck(profile.mtuOverheadBytes + profile.ackHeaderBytes);
  return {
    acksPerEvent,
    packetsPerSecond,
    bytesPerSecond: {
      media: ZERO, payload: ZERO, l3,
      l2: add(l3, perAck(profile.l2HeaderBytes)),
      wire: perAck(profile.wireOverheadBytes + profile.ackHeaderBytes),
    },
  };
}

export function predict(media: MediaFlow, profile: ProviderProfile, mtu: Mtu, opts: TransferOptions = {}): Prediction {
  const grain = grainOf(media);
  const perPacket = payloadPerPacket(mtu, profile);
  const t = transferOf(media, grain, profile, perPacket, opts);
  const rate = grain.rate;
  const perSecond = (r: Rational): Rational => mul(r, rate);
  const mediaRate = scale(rate, grain.payloadBytes);
  const wire = perSecond(t.expected.wire);
  return {
    provider: profile.name,
    mtu: l3Mtu(mtu, profile),
    payloadPerPacket: perPacket,
    grain,
    payloadBytesPerEvent: grain.payloadBytes,
    writeBytesPerEvent: t.plain.payload,
    writes: t.writes,
    packetsPerEvent: t.plain.packets,
    writesPerEvent: t.expected.writes,
    expectedPacketsPerEvent: t.expected.packets,
    ring: t.ring,
    eventRate: rate,
    packetsPerSecond: perSecond(t.expected.packets),
    mediaBytesPerSecond: mediaRate,
    overheadBytesPerSecond: add(wire, mul(mediaRate, rational(-1n))),
    bytesPerSecond: {
      media: mediaRate,
      payload: perSecond(t.expected.payload),
      l3: perSecond(t.expected.l3),
      l2: perSecond(t.expected.l2),
      wire,
    },
    reverse: reverseOf(t.expected, rate, profile),
  };
}
