/**
 * Media payload per grain, provider-agnostic (seed section 1; MXL's
 * lib/internal/src/FlowParser.cpp and MediaUtils.cpp). Pure: no I/O.
 */
import { type Rational, rational, mul, div, isInteger, scale, format, toNumber } from './rational.js';

export const VIDEO_MEDIA_TYPES = ['video/v210', 'video/v210a'] as const;
type VideoMediaType = (typeof VIDEO_MEDIA_TYPES)[number];
export const DATA_MEDIA_TYPE = 'video/smpte291';

/** MXL_DATA_FORMAT_GRAIN_SIZE (FlowParser.cpp): one VFS page per ancillary-data grain. */
export const DATA_GRAIN_BYTES = 4096n;

export type MediaFlow = VideoMedia | AudioMedia | DataMedia;

export interface VideoMedia {
  readonly format: 'video';
  readonly mediaType: VideoMediaType;
  readonly width: number;
  readonly height: number;
  readonly interlaced: boolean;
  /** The rate the flow definition states: frames per second. */
  readonly frameRate: Rational;
}

export interface AudioMedia {
  readonly format: 'audio';
  readonly mediaType: string;
  readonly channels: number;
  readonly sampleRate: Rational;
  readonly bitDepth: 32 | 64;
  /** Samples sent at once, in seconds (the seed's ptime); MXL's default batch is 10 ms. */
  readonly grainDuration: Rational;
}

export interface DataMedia {
  readonly format: 'data';
  readonly mediaType: typeof DATA_MEDIA_TYPE;
  readonly grainRate: Rational;
}

/** One grain: the unit MXL writes at once (frame, field, audio batch or data grain). */
export interface Grain {
  readonly unit: 'frame' | 'field' | 'samples' | 'grain';
  readonly payloadBytes: bigint;
  /** Grains per second. */
  readonly rate: Rational;
  /** Lines per grain (video) or samples per channel per grain (audio). */
  readonly linesOrSamples: bigint | undefined;
}

export class MediaError extends Error {
  override readonly name = 'MediaError';
  constructor(
    message: string,
    readonly field: string,
  ) {
    super(message);
  }
}

export const DEFAULT_AUDIO_GRAIN_DURATION = rational(1n, 100n);

/** v210: 48 pixels pack into 128 bytes; a partial group still takes a whole one. */
export const v210LineBytes = (width: number): bigint => ((BigInt(width) + 47n) / 48n) * 128n;

/** v210a key plane: three 10-bit samples per 32-bit word. */
export const alphaLineBytes = (width: number): bigint => ((BigInt(width) + 2n) / 3n) * 4n;

export function videoGrain(v: VideoMedia): Grain {
  if (v.interlaced && v.height % 2 !== 0) {
    throw new MediaError(`interlaced video needs an even frame_height, got ${v.height}`, 'frame_height');
  }
  const lines = BigInt(v.interlaced ? v.height / 2 : v.height);
  const fill = v210LineBytes(v.width) * lines;
  const key = v.mediaType === 'video/v210a' ? alphaLineBytes(v.width) * lines : 0n;
  return {
    unit: v.interlaced ? 'field' : 'frame',
    payloadBytes: fill + key,
    rate: v.interlaced ? scale(v.frameRate, 2) : v.frameRate,
    linesOrSamples: lines,
  };
}

/**
 * How far from a whole number of samples a grain duration may be and still mean it: a decimal
 * duration cannot say 34 samples at 48 kHz exactly (708.333us is 33.999984), and the durations
 * suggested below are written to the nanosecond (at most 0.5 ns off: 0.0001 samples at 192 kHz).
 */
const SAMPLE_TOLERANCE = rational(1n, 1000n);

/** The whole number of samples `d` is at `sampleRate`, within SAMPLE_TOLERANCE; undefined when none. */
function wholeSamples(sampleRate: Rational, d: Rational): bigint | undefined {
  const exact = mul(sampleRate, d);
  const nearest = (2n * exact.num + exact.den) / (2n * exact.den); // round half up; exact.num > 0
  const off = exact.num - nearest * exact.den; // (exact - nearest) x den
  const within = (off < 0n ? -off : off) * SAMPLE_TOLERANCE.den <= SAMPLE_TOLERANCE.num * exact.den;
  return within && nearest > 0n ? nearest : undefined;
}

export function audioGrain(a: AudioMedia): Grain {
  const samples = a.grainDuration.num > 0n ? wholeSamples(a.sampleRate, a.grainDuration) : undefined;
  if (samples === undefined) {
    throw new MediaError(
      `grain duration ${formatSeconds(a.grainDuration)} at ${formatRate(a.sampleRate)} Hz is ` +
        `${toNumber(mul(a.sampleRate, a.grainDuration))} samples, not a whole number (within ` +
        `${toNumber(SAMPLE_TOLERANCE)} of a sample); durations that work: ` +
        suggestDurations(a.sampleRate, a.grainDuration).join(', '),
      'ptime',
    );
  }
  const bytesPerSample = BigInt(a.bitDepth / 8);
  return {
    unit: 'samples',
    payloadBytes: BigInt(a.channels) * samples * bytesPerSample,
    rate: div(a.sampleRate, rational(samples)),
    linesOrSamples: samples,
  };
}

const dataGrain = (d: DataMedia): Grain => ({
  unit: 'grain',
  payloadBytes: DATA_GRAIN_BYTES,
  rate: d.grainRate,
  linesOrSamples: undefined,
});

export function grainOf(media: MediaFlow): Grain {
  switch (media.format) {
    case 'video':
      return videoGrain(media);
    case 'audio':
      return audioGrain(media);
    case 'data':
      return dataGrain(media);
  }
}

const COMMON_DURATIONS_US = [125, 250, 333, 500, 1000, 2000, 4000, 5000, 10000, 20000, 40000];

/** Common durations giving whole samples, plus the two whole-sample durations nearest the request. */
function suggestDurations(sampleRate: Rational, wanted: Rational): string[] {
  const ok = COMMON_DURATIONS_US.map((us) => rational(BigInt(us), 1_000_000n)).filter((d) =>
    isInteger(mul(sampleRate, d)),
  );
  const exact = mul(sampleRate, wanted);
  const below = exact.num / exact.den;
  const near = [below, below + 1n].filter((n) => n > 0n).map((n) => div(rational(n), sampleRate));
  const all = [...near, ...ok].map((d) => `${formatSeconds(d)} (${mul(sampleRate, d).num} samples)`);
  return [...new Set(all)];
}

/** "48000" or "30000/1001". */
const formatRate = (r: Rational): string => (r.den === 1n ? `${r.num}` : format(r));

function formatSeconds(d: Rational): string {
  const us = toNumber(d) * 1e6;
  if (us >= 1000) return `${+(us / 1000).toFixed(6)}ms`;
  return `${+us.toFixed(3)}us`;
}
