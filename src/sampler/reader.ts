/**
 * Bounded counter reads. The descriptor reads of a tick run in a worker thread while the
 * sampler waits for them with Atomics.wait and a timeout, so a read(2) that never returns (a
 * hung driver behind a sysfs attribute ignores O_NONBLOCK) costs one timeout instead of the
 * process. tick() stays synchronous: the wait is bounded, and the common path is one message
 * each way plus the reads themselves.
 *
 * When the worker stops making progress for `readTimeoutMs`, the job it is stuck in names the
 * group (the port) to blame: that group's jobs are reported as timed out, the worker is
 * abandoned (a thread blocked in read(2) cannot be interrupted; it is terminated once the read
 * returns) and the remaining jobs run again on a fresh worker within the same tick. The stuck
 * group is skipped on later ticks with exponential backoff, and retried at once when its
 * abandoned read comes back. Few threads can ever be stuck at a time: no retry starts while
 * `maxStuckWorkers` are still blocked.
 */
import { MessageChannel, type MessagePort, Worker, receiveMessageOnPort } from 'node:worker_threads';

import type { ReadPlan } from '../sources/types.js';

export type { ReadPlan };

export interface ReadJob {
  /** Jobs of one group (a port) are blamed and skipped together. */
  readonly group: string;
  readonly plan: ReadPlan;
}

/** Text read, or the error for that counter (`EISDIR: read`, `ENOENT: open`...). */
export type RawValue = string | { readonly error: string };

export type ReadOutcome =
  | { readonly kind: 'done'; readonly gone?: string; readonly values: readonly RawValue[] }
  /** Blocked this tick (`fresh`) or skipped while the group backs off after a blocked read. */
  | { readonly kind: 'timeout'; readonly fresh: boolean; readonly error: string }
  /** Not read this tick: the tick's rounds went to other groups' timeouts. */
  | { readonly kind: 'deferred' }
  /** No worker could be started: the caller reads on its own thread. */
  | { readonly kind: 'unavailable' };

export interface BoundedReaderOptions {
  /** A worker that completes no read for this long is stuck. */
  readonly readTimeoutMs: number;
  /** Worker start-up allowance (first tick, and after a replacement). */
  readonly bootTimeoutMs?: number;
  /** Replacement workers per tick; groups left over are deferred to the next tick. */
  readonly maxRoundsPerTick?: number;
  /** Abandoned workers still blocked in read(2) above which no stuck group is retried. */
  readonly maxStuckWorkers?: number;
  /** Longest backoff, in runs (ticks), before a group whose read is still blocked is tried again (16, 32, ... up to this). */
  readonly maxBackoffRuns?: number;
  readonly onBlocked?: (group: string, info: { readonly timeoutMs: number; readonly stuckWorkers: number }) => void;
  readonly onRecovered?: (group: string) => void;
}

// Control words shared with the worker (Int32Array over a SharedArrayBuffer).
const READY = 0;
const DONE = 1;
const JOB = 2;
const PROGRESS = 3;
const ABORT = 4;
const EXITED = 5;
const CTRL_WORDS = 6;

/** Read at most this much per counter; FileCounterSet reads the same (a u64 and "N/A (no PMA)" fit). */
const READ_BYTES = 64;

/**
 * The worker is plain JavaScript evaluated from a string: it must run from the TypeScript
 * sources under vitest and from dist/ alike, and needs nothing but node:fs.
 */
