/**
 * External tools for the deploy/ tests. A missing tool skips its tests on a developer's machine
 * and FAILS them in CI (CI set), so that a CI image without promtool or systemd-analyze cannot
 * pass by skipping.
 */
import { accessSync, constants } from 'node:fs';
import { describe, it, type RunnerTask, type TaskMeta } from 'vitest';
import { getCurrentSuite } from 'vitest/suite';
import { delimiter, join } from 'node:path';

export const IN_CI = Boolean(process.env.CI) && process.env.CI !== 'false' && process.env.CI !== '0';

export const ROOT = join(__dirname, '..', '..');

export function which(cmd: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const p = join(dir, cmd);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** Something tests need that a machine may lack: `skip` when it does, `why` what it is. */
export interface Need {
  readonly skip: boolean;
  /** What is lacking, as the summary line says it: `promtool (Debian package prometheus)`. */
  readonly why: string;
}

export interface Tool extends Need {
  readonly name: string;
  readonly path: string | undefined;
  /** True when tests needing the tool should be skipped (missing, and not in CI). */
  readonly skip: boolean;
  /** The tool's path; throws (failing the test) when it is missing. */
  require(): string;
}

/** A need that is not a tool on PATH (root, a kernel feature): skipped when `lacking`. */
export const need = (lacking: boolean, why: string): Need => ({ skip: lacking, why });

/** The task just collected in the current suite: a test, or a describe()'s suite. */
function lastTask(): { meta: TaskMeta } | undefined {
  const t = getCurrentSuite().tasks.at(-1) as (RunnerTask | { type: 'collector'; suite: RunnerTask }) | undefined;
  return t === undefined ? undefined : t.type === 'collector' ? t.suite : t;
}

/**
 * `it` and `describe` that are skipped while one of `needs` is lacking, with what is lacking on
 * the task (meta.skipReason), which test/summary-reporter.ts counts the skips by:
 * `needs(promtool).it('...', () => ...)`, `needs(prometheus, alertmanager).describe(...)`.
 */
export function needs(...all: Need[]): { it: typeof it; describe: typeof describe } {
  const why = all.filter((n) => n.skip).map((n) => n.why).join(' and ');
  const mark = (): void => {
    const t = why ? lastTask() : undefined;
    if (t) t.meta.skipReason = why;
  };
  const wrap = <F extends (...a: never[]) => unknown>(api: { skipIf(c: boolean): F }): F =>
    ((...args: Parameters<F>) => {
      api.skipIf(why !== '')(...args);
      mark();
    }) as unknown as F;
  return { it: wrap(it) as unknown as typeof it, describe: wrap(describe) as unknown as typeof describe };
}

export function tool(name: string, debianPackage: string): Tool {
  const path = which(name);
  return {
    name,
    path,
    why: `${name} (Debian package ${debianPackage})`,
    skip: path === undefined && !IN_CI,
    require: () => {
      if (path === undefined) throw new Error(`${name} is not installed (Debian package ${debianPackage}; .ci/run installs it)`);
      return path;
    },
  };
}

export { freePort } from '../lib/free-port.mjs';

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Polls `fn` every 250 ms until it gives a value (an exception counts as not yet), for at most
 * `timeoutMs`; then fails naming `what`, the last error and `logs()`.
 */
export async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs: number, logs: () => string): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    await sleep(250);
  }
  throw new Error(`timed out waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}\n${logs()}`);
}
