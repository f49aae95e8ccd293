/** Tasks run one after another: each starts once the one before it has settled, failed or not. */
export class SerialQueue {
  private tail: Promise<void> = Promise.resolve();
  private pending = 0;

  /** Runs `task` after every task queued before it; its own result (or failure) comes back. */
  run<T>(task: () => T | Promise<T>): Promise<T> {
    this.pending++;
    const result = this.tail.then(task);
    this.tail = result.then(
      () => undefined,
      () => undefined,
    ).finally(() => void this.pending--);
    return result;
  }

  /** Resolves once the tasks queued so far have run; never rejects. */
  idle(): Promise<void> {
    return this.tail;
  }

  /** Whether a task is running or queued. */
  get busy(): boolean {
    return this.pending > 0;
  }
}

/**
 * A task run once at a time, on request: asked for while it runs, it runs once more after that
 * run (every request made meanwhile shares that one run), so each request is answered by a run
 * that started after it was made.
 */
export class CoalescingRun<T> {
  private running: Promise<T> | undefined;
  private queued: Promise<T> | undefined;

  constructor(private readonly task: () => Promise<T>) {}

  request(): Promise<T> {
    if (this.queued !== undefined) return this.queued;
    if (this.running === undefined) return this.start();
    // After the running one however it ends: a failed run must not leave this slot set.
    const next = (): Promise<T> => {
      this.queued = undefined;
      return this.start();
    };
    const queued = this.running.then(next, next);
    this.queued = queued;
    return queued;
  }

  private start(): Promise<T> {
    const run: Promise<T> = this.task().finally(() => {
      if (this.running === run) this.running = undefined;
    });
    this.running = run;
    return run;
  }
}
