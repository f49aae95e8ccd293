/**
 * docs/metrics.md's metric table is the contract users read: every family the exporter registers
 * (its own `mxl_fabric_*`, whatever the sources give) has a row there, and every row names a
 * family the exporter registers. A family prints its HELP and TYPE lines in every scrape, even
 * with no samples, so one scrape of a daemon on an empty host lists them all.
 */
import { describe, expect, it, afterEach } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startDaemon, stopDaemons, type Running } from '../exporter/harness.js';
import { section as sectionOf } from './markdown.js';

const METRICS_DOC = join(__dirname, '../../docs/metrics.md');
const PREFIX = 'mxl_fabric_';

/** The names in the first column of the table under the heading `Metrics` (several per row allowed). */
export function readmeMetricNames(markdown: string): Set<string> {
  const section = sectionOf(markdown, 'Metrics');
  const names = new Set<string>();
  for (const line of section.split('\n')) {
    const first = /^\| ([^|]+) \|/.exec(line)?.[1];
    if (first === undefined || first.startsWith('metric') || first.startsWith('---')) continue;
    for (const [, name] of first.matchAll(/`([a-z_:][a-z0-9_:]*)`/g)) names.add(PREFIX + name!);
  }
  return names;
}

let run: Running | undefined;
afterEach(stopDaemons);

describe('docs/metrics.md metric table', () => {
  it('names exactly the families the exporter registers', async () => {
    run = await startDaemon('empty', 'flows: []\n');
    await run.tick();
    const text = await (await run.get('/metrics')).text();
    const registered = new Set([...text.matchAll(/^# TYPE (mxl_fabric_\S+) /gm)].map((m) => m[1]!));
    const documented = readmeMetricNames(readFileSync(METRICS_DOC, 'utf8'));
    expect(registered.size).toBeGreaterThan(40);
    expect([...registered].filter((n) => !documented.has(n)).sort(), 'registered but not in docs/metrics.md').toEqual([]);
    expect([...documented].filter((n) => !registered.has(n)).sort(), 'in docs/metrics.md but not registered').toEqual([]);
  });

  it('reads every name of a row, and only the first column', () => {
    const md = '# x\n## Metrics\n| metric | type |\n| --- | --- |\n| `a_total`, `b_total` | counter `c` |\n## Next\n| `d` | x |\n';
    expect([...readmeMetricNames(md)]).toEqual([`${PREFIX}a_total`, `${PREFIX}b_total`]);
  });
});
