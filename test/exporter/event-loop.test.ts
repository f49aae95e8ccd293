/**
 * nodejs_eventloop_lag_*: the delay of the event loop, not the monitor's own sampling interval.
 * Node's monitorEventLoopDelay() records the time between two of its timer's callbacks, so at a
 * 500 ms resolution an idle loop reads ~0.5 s (issue 34: an alert on event-loop lag, a common
 * default, paged on an idle exporter). The interval is taken off each statistic but stddev.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { delayBeyondInterval } from '../../src/exporter/event-loop.js';
import { startDaemon, stopDaemons } from './harness.js';

afterEach(stopDaemons);

describe('nodejs_eventloop_lag_* of an idle exporter', () => {
  it('read the delay beyond the sampling interval: near 0, not ~0.5 s', async () => {
    const run = await startDaemon('empty', 'flows: []\n');
    await run.get('/metrics'); // a scrape resets the statistics: count from here
    await new Promise((r) => setTimeout(r, 2600)); // five samples at 500 ms
    await run.tick(); // prom-client's families are rendered again once per sampling tick
    const m = await run.scrape();
    for (const s of ['min', 'mean', 'p50', 'p90', 'p99', 'max']) {
      const v = m.get(`nodejs_eventloop_lag_${s}_seconds`);
      expect(v, s).toBeGreaterThanOrEqual(0);
      // Old code: >= 0.5 (the interval counted as delay). A loop idle but for the test's own
      // timers is late by well under a tenth of that; 0.25 s leaves room for a loaded machine.
      expect(v, s).toBeLessThan(0.25);
    }
  }, 20_000);

  it('before the monitor has sampled once, say nothing rather than 9.2e9 s (an empty histogram\'s min)', async () => {
    const run = await startDaemon('empty', 'flows: []\n');
    const m = await run.scrape();
    for (const s of ['min', 'mean', 'p50', 'p90', 'p99', 'max', 'stddev']) {
      const v = m.get(`nodejs_eventloop_lag_${s}_seconds`);
      expect(v === undefined || (v >= 0 && v < 0.25), `${s}: ${v}`).toBe(true);
    }
  });

  it('take the interval off every statistic but stddev, never below 0; nothing without a sample', () => {
    const h = { count: 4, min: 500.2e6, max: 530e6, mean: 507.5e6, stddev: 12e6, percentile: (p: number) => (p === 50 ? 501e6 : p === 90 ? 520e6 : 530e6) };
    expect(delayBeyondInterval(h, 500)).toEqual({ min: 0.0002, max: 0.03, mean: 0.0075, stddev: 0.012, p50: 0.001, p90: 0.02, p99: 0.03 });
    expect(delayBeyondInterval({ ...h, min: 499e6 }, 500)!.min).toBe(0); // the timer fired early: no negative delay
    expect(delayBeyondInterval({ ...h, count: 0, min: 9223372036854776000 }, 500)).toBeUndefined();
  });
});
