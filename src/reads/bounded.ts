/**
 * The bounded reader: runs read programs (program.ts) for the sampler, the inventory and the
 * MXL domains without the event loop ever waiting on the kernel.
 *
 * One run takes a list of jobs, each a program and the group (a port) to blame when one of its
 * reads blocks. Every round, the batch each unfinished program asks for goes out as one request
 * to a reader thread of libmfe-reader; the run awaits the thread's answer on the event loop.
 * A request that makes no progress for `readTimeoutMs` is given up: the op its thread is stuck
 * in names the group, that group's programs end as `blocked`, the reads before the stuck op
 * count, and the other programs go again on another thread (at most `maxStallsPerRun` times).
 * A blocked group is skipped until its abandoned read returns, then tried again at once.
 * Threads: at most `maxThreads` exist, blocked ones included; when all of them are blocked,
 * nothing is read (`paused`) until one returns. Runs never overlap: one request is in flight.
 *
 * Without libmfe-reader (not built) the programs run directly on the event loop, unbounded;
 * `mode` says so, for the log and mxl_fabric_exporter_reads_bounded.
 */
import { SerialQueue } from '../serial.js';
import { closeSync } from 'node:fs';
import { ERRNO } from '../ffi/errno.js';
import type { ReadError } from './errors.js';
import { NativeLoadError } from '../ffi/libc.js';
import { NOT_RUN, OpBatch, Results, concat, outputBuffer } from './ops.js';
import { runDirect } from './direct.js';
import type { ReadProgram } from './program.js';
import { READER_LIBRARY, ReaderThreads, type ReaderEvent, type ReaderThreadStats } from './native.js';

export interface Job<T> {
  /** Programs of one group (a port) are blamed and skipped together. */
  readonly group: string;
  readonly program: ReadProgram<T>;
  /** Told the job's outcome when its run ends (Pending keeps it). */
  settle?(outcome: Outcome<T>): void;
}

/**
 * A job whose outcome is reached through it rather than by its index in the run: yield a list of
 * these, then read each one's `outcome`, typed.
 */
export class Pending<T> implements Job<T> {
  private settled: Outcome<T> | undefined;

  constructor(readonly group: string, readonly program: ReadProgram<T>) {}

  settle(outcome: Outcome<T>): void {
    this.settled = outcome;
  }

  /** Throws before its run has ended (a bug: the outcome was read too early). */
  get outcome(): Outcome<T> {
    if (this.settled === undefined) throw new Error(`read job of ${this.group} read before its run ended`);
    return this.settled;
  }

  /** The value when the job is done, else undefined. */
  get value(): T | undefined {
    const o = this.outcome;
    return o.kind === 'done' ? o.value : undefined;
  }
}

export type Outcome<T> =
  | { readonly kind: 'done'; readonly value: T }
  /** A read of this group blocked past the timeout in this run (`fresh`), or still has not returned. */
  | { readonly kind: 'blocked'; readonly fresh: boolean; readonly error: ReadError }
  /** Not read: every reader thread is blocked in the kernel, or the reader is closed. */
  | { readonly kind: 'paused'; readonly error: ReadError }
  /** Not read this run: its retries went to other groups' timeouts or a thread's death. */
  | { readonly kind: 'deferred' }
  /** The program itself threw (a bug, not a read): its message. */
  | { readonly kind: 'failed'; readonly error: ReadError };

export interface BoundedReadsOptions {
  /** A request that completes no op for this long is stuck. */
  readonly readTimeoutMs: number;
  /** Reader threads that may exist at once, blocked ones included. */
  readonly maxThreads?: number;
  /** Requests given up (or threads lost) per run before the rest waits for the next run. */
  readonly maxStallsPerRun?: number;
  /** 'direct': run programs on the event loop (tests of the fallback). */
  readonly mode?: 'native' | 'direct';
  /** Another build of libmfe-reader (tests). */
  readonly library?: string;
  readonly onBlocked?: (group: string, info: { readonly timeoutMs: number; readonly blockedThreads: number }) => void;
  readonly onRecovered?: (group: string) => void;
  /** A reader thread died (it is replaced; nobody is blamed). */
  readonly onThreadLost?: (info: { readonly running: boolean }) => void;
}

