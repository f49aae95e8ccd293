/** Packets and bytes per second for one flow (seed sections 2 and 3). Pure. */
import { type Rational, rational, add, scale, mul, ceilDiv } from './rational.js';
import { type MediaFlow, type Grain, grainOf } from './media.js';
import type { ProviderProfile } from './provider.js';
import { type Mtu, payloadPerPacket, l3Mtu } from './mtu.js';

export const LAYERS = ['payload', 'l3', 'l2', 'wire'] as const;
export type Layer = (typeof LAYERS)[number];

export interface Prediction {
  readonly provider: string;
  readonly mtu: number;
  readonly payloadPerPacket: number;
  readonly grain: Grain;
  /** Media bytes per grain (the seed's payloadBytesPerEvent). */
  readonly payloadBytesPerEvent: bigint;
  /** Bytes one RDMA write carries: media plus the profile's grain header. */
  readonly writeBytesPerEvent: bigint;
  readonly eventRate: Rational;
  readonly packetsPerEvent: bigint;
  readonly packetsPerSecond: Rational;
  readonly mediaBytesPerSecond: Rational;
  /** wire - media: everything the transport adds. */
  readonly overheadBytesPerSecond: Rational;
  /**
   * payload: RDMA message bytes; l3: + per-packet IP/UDP/BTH/ICRC and per-message headers;
   * l2: + Ethernet header (what /sys/class/net/X/statistics counts); wire: the seed's wire rate.
   */
  readonly bytesPerSecond: Readonly<Record<Layer, Rational>>;
}

export function predictGrain(grain: Grain, format: MediaFlow['format'], profile: ProviderProfile, mtu: Mtu): Prediction {
  const perPacket = payloadPerPacket(mtu, profile);
  const writeBytes = grain.payloadBytes + BigInt(profile.grainHeaderBytes[format]);
  const packetsPerEvent = ceilDiv(writeBytes, BigInt(perPacket));
  const rate = grain.rate;
  const packetsPerSecond = scale(rate, packetsPerEvent);
  const perSecond = (bytes: bigint): Rational => scale(rate, bytes);
  const perPacketBytes = (bytes: number): Rational => scale(packetsPerSecond, bytes);
  const messageBytes = perSecond(BigInt(profile.messageHeaderBytes));

  const payload = perSecond(writeBytes);
  const l3 = add(add(payload, perPacketBytes(profile.mtuOverheadBytes)), messageBytes);
  const l2 = add(l3, perPacketBytes(profile.l2HeaderBytes));
  const wire = add(add(payload, perPacketBytes(profile.wireOverheadBytes)), messageBytes);
  const media = perSecond(grain.payloadBytes);
  return {
    provider: profile.name,
    mtu: l3Mtu(mtu, profile),
    payloadPerPacket: perPacket,
    grain,
    payloadBytesPerEvent: grain.payloadBytes,
    writeBytesPerEvent: writeBytes,
    eventRate: rate,
    packetsPerEvent,
    packetsPerSecond,
    mediaBytesPerSecond: media,
    overheadBytesPerSecond: add(wire, mul(media, rational(-1n))),
    bytesPerSecond: { payload, l3, l2, wire },
  };
}

export const predict = (media: MediaFlow, profile: ProviderProfile, mtu: Mtu): Prediction =>
  predictGrain(grainOf(media), media.format, profile, mtu);
