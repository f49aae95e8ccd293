/** Expected against live (src/predictions/expected.ts): every expectation x state, defaults, sums, culprits. */
import { describe, it, expect } from 'vitest';
import { join } from 'node:path';
import { parseConfig } from '../../src/config/load.js';
import type { DomainConfig, FlowBinding } from '../../src/config/types.js';
import type { FlowState } from '../../src/domain/activity.js';
import { combineStates } from '../../src/domain/monitor.js';
import { counts, countedTotals, flowStatuses, likelyCulprits, resolveExpect, type FlowEvidence } from '../../src/predictions/expected.js';
import { planPort } from '../../src/predictions/plan.js';

const FLOWS = join(__dirname, '../fixtures/flows');
const config = parseConfig(join(FLOWS, 'config.yaml'), `
ports: [{ device: rxe0, port: 1, provider: rdma_rocev2, ib_mtu: 4096 }]
flows:
  - { flow: v210_1080p2997.json, device: rxe0, direction: tx }
  - { flow: audio_2ch_48k.json, device: rxe0, direction: tx, expect: when_live }
  - { flow: data_60.json, device: rxe0, direction: tx, expect: never }
  - { flow: data_60.json, device: rxe0, direction: rx }
domains:
  - { path: /dev/shm/mxl, device: rxe0, direction: tx, include: ["Camera 1:Video"] }
  - { path: /dev/shm/other, device: rxe0, direction: tx, include: ["Camera 1:Video"], expect: always }
`);
const [video, audio, data, dataRx] = config.flows as [FlowBinding, FlowBinding, FlowBinding, FlowBinding];
const plan = planPort(config.ports[0]!, config.flows, undefined);

describe('expect: resolution and what counts in the port prediction', () => {
  it('counts: live always counts (never excepted); unknown counts only when expected always', () => {
    const table = (['always', 'when_live', 'never'] as const).map((e) =>
      `${e}: ${(['live', 'stalled', 'absent', 'unknown'] as const).map((s) => (counts(e, s) ? s : '-')).join(' ')}`);
    expect(table).toEqual([
      'always: live - - unknown',
      'when_live: live - - -',
      'never: - - - -',
    ]);
  });

  it("the flow's own expect, else the first covering domain's explicit one, else when_live where covered, always elsewhere", () => {
    const [plain, strict] = config.domains as [DomainConfig, DomainConfig];
    expect(resolveExpect(video, [])).toBe('always');
    expect(resolveExpect(video, [plain])).toBe('when_live');
    expect(resolveExpect(video, [plain, strict])).toBe('always');
    expect(resolveExpect(audio, [strict])).toBe('when_live');
    expect(resolveExpect(data, [])).toBe('never');
  });

  it('several domains about one binding: live, then stalled, then unknown, then absent', () => {
    const all: FlowState[] = ['absent', 'unknown', 'stalled', 'live'];
    expect(combineStates([])).toBeUndefined();
    expect(combineStates(all)).toBe('live');
    expect(combineStates(['absent', 'stalled', 'unknown'])).toBe('stalled');
    expect(combineStates(['absent', 'unknown'])).toBe('unknown');
    expect(combineStates(['absent'])).toBe('absent');
  });

  it('the port prediction sums exactly the counted flows, per direction, and follows every state change', () => {
    const states = new Map<FlowBinding, FlowState>();
    const evidence: FlowEvidence = {
      evidence: (b) => states.get(b),
      covering: (b) => (b === video ? config.domains : []),
    };
    const flowL2 = (b: FlowBinding): number => {
      const p = plan.flows.find((f) => f.binding === b)!.prediction!;
      return Number(p.bytesPerSecond.l2.num) / Number(p.bytesPerSecond.l2.den);
    };
    const tx = (): number | undefined => countedTotals(plan, flowStatuses(plan.flows, evidence), 'tx')?.bytesPerSecond.l2;
    // video covered (its domains say always) with no evidence yet: unknown, counts; audio when_live unknown: no
    expect(tx()).toBeCloseTo(flowL2(video), 6);
    states.set(video, 'stalled');
    expect(tx()).toBe(0);
    states.set(audio, 'live');
    expect(tx()).toBeCloseTo(flowL2(audio), 6);
    states.set(video, 'live');
    states.set(data, 'live'); // never: stays out even on the wire
    expect(tx()).toBeCloseTo(flowL2(video) + flowL2(audio), 6);
    states.set(video, 'absent');
    expect(tx()).toBeCloseTo(flowL2(audio), 6);
    expect(countedTotals(plan, flowStatuses(plan.flows, evidence), 'rx')!.bytesPerSecond.l2).toBeCloseTo(flowL2(dataRx), 6);
    expect(countedTotals(plan, flowStatuses(plan.flows, evidence), 'tx')!.flows).toBe(1);
  });

  it('culprits: too little traffic points at counted flows, too much at uncounted ones, closest first', () => {
    const statuses = flowStatuses(plan.flows, undefined); // video, audio(when_live: out), data(never: out)
    const l2 = (b: FlowBinding): number => {
      const p = plan.flows.find((f) => f.binding === b)!.prediction!.bytesPerSecond.l2;
      return Number(p.num) / Number(p.den);
    };
    expect(likelyCulprits(statuses, 'tx', -l2(video) * 0.98, 'l2').map((c) => [c.rank, c.binding])).toEqual([[1, video]]);
    const extra = likelyCulprits(statuses, 'tx', l2(data) * 1.01, 'l2');
    expect(extra.map((c) => [c.rank, c.binding])).toEqual([[1, data], [2, audio]]);
    expect(extra[0]!.bytesPerSecond).toBeCloseTo(l2(data), 6);
    // nothing on the side the sign points at: every flow of the direction is a candidate
    expect(likelyCulprits(statuses.filter((s) => s.counted), 'tx', 1000, 'l2').map((c) => c.binding)).toEqual([video]);
  });

  it('culprits among many flows with equal rates: the closest three, ties by flow id, as a full sort ranks them', () => {
    // 40 flows, four rates, ids out of order: the pick of three must equal sorting them all.
    const many = Array.from({ length: 40 }, (_, i) => {
      const id = `0a3e1c52-4f0e-4d8b-9d0c-${((i * 7919) % 40).toString(16).padStart(12, '0')}`;
      const f = [video, audio, data][i % 3]!;
      return { binding: { ...f, flow: { ...f.flow, id } }, prediction: plan.flows[i % 3]!.prediction };
    });
    const statuses = flowStatuses(many, undefined);
    const rate = (i: number): number => {
      const p = many[i]!.prediction!.bytesPerSecond.l2;
      return Number(p.num) / Number(p.den);
    };
    for (const unexplained of [-rate(0), -rate(1) * 1.5, -rate(2) / 2, 1e12]) {
      const target = Math.abs(unexplained);
      const side = statuses.filter((s) => s.counted === unexplained < 0);
      const ranked = (side.length ? side : statuses).map((s) => ({ binding: s.binding, d: Math.abs(rate(statuses.indexOf(s)) - target) }))
        .sort((a, b) => a.d - b.d || a.binding.flow.id.localeCompare(b.binding.flow.id)).slice(0, 3).map((c) => c.binding.flow.id);
      expect(likelyCulprits(statuses, 'tx', unexplained, 'l2').map((c) => c.binding.flow.id)).toEqual(ranked);
    }
  });
});