const DEFAULT_MAX_THREADS = 4;

interface Encoding {
  readonly batches: readonly OpBatch[];
  readonly request: Buffer;
  readonly ops: number;
  readonly outputBytes: number;
}

/** Encodings kept for reuse: a tick's requests (ports; the ticks between stats of a set's directory) and the connections'. */
const KEEP_ENCODINGS = 4;

/** What a reader's users hear about (the sampler and the daemon each subscribe). */
export interface ReadListener {
  blocked?(group: string, info: { readonly timeoutMs: number; readonly blockedThreads: number }): void;
  recovered?(group: string): void;
  threadLost?(info: { readonly running: boolean }): void;
  /** Every reader thread is blocked: nothing is read until one returns (said once, until then). */
  paused?(info: { readonly blockedThreads: number; readonly error: ReadError }): void;
}

type Executed =
  | { readonly kind: 'done'; readonly results: readonly Results[] }
  /** Given up at op `at`; `results` hold what was read before it. */
  | { readonly kind: 'stuck'; readonly at: number; readonly results: readonly Results[]; readonly batchId: number }
  /** The thread died after `at` ops; nobody is to blame. */
  | { readonly kind: 'crashed'; readonly at: number; readonly results: readonly Results[] }
  | { readonly kind: 'paused'; readonly error: ReadError };

interface Blocked {
  /** The abandoned request whose thread is still in the kernel; undefined once it returned. */
  batchId: number | undefined;
}

interface Live {
  readonly job: number;
  readonly batch: OpBatch;
}

export class BoundedReads {
  readonly mode: 'native' | 'direct';
  /** Why the native reader is not used, when it is not. */
  readonly unavailable: string | undefined;
  /** Requests given up because a read blocked past the timeout, since start. */
  timeouts = 0;
  /** Reader threads that died, since start. */
  threadsLost = 0;
  /** Requests encoded rather than found among the kept encodings, since start. */
  encoded = 0;
  private readonly threads: ReaderThreads | undefined;
  private readonly blocked = new Map<string, Blocked>();
  /** Groups whose last read completed. */
  private readonly trusted = new Set<string>();
  private readonly abandoned = new Map<number, string>();
  /** Batches on the threads: what their thread's event does, and what closing the reader does. */
  private readonly waiting = new Map<number, { readonly event: (e: 'done' | 'crashed') => void; readonly closed: () => void }>();
  private readonly queue = new SerialQueue();
  /** The last requests' encodings, most recent first. */
  private readonly encodings: Encoding[] = [];
  private closed = false;
  private readonly listeners = new Set<ReadListener>();
  private pausedSaid = false;
  private timeoutMs: number;
  /** Reused by every request (Results are only valid until their program yields again). */
  private out: Buffer | undefined;
  /** Moves on with every request that reuses `out`: Results of older ones refuse to answer. */
  private readonly lease = { generation: 0 };

  constructor(private readonly opts: BoundedReadsOptions) {
    this.timeoutMs = opts.readTimeoutMs;
    this.listeners.add({ blocked: opts.onBlocked, recovered: opts.onRecovered, threadLost: opts.onThreadLost });
    let threads: ReaderThreads | undefined;
    let unavailable: string | undefined;
    if (opts.mode !== 'direct') {
      try {
        threads = ReaderThreads.open(opts.maxThreads ?? DEFAULT_MAX_THREADS, (e, id) => this.event(e, id), opts.library ?? READER_LIBRARY);
      } catch (e) {
        if (!(e instanceof NativeLoadError)) throw e;
        unavailable = e.message;
      }
    }
    this.threads = threads;
    this.unavailable = opts.mode === 'direct' ? 'direct reads requested' : unavailable;
    this.mode = threads ? 'native' : 'direct';
  }

  /** Hear about blocked and recovered groups and lost threads; returns the unsubscribe. */
  subscribe(l: ReadListener): () => void {
    this.listeners.add(l);
    return () => void this.listeners.delete(l);
  }

  /** A request that completes no op for this long is given up (the daemon follows its sampling interval). */
  get readTimeoutMs(): number {
    return this.timeoutMs;
  }

