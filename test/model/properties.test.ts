import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import {
  predict, rational, compare, mul, div, RDMA_ROCEV2, RDMA_ROCEV2_MXL_V1, IB_MTUS, type MediaFlow, type Mtu,
} from '../../src/model/index.js';

const rates = fc.constantFrom(rational(24), rational(25), rational(30000, 1001), rational(50), rational(60000, 1001), rational(120));
const videoArb = fc.record({
  format: fc.constant('video' as const),
  mediaType: fc.constantFrom('video/v210' as const, 'video/v210a' as const),
  width: fc.integer({ min: 2, max: 7680 }),
  height: fc.integer({ min: 1, max: 2160 }).map((h) => h * 2),
  interlaced: fc.boolean(),
  frameRate: rates,
});
const audioArb = fc.record({
  format: fc.constant('audio' as const),
  mediaType: fc.constant('audio/float32'),
  channels: fc.integer({ min: 1, max: 64 }),
  sampleRate: fc.constantFrom(rational(48000), rational(96000)),
  bitDepth: fc.constantFrom(32 as const, 64 as const),
  grainDuration: fc.integer({ min: 1, max: 480 }).map((s) => rational(s, 48000)),
});
const dataArb = fc.record({ format: fc.constant('data' as const), mediaType: fc.constant('video/smpte291' as const), grainRate: rates });
const mediaArb: fc.Arbitrary<MediaFlow> = fc.oneof(videoArb, audioArb, dataArb);
const mtuArb: fc.Arbitrary<Mtu> = fc.oneof(
  fc.constantFrom(...IB_MTUS).map((bytes) => ({ kind: 'ib' as const, bytes })),
  fc.integer({ min: 300, max: 9000 }).map((bytes) => ({ kind: 'l3' as const, bytes })),
);
const profileArb = fc.constantFrom(RDMA_ROCEV2, RDMA_ROCEV2_MXL_V1);

describe('model invariants', () => {
  it('packets cover each write exactly: one packet fewer would not', () => {
    fc.assert(
      fc.property(mediaArb, mtuArb, profileArb, (m, mtu, prof) => {
        const p = predict(m, prof, mtu);
        const per = BigInt(p.payloadPerPacket);
        const packets = p.writes.map((w) => (w.bytes + per - 1n) / per);
        for (const [i, w] of p.writes.entries()) {
          expect(packets[i]! * per >= w.bytes).toBe(true);
          expect((packets[i]! - 1n) * per < w.bytes).toBe(true);
        }
        expect(packets.reduce((a, b) => a + b, 0n)).toBe(p.packetsPerEvent);
        expect(p.writes.reduce((a, w) => a + w.bytes, 0n)).toBe(p.writeBytesPerEvent);
      }),
    );
  });

  it('the seed profile sends one write per grain; MXL sends the immediate on the last write only', () => {
    fc.assert(
      fc.property(mediaArb, mtuArb, (m, mtu) => {
        expect(predict(m, RDMA_ROCEV2, mtu).writes).toHaveLength(1);
        const w = predict(m, RDMA_ROCEV2_MXL_V1, mtu).writes;
        expect(w.map((x) => x.immediate)).toEqual(w.map((_, i) => i === w.length - 1));
        expect(w.every((x) => x.entries <= RDMA_ROCEV2_MXL_V1.txIovLimit)).toBe(true);
      }),
    );
  });

  // Packets may go either way: a wrap splits entries differently across writes (4 ch, 172
  // samples of float64 at IB MTU 256: 23 packets plain, 22 for some splits).
  it('ring wraps never lower the writes per batch and never change the bytes carried', () => {
    fc.assert(
      fc.property(audioArb, mtuArb, (m, mtu) => {
        const p = predict(m, RDMA_ROCEV2_MXL_V1, mtu);
        expect(compare(p.writesPerEvent, rational(BigInt(p.writes.length)))).toBeGreaterThanOrEqual(0);
        expect(p.ring!.wrappingWrites.reduce((a, w) => a + w.bytes, 0n)).toBe(p.writeBytesPerEvent);
        expect(p.bytesPerSecond.payload).toEqual(mul(rational(p.writeBytesPerEvent), p.eventRate));
      }),
    );
  });

  it('layers are ordered payload <= l3 <= l2 <= wire, and media <= payload', () => {
    fc.assert(
      fc.property(mediaArb, mtuArb, profileArb, (m, mtu, prof) => {
        const b = predict(m, prof, mtu).bytesPerSecond;
        expect(compare(b.payload, b.l3)).toBeLessThanOrEqual(0);
        expect(compare(b.l3, b.l2)).toBeLessThanOrEqual(0);
        expect(compare(b.l2, b.wire)).toBeLessThanOrEqual(0);
        expect(compare(predict(m, prof, mtu).mediaBytesPerSecond, b.payload)).toBeLessThanOrEqual(0);
      }),
    );
  });

  it('rates scale linearly with the grain rate', () => {
    fc.assert(
      fc.property(videoArb, mtuArb, fc.integer({ min: 2, max: 8 }), (v, mtu, k) => {
        const faster = { ...v, frameRate: mul(v.frameRate, rational(k)) };
        const a = predict(v, RDMA_ROCEV2, mtu);
        const b = predict(faster, RDMA_ROCEV2, mtu);
        expect(div(b.packetsPerSecond, a.packetsPerSecond)).toEqual(rational(k));
        expect(div(b.bytesPerSecond.wire, a.bytesPerSecond.wire)).toEqual(rational(k));
      }),
    );
  });

  it('v210a always costs more than v210 at the same size and rate', () => {
    fc.assert(
      fc.property(videoArb, mtuArb, (v, mtu) => {
        const fill = predict({ ...v, mediaType: 'video/v210' }, RDMA_ROCEV2, mtu);
        const key = predict({ ...v, mediaType: 'video/v210a' }, RDMA_ROCEV2, mtu);
        expect(key.payloadBytesPerEvent > fill.payloadBytesPerEvent).toBe(true);
        expect(compare(key.bytesPerSecond.wire, fill.bytesPerSecond.wire)).toBe(1);
      }),
    );
  });
});
