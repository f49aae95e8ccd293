/**
 * nodejs_eventloop_lag_{min,max,mean,stddev,p50,p90,p99}_seconds: how much later than asked the
 * event loop ran a timer. Node's monitorEventLoopDelay() records the whole time between two
 * callbacks of its timer (src/histogram.cc, IntervalHistogram: RecordDelta() since the last
 * callback), the timer's own interval included, and prom-client exports that as it is: at a
 * 500 ms resolution an idle exporter read ~0.5 s, and an alert on event-loop lag paged. Here the
 * interval is taken off each statistic (a shift leaves stddev as it is), and a statistic keeps
 * its last value while no sample was taken since (an empty histogram's min is 2^63 ns).
 */
import { type IntervalHistogram, monitorEventLoopDelay } from 'node:perf_hooks';
import { Gauge, type Registry } from 'prom-client';

/** The histogram's statistics that are exported, with prom-client's names and help. */
const STATS = [
  ['min', 'The minimum recorded event loop delay.'],
  ['max', 'The maximum recorded event loop delay.'],
  ['mean', 'The mean of the recorded event loop delays.'],
  ['stddev', 'The standard deviation of the recorded event loop delays.'],
  ['p50', 'The 50th percentile of the recorded event loop delays.'],
  ['p90', 'The 90th percentile of the recorded event loop delays.'],
  ['p99', 'The 99th percentile of the recorded event loop delays.'],
] as const;

type Stat = (typeof STATS)[number][0];

/** The names prom-client's default metrics give these (replaced by the ones here). */
export const EVENT_LOOP_STAT_NAMES: readonly string[] = STATS.map(([s]) => `nodejs_eventloop_lag_${s}_seconds`);

type Histogram = Pick<IntervalHistogram, 'count' | 'min' | 'max' | 'mean' | 'stddev' | 'percentile'>;

/** Seconds of delay beyond the timer's `intervalMs`, per statistic; undefined without a sample. */
export function delayBeyondInterval(h: Histogram, intervalMs: number): Record<Stat, number> | undefined {
  if (h.count === 0) return undefined;
  const late = (ns: number): number => Math.max(0, ns - intervalMs * 1e6) / 1e9;
  return {
    min: late(h.min), max: late(h.max), mean: late(h.mean), stddev: h.stddev / 1e9,
    p50: late(h.percentile(50)), p90: late(h.percentile(90)), p99: late(h.percentile(99)),
  };
}

/**
 * Samples the event loop every `intervalMs` and registers the gauges in `registry`; each scrape
 * reports the samples since the last one (as prom-client does). Returns what stops the timer.
 */
export function registerEventLoopDelay(registry: Registry, intervalMs: number): () => void {
  const histogram = monitorEventLoopDelay({ resolution: intervalMs });
  histogram.enable();
  const gauges = new Map<Stat, Gauge>();
  const collect = (): void => {
    const d = delayBeyondInterval(histogram, intervalMs);
    if (d === undefined) return;
    for (const [stat, g] of gauges) g.set(d[stat]);
    histogram.reset();
  };
  for (const [stat, help] of STATS) {
    const first = gauges.size === 0;
    gauges.set(stat, new Gauge({ name: `nodejs_eventloop_lag_${stat}_seconds`, help, registers: [registry], ...(first ? { collect } : {}) }));
  }
  return () => histogram.disable();
}
