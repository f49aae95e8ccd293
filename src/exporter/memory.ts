/**
 * Giving back what a config load leaves behind. Loading and formatting 10,000 flows allocates
 * far more than it keeps: V8 does not collect that garbage while the daemon idles (only a few KB
 * are allocated per tick, so no full GC comes), and glibc keeps the C heap it freed (zlib's
 * buffers, Buffers of exposition text) resident: tens of MB at 10,000 flows (bench/README.md,
 * "Figures behind code comments").
 *
 * So after each load has settled, once: a full GC on the event loop (tens of ms at 10,000
 * flows, one pause, after the reload has answered), then malloc_trim(0) on libuv's threadpool
 * (koffi's async call) so its walk of the arenas never blocks the loop.
 */
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';
import { libcLibrary } from '../ffi/libc.js';

type Trim = { async(pad: number, done: (err: unknown, r: number) => void): void };

/** mallopt(3) parameters (glibc's malloc.h). */
const M_TRIM_THRESHOLD = -1;
const M_MMAP_THRESHOLD = -3;
/** glibc's default for both, which it otherwise raises as large blocks are freed. */
const FIXED_THRESHOLD_BYTES = 128 * 1024;
/** What an operator sets to tune glibc's thresholds: theirs stand. */
const ALLOCATOR_ENV = ['MALLOC_MMAP_THRESHOLD_', 'MALLOC_TRIM_THRESHOLD_', 'GLIBC_TUNABLES'];

let fullGc: (() => void) | null | undefined;
let trim: Trim | null | undefined;

/**
 * V8's gc(), without starting node with --expose-gc: the flag is set for one new context that
 * hands its gc out, and cleared again (the usual way; `node --expose-gc` gives the same function).
 */
function gcFunction(): (() => void) | null {
  if (fullGc !== undefined) return fullGc;
  const g = (globalThis as { gc?: () => void }).gc;
  if (typeof g === 'function') return (fullGc = g);
  try {
    setFlagsFromString('--expose-gc');
    const f: unknown = runInNewContext('gc');
    fullGc = typeof f === 'function' ? (f as () => void) : null;
  } catch {
    fullGc = null;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
  return fullGc;
}

function trimFunction(): Trim | null {
  if (trim !== undefined) return trim;
  try {
    trim = libcLibrary().func('int malloc_trim(size_t pad)');
  } catch {
    trim = null; // not glibc, or no koffi: nothing to trim with
  }
  return trim;
}

/** A full GC, then the C heap's free pages back to the kernel; resolves with what was done. */
export async function releaseLoadGarbage(): Promise<{ gc: boolean; trimmed: boolean }> {
  const gc = gcFunction();
  gc?.();
  const t = trimFunction();
  const trimmed = t === null ? false : await new Promise<boolean>((resolve) => t.async(0, (err) => resolve(!err)));
  return { gc: gc !== null, trimmed };
}

let tuned: boolean | undefined;

/**
 * glibc's mmap threshold is dynamic (mallopt(3), M_MMAP_THRESHOLD): each freed block larger than
 * it raises it, up to 32 MB, and the trim threshold to twice that. After a config load and the
 * first gzip of the exposition, blocks of megabytes came from the threads' arenas and stayed
 * there once freed: five arenas (the reader's, libuv's and V8's helper threads') held 1-1.5 MB
 * each. Fixed at the 128 KB default, a large block is mapped and unmapped on its own and an
 * arena's free top goes back to the kernel (what it saves: bench/README.md, "Figures behind code
 * comments"). Process-wide and once; an operator's MALLOC_*_THRESHOLD_ or GLIBC_TUNABLES stand.
 */
export function fixAllocatorThresholds(): boolean {
  if (tuned !== undefined) return tuned;
  tuned = false;
  if (ALLOCATOR_ENV.some((name) => process.env[name] !== undefined)) return tuned;
  try {
    const mallopt = libcLibrary().func('int mallopt(int param, int value)') as (param: number, value: number) => number;
    tuned = mallopt(M_MMAP_THRESHOLD, FIXED_THRESHOLD_BYTES) === 1 && mallopt(M_TRIM_THRESHOLD, FIXED_THRESHOLD_BYTES) === 1;
  } catch {
    // not glibc, or no koffi: its defaults stand
  }
  return tuned;
}
