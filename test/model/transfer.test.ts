// The fabrics transfer model against what real MXL put on the wire in the soft-RoCE guest
// (issue 12; shared/notes/rdma-facts.md, tcpdump of mxl-fabrics-demo over rxe) and against MXL's
// source (shared/mxl/README.md, "Facts from MXL's source"). Every number exact.
import { describe, it, expect } from 'vitest';
import {
  predict, rational, RDMA_ROCEV2, RDMA_ROCEV2_MXL_V1, defaultRingLength, ringCycle, wrapsPerBatch, audioBatchWrites,
  grainWrites, videoGrain, type MediaFlow, type ProviderProfile, type Rational,
} from '../../src/model/index.js';

const IB4096 = { kind: 'ib', bytes: 4096 } as const;
const MXL = RDMA_ROCEV2_MXL_V1;
const exact = (r: Rational): string => `${r.num}/${r.den}`;
const audio = (channels: number, sampleRate = 48000): MediaFlow => ({
  format: 'audio', mediaType: 'audio/float32', channels, sampleRate: rational(sampleRate), bitDepth: 32, grainDuration: rational(1, 100),
});
const bytesOf = (p: ReturnType<typeof predict>): number[] => p.writes.map((w) => Number(w.bytes));

describe('audio batches as MXL sends them (48 kHz float32, 10 ms, IB MTU 4096)', () => {
  it('8 ch: 1 header entry + 8 buffers = 9 entries -> 3 writes of 5,776 + 7,680 + 1,920 bytes, 5 packets', () => {
    const p = predict(audio(8), MXL, IB4096);
    expect(bytesOf(p)).toEqual([16 + 3 * 1920, 4 * 1920, 1920]);
    expect(bytesOf(p)).toEqual([5776, 7680, 1920]);
    expect(p.writes.map((w) => w.entries)).toEqual([4, 4, 1]);
    expect(p.writes.map((w) => w.immediate)).toEqual([false, false, true]);
    expect(p.packetsPerEvent).toBe(5n); // 2 + 2 + 1
    expect(p.writeBytesPerEvent).toBe(15_376n);
  });

  it('16 ch: 17 entries -> 5 writes, 9 packets', () => {
    const p = predict(audio(16), MXL, IB4096);
    expect(bytesOf(p)).toEqual([5776, 7680, 7680, 7680, 1920]);
    expect(p.packetsPerEvent).toBe(9n);
  });

  it('2 ch: 3 entries -> 1 write, 1 packet', () => {
    const p = predict(audio(2), MXL, IB4096);
    expect(bytesOf(p)).toEqual([3856]);
    expect(p.packetsPerEvent).toBe(1n);
  });

  it('a batch that wraps the ring has two entries per channel: 8 ch -> 17 entries, 5 writes, still 5 packets', () => {
    const w = audioBatchWrites(8, 480n, 4n, MXL, 100n);
    expect(w.map((x) => Number(x.bytes))).toEqual([16 + 1920 + 400, 3840, 3840, 3840, 1520]);
    expect(w.map((x) => x.entries)).toEqual([4, 4, 4, 4, 1]);
    expect(w.map((x) => x.immediate)).toEqual([false, false, false, false, true]);
    // 2 ch wraps into 5 entries = 2 writes: the "1.03 writes per batch" measured.
    expect(audioBatchWrites(2, 480n, 4n, MXL, 100n).map((x) => Number(x.bytes))).toEqual([16 + 400 + 1520 + 400, 1520]);
  });

  it('l2 bytes per batch: payload + 58 per packet + RETH 16 per write + ImmDt 4 once', () => {
    const p = predict(audio(8), MXL, IB4096);
    const plainL2 = 15_376 + 5 * 58 + 3 * 16 + 4;
    expect(plainL2).toBe(15_718);
    // Ring 19,456 (the default), phase unknown: 479 of 19,456 positions wrap (5 writes, 15,750 B).
    const wrapL2 = 15_376 + 5 * 58 + 5 * 16 + 4;
    expect(p.bytesPerSecond.l2).toEqual(rational(100n * BigInt(plainL2 * (19_456 - 479) + wrapL2 * 479), 19_456n));
  });
});

