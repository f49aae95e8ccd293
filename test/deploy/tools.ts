/**
 * External tools for the deploy/ tests. A missing tool skips its tests on a developer's machine
 * and FAILS them in CI (CI set), so that a CI image without promtool or systemd-analyze cannot
 * pass by skipping.
 */
import { accessSync, constants } from 'node:fs';
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

export interface Tool {
  readonly name: string;
  readonly path: string | undefined;
  /** True when tests needing the tool should be skipped (missing, and not in CI). */
  readonly skip: boolean;
  /** The tool's path; throws (failing the test) when it is missing. */
  require(): string;
}

export function tool(name: string, debianPackage: string): Tool {
  const path = which(name);
  return {
    name,
    path,
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