const WORKER_SOURCE = `
'use strict';
const { workerData } = require('node:worker_threads');
const fs = require('node:fs');
const { port, ctrl } = workerData;
const c = new Int32Array(ctrl);
const buf = Buffer.alloc(${READ_BYTES});
const code = (e) => (e && typeof e.code === 'string' ? e.code : String(e && e.message || e));
function aborted() {
  if (Atomics.load(c, ${ABORT}) === 0) return false;
  Atomics.store(c, ${EXITED}, 1);
  Atomics.notify(c, ${DONE});
  return true;
}
function readJob(plan) {
  const w = plan.watch;
  if (w) {
    let st;
    try { st = fs.statSync(w.dir, { throwIfNoEntry: false }); } catch { st = undefined; }
    if (!st || !st.isDirectory()) return { gone: 'ENOENT: ' + w.dir + ' vanished' };
    if (w.dev !== undefined && (st.dev !== w.dev || st.ino !== w.ino)) return { gone: 'ESTALE: ' + w.dir + ' was re-created; reopen' };
  }
  const values = new Array(plan.fds.length);
  for (let i = 0; i < plan.fds.length; i++) {
    if (aborted()) return undefined;
    const fd = plan.fds[i];
    if (typeof fd === 'string') { values[i] = { error: fd }; continue; }
    try {
      const n = fs.readSync(fd, buf, 0, ${READ_BYTES}, plan.position);
      values[i] = buf.toString('utf8', 0, n);
    } catch (e) {
      values[i] = { error: code(e) + ': read' };
    }
    Atomics.add(c, ${PROGRESS}, 1);
  }
  return { values };
}
port.on('message', (msg) => {
  const out = [];
  for (let j = 0; j < msg.jobs.length; j++) {
    Atomics.store(c, ${JOB}, j);
    if (aborted()) return;
    const r = readJob(msg.jobs[j]);
    if (r === undefined) return;
    out.push(r);
    Atomics.add(c, ${PROGRESS}, 1);
  }
  port.postMessage({ seq: msg.seq, out });
  Atomics.store(c, ${DONE}, msg.seq);
  Atomics.notify(c, ${DONE});
});
Atomics.store(c, ${READY}, 1);
Atomics.notify(c, ${READY});
`;

interface WorkerHandle {
  readonly worker: Worker;
  readonly port: MessagePort;
  readonly ctrl: Int32Array;
  seq: number;
  ready: boolean;
  failed: boolean;
}

interface Backoff {
  failures: number;
  retryAtRun: number;
  /** The abandoned worker still blocked on this group's read, if any. */
  stuck: WorkerHandle | undefined;
}

type RunResult =
  | { readonly kind: 'done'; readonly out: readonly { gone?: string; values?: RawValue[] }[] }
  | { readonly kind: 'stuck'; readonly at: number; readonly handle: WorkerHandle }
  /** The worker died (not a read's fault): run the same jobs again on a new one. */
  | { readonly kind: 'crashed' }
  | { readonly kind: 'unavailable' };

const nowMs = (): number => performance.now();

export class BoundedReader {
  private current: WorkerHandle | undefined;
  private readonly abandoned = new Set<WorkerHandle>();
  private readonly backoff = new Map<string, Backoff>();
  private runs = 0;
  private closed = false;
  /** Reads that blocked past the timeout, since start. */
  timeouts = 0;
  /** Workers started, replacements included. */
  workersStarted = 0;

  constructor(private readonly opts: BoundedReaderOptions) {}

  /** Abandoned workers whose read(2) has not returned yet. */
  get stuckWorkers(): number {
    this.reap();
    return this.abandoned.size;
  }

  /** Groups currently skipped or backing off after a blocked read. */
  blockedGroups(): string[] {
    return [...this.backoff.keys()];
  }

  /** Forget a group (its port went away): a port that comes back starts afresh. */
  forget(group: string): void {
    this.backoff.delete(group);
  }