describe('expected rates including ring wraps, for a stated ring length', () => {
  it('the default ring: twice MXL\'s 200 ms history, rounded up to 4 KiB pages of one channel', () => {
    expect(defaultRingLength(rational(48000), 32)).toBe(19_456n); // 19,200 -> 19 x 1024
    expect(defaultRingLength(rational(48000), 64)).toBe(19_456n); // 19,200 -> 38 x 512
    expect(defaultRingLength(rational(44100), 32)).toBe(18_432n); // 17,640 -> 18 x 1024
    expect(defaultRingLength(rational(96000), 32)).toBe(38_912n); // 38,400 -> 38 x 1024
  });

  it('wraps per batch = (count - 1) / L with the phase unknown, count/L or (count - g)/L with it known', () => {
    expect(exact(wrapsPerBatch(ringCycle(480n, 19_456n)))).toBe('479/19456');
    // g = gcd(480, 19456) = 32: 608 batch positions per cycle, the ring passed 15 times.
    expect(exact(wrapsPerBatch(ringCycle(480n, 19_456n, 1n)))).toBe('15/608'); // = 480/19456
    expect(exact(wrapsPerBatch(ringCycle(480n, 19_456n, 19_456n * 7n)))).toBe('7/304'); // = 448/19456: one boundary on the ring end
    expect(ringCycle(480n, 19_456n, 5n).splits.every((a) => (a + 5n) % 32n === 0n)).toBe(true);
    // A ring of exactly 40 batches: wraps only when the phase is off the ring's grid.
    expect(exact(wrapsPerBatch(ringCycle(480n, 19_200n, 0n)))).toBe('0/1');
    expect(exact(wrapsPerBatch(ringCycle(480n, 19_200n, 7n)))).toBe('1/40');
    expect(() => ringCycle(480n, 900n)).toThrow(/more than half the ring/);
  });

  it('2 ch at ring 19,456: 1 + 479/19456 writes and packets per batch, 100 batches/s', () => {
    const p = predict(audio(2), MXL, IB4096, { ringLengthSamples: 19_456n });
    expect(p.ring).toMatchObject({ lengthSamples: 19_456n, from: 'flow', phase: 'unknown' });
    expect(exact(p.writesPerEvent)).toBe(exact(rational(19_456 + 479, 19_456)));
    expect(exact(p.packetsPerSecond)).toBe(exact(rational(100 * (19_456 + 479), 19_456))); // 498375/4864
    expect(p.packetsPerSecond).toEqual(rational(498_375, 4_864));
  });

  it('8 ch: 5 packets per batch wrapped or not, so exactly 500 packets/s; 3 + 2 x 479/19456 writes', () => {
    const p = predict(audio(8), MXL, IB4096);
    expect(p.ring).toMatchObject({ lengthSamples: 19_456n, from: 'default' });
    expect(exact(p.packetsPerSecond)).toBe('500/1');
    expect(p.writesPerEvent).toEqual(rational(3 * 19_456 + 2 * 479, 19_456));
    // The responder's ACKs: one per write, 62 bytes at l2 (14 + 20 + 8 + BTH 12 + AETH 4 + ICRC 4).
    expect(p.reverse.packetsPerSecond).toEqual(rational(100 * (3 * 19_456 + 2 * 479), 19_456));
    expect(p.reverse.bytesPerSecond.l2).toEqual(rational(62 * 100 * (3 * 19_456 + 2 * 479), 19_456));
  });

  it('a different ring length moves only the wrap share', () => {
    const short = predict(audio(8), MXL, IB4096, { ringLengthSamples: 960n });
    expect(short.writesPerEvent).toEqual(rational(3 * 960 + 2 * 479, 960));
  });
});

describe('video as MXL sends it', () => {
  const small: MediaFlow = { format: 'video', mediaType: 'video/v210', width: 320, height: 180, interlaced: false, frameRate: rational(25) };

  it('320x180p25 v210: one write of 8,192 + 161,280 bytes = 42 packets, 171,928 l2 bytes per grain', () => {
    const p = predict(small, MXL, IB4096);
    expect(bytesOf(p)).toEqual([8192 + 161_280]);
    expect(p.packetsPerEvent).toBe(42n);
    // tcpdump: WRITE_FIRST 4,170 + 40 x WRITE_MIDDLE 4,154 + WRITE_LAST_WITH_IMMEDIATE 1,598
    expect(4170 + 40 * 4154 + 1598).toBe(171_928);
    expect(p.bytesPerSecond.l2).toEqual(rational(171_928 * 25));
    expect(p.packetsPerSecond).toEqual(rational(42 * 25));
    expect(p.bytesPerSecond.media).toEqual(rational(161_280 * 25));
    expect(p.reverse.packetsPerSecond).toEqual(rational(25));
    expect(p.reverse.bytesPerSecond).toEqual({
      media: rational(0), payload: rational(0), l3: rational(48 * 25), l2: rational(62 * 25), wire: rational(86 * 25),
    });
  });

  it('the seed\'s media-only rdma_rocev2 is 5 % low on that flow and models no ACKs', () => {
    const seed = predict(small, RDMA_ROCEV2, IB4096);
    expect(seed.bytesPerSecond.l2).toEqual(rational((161_280 + 40 * 58) * 25)); // 163,600 per grain: -4.8 %
    expect(seed.reverse.packetsPerSecond).toEqual(rational(0));
  });

  it('rxe asks for an ACK every 66 packets of a long write (1080p grain: 1,352 packets, 21 ACKs)', () => {
    const rxe: ProviderProfile = { ...MXL, name: 'rxe', ackEveryPackets: 66 };
    const hd: MediaFlow = { ...small, width: 1920, height: 1080 } as MediaFlow;
    const p = predict(hd, rxe, IB4096);
    expect(p.packetsPerEvent).toBe(1352n); // ceil((5,529,600 + 8,192) / 4096)
    expect(p.reverse.acksPerEvent).toEqual(rational(21));
    expect(predict(hd, MXL, IB4096).reverse.acksPerEvent).toEqual(rational(1));
  });

  it('slice batches: one write per batch per plane, the header with slice 0, immediate on the last plane', () => {
    const v = small as Extract<MediaFlow, { format: 'video' }>;
    const w = grainWrites(v, videoGrain(v), MXL, { slicesPerBatch: 64 });
    expect(w.map((x) => Number(x.bytes))).toEqual([8192 + 64 * 896, 64 * 896, 52 * 896]);
    expect(w.every((x) => x.immediate)).toBe(true);
    const a = { ...v, mediaType: 'video/v210a' as const };
    const wa = grainWrites(a, videoGrain(a), MXL, { slicesPerBatch: 90 });
    expect(wa.map((x) => Number(x.bytes))).toEqual([8192 + 90 * 896, 90 * 428, 90 * 896, 90 * 428]);
    expect(wa.map((x) => x.immediate)).toEqual([false, true, false, true]);
    expect(grainWrites(v, videoGrain(v), MXL, { slicesPerBatch: 180 })).toHaveLength(1);
  });
});
