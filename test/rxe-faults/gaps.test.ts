/**
 * test/rxe/faults/gaps.mjs on hand-made samples: gaps between samples more than maxGap apart, runs
 * of `up` 0, a series that stopped before the end of the run; and which gaps the fault windows
 * excuse (exporter-restarted every series, rxe-deleted port series only, a Prometheus restart
 * every series), with exact bounds.
 */
import { describe, it, expect } from 'vitest';
import { classifyGaps, findGaps } from '../rxe/faults/gaps.mjs';

type Sample = [number, number];
/** Samples every `stepS` seconds from `fromS`, one per value: ms timestamps. */
const every = (stepS: number, fromS: number, values: number[]): Sample[] => values.map((v, i) => [(fromS + i * stepS) * 1000, v]);
const at = (...pairs: [number, number][]): Sample[] => pairs.map(([s, v]) => [s * 1000, v]);

describe('findGaps', () => {
  it('samples every scrape: no gap; no samples: no gap', () => {
    expect(findGaps(every(2, 0, [1, 1, 1, 1, 1, 1]), 5000)).toEqual([]);
    expect(findGaps([], 5000)).toEqual([]);
    expect(findGaps([], 5000, { zeroIsGap: true, until: 10_000 })).toEqual([]);
  });
  it('consecutive samples more than maxGap apart are one gap, from the last sample before to the first after', () => {
    expect(findGaps(at([0, 1], [2, 1], [4, 1], [12, 1], [14, 1]), 5000)).toEqual([{ from: 4000, to: 12_000 }]);
    expect(findGaps(at([0, 1], [10, 1], [12, 1], [30, 1]), 5000)).toEqual([{ from: 0, to: 10_000 }, { from: 12_000, to: 30_000 }]);
  });
  it('exactly maxGap apart is no gap, 1 ms more is', () => {
    expect(findGaps([[0, 1], [5000, 1]], 5000)).toEqual([]);
    expect(findGaps([[0, 1], [5001, 1]], 5000)).toEqual([{ from: 0, to: 5001 }]);
  });
  it('zeros are samples like any other unless zeroIsGap', () => {
    expect(findGaps(every(2, 0, [1, 0, 0, 1, 0, 1]), 5000)).toEqual([]);
  });
  it('with zeroIsGap each run of zeros is one gap, from its first zero to the next non-zero sample', () => {
    expect(findGaps(every(2, 0, [1, 0, 0, 1, 0, 1]), 5000, { zeroIsGap: true })).toEqual([{ from: 2000, to: 6000 }, { from: 8000, to: 10_000 }]);
    expect(findGaps(every(2, 0, [0, 0, 1]), 5000, { zeroIsGap: true })).toEqual([{ from: 0, to: 4000 }]);
  });
  it('a run of zeros at the end is a gap to the last sample (a lone last zero: a gap of no length)', () => {
    expect(findGaps(every(2, 0, [1, 1, 0, 0]), 5000, { zeroIsGap: true })).toEqual([{ from: 4000, to: 6000 }]);
    expect(findGaps(every(2, 0, [1, 1, 1, 0]), 5000, { zeroIsGap: true })).toEqual([{ from: 6000, to: 6000 }]);
    expect(findGaps(every(2, 0, [0, 0, 0]), 5000, { zeroIsGap: true })).toEqual([{ from: 0, to: 4000 }]);
  });
  it('a time gap inside a run of zeros is reported as well as the run', () => {
    expect(findGaps(at([0, 1], [2, 0], [10, 0], [12, 1]), 5000, { zeroIsGap: true })).toEqual([{ from: 2000, to: 10_000 }, { from: 2000, to: 12_000 }]);
  });
  it('with until, a series whose last sample is more than maxGap before it has a gap to it (it stopped)', () => {
    const s = every(2, 0, [1, 1]);
    expect(findGaps(s, 5000, { until: 10_000 })).toEqual([{ from: 2000, to: 10_000 }]);
    expect(findGaps(s, 5000, { until: 7000 })).toEqual([]);
    expect(findGaps(s, 5000, { until: 7001 })).toEqual([{ from: 2000, to: 7001 }]);
    expect(findGaps(every(2, 0, [1, 0]), 5000, { zeroIsGap: true, until: 20_000 })).toEqual([{ from: 2000, to: 2000 }, { from: 2000, to: 20_000 }]);
  });
});

