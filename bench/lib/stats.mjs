/** Small measurement helpers shared by the benchmark scripts. */
import * as fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/** Linear-interpolated percentile of unsorted numbers (p in 0..100). */
export function percentile(values, p) {
  if (values.length === 0) return undefined;
  const s = Float64Array.from(values).sort();
  const rank = (p / 100) * (s.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return s[lo] + (s[hi] - s[lo]) * (rank - lo);
}

export const mean = (values) => (values.length ? values.reduce((a, b) => a + b, 0) / values.length : undefined);

/** utime + stime of a process in clock ticks (/proc/<pid>/stat fields 14 and 15). */
export function procCpuTicks(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/** VmRSS and VmHWM (peak) of a process in bytes. */
export function procMemory(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
  return { rssBytes: kb('VmRSS'), peakRssBytes: kb('VmHWM') };
}

/**
 * VmRSS of a process once a second for `seconds`: the median, with the range beside it. One
 * reading lands wherever V8's collections and the ticks happen to be; on the AMD VM of issue 22's
 * fifth round, single readings of the same daemon moved by 1-2 MB from one run to the next.
 */
export async function procMemoryOver(pid, seconds) {
  const rss = [];
  const end = Date.now() + seconds * 1000;
  let last;
  for (;;) {
    last = procMemory(pid);
    rss.push(last.rssBytes);
    const left = end - Date.now();
    if (left <= 0) break;
    await sleep(Math.min(1000, left));
  }
  return { rssBytes: percentile(rss, 50), rssMinBytes: Math.min(...rss), rssMaxBytes: Math.max(...rss), samples: rss.length, peakRssBytes: last.peakRssBytes };
}

/** Clock ticks per second for /proc/<pid>/stat (sysconf(_SC_CLK_TCK)); 100 on every Linux port Node runs on. */
export const CLK_TCK = 100;

export const round = (x, digits = 3) => (x === undefined || !Number.isFinite(x) ? x : Number(x.toFixed(digits)));

/** Element-wise median of the numbers of several rounds of the same JSON shape. */
export function medianRounds(rounds) {
  const merge = (xs) => {
    if (typeof xs[0] === 'number') return percentile(xs, 50);
    if (xs[0] && typeof xs[0] === 'object' && !Array.isArray(xs[0])) return Object.fromEntries(Object.keys(xs[0]).map((k) => [k, merge(xs.map((x) => x[k]))]));
    return xs[0];
  };
  return { ...merge(rounds), rounds: rounds.length };
}

export const roundAll = (o) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, typeof v === 'number' ? round(v) : v]));
