/**
 * The closing line of `npm test` says why each skipped test was skipped: the tool it lacks, from
 * the reason its task carries (test/deploy/tools.ts needs()), counted per reason (issue 34: "12
 * skipped" with no reason). A skip without a reason is counted as such, so one cannot hide.
 */
import { describe, it, expect } from 'vitest';
import type { RunnerTask } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { summaryLine } from '../summary-reporter.js';
import { ROOT } from '../deploy/tools.js';

type Fake = { type: 'test' | 'suite'; mode?: string; result?: { state: string }; meta: { skipReason?: string }; tasks?: Fake[] };
const test = (state: string | undefined, skipReason?: string): Fake => ({ type: 'test', ...(state ? { result: { state } } : { mode: 'skip' }), meta: skipReason ? { skipReason } : {} });
const suite = (tasks: Fake[], skipReason?: string): Fake => ({ type: 'suite', tasks, meta: skipReason ? { skipReason } : {} });
const line = (files: Fake[]): string => summaryLine(files as unknown as RunnerTask[]);

describe('the summary line', () => {
  it('counts skips per reason, a suite\'s reason covering its tests', () => {
    const files = [
      suite([test('pass'), test(undefined, 'promtool (Debian package prometheus)'), test(undefined, 'promtool (Debian package prometheus)')]),
      suite([suite([test(undefined), test(undefined)], 'chromium (Debian package chromium)'), test('fail')]),
    ];
    expect(line(files)).toBe('tests: 1 passed, 1 failed, 4 skipped (2 without promtool (Debian package prometheus); 2 without chromium (Debian package chromium))');
  });

  it('says when a skip gave no reason, and says nothing more when nothing was skipped', () => {
    expect(line([suite([test('pass'), test(undefined)])])).toBe('tests: 1 passed, 0 failed, 1 skipped (1 without a reason)');
    expect(line([suite([test('pass')])])).toBe('tests: 1 passed, 0 failed, 0 skipped');
  });
});

describe('needs()', () => {
  it('puts what is lacking on the skipped test and suite, and the closing line says it (a vitest run of its own)', () => {
    const dir = mkdtempSync(join(ROOT, 'test', 'reporter', '.needs-'));
    try {
      writeFileSync(join(dir, 'needs.test.ts'), [
        `import { it } from 'vitest';`,
        `import { needs, tool } from ${JSON.stringify(join(ROOT, 'test', 'deploy', 'tools.ts'))};`,
        `const missing = { ...tool('no-such-tool-mfe', 'no-such-package'), skip: true };`,
        `needs(missing).it('lacks it', () => { throw new Error('never runs'); });`,
        `needs(missing).describe('a suite that lacks it', () => { it('is skipped with it', () => { throw new Error('never runs'); }); });`,
        `needs(tool('node', 'nodejs')).it('has node', () => undefined);`,
        '',
      ].join('\n'));
      writeFileSync(join(dir, 'vitest.config.mjs'), `export default { test: { include: ['needs.test.ts'], reporters: [${JSON.stringify(join(ROOT, 'test', 'summary-reporter.ts'))}] } };\n`);
      const r = spawnSync(process.execPath, [join(ROOT, 'node_modules', 'vitest', 'vitest.mjs'), 'run', '--root', dir, '--config', join(dir, 'vitest.config.mjs')], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, CI: '' } });
      expect(r.stdout + r.stderr).toContain('tests: 1 passed, 0 failed, 2 skipped (2 without no-such-tool-mfe (Debian package no-such-package))');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