  set readTimeoutMs(ms: number) {
    this.timeoutMs = ms;
  }

  /** Given-up reader threads still inside a call, as far as their notices have arrived. */
  get blockedThreads(): number {
    return this.abandoned.size;
  }

  threadStats(): ReaderThreadStats | undefined {
    return this.threads?.stats();
  }

  /** Groups skipped because a read of theirs blocked and has not returned. */
  blockedGroups(): string[] {
    return [...this.blocked.keys()];
  }

  /** Forget a group (its port went away): a port that comes back starts afresh. */
  forget(group: string): void {
    this.blocked.delete(group);
    this.trusted.delete(group);
  }

  /** Runs the jobs (after any run still going); one outcome per job, in order, and each job settled with its own. */
  run<T>(jobs: readonly Job<T>[]): Promise<Outcome<T>[]> {
    return this.queue.run(async () => {
      const outcomes = await this.runNow(jobs);
      jobs.forEach((j, i) => j.settle?.(outcomes[i]!));
      return outcomes;
    });
  }

  /**
   * Stops the idle threads; one still in a call goes when its call returns. A batch still waited
   * for ends paused without being collected: once closed, the library may have freed the reader.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    const waiting = [...this.waiting.values()];
    this.waiting.clear();
    this.threads?.close();
    for (const w of waiting) w.closed();
  }

  /** Tests: an idle reader thread dies as if it had crashed. */
  killIdleThreadForTest(): boolean {
    return this.threads?.killIdleThreadForTest() ?? false;
  }

  private async runNow<T>(jobs: readonly Job<T>[]): Promise<Outcome<T>[]> {
    const out = new Array<Outcome<T>>(jobs.length);
    let live: Live[] = [];
    const advance = (j: number, results: Results | undefined): void => {
      const job = jobs[j]!;
      let step: IteratorResult<OpBatch, T>;
      try {
        step = results === undefined ? job.program.next() : job.program.next(results);
      } catch (e) {
        out[j] = { kind: 'failed', error: { code: 'THREW', op: 'run', detail: e instanceof Error ? e.message : String(e) } };
        return;
      }
      if (step.done) {
        out[j] = { kind: 'done', value: step.value };
        this.succeeded(job.group);
      } else {
        live.push({ job: j, batch: step.value });
      }
    };
    const end = (l: Live, outcome: Outcome<T>): void => {
      out[l.job] = outcome;
      jobs[l.job]!.program.return(undefined as T);
    };
    jobs.forEach((job, j) => {
      if (this.blocked.get(job.group)?.batchId !== undefined) out[j] = { kind: 'blocked', fresh: false, error: SKIPPED };
      else advance(j, undefined);
    });
    let stalls = 0;
    while (live.length > 0) {
      const round = this.trustedFirst(live, jobs);
      live = [];
      const r = this.closed ? ({ kind: 'paused', error: CLOSED } as const) : await this.execute(round.map((l) => l.batch));
      if (r.kind === 'done') {
        round.forEach((l, k) => advance(l.job, r.results[k]));
        continue;
      }
      if (r.kind === 'paused') {
        for (const l of round) end(l, { kind: 'paused', error: r.error });
        if (!this.pausedSaid) for (const l of this.listeners) l.paused?.({ blockedThreads: this.blockedThreads, error: r.error });
        this.pausedSaid = true;
        continue;
      }
      this.pausedSaid = false;
      let at = 0;
      let blame: string | undefined;
      if (r.kind === 'stuck') {
        for (const l of round) {
          if (r.at >= at && r.at < at + l.batch.length) blame = jobs[l.job]!.group;
          at += l.batch.length;
        }
      }
      if (blame !== undefined && r.kind === 'stuck') this.blockedNow(blame, r.batchId);
      else if (r.kind === 'crashed') this.lost(true);
      stalls++;
      at = 0;
      round.forEach((l, k) => {
        const span = [at, at + l.batch.length] as const;
        at = span[1];
        const results = r.results[k]!;
        if (jobs[l.job]!.group === blame) {
          closeOpened(l.batch, results);
          end(l, { kind: 'blocked', fresh: true, error: { code: 'ETIMEDOUT', op: 'read', detail: `read blocked for more than ${this.timeoutMs} ms` } });
        } else if (span[1] <= r.at) {
          advance(l.job, results);
        } else if (stalls >= (this.opts.maxStallsPerRun ?? 3)) {
          closeOpened(l.batch, results);
          end(l, { kind: 'deferred' });
        } else {
          closeOpened(l.batch, results);
          live.push(l);
        }
      });
    }
    return out;
  }

