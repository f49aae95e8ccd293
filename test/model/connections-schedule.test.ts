import { describe, expect, it } from 'vitest';
import { connectionsDue, connectionsReadGapMs } from '../../src/model/connections-schedule.js';

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
