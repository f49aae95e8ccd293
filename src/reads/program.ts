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
import { ERRNO } from '../ffi/errno.js';
import type { ReadError } from './errors.js';
import { type Op, OpBatch, Results } from './ops.js';

/** -ENOBUFS: a listing did not fit its output room. */
const ENOBUFS = -ERRNO.ENOBUFS;
/** Room for any directory a listing is read again with. */
const LARGE_LISTING_BYTES = 4 * 1024 * 1024;
import { runDirect } from './direct.js';

export type ReadProgram<T> = Generator<OpBatch, T, Results>;

/** A program that needs no reads (verbs answers from memory, tests). */
// eslint-disable-next-line require-yield
export function* withoutReads<T>(value: T): ReadProgram<T> {
  return value;
}

/**
 * A one-round program its owner keeps and restarts (start()) for every read: it yields the
 * batch, then returns what `decode` makes of the results and of the batch they answer. A
 * counter set reads every tick, and a generator per read was ~300 bytes of garbage, a hundred a
 * tick on 32 ports. The step objects are reused too: whoever calls next() reads them at once, as
 * the reader and yield* do. One read at a time: the sampler's ticks never overlap.
 */
export class OneRound<T> implements ReadProgram<T> {
  private batch: OpBatch | undefined;
  private yielded = false;
  private readonly pending: { done: false; value: OpBatch } = { done: false, value: new OpBatch([]) };
  private readonly finished: { done: true; value: T | undefined } = { done: true, value: undefined };

  constructor(private readonly decode: (r: Results, batch: OpBatch) => T) {}

  /** This program, ready to read `batch` once. */
  start(batch: OpBatch): this {
    this.batch = batch;
    this.yielded = false;
    return this;
  }

  next(...args: [] | [Results]): IteratorResult<OpBatch, T> {
    const batch = this.batch;
    if (batch !== undefined && !this.yielded) {
      this.yielded = true;
      this.pending.value = batch;
      return this.pending;
    }
    this.batch = undefined;
    const r = args[0];
    return this.end(batch !== undefined && r !== undefined ? this.decode(r, batch) : undefined);
  }

  return(value: T): IteratorResult<OpBatch, T> {
    this.batch = undefined;
    return this.end(value);
  }

  throw(e: unknown): IteratorResult<OpBatch, T> {
    this.batch = undefined;
    throw e;
  }

  [Symbol.iterator](): this {
    return this;
  }

  /** The end step; its value is undefined only for a program ended before it ran (as a generator's is). */
  private end(value: T | undefined): IteratorResult<OpBatch, T> {
    this.finished.value = value;
    return this.finished as IteratorResult<OpBatch, T>;
  }
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

/**
 * Several programs as one: each round, the batches of the unfinished ones go out as one batch
 * (one request on the reader), and each is resumed with its own slice of the results. The
 * values come back in program order.
 */
export function* all<T>(programs: readonly ReadProgram<T>[]): ReadProgram<T[]> {
  const values = new Array<T>(programs.length);
  let live: { readonly i: number; readonly batch: OpBatch }[] = [];
  const advance = (i: number, step: IteratorResult<OpBatch, T>): void => {
    if (step.done) values[i] = step.value;
    else live.push({ i, batch: step.value });
  };
  programs.forEach((p, i) => advance(i, p.next()));
  while (live.length > 0) {
    const round = live;
    live = [];
    const r = round.length === 1 ? yield round[0]!.batch : yield new OpBatch(round.flatMap((l) => l.batch.ops));
    let base = 0;
    for (const l of round) {
      advance(l.i, programs[l.i]!.next(round.length === 1 ? r : r.slice(base)));
      base += l.batch.length;
    }
  }
  return values;
}

/** Two programs of different kinds as one, as all() does: their batches go out together each round. */
export function* pair<A, B>(a: ReadProgram<A>, b: ReadProgram<B>): ReadProgram<readonly [A, B]> {
  const got: { a?: A; b?: B } = {};
  yield* all([keep(a, (v) => (got.a = v)), keep(b, (v) => (got.b = v))]);
  return [got.a as A, got.b as B];
}

function* keep<T>(p: ReadProgram<T>, put: (value: T) => void): ReadProgram<void> {
  put(yield* p);
}

export type TextRead = { readonly ok: true; readonly text: string } | { readonly ok: false; readonly error: ReadError };

/**
 * A small file's whole text: one readFile of `first` bytes (enough for nearly every file of
 * its kind); a file that fills them is stat'ed and read again, up to `cap` bytes.
 */
export function* readText(path: string, first: number, cap: number, flags = 0): ReadProgram<TextRead> {
  const r1 = yield* read([{ kind: 'readFile', path, max: first, flags }]);
  if (!r1.ok(0)) return { ok: false, error: r1.failure(0, 'read', path) };
  if (r1.status(0) < first) return { ok: true, text: r1.bytes(0).toString('utf8') };
  const st = yield* read([{ kind: 'stat', path }]);
  const size = st.stat(0)?.size;
  if (size === undefined) return { ok: false, error: st.failure(0, 'stat', path) };
  if (size > cap) return { ok: false, error: { code: 'TOOLARGE', op: 'stat', path, detail: `'${path}' is larger than ${cap} bytes` } };
  const r2 = yield* read([{ kind: 'readFile', path, max: size + 1, flags }]);
  if (!r2.ok(0)) return { ok: false, error: r2.failure(0, 'read', path) };
  if (r2.status(0) > size) return { ok: false, error: { code: 'CHANGED', op: 'read', path, detail: `'${path}' changed while it was read` } };
  return { ok: true, text: r2.bytes(0).toString('utf8') };
}

/** Runs a program to its end on this thread (unbounded: a read that blocks blocks the caller). */
export function runSync<T>(program: ReadProgram<T>): T {
  let step = program.next();
  while (!step.done) step = program.next(runDirect(step.value));
  return step.value;
}
