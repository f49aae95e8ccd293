// The four worked examples of MXL's FabricsBandwidth.md (shared/seeds/000_fd97cf51e0311823.txt,
// section 4), every intermediate figure asserted exactly.
import { describe, it, expect } from 'vitest';
import {
  predict,
  rational,
  RDMA_ROCEV2,
  v210LineBytes,
  alphaLineBytes,
  toNumber,
  type MediaFlow,
  type Rational,
} from '../../src/model/index.js';

const seedMtu = { kind: 'l3', bytes: 4096 } as const;
const exact = (r: Rational): string => `${r.num}/${r.den}`;
const int = (n: number | bigint): string => `${n}/1`;

describe('seed worked examples (rdma_rocev2, mtu 4096)', () => {
  it('video/v210 1920x1080p25', () => {
    const media: MediaFlow = {
      format: 'video', mediaType: 'video/v210', width: 1920, height: 1080, interlaced: false, frameRate: rational(25),
    };
    expect(v210LineBytes(1920)).toBe(5120n);
    const p = predict(media, RDMA_ROCEV2, seedMtu);
    expect(p.payloadPerPacket).toBe(4052);
    expect(p.payloadBytesPerEvent).toBe(5_529_600n);
    expect(exact(p.mediaBytesPerSecond)).toBe(int(138_240_000));
    expect(p.packetsPerEvent).toBe(1365n);
    expect(exact(p.packetsPerSecond)).toBe(int(34_125));
    expect(exact(p.overheadBytesPerSecond)).toBe(int(2_798_250));
    expect(exact(p.bytesPerSecond.wire)).toBe(int(141_038_250));
    expect(toNumber(p.bytesPerSecond.wire) / 1e9).toBe(0.14103825);
  });

  it('video/v210a 1920x1080p25', () => {
    const media: MediaFlow = {
      format: 'video', mediaType: 'video/v210a', width: 1920, height: 1080, interlaced: false, frameRate: rational(25),
    };
    expect(alphaLineBytes(1920)).toBe(2560n);
    const p = predict(media, RDMA_ROCEV2, seedMtu);
    expect(p.payloadBytesPerEvent).toBe(8_294_400n);
    expect(exact(p.mediaBytesPerSecond)).toBe(int(207_360_000));
    expect(p.packetsPerEvent).toBe(2047n);
    expect(exact(p.packetsPerSecond)).toBe(int(51_175));
    expect(exact(p.overheadBytesPerSecond)).toBe(int(4_196_350));
    expect(exact(p.bytesPerSecond.wire)).toBe(int(211_556_350));
  });

  it('audio/float32 2ch 48kHz ptime 10ms', () => {
    const media: MediaFlow = {
      format: 'audio', mediaType: 'audio/float32', channels: 2, sampleRate: rational(48000), bitDepth: 32,
      grainDuration: rational(1, 100),
    };
    const p = predict(media, RDMA_ROCEV2, seedMtu);
    expect(exact(p.mediaBytesPerSecond)).toBe(int(384_000));
    expect(p.payloadBytesPerEvent).toBe(3840n);
    expect(p.packetsPerEvent).toBe(1n);
    expect(exact(p.eventRate)).toBe(int(100));
    expect(exact(p.packetsPerSecond)).toBe(int(100));
    expect(exact(p.overheadBytesPerSecond)).toBe(int(8_200));
    expect(exact(p.bytesPerSecond.wire)).toBe(int(392_200));
  });

  it('video/smpte291 data at 60 grains/s', () => {
    const media: MediaFlow = { format: 'data', mediaType: 'video/smpte291', grainRate: rational(60) };
    const p = predict(media, RDMA_ROCEV2, seedMtu);
    expect(p.payloadBytesPerEvent).toBe(4096n);
    expect(exact(p.mediaBytesPerSecond)).toBe(int(245_760));
    expect(p.packetsPerEvent).toBe(2n);
    expect(exact(p.packetsPerSecond)).toBe(int(120));
    expect(exact(p.overheadBytesPerSecond)).toBe(int(9_840));
    expect(exact(p.bytesPerSecond.wire)).toBe(int(255_600));
  });
});