  /**
   * Groups whose last read completed go first in a request: a group that may hang (it never
   * answered yet, or its blocked read only just returned) can then only delay the groups after
   * it, never one that is known to answer.
   */
  private trustedFirst<T>(live: readonly Live[], jobs: readonly Job<T>[]): Live[] {
    const trusted = live.filter((l) => this.trusted.has(jobs[l.job]!.group));
    if (trusted.length === live.length || trusted.length === 0) return [...live];
    return [...trusted, ...live.filter((l) => !this.trusted.has(jobs[l.job]!.group))];
  }

  private execute(batches: readonly OpBatch[]): Promise<Executed> | Executed {
    if (!this.threads) return { kind: 'done', results: batches.map(runDirect) };
    const enc = this.encode(batches);
    const sub = this.threads.submit(enc.request, enc.ops);
    if (!sub.ok) {
      const stats = this.threads.stats();
      const error: ReadError = sub.errno === ERRNO.EAGAIN
        ? { code: 'EAGAIN', op: 'submit', detail: `${stats.blocked} reader threads are blocked in the kernel; reads pause until one returns` }
        : { code: `errno ${sub.errno}`, op: 'submit', detail: 'the reader refused the request' };
      return { kind: 'paused', error };
    }
    return this.await(sub.id, batches, enc.ops, enc.outputBytes);
  }

