/**
 * The command examples of the README and docs/ are what the commands print: every ```text block
 * that starts with `$ npx mxl-fabric-exporter ...` is run from the checkout (the files it names
 * are shipped: config/, test/fixtures/) and its output compared line by line. The README's tour
 * scrapes (`$ curl -s localhost:9842/metrics | grep -E '...'`) are checked against a daemon on
 * the config and fixture tree the tour's `serve` line names, after two sampling intervals. A
 * newcomer who runs them sees the same numbers the docs show.
 */
import { describe, it, expect, afterAll } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { Writable } from 'node:stream';
import { join, relative } from 'node:path';
import { main } from '../../src/cli/commands.js';
import { Daemon } from '../../src/exporter/daemon.js';
import { createLogger } from '../../src/log.js';
import { ROOT } from '../deploy/tools.js';

const DOCS = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const TEXT = DOCS.map((file) => ({ file, text: readFileSync(join(ROOT, file), 'utf8') }));
const EXAMPLES = TEXT.flatMap(({ file, text }) =>
  [...text.matchAll(/```text\n\$ npx mxl-fabric-exporter ([^\n]*)\n([\s\S]*?)```/g)].map((m) => ({ file, command: m[1]!, output: m[2]! })));
const README = TEXT[0]!.text;
const SCRAPES = [...README.matchAll(/```text\n\$ curl -s localhost:9842\/metrics \| grep -E '([^']+)'\n([\s\S]*?)```/g)]
  .map((m) => ({ pattern: m[1]!, output: m[2]! }));
const SERVE = /^npx mxl-fabric-exporter serve --config\.file (\S+) --path\.sysfs (\S+)$/m.exec(README);

/** `config/flows/*.json` as a shell expands it (sorted); other words as they are. */
function expand(word: string): string[] {
  const star = /^(.*)\/\*(\.\w+)$/.exec(word);
  if (!star) return [word];
  return readdirSync(join(ROOT, star[1]!)).filter((f) => f.endsWith(star[2]!)).sort().map((f) => relative(ROOT, join(ROOT, star[1]!, f)));
}

describe('command examples of the README and docs/', () => {
  it('there are the calc, devices and check examples, and the README tour has calc and check', () => {
    expect(EXAMPLES.map((e) => e.command.split(' ')[0])).toEqual(expect.arrayContaining(['calc', 'devices', 'check']));
    expect(EXAMPLES.filter((e) => e.command.startsWith('check')).length).toBeGreaterThanOrEqual(2);
    expect(EXAMPLES.filter((e) => e.file === 'README.md').map((e) => e.command.split(' ')[0])).toEqual(['calc', 'check']);
  });

  for (const { file, command, output } of EXAMPLES) {
    it(`${file}: $ npx mxl-fabric-exporter ${command}`, async () => {
      let out = '';
      const argv = command.split(/\s+/).flatMap(expand);
      const cwd = process.cwd();
      process.chdir(ROOT);
      try {
        await main(argv, { stdout: (t) => void (out += t), stderr: () => undefined });
      } finally {
        process.chdir(cwd);
      }
      // JSON is written compactly in the docs: the same values.
      if (/^[[{]/.test(output)) expect(JSON.parse(out)).toEqual(JSON.parse(output));
      else expect(out).toBe(output);
    });
  }
});

describe("the README tour's scrapes", () => {
  let daemon: Daemon | undefined;
  afterAll(async () => daemon?.stop());

  it('name a serve command and two scrapes', () => {
    expect(SERVE, 'the tour has `npx mxl-fabric-exporter serve --config.file F --path.sysfs D`').not.toBeNull();
    expect(SCRAPES).toHaveLength(2);
  });

  it('print what the daemon exports after two sampling intervals', async () => {
    let now = 1_000_000_000_000n;
    const sink = new Writable({ write: (_c, _e, cb) => cb() });
    daemon = new Daemon({
      configFile: join(ROOT, SERVE![1]!), sysfsRoot: join(ROOT, SERVE![2]!), listenAddress: '127.0.0.1:0', telemetryPath: '/metrics',
      log: createLogger('error', 'logfmt', sink), manualClock: () => now,
    });
    await daemon.start();
    for (let i = 0; i < 2; i++) {
      now += 1_000_000_000n;
      await daemon.sampleNow();
    }
    await daemon.settled();
    const text = await (await fetch(`http://127.0.0.1:${daemon.address().port}/metrics`)).text();
    for (const { pattern, output } of SCRAPES) {
      const re = new RegExp(pattern);
      expect(text.split('\n').filter((l) => re.test(l)).map((l) => `${l}\n`).join(''), pattern).toBe(output);
    }
  });
});