  run(jobs: readonly ReadJob[]): ReadOutcome[] {
    this.runs++;
    this.reap();
    const out: ReadOutcome[] = new Array<ReadOutcome>(jobs.length);
    const skip = new Map<string, boolean>();
    let pending: number[] = [];
    jobs.forEach((job, i) => {
      let s = skip.get(job.group);
      if (s === undefined) skip.set(job.group, (s = this.skipping(job.group)));
      if (s) out[i] = { kind: 'timeout', fresh: false, error: 'ETIMEDOUT: skipped since a read of this port blocked' };
      else pending.push(i);
    });
    const maxRounds = this.opts.maxRoundsPerTick ?? 3;
    for (let round = 0; pending.length > 0; round++) {
      if (round >= maxRounds) {
        for (const i of pending) out[i] = { kind: 'deferred' };
        break;
      }
      const r = this.runOnce(pending.map((i) => jobs[i]!.plan));
      if (r.kind === 'unavailable') {
        for (const i of pending) out[i] = { kind: 'unavailable' };
        break;
      }
      if (r.kind === 'crashed') continue;
      if (r.kind === 'done') {
        r.out.forEach((res, k) => {
          const i = pending[k]!;
          out[i] = res.gone !== undefined ? { kind: 'done', gone: res.gone, values: [] } : { kind: 'done', values: res.values ?? [] };
          this.succeeded(jobs[i]!.group);
        });
        break;
      }
      const group = jobs[pending[r.at]!]!.group;
      this.blocked(group, r.handle);
      const error = `ETIMEDOUT: read blocked for more than ${this.opts.readTimeoutMs} ms`;
      for (const i of pending) if (jobs[i]!.group === group) out[i] = { kind: 'timeout', fresh: true, error };
      pending = pending.filter((i) => jobs[i]!.group !== group);
    }
    return out;
  }

  /** Terminates the workers. One still blocked in read(2) only goes when its read returns. */
  close(): void {
    this.closed = true;
    const all = [...this.abandoned, ...(this.current ? [this.current] : [])];
    this.current = undefined;
    this.abandoned.clear();
    for (const h of all) {
      Atomics.store(h.ctrl, ABORT, 1);
      h.port.close();
      void h.worker.terminate().catch(() => undefined);
    }
  }

  /**
   * A group whose abandoned read came back is tried again at once. One whose read is still
   * blocked would most likely block a second thread on the same hang, so it is only retried
   * after a long backoff, and never while `maxStuckWorkers` threads are blocked.
   */
  private skipping(group: string): boolean {
    const b = this.backoff.get(group);
    if (!b) return false;
    if (b.stuck === undefined) return false;
    if (this.runs < b.retryAtRun) return true;
    return this.abandoned.size >= (this.opts.maxStuckWorkers ?? 4);
  }

  private succeeded(group: string): void {
    const b = this.backoff.get(group);
    if (!b) return;
    this.backoff.delete(group);
    this.opts.onRecovered?.(group);
  }

  private blocked(group: string, handle: WorkerHandle): void {
    this.timeouts++;
    Atomics.store(handle.ctrl, ABORT, 1);
    this.abandoned.add(handle);
    if (this.current === handle) this.current = undefined;
    const b = this.backoff.get(group) ?? { failures: 0, retryAtRun: 0, stuck: undefined };
    b.failures++;
    b.retryAtRun = this.runs + Math.min(8 * 2 ** b.failures, this.opts.maxBackoffRuns ?? 256);
    b.stuck = handle;
    this.backoff.set(group, b);
    this.opts.onBlocked?.(group, { timeoutMs: this.opts.readTimeoutMs, stuckWorkers: this.abandoned.size });
  }

  /** Terminates abandoned workers whose read has returned (they stop at the abort flag). */
  private reap(): void {
    for (const h of this.abandoned) {
      if (Atomics.load(h.ctrl, EXITED) !== 1 && Atomics.load(h.ctrl, DONE) !== h.seq && !h.failed) continue;
      this.abandoned.delete(h);
      h.port.close();
      void h.worker.terminate().catch(() => undefined);
      for (const b of this.backoff.values()) if (b.stuck === h) b.stuck = undefined;
    }
  }

