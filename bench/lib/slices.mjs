/**
 * Why the event loop went without a turn: our own long task, a garbage collection, or the
 * kernel running someone else on our CPU. A 1 ms timer notes each gap between its callbacks;
 * for each gap it reads the main thread's /proc/self/task/<pid>/schedstat (nanoseconds on a
 * CPU, nanoseconds waiting in a run queue) and sums the GC pauses (PerformanceObserver 'gc')
 * that ended inside it. A gap made of run-queue wait is preemption (other processes on this
 * shared machine); a gap made of on-CPU time is a synchronous slice of ours.
 *
 *   const t = traceSlices(); ...; const report = t.stop();
 *
 * report.longest: the longest gaps (wall, onCpu, runQueue, offCpu, gc; ms); report.longestOwn: the
 * gaps with the most on-CPU time; report.maxOwnMs: the most on-CPU time in one gap (what our code
 * and V8 did without a turn); report.maxGapMs: the longest gap.
 */
import * as fs from 'node:fs';
import { PerformanceObserver } from 'node:perf_hooks';

const SCHEDSTAT = `/proc/self/task/${process.pid}/schedstat`;

/** [on-CPU ns, run-queue ns] of the main thread; undefined where the kernel has no schedstat. */
function schedstat() {
  try {
    const [run, wait] = fs.readFileSync(SCHEDSTAT, 'utf8').split(' ');
    return [Number(run), Number(wait)];
  } catch {
    return undefined;
  }
}

export function traceSlices({ periodMs = 1, keep = 5 } = {}) {
  const gcs = [];
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcs.push({ end: e.startTime + e.duration, ms: e.duration });
  });
  obs.observe({ entryTypes: ['gc'] });
  const gaps = [];
  let lastT = performance.now();
  let lastMono = process.hrtime.bigint();
  let lastS = schedstat();
  let maxOwnMs = 0;
  let maxGapMs = 0;
  let maxWaitMs = 0;
  const timer = setInterval(() => {
    const t = performance.now();
    const s = schedstat();
    const wall = t - lastT - periodMs;
    if (s && lastS) {
      // schedstat's run time moves at scheduler events, so one reading can lag and the next jump:
      // a gap is never given more CPU time than it lasted.
      const onCpu = Math.min((s[0] - lastS[0]) / 1e6, wall + periodMs);
      const runQueue = (s[1] - lastS[1]) / 1e6;
      maxOwnMs = Math.max(maxOwnMs, onCpu);
      maxWaitMs = Math.max(maxWaitMs, runQueue);
      if (wall > 2) gaps.push({ at: lastT, mono: lastMono, wallMs: wall, onCpuMs: onCpu, runQueueMs: runQueue });
    } else if (wall > 2) gaps.push({ at: lastT, mono: lastMono, wallMs: wall });
    maxGapMs = Math.max(maxGapMs, wall);
    lastT = t;
    lastMono = process.hrtime.bigint();
    lastS = s;
  }, periodMs);
  return {
    stop() {
      clearInterval(timer);
      obs.disconnect();
      const r2 = (x) => (x === undefined ? undefined : Math.round(x * 100) / 100);
      const describe = (g) => ({
        wallMs: r2(g.wallMs),
        /** CLOCK_MONOTONIC in µs where the gap began: the clock of V8's CPU profiles (lines up a gap with a profile's samples). */
        startUs: Number(g.mono / 1000n),
        onCpuMs: r2(g.onCpuMs),
        runQueueMs: r2(g.runQueueMs),
        /** Neither running nor runnable: waiting in the kernel, or for V8's GC helper threads. */
        offCpuMs: g.onCpuMs === undefined ? undefined : r2(Math.max(0, g.wallMs + periodMs - g.onCpuMs - g.runQueueMs)),
        gcMs: r2(gcs.filter((c) => c.end >= g.at && c.end <= g.at + g.wallMs + periodMs + 1).reduce((a, c) => a + c.ms, 0)),
      });
      const longest = [...gaps].sort((a, b) => b.wallMs - a.wallMs).slice(0, keep).map(describe);
      const longestOwn = [...gaps].sort((a, b) => (b.onCpuMs ?? 0) - (a.onCpuMs ?? 0)).slice(0, keep).map(describe);
      // The longest own slice: the gap whose on-CPU time was largest (a gap's on-CPU part is ours, GC included).
      // The longest own slice with no GC pause in it: our code's, not V8's collector's.
      const withoutGc = gaps.map(describe).filter((g) => g.gcMs === 0 && g.onCpuMs !== undefined);
      const maxOwnNoGcMs = withoutGc.length ? Math.max(...withoutGc.map((g) => g.onCpuMs)) : undefined;
      return { schedstat: lastS !== undefined, gaps: gaps.length, maxGapMs: r2(maxGapMs), maxOwnMs: r2(maxOwnMs), maxOwnNoGcMs, maxRunQueueMs: r2(maxWaitMs), longest, longestOwn };
    },
  };
}

/**
 * The longest the event loop goes without a turn from now until `stop()`: a 1 ms timer's longest
 * gap, minus its 1 ms. `stop()` lets the loop turn once more first, so work that never yielded
 * shows as one long gap.
 */
export function watchStalls() {
  let last = performance.now();
  let gap = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    gap = Math.max(gap, now - last);
    last = now;
  }, 1);
  return {
    async stop() {
      await new Promise((resolve) => setTimeout(resolve, 2));
      clearInterval(timer);
      gap = Math.max(gap, performance.now() - last);
      return Math.max(0, gap - 1);
    },
  };
}
