/**
 * A read program: the reads one question needs, as a generator that yields a batch of ops and
 * is resumed with their results, as many rounds as the question takes (list a directory, then
 * read what it lists). The same program runs on the bounded reader (bounded.ts: many programs'
 * batches go to a reader thread as one request per round) or right here on the caller's thread
 * (runSync: the CLI, tests, and the fallback without the native library).
 *
 * A program never sees a timeout: when one of its reads blocks, the reader abandons it and the
 * caller gets a `blocked` outcome instead of its value.
 */
import { type Op, OpBatch, Results } from './ops.js';

/** -ENOBUFS: a listing did not fit its output room. */
const ENOBUFS = -105;
/** Room for any directory a listing is read again with. */
const LARGE_LISTING_BYTES = 4 * 1024 * 1024;
import { runDirect } from './direct.js';

export type ReadProgram<T> = Generator<OpBatch, T, Results>;

/** A program that needs no reads (verbs answers from memory, tests). */
// eslint-disable-next-line require-yield
export function* answer<T>(value: T): ReadProgram<T> {
  return value;
}

/** One round of ops; the results come back in op order. */
export function* read(ops: readonly Op[] | OpBatch): Generator<OpBatch, Results, Results> {
  return yield ops instanceof OpBatch ? ops : new OpBatch(ops);
}

/**
 * The names of listing `i` of `r`, read again alone with room for any directory when they did
 * not fit. It may yield: decode everything else of `r` first.
 */
export function* namesOf(r: Results, i: number, path: string): Generator<OpBatch, string[] | undefined, Results> {
  if (r.status(i) !== ENOBUFS) return r.names(i);
  return (yield* read([{ kind: 'readDir', path, max: LARGE_LISTING_BYTES }])).names(0);
}

/** Runs a program to its end on this thread (unbounded: a read that blocks blocks the caller). */
export function runSync<T>(program: ReadProgram<T>): T {
  let step = program.next();
  while (!step.done) step = program.next(runDirect(step.value));
  return step.value;
}
