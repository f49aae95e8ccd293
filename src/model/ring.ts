/**
 * Where an audio batch falls in MXL's per-channel ring, and so whether it wraps. Pure.
 *
 * MXL keeps each audio channel in a ring of `bufferLength` samples (flowinfo.h,
 * mxlContinuousFlowConfigInfo). A batch of `count` samples ending at head index h covers ring
 * offsets [(h - count) mod L, h mod L); when that range runs past the ring's end it is two
 * fragments (AudioBounceBuffer.cpp:15-32; the writer and reader split the same way,
 * PosixContinuousFlowWriter.cpp:78-95), and MXL fabrics sends one scatter-gather entry per
 * fragment (ProtocolEgressRMA.cpp:237-260). A batch that ends exactly at the ring's end does
 * not wrap (first length = L - start = count).
 *
 * Writers and mxl-fabrics-demo move in whole batches (testsrc.cpp:753, demo.cpp:509-565), so
 * batch ends lie on one lattice h0 + k * count. With g = gcd(count, L) the start offsets repeat
 * every L / g batches, in which the ring is passed count / g times; each pass wraps one batch,
 * except the pass whose boundary lands exactly on the ring's end, which happens iff h0 = 0 mod g.
 * So per batch: wraps = count / L (h0 not a multiple of g) or (count - g) / L (a multiple);
 * with h0 unknown (it comes from the TAI clock when the writer starts) every start offset is
 * equally likely, and the expectation is (count - 1) / L.
 */
import { type Rational, rational, ceilDiv } from './rational.js';
import { MediaError } from './media.js';

/** MXL's default history duration: 200 ms (lib/internal/src/Instance.cpp:86). */
const MXL_DEFAULT_HISTORY_NS = 200_000_000n;

/**
 * The ring length MXL gives a new audio flow (Instance.cpp:260-272): twice the history
 * duration in samples, rounded up to whole 4096-byte pages of one channel.
 * 48 kHz float32: 2 x 0.2 s x 48000 = 19,200 -> 19 pages of 1024 samples = 19,456.
 */
export function defaultRingLength(sampleRate: Rational, bitDepth: 32 | 64, historyNs: bigint = MXL_DEFAULT_HISTORY_NS): bigint {
  const samples = (historyNs * sampleRate.num) / (500_000_000n * sampleRate.den);
  const perPage = 4096n / BigInt(bitDepth / 8);
  return ceilDiv(samples, perPage) * perPage;
}

/** Where batches wrap over one cycle of ring positions, each position equally likely. */
export interface RingCycle {
  /** Batch positions in one cycle. */
  readonly positions: bigint;
  /** For each wrapping position: samples per channel before the ring's end (1..count-1). */
  readonly splits: readonly bigint[];
}

const gcd = (a: bigint, b: bigint): bigint => (b === 0n ? a : gcd(b, a % b));

/**
 * The wrapping positions of batches of `count` samples in a ring of `length`. `batchEnd` is any
 * head index a batch ends at (one point of the lattice); without it the phase is unknown and
 * every one of the L start offsets counts once.
 */
export function ringCycle(count: bigint, length: bigint, batchEnd?: bigint): RingCycle {
  if (count <= 0n) throw new MediaError(`an audio batch needs at least one sample, got ${count}`, 'ptime');
  if (count * 2n > length) {
    throw new MediaError(`a batch of ${count} samples is more than half the ring of ${length} samples; MXL refuses it (PosixContinuousFlowWriter.cpp:78)`, 'ptime');
  }
  if (batchEnd === undefined) {
    const splits: bigint[] = [];
    for (let a = 1n; a < count; a++) splits.push(a);
    return { positions: length, splits };
  }
  const g = gcd(count, length);
  // A batch wraps with `a` samples before the end iff its start is L - a; starts are = batchEnd (mod g).
  const first = ((-batchEnd % g) + g) % g;
  const splits: bigint[] = [];
  for (let a = first === 0n ? g : first; a < count; a += g) splits.push(a);
  return { positions: length / g, splits };
}

/** Wrapping batches per batch over a cycle. */
export const wrapsPerBatch = (cycle: RingCycle): Rational => rational(BigInt(cycle.splits.length), cycle.positions);
