import { describe, expect, it } from 'vitest';
import { connectionsDue, connectionsReadGapMs, deviceReadInterval } from '../../src/model/connections-schedule.js';

describe('the connections schedule', () => {
  const s = (samplingIntervalMs: number, connectionsIntervalMs: number) => ({ samplingIntervalMs, connectionsIntervalMs });

  it('reads on the sampling ticks at least connections.interval apart, within half a sampling interval', () => {
    expect(connectionsDue(s(1000, 1000), undefined)).toBe(true);
    expect(connectionsDue(s(1000, 1000), 999)).toBe(true);
    expect(connectionsDue(s(1000, 3000), 2000)).toBe(false);
    expect(connectionsDue(s(1000, 3000), 2500)).toBe(true);
  });

  it('is as far apart as the first tick the rule says is due', () => {
    expect(connectionsReadGapMs(s(1000, 100))).toBe(1000);
    expect(connectionsReadGapMs(s(1000, 1000))).toBe(1000);
    expect(connectionsReadGapMs(s(1000, 1500))).toBe(1000);
    expect(connectionsReadGapMs(s(1000, 1600))).toBe(2000);
    expect(connectionsReadGapMs(s(300, 450))).toBe(300);
    expect(connectionsReadGapMs(s(500, 2000))).toBe(2000);
    // The gap agrees with the rule: due at the gap, not one tick before it.
    for (const [si, ci] of [[1000, 2400], [200, 1000], [1000, 2500], [300, 1000]] as const) {
      const gap = connectionsReadGapMs(s(si, ci));
      expect([connectionsDue(s(si, ci), gap - si), connectionsDue(s(si, ci), gap)]).toEqual([false, true]);
    }
  });
});

describe('a device read interval under a budget of QP queries', () => {
  const s = { samplingIntervalMs: 1000, connectionsIntervalMs: 1000 };
  const at = (qps: number | undefined, queriesPerSecond: number | undefined, limitMs?: number) => deviceReadInterval(s, { qps, queriesPerSecond, limitMs });

  it('reads every tick while the QPs fit the budget, and as often as configured without a budget', () => {
    expect(at(1000, 1000, 2749)).toEqual({ intervalMs: 1000, gapMs: 1000, overBudget: false });
    expect(at(undefined, 1000, 2749)).toEqual({ intervalMs: 1000, gapMs: 1000, overBudget: false });
    expect(at(50_000, undefined, 2749)).toEqual({ intervalMs: 1000, gapMs: 1000, overBudget: false });
  });

  it('stretches the interval to whole ticks that keep the queries within the budget', () => {
    // 1,500 QPs at 1,000 a second: every 1.5 s would read on every tick; every 2 s keeps 750 a second.
    expect(at(1500, 1000)).toEqual({ intervalMs: 2000, gapMs: 2000, overBudget: false });
    expect(at(10_000, 1000)).toEqual({ intervalMs: 10_000, gapMs: 10_000, overBudget: false });
    expect(at(10_000, 1000, 60_000)).toEqual({ intervalMs: 10_000, gapMs: 10_000, overBudget: false });
  });

  it('never reads further apart than the PSN limit less half a tick allows: then it is over budget', () => {
    // 100 Gb/s at 4,096-byte packets: 2,749 ms; reads every 2 s (5,000 queries a second at 10,000 QPs).
    expect(at(10_000, 1000, 2749)).toEqual({ intervalMs: 2000, gapMs: 2000, overBudget: true });
    // A limit of exactly 3 s: 3 s would be late; 2 s leaves the margin.
    expect(at(10_000, 1000, 3000)).toEqual({ intervalMs: 2000, gapMs: 2000, overBudget: true });
    // 400 Gb/s (687 ms) under a 1 s sampling interval: the configured interval stands (the config check's business).
    expect(at(10_000, 1000, 687)).toEqual({ intervalMs: 1000, gapMs: 1000, overBudget: true });
    expect(at(2000, 1000, 2749)).toEqual({ intervalMs: 2000, gapMs: 2000, overBudget: false });
  });

  it('keeps a configured interval longer than the budget asks', () => {
    expect(deviceReadInterval({ samplingIntervalMs: 1000, connectionsIntervalMs: 2000 }, { qps: 100, queriesPerSecond: 1000, limitMs: 2749 }))
      .toEqual({ intervalMs: 2000, gapMs: 2000, overBudget: false });
  });
});
