/** Prints one plain closing line, `tests: N passed, N failed, N skipped`, after vitest's own summary. */
import type { Reporter } from 'vitest/reporters';
import type { RunnerTask } from 'vitest';

function count(tasks: readonly RunnerTask[], acc = { passed: 0, failed: 0, skipped: 0 }): typeof acc {
  for (const t of tasks) {
    if (t.type === 'test') {
      const s = t.result?.state;
      if (s === 'pass') acc.passed++;
      else if (s === 'fail') acc.failed++;
      else acc.skipped++;
    } else {
      if (t.result?.state === 'fail' && t.tasks.length === 0) acc.failed++;
      count(t.tasks, acc);
    }
  }
  return acc;
}

export default class SummaryReporter implements Reporter {
  onFinished(files: RunnerTask[] = []): void {
    const { passed, failed, skipped } = count(files);
    process.stdout.write(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
