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