  private await(id: number, batches: readonly OpBatch[], ops: number, outputBytes: number): Promise<Executed> {
    const threads = this.threads!;
    const timeout = this.timeoutMs;
    threads.hold(true);
    return new Promise<Executed>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const finish = (r: Executed): void => {
        if (timer) clearTimeout(timer);
        this.waiting.delete(id);
        if (this.waiting.size === 0) threads.hold(false);
        resolve(r);
      };
      const collect = (state: 'done' | 'crashed'): void => {
        const out = this.output(outputBytes);
        const n = threads.collect(id, out);
        if (n < 0) return finish({ kind: 'crashed', at: 0, results: views(out, batches, ops, this.lease) });
        const at = state === 'done' ? ops : firstNotRun(out, ops);
        finish(state === 'done' ? { kind: 'done', results: views(out, batches, ops, this.lease) } : { kind: 'crashed', at, results: views(out, batches, ops, this.lease) });
      };
      const check = (): void => {
        const p = threads.poll(id);
        if (p === undefined) return finish({ kind: 'crashed', at: 0, results: [] });
        if (p.state !== 'running') return collect(p.state);
        if (p.idleMs < timeout) {
          timer = setTimeout(check, Math.max(1, Math.ceil(timeout - p.idleMs)));
          return;
        }
        const out = this.output(outputBytes);
        const a = threads.abandon(id, out);
        if (a.kind === 'ended') {
          const at = a.state === 'done' ? ops : firstNotRun(out, ops);
          return finish(a.state === 'done' ? { kind: 'done', results: views(out, batches, ops, this.lease) } : { kind: 'crashed', at, results: views(out, batches, ops, this.lease) });
        }
        if (a.kind === 'error') return finish({ kind: 'crashed', at: 0, results: views(out, batches, ops, this.lease) });
        // Every op had finished and the thread was about to say so: nothing was stuck.
        if (a.stuckAt >= ops) return finish({ kind: 'done', results: views(out, batches, ops, this.lease) });
        finish({ kind: 'stuck', at: a.stuckAt, results: views(out, batches, ops, this.lease), batchId: id });
      };
      this.waiting.set(id, { event: collect, closed: () => finish({ kind: 'paused', error: CLOSED }) });
      timer = setTimeout(check, timeout);
    });
  }

  private output(bytes: number): Buffer {
    this.lease.generation++;
    // Grown to the largest request and kept: a tick makes requests of 1.5 to 430 KB (32 ports),
    // and a fresh zeroed buffer for each cost ~1 ms of page faults per tick. Only one far larger
    // than a tick's (a config load: 1 MB) is given up when a request wants much less.
    if (this.out === undefined || this.out.length < bytes || this.out.length > Math.max(4 * bytes, KEEP_OUTPUT_BYTES)) this.out = outputBuffer(bytes);
    return this.out.subarray(0, bytes);
  }

  /**
   * Requests of the same batches (by identity) reuse their encoding: the steady tick is no copy.
   * A few are kept, as the sampler's and the connections' requests take turns on one reader.
   * Only a request made wholly of batches sent before is kept: the one-off requests of a port's
   * attribute refresh (three or four a tick) pushed the tick's 90 KB request out every time.
   */
  private encode(batches: readonly OpBatch[]): Encoding {
    const same = (e: Encoding): boolean => e.batches.length === batches.length && e.batches.every((b, i) => b === batches[i]);
    const k = this.encodings.findIndex(same);
    if (k >= 0) {
      const kept = this.encodings.splice(k, 1)[0]!;
      this.encodings.unshift(kept);
      return kept;
    }
    const reused = batches.every((b) => b.reused);
    this.encoded++;
    const e = { batches, ...concat(batches) };
    if (!reused) return e;
    this.encodings.unshift(e);
    if (this.encodings.length > KEEP_ENCODINGS) this.encodings.pop();
    return e;
  }

  private event(event: ReaderEvent, id: number): void {
    if (event === 'done' || event === 'crashed') {
      this.waiting.get(id)?.event(event);
    } else if (event === 'returned') {
      const group = this.abandoned.get(id);
      this.abandoned.delete(id);
      const b = group === undefined ? undefined : this.blocked.get(group);
      if (b && b.batchId === id) b.batchId = undefined;
    } else {
      this.lost(false);
    }
  }

  private blockedNow(group: string, batchId: number): void {
    this.timeouts++;
    this.trusted.delete(group);
    this.abandoned.set(batchId, group);
    this.blocked.set(group, { batchId });
    const info = { timeoutMs: this.timeoutMs, blockedThreads: this.blockedThreads };
    for (const l of this.listeners) l.blocked?.(group, info);
  }

  private succeeded(group: string): void {
    this.trusted.add(group);
    if (!this.blocked.has(group)) return;
    this.blocked.delete(group);
    for (const l of this.listeners) l.recovered?.(group);
  }

  private lost(running: boolean): void {
    this.threadsLost++;
    for (const l of this.listeners) l.threadLost?.({ running });
  }
}

/** An output buffer this large is kept whatever the request (32 ports' largest tick request: 430 KB). */
const KEEP_OUTPUT_BYTES = 512 * 1024;

const SKIPPED: ReadError = { code: 'ETIMEDOUT', op: 'read', detail: 'skipped while an earlier read of this port is still blocked' };
const CLOSED: ReadError = { code: 'EAGAIN', op: 'submit', detail: 'the reader is closed' };

/** One Results view per batch of a concatenated request (ops that never ran say NOT_RUN). */
function views(out: Buffer, batches: readonly OpBatch[], ops: number, lease: { readonly generation: number }): Results[] {
  const all = new Results(out, ops, 0, lease);
  let base = 0;
  return batches.map((b) => {
    const v = all.slice(base);
    base += b.length;
    return v;
  });
}

function firstNotRun(out: Buffer, ops: number): number {
  const r = new Results(out, ops);
  for (let i = 0; i < ops; i++) if (r.status(i) === NOT_RUN) return i;
  return ops;
}

/** Descriptors an abandoned program's open ops returned are closed: nobody else knows them. */
function closeOpened(batch: OpBatch, results: Results): void {
  batch.ops.forEach((op, i) => {
    if (op.kind !== 'open' || results.status(i) < 0) return;
    try {
      closeSync(results.status(i));
    } catch {
      // already closed
    }
  });
}
