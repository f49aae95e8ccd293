import { describe, it, expect } from 'vitest';
import { parseDuration } from '../../src/input/units.js';
import {
  predict,
  rational,
  parseRational,
  RDMA_ROCEV2,
  RDMA_ROCEV2_MXL_V1,
  profileProblems,
  MediaError,
  MtuError,
  audioGrain,
  type MediaFlow,
} from '../../src/model/index.js';

const video = (over: Partial<Extract<MediaFlow, { format: 'video' }>> = {}): MediaFlow => ({
  format: 'video', mediaType: 'video/v210', width: 1920, height: 1080, interlaced: false,
  frameRate: rational(30000, 1001), ...over,
});

describe('rationals', () => {
  it('keeps 30000/1001 exact through the model', () => {
    const p = predict(video(), RDMA_ROCEV2, { kind: 'l3', bytes: 4096 });
    expect(p.packetsPerSecond).toEqual(rational(1365n * 30000n, 1001n));
    expect(p.bytesPerSecond.wire).toEqual(rational(141_038_250n * 30000n, 25n * 1001n));
  });
  it('parses fractions and decimals exactly', () => {
    expect(parseRational('30000/1001')).toEqual({ num: 30000n, den: 1001n });
    expect(parseRational('29.97')).toEqual({ num: 2997n, den: 100n });
    expect(parseRational('50')).toEqual({ num: 50n, den: 1n });
    expect(() => parseRational('fast')).toThrow(/not a rational/);
  });
});

describe('interlaced video', () => {
  it('is one grain per field at twice the frame rate, half the lines', () => {
    const p = predict(video({ interlaced: true }), RDMA_ROCEV2, { kind: 'l3', bytes: 4096 });
    expect(p.grain.unit).toBe('field');
    expect(p.eventRate).toEqual(rational(60000, 1001));
    expect(p.payloadBytesPerEvent).toBe(5120n * 540n);
    expect(p.packetsPerEvent).toBe(683n); // ceil(2,764,800 / 4052)
  });
  it('rejects an odd height', () => {
    expect(() => predict(video({ interlaced: true, height: 1081 }), RDMA_ROCEV2, { kind: 'l3', bytes: 4096 })).toThrow(
      MediaError,
    );
  });
});

