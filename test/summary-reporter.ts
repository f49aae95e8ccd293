/**
 * Prints one plain closing line after vitest's own summary,
 * `tests: N passed, N failed, N skipped (K without promtool (Debian package prometheus); ...)`:
 * each skip counted under the reason its task (or a suite above it) carries in meta.skipReason,
 * which test/deploy/tools.ts needs() sets, and a skip without one counted as such.
 */
import type { Reporter } from 'vitest/reporters';
import type { RunnerTask } from 'vitest';

declare module 'vitest' {
  interface TaskMeta {
    /** What the test lacks here (a tool, root): why it was skipped. */
    skipReason?: string;
  }
}

interface Counts { passed: number; failed: number; skipped: Map<string | undefined, number> }

function count(tasks: readonly RunnerTask[], acc: Counts, reason?: string): Counts {
  for (const t of tasks) {
    const why = t.meta?.skipReason ?? reason;
    if (t.type === 'test') {
      const s = t.result?.state;
      if (s === 'pass') acc.passed++;
      else if (s === 'fail') acc.failed++;
      else acc.skipped.set(why, (acc.skipped.get(why) ?? 0) + 1);
    } else {
      if (t.result?.state === 'fail' && t.tasks.length === 0) acc.failed++;
      count(t.tasks, acc, why);
    }
  }
  return acc;
}

/** The closing line for these files' tasks. */
export function summaryLine(files: readonly RunnerTask[]): string {
  const { passed, failed, skipped } = count(files, { passed: 0, failed: 0, skipped: new Map() });
  const total = [...skipped.values()].reduce((a, b) => a + b, 0);
  const reasons = [...skipped].sort(([a], [b]) => (a === undefined ? 1 : b === undefined ? -1 : 0))
    .map(([why, n]) => (why === undefined ? `${n} without a reason` : `${n} without ${why}`));
  return `tests: ${passed} passed, ${failed} failed, ${total} skipped${reasons.length ? ` (${reasons.join('; ')})` : ''}`;
}

export default class SummaryReporter implements Reporter {
  onFinished(files: RunnerTask[] = []): void {
    process.stdout.write(`\n${summaryLine(files)}\n`);
  }
}
