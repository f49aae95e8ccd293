/**
 * Flow state from one domain entry's evidence (src/domain/activity.ts), every transition, and
 * the same transitions through a real DomainWatcher on an on-disk domain with a manual clock.
 */
import { describe, it, expect } from 'vitest';
import { rmSync } from 'node:fs';
import { type FlowObservation, flowState, lastWriteAgeNs, stallAfterNs } from '../../src/domain/activity.js';
import { DomainWatcher, type DomainClock } from '../../src/domain/watcher.js';
import { rational } from '../../src/model/index.js';
import { addFlow, commit, makeDomain } from './mxl-domain.mjs';

const S = 1_000_000_000n;
const base: FlowObservation = {
  present: true, headerOk: true, writer: true, sinceHeadChangeNs: undefined, sinceLastWriteNs: undefined,
  sinceFirstSeenNs: 0n, samples: 1, stallAfterNs: 2n * S,
};
const obs = (o: Partial<FlowObservation>): FlowObservation => ({ ...base, ...o });

describe('flowState: one observation', () => {
  it('absent when the folder is gone, unknown when its header cannot be read', () => {
    expect(flowState(obs({ present: false }))).toBe('absent');
    expect(flowState(obs({ headerOk: false, sinceHeadChangeNs: 0n }))).toBe('unknown');
  });

  it('live when headIndex moved or lastWriteTime is within the stall limit (the limit itself included)', () => {
    expect(flowState(obs({ sinceHeadChangeNs: 0n, samples: 2 }))).toBe('live');
    expect(flowState(obs({ sinceHeadChangeNs: 2n * S, samples: 3 }))).toBe('live');
    expect(flowState(obs({ sinceLastWriteNs: S / 30n }))).toBe('live');
    // a writer is not needed to be live: the lock test may be unavailable, the grains say enough
    expect(flowState(obs({ sinceHeadChangeNs: 0n, samples: 2, writer: undefined }))).toBe('live');
    expect(flowState(obs({ sinceHeadChangeNs: 0n, samples: 2, writer: false }))).toBe('live');
  });

  it('unknown on the first reading of an audio flow: one headIndex cannot show movement', () => {
    expect(flowState(obs({ samples: 1 }))).toBe('unknown');
    expect(flowState(obs({ samples: 1, writer: false }))).toBe('unknown');
  });

  it('stalled when a writer (or an untestable lock) holds a flow that stopped moving', () => {
    expect(flowState(obs({ sinceHeadChangeNs: 2n * S + 1n, samples: 4 }))).toBe('stalled');
    expect(flowState(obs({ samples: 2 }))).toBe('stalled'); // read twice, never moved
    expect(flowState(obs({ sinceLastWriteNs: 10n * S }))).toBe('stalled'); // discrete: decided at once
    expect(flowState(obs({ sinceLastWriteNs: 10n * S, writer: undefined }))).toBe('stalled');
  });

  it('absent when nothing holds a flow that stopped moving (left behind by a killed writer)', () => {
    expect(flowState(obs({ sinceHeadChangeNs: 5n * S, samples: 6, writer: false }))).toBe('absent');
    expect(flowState(obs({ sinceLastWriteNs: 10n * S, writer: false }))).toBe('absent');
  });

  it('stall limit: two sampling intervals, or three grain periods for slow flows', () => {
    expect(stallAfterNs(S, S / 25n)).toBe(2n * S);
    expect(stallAfterNs(S, S)).toBe(3n * S);
    expect(stallAfterNs(S / 10n, undefined)).toBe(S / 5n);
  });

  it('write age: lastWriteTime when stamped, else since headIndex moved, else since found', () => {
    expect(lastWriteAgeNs(obs({ sinceLastWriteNs: 7n, sinceHeadChangeNs: 9n }))).toBe(7n);
    expect(lastWriteAgeNs(obs({ sinceHeadChangeNs: 9n, sinceFirstSeenNs: 50n }))).toBe(9n);
    expect(lastWriteAgeNs(obs({ sinceFirstSeenNs: 50n }))).toBe(50n);
    expect(lastWriteAgeNs(obs({ headerOk: false, sinceFirstSeenNs: 50n }))).toBeUndefined();
  });
});