  private runOnce(plans: readonly ReadPlan[]): RunResult {
    const h = this.ready();
    if (!h) return { kind: 'unavailable' };
    const seq = ++h.seq;
    h.port.postMessage({ seq, jobs: plans });
    const timeout = this.opts.readTimeoutMs;
    const slice = Math.max(5, Math.floor(timeout / 5));
    let progress = Atomics.load(h.ctrl, PROGRESS);
    let progressAt = nowMs();
    for (;;) {
      const done = Atomics.load(h.ctrl, DONE);
      if (done === seq) break;
      if (h.failed) {
        this.retire(h);
        if (this.current === h) this.current = undefined;
        return { kind: 'crashed' };
      }
      const idle = nowMs() - progressAt;
      if (idle >= timeout) return { kind: 'stuck', at: Math.min(Atomics.load(h.ctrl, JOB), plans.length - 1), handle: h };
      Atomics.wait(h.ctrl, DONE, done, Math.min(slice, timeout - idle));
      const p = Atomics.load(h.ctrl, PROGRESS);
      if (p !== progress) {
        progress = p;
        progressAt = nowMs();
      }
    }
    const msg = this.receive(h, seq);
    if (!msg) {
      this.retire(h);
      if (this.current === h) this.current = undefined;
      return { kind: 'crashed' };
    }
    return { kind: 'done', out: msg.out };
  }

  /** The worker posted before raising DONE, so its message is queued; take it synchronously. */
  private receive(h: WorkerHandle, seq: number): { out: { gone?: string; values?: RawValue[] }[] } | undefined {
    for (let spins = 0; spins < 100; spins++) {
      const m = receiveMessageOnPort(h.port);
      if (m === undefined) {
        Atomics.wait(h.ctrl, EXITED, 0, 1);
        continue;
      }
      const msg = m.message as { seq: number; out: { gone?: string; values?: RawValue[] }[] };
      if (msg.seq === seq) return msg;
    }
    return undefined;
  }

  /** The current worker, started (and waited for) when there is none. */
  private ready(): WorkerHandle | undefined {
    if (this.closed) return undefined;
    if (this.current?.failed) {
      this.retire(this.current);
      this.current = undefined;
    }
    const h = this.current ?? (this.current = this.spawn());
    if (!h) return undefined;
    if (h.ready) return h;
    const deadline = nowMs() + (this.opts.bootTimeoutMs ?? 10_000);
    while (Atomics.load(h.ctrl, READY) !== 1 && !h.failed) {
      const left = deadline - nowMs();
      if (left <= 0) break;
      Atomics.wait(h.ctrl, READY, 0, left);
    }
    if (Atomics.load(h.ctrl, READY) !== 1) {
      this.retire(h);
      this.current = undefined;
      return undefined;
    }
    h.ready = true;
    return h;
  }

  private spawn(): WorkerHandle | undefined {
    const ctrl = new Int32Array(new SharedArrayBuffer(CTRL_WORDS * Int32Array.BYTES_PER_ELEMENT));
    const { port1, port2 } = new MessageChannel();
    let worker: Worker;
    try {
      worker = new Worker(WORKER_SOURCE, {
        eval: true,
        workerData: { port: port2, ctrl: ctrl.buffer },
        transferList: [port2],
        name: 'mxl-fabric-exporter counter reader',
        // Small heaps: it holds one tick's texts at a time.
        resourceLimits: { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: 8 },
      });
    } catch {
      port1.close();
      return undefined;
    }
    this.workersStarted++;
    const h: WorkerHandle = { worker, port: port1, ctrl, seq: 0, ready: false, failed: false };
    worker.on('error', () => void (h.failed = true));
    worker.on('exit', () => void (h.failed = true));
    worker.unref();
    port1.unref();
    return h;
  }

  private retire(h: WorkerHandle): void {
    Atomics.store(h.ctrl, ABORT, 1);
    h.port.close();
    void h.worker.terminate().catch(() => undefined);
  }
}
