/**
 * A test whose tool is missing is skipped (needs(tool).it / .describe, test/deploy/tools.ts: the
 * run says so, and why) or, in CI, fails; it never returns early from its body, which the run
 * counts as a pass.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';

const TEST = join(__dirname, '..');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    return e.isDirectory() ? sources(p) : /\.(ts|mjs)$/.test(e.name) ? [p] : [];
  });
}

describe('tests that need a tool', () => {
  it('skip with needs() instead of returning as a pass when it is missing (issue 33)', () => {
    const early = sources(TEST).flatMap((f) =>
      readFileSync(f, 'utf8').split('\n').flatMap((line, i) => (/if \(\s*\w+\.skip\s*\)\s*return\b/.test(line) ? [`${relative(TEST, f)}:${i + 1}: ${line.trim()}`] : [])));
    expect(early).toEqual([]);
  });
});
