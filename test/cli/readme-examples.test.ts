/**
 * The README's command examples are what the commands print: every ```text block that starts
 * with `$ npx mxl-fabric-exporter ...` is run from the checkout (the files it names are shipped:
 * config/, test/fixtures/) and its output compared line by line. A newcomer who runs them sees
 * the same numbers the README shows.
 */
import { describe, it, expect } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { main } from '../../src/cli/commands.js';
import { ROOT } from '../deploy/tools.js';

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
const EXAMPLES = [...README.matchAll(/```text\n\$ npx mxl-fabric-exporter ([^\n]*)\n([\s\S]*?)```/g)].map((m) => ({ command: m[1]!, output: m[2]! }));

/** `config/flows/*.json` as a shell expands it (sorted); other words as they are. */
function expand(word: string): string[] {
  const star = /^(.*)\/\*(\.\w+)$/.exec(word);
  if (!star) return [word];
  return readdirSync(join(ROOT, star[1]!)).filter((f) => f.endsWith(star[2]!)).sort().map((f) => relative(ROOT, join(ROOT, star[1]!, f)));
}

describe('README command examples', () => {
  it('there are the calc, devices and both check examples', () => {
    expect(EXAMPLES.map((e) => e.command.split(' ')[0])).toEqual(expect.arrayContaining(['calc', 'devices', 'check']));
    expect(EXAMPLES.filter((e) => e.command.startsWith('check'))).toHaveLength(2);
  });

  for (const { command, output } of EXAMPLES) {
    it(`$ npx mxl-fabric-exporter ${command}`, async () => {
      let out = '';
      const argv = command.split(/\s+/).flatMap(expand);
      const cwd = process.cwd();
      process.chdir(ROOT);
      try {
        await main(argv, { stdout: (t) => void (out += t), stderr: () => undefined });
      } finally {
        process.chdir(cwd);
      }
      // JSON is written compactly in the README: the same values.
      if (/^[[{]/.test(output)) expect(JSON.parse(out)).toEqual(JSON.parse(output));
      else expect(out).toBe(output);
    });
  }
});
