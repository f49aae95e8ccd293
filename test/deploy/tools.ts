/**
 * External tools for the deploy/ tests. A missing tool skips its tests on a developer's machine
 * and FAILS them in CI (CI set), so that a CI image without promtool or systemd-analyze cannot
 * pass by skipping.
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { createServer } from 'node:net';

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

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}