describe('audio grain duration', () => {
  const audio = (duration: [number, number], rate = 48000, bitDepth: 32 | 64 = 32) => ({
    format: 'audio' as const, mediaType: 'audio/float32', channels: 8, sampleRate: rational(rate), bitDepth,
    grainDuration: rational(duration[0], duration[1]),
  });
  it('1 ms at 48 kHz is 48 samples', () => {
    const g = audioGrain(audio([1, 1000]));
    expect(g.linesOrSamples).toBe(48n);
    expect(g.payloadBytes).toBe(8n * 48n * 4n);
    expect(g.rate).toEqual(rational(1000));
  });
  it('bit depth 64 doubles the bytes', () => {
    expect(audioGrain(audio([1, 100], 48000, 64)).payloadBytes).toBe(8n * 480n * 8n);
  });
  it('names durations that work when samples are fractional', () => {
    let err: unknown;
    try {
      audioGrain(audio([1, 1000], 44100));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(MediaError);
    const msg = (err as MediaError).message;
    expect(msg).toContain('1ms at 44100 Hz is 44.1 samples');
    expect(msg).toContain('10ms (441 samples)');
    expect(msg).toContain('997.732us (44 samples), 1.020408ms (45 samples)');
    expect((err as MediaError).field).toBe('ptime');
  });
});

describe('audio grain durations suggested and accepted (issue 34: 708.333us was suggested, then refused)', () => {
  const audio = (duration: ReturnType<typeof rational>, rate: number) => ({
    format: 'audio' as const, mediaType: 'audio/float32', channels: 2, sampleRate: rational(rate), bitDepth: 32 as const, grainDuration: duration,
  });
  const suggestions = (duration: string, rate: number): { text: string; samples: bigint }[] => {
    try {
      audioGrain(audio(parseDuration(duration), rate));
    } catch (e) {
      const list = /durations that work: (.*)$/.exec((e as MediaError).message)![1]!;
      return [...list.matchAll(/(\S+) \((\d+) samples\)/g)].map((m) => ({ text: m[1]!, samples: BigInt(m[2]!) }));
    }
    throw new Error(`${duration} at ${rate} Hz was accepted`);
  };

  it('accepts every duration it suggests, as the samples it says', () => {
    for (const [duration, rate] of [['0.7ms', 48000], ['1ms', 44100], ['0.7ms', 44100], ['333us', 44100], ['1.1ms', 96000], ['3ms', 44100], ['0.1ms', 192000]] as const) {
      const all = suggestions(duration, rate);
      expect(all.length, `${duration} at ${rate}`).toBeGreaterThan(1);
      for (const s of all) expect(audioGrain(audio(parseDuration(s.text), rate)).linesOrSamples, `${s.text} at ${rate} Hz`).toBe(s.samples);
    }
  });

  it('takes a decimal within 1/1000 of a sample of a whole number as that number of samples, and no other', () => {
    expect(audioGrain(audio(parseDuration('708.333us'), 48000)).linesOrSamples).toBe(34n); // 33.999984 samples
    expect(audioGrain(audio(parseDuration('997.732us'), 44100)).linesOrSamples).toBe(44n); // 43.999981
    expect(audioGrain(audio(parseDuration('708.333us'), 48000)).rate).toEqual(rational(48000, 34)); // exactly 34 samples a batch
    expect(() => audioGrain(audio(parseDuration('708.3us'), 48000))).toThrow(/33\.9984 samples, not a whole number/); // 0.0016 off
  });
});

describe('MTU kinds', () => {
  it('an IB MTU is payload per packet; its L3 budget adds the profile overhead', () => {
    const ib = predict(video(), RDMA_ROCEV2, { kind: 'ib', bytes: 4096 });
    expect(ib.payloadPerPacket).toBe(4096);
    expect(ib.mtu).toBe(4140);
    const l3 = predict(video(), RDMA_ROCEV2, { kind: 'l3', bytes: 4140 });
    expect(l3.packetsPerEvent).toBe(ib.packetsPerEvent);
    expect(ib.packetsPerEvent).toBe(1350n); // ceil(5,529,600 / 4096)
  });
  it('rejects IB MTUs that are not IBA values and L3 MTUs below the overhead', () => {
    expect(() => predict(video(), RDMA_ROCEV2, { kind: 'ib', bytes: 4000 })).toThrow(MtuError);
    expect(() => predict(video(), RDMA_ROCEV2, { kind: 'l3', bytes: 44 })).toThrow(MtuError);
  });
});

describe('rdma_rocev2_mxl_v1', () => {
  it('adds the 8192-byte grain header and RETH+ImmDt per write', () => {
    const media: MediaFlow = { format: 'data', mediaType: 'video/smpte291', grainRate: rational(60) };
    const p = predict(media, RDMA_ROCEV2_MXL_V1, { kind: 'ib', bytes: 4096 });
    expect(p.writeBytesPerEvent).toBe(4096n + 8192n);
    expect(p.packetsPerEvent).toBe(3n);
    expect(p.bytesPerSecond.payload).toEqual(rational(12288 * 60));
    expect(p.bytesPerSecond.l3).toEqual(rational(12288 * 60 + 3 * 60 * 44 + 60 * 20));
    expect(p.bytesPerSecond.l2).toEqual(rational(12288 * 60 + 3 * 60 * 58 + 60 * 20));
    expect(p.mediaBytesPerSecond).toEqual(rational(4096 * 60));
  });
  it('built-in profiles are sound and a broken one is named', () => {
    expect(profileProblems(RDMA_ROCEV2)).toEqual([]);
    expect(profileProblems(RDMA_ROCEV2_MXL_V1)).toEqual([]);
    const bad = profileProblems({ ...RDMA_ROCEV2, wireOverheadBytes: 10, mtuOverheadBytes: 1.5 });
    expect(bad.map((e) => e.field)).toEqual(['mtuOverheadBytes', 'wireOverheadBytes']);
  });
});