describe('DomainWatcher: the transitions on a real domain folder', () => {
  const AUDIO = {
    id: '0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d02', label: 'Camera 1 audio', format: 'urn:x-nmos:format:audio',
    tags: { 'urn:x-nmos:tag:grouphint/v1.0': ['Camera 1:Audio'] }, media_type: 'audio/float32',
    sample_rate: { numerator: 48000 }, channel_count: 2, bit_depth: 32,
  };
  const VIDEO = {
    id: '0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d01', label: 'Camera 1 video', format: 'urn:x-nmos:format:video',
    tags: { 'urn:x-nmos:tag:grouphint/v1.0': ['Camera 1:Video'] }, media_type: 'video/v210',
    grain_rate: { numerator: 30000, denominator: 1001 }, frame_width: 1920, frame_height: 1080,
  };

  function setup(writer: { held: boolean }) {
    const domain = makeDomain();
    let mono = 10n * S;
    let tai = 2_000_000n * S;
    const clock: DomainClock = { monotonicNs: () => mono, taiNs: () => tai };
    const w = new DomainWatcher(domain, clock, { writerHoldsLock: () => writer.held }, rational(1, 100));
    const timing = { windowNs: 10n * S, intervalNs: S };
    const step = (seconds = 1): void => {
      mono += BigInt(seconds) * S;
      tai += BigInt(seconds) * S;
      w.scan();
      w.sample(timing);
    };
    return { domain, w, step, now: () => tai };
  }

  it('audio: unknown -> live -> stalled -> live -> absent (killed) -> absent (deleted) -> live (re-created)', () => {
    const writer = { held: true };
    const { domain, w, step, now } = setup(writer);
    // MXL stamps lastWriteTime only when it creates an audio flow: it says nothing later.
    const dir = addFlow(domain, AUDIO, { id: AUDIO.id, format: 2, rate: [48000n, 1n], channelCount: 2, headIndex: 0n, lastWriteTime: now() });
    const states: string[] = [];
    const ages: (number | undefined)[] = [];
    const record = (): void => {
      const f = w.get(AUDIO.id);
      states.push(f?.state ?? 'gone');
      ages.push(f?.lastWriteAgeSeconds);
    };
    step(); record(); // one reading
    let head = 0n;
    for (let i = 0; i < 3; i++) {
      head += 48_000n;
      commit(dir, head, 0n); // lastWriteTime is not touched by MXL's audio writer; the fixture zeroes it
      step(); record();
    }
    step(); step(); record(); // 2 s without a commit: still within the limit
    step(); record(); // 3 s: stalled (the writer still holds it)
    head += 480n;
    commit(dir, head, 0n);
    step(); record(); // moves again
    writer.held = false;
    step(); step(); step(); record(); // killed writer: lock free, nothing moves
    rmSync(dir, { recursive: true });
    step(); record(); // deleted
    writer.held = true;
    addFlow(domain, AUDIO, { id: AUDIO.id, format: 2, rate: [48000n, 1n], channelCount: 2, headIndex: 100n });
    step(); record();
    const again = w.get(AUDIO.id)!;
    commit(again.dir, 580n, 0n);
    step(); record();
    expect(states).toEqual(['unknown', 'live', 'live', 'live', 'live', 'stalled', 'live', 'absent', 'gone', 'unknown', 'live']);
    expect(ages).toEqual([0, 0, 0, 0, 2, 3, 0, 3, undefined, 0, 0]);
  });

  it('video: live at once from lastWriteTime, stalled when it stops being stamped, absent when unlocked', () => {
    const writer = { held: true };
    const { domain, w, step, now } = setup(writer);
    const dir = addFlow(domain, VIDEO, { id: VIDEO.id, format: 1, rate: [30000n, 1001n], grainCount: 3, headIndex: 5n, lastWriteTime: now() + S / 2n });
    step();
    expect([w.get(VIDEO.id)!.state, w.get(VIDEO.id)!.lastWriteAgeSeconds]).toEqual(['live', 0.5]);
    step(); step();
    expect([w.get(VIDEO.id)!.state, w.get(VIDEO.id)!.lastWriteAgeSeconds]).toEqual(['stalled', 2.5]);
    commit(dir, 100n, now() + S);
    step();
    expect(w.get(VIDEO.id)!.state).toBe('live');
    writer.held = false;
    step(); step(); step();
    expect(w.get(VIDEO.id)!.state).toBe('absent');
  });

  it('a flow MXL just created (headIndex 0, lastWriteTime = creation) is not live until its first commit, and that commit is no rate', () => {
    const { domain, w, step, now } = setup({ held: true });
    const dir = addFlow(domain, VIDEO, { id: VIDEO.id, format: 1, rate: [30000n, 1001n], grainCount: 3, headIndex: 0n, lastWriteTime: now() });
    step();
    expect(w.get(VIDEO.id)!.state).toBe('unknown');
    step();
    expect(w.get(VIDEO.id)!.state).toBe('stalled'); // the writer holds it and waits (a fabrics target before the first grain)
    const tai = 1_796_095_808_000_000_000n; // MXL's indices count from the TAI epoch
    const first = (tai * 30000n) / (1001n * S);
    commit(dir, first, now());
    step();
    expect(w.get(VIDEO.id)!.state).toBe('live');
    expect(w.get(VIDEO.id)!.headIndex.rate()).toBeUndefined();
    commit(dir, first + 30n, now());
    step();
    expect(w.get(VIDEO.id)!.headIndex.rate()).toBe(30);
  });

  it('a domain that cannot be listed has no flows and says why', () => {
    const { domain, w, step } = setup({ held: true });
    addFlow(domain, VIDEO, { id: VIDEO.id, format: 1, rate: [30000n, 1001n], grainCount: 3 });
    step();
    expect(w.error).toBeUndefined();
    expect(w.all()).toHaveLength(1);
    rmSync(domain, { recursive: true });
    step();
    expect(w.error).toEqual({ code: 'ENOENT', op: 'scandir', path: domain });
    expect(w.all()).toHaveLength(0);
  });
});