const T = 1_700_000_000_000;
const s = (n: number) => T + n * 1000;
type Gap = { series: string; kind: 'up' | 'port'; from: number; to: number };
const up = (fromS: number, toS: number): Gap => ({ series: 'up{instance="sender:9842"}', kind: 'up', from: s(fromS), to: s(toS) });
const port = (fromS: number, toS: number): Gap => ({ series: 'mxl_fabric_port_measured_bytes_per_second{device="rxe0"}', kind: 'port', from: s(fromS), to: s(toS) });
const by = (g: Gap, name: string) => ({ ...g, excused_by: name });

describe('classifyGaps', () => {
  it('with no window every gap is outside, unchanged', () => {
    const gaps = [up(10, 20), port(30, 40)];
    expect(classifyGaps(gaps, [])).toEqual({ excused: [], outside: gaps });
  });
  it('exporter-restarted excuses every series from 5 s before its window to 20 s after it, bounds included', () => {
    const w = [{ name: 'exporter-restarted', from: s(100), to: s(160) }];
    const inside = [up(95, 104), port(98, 180), up(100, 160), port(170, 180)];
    const outside = [up(94.999, 104), port(170, 180.001), up(90, 200), up(10, 20), port(181, 190)];
    expect(classifyGaps([...inside, ...outside], w)).toEqual({ excused: inside.map((g) => by(g, 'exporter-restarted')), outside });
  });
  it('rxe-deleted excuses only port series, from 5 s before its window to 30 s after it', () => {
    const w = [{ name: 'rxe-deleted', from: s(300), to: s(400) }];
    const r = classifyGaps([port(295, 430), port(298, 330), up(298, 330), port(294.999, 330), port(400, 430.001)], w);
    expect(r.excused).toEqual([by(port(295, 430), 'rxe-deleted'), by(port(298, 330), 'rxe-deleted')]);
    expect(r.outside).toEqual([up(298, 330), port(294.999, 330), port(400, 430.001)]);
  });
  it('a window with restartedAt excuses every series from 5 s before the restart to 30 s after it; the rest of that window excuses nothing', () => {
    const w = [{ name: 'prometheus-restarted', from: s(500), to: s(600), restartedAt: s(550) }];
    const r = classifyGaps([up(545, 580), port(549, 551), up(544.999, 560), port(560, 580.001), up(510, 520), port(590, 600)], w);
    expect(r.excused).toEqual([by(up(545, 580), 'prometheus-restarted (Prometheus restart)'), by(port(549, 551), 'prometheus-restarted (Prometheus restart)')]);
    expect(r.outside).toEqual([up(544.999, 560), port(560, 580.001), up(510, 520), port(590, 600)]);
  });
  it('restartedAt 0 is a time like any other', () => {
    const g = { series: 'up', kind: 'up' as const, from: -5000, to: 30_000 };
    expect(classifyGaps([g], [{ name: 'prometheus-restarted', from: -10_000, to: 60_000, restartedAt: 0 }]).excused).toEqual([by(g, 'prometheus-restarted (Prometheus restart)')]);
  });
  it('a fault that excuses nothing (packet-loss, mtu-lowered, ...) leaves its gaps outside', () => {
    const gaps = [up(100, 110), port(100, 110)];
    expect(classifyGaps(gaps, [{ name: 'mtu-lowered', from: s(90), to: s(200) }, { name: 'packet-loss', from: s(90), to: s(200) }])).toEqual({ excused: [], outside: gaps });
  });
  it("link-down excuses only port series (its undo creates rxe0 again), as rxe-deleted", () => {
    expect(classifyGaps([up(100, 110), port(100, 110)], [{ name: 'link-down', from: s(90), to: s(200) }]))
      .toEqual({ excused: [by(port(100, 110), 'link-down')], outside: [up(100, 110)] });
  });
  it('a gap must lie in one span: across two neighbouring windows it is outside; the first span that holds it names it', () => {
    const w = [{ name: 'exporter-restarted', from: s(100), to: s(110) }, { name: 'rxe-deleted', from: s(135), to: s(200) }];
    // exporter-restarted's span ends at 130, rxe-deleted's starts at 130: 125..135 is in neither alone
    const r = classifyGaps([port(125, 135), port(131, 140), port(128, 130)], w);
    expect(r.outside).toEqual([port(125, 135)]);
    expect(r.excused).toEqual([by(port(131, 140), 'rxe-deleted'), by(port(128, 130), 'exporter-restarted')]);
  });
});
