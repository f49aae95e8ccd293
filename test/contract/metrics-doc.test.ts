/**
 * docs/metrics.md is the contract users read, and its table is generated from the family
 * definitions (scripts/metrics-doc.mjs): a family in the code and not in the table, or a row
 * that names no family, or a type, label or help that differs, fails here. The definitions are
 * in turn held to what the exporter does: every family it registers is defined (a family prints
 * its HELP and TYPE lines in every scrape, even with no samples, so one scrape of a daemon on an
 * empty host lists them all), and the labels the golden scenarios print are the ones declared.
 */
import { describe, expect, it, afterEach } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { FAMILIES } from '../../src/exporter/families.js';
import { PREFIX } from '../../src/exporter/family.js';
import { REGISTRY_FAMILIES } from '../../src/exporter/metrics.js';
import { parseMetrics, startDaemon, stopDaemons, type Running } from '../exporter/harness.js';
import { DECLARED, labelProblems, seriesLabels } from './family-labels.js';

interface Row { name: string; type: string; labels: string; help: string; notes: string }
interface FamilyLike { name: string; type: string; labels: readonly string[]; help: string }
const gen = (await import('../../scripts/metrics-doc.mjs')) as {
  DOC: string; documentedRows(md: string): Row[]; update(md: string, f: readonly FamilyLike[]): string; table(f: readonly FamilyLike[]): string;
};
const DOC_TEXT = readFileSync(gen.DOC, 'utf8');
const CODE = [...FAMILIES, ...REGISTRY_FAMILIES];
const GOLDEN = join(__dirname, '..', 'exporter', 'golden');

let run: Running | undefined;
afterEach(stopDaemons);

describe('docs/metrics.md, generated from the family definitions', () => {
  it('lists every family of the code, and nothing else (both ways)', () => {
    const documented = new Set(gen.documentedRows(DOC_TEXT).map((r) => r.name));
    const defined = new Set(CODE.map((f) => PREFIX + f.name));
    expect(defined.size).toBeGreaterThan(70);
    expect([...defined].filter((n) => !documented.has(n)).sort(), 'defined in the code but not in docs/metrics.md').toEqual([]);
    expect([...documented].filter((n) => !defined.has(n)).sort(), 'in docs/metrics.md but defined nowhere in the code').toEqual([]);
  });

  it('is what scripts/metrics-doc.mjs writes: type, labels and help as the code has them, the notes kept', () => {
    expect(DOC_TEXT, 'run: npm run build && node scripts/metrics-doc.mjs').toBe(gen.update(DOC_TEXT, CODE));
  });

  it('fails on a help, type or label that changed, and on a family added or removed (control)', () => {
    const changed = CODE.map((f, i) => (i === 0 ? { ...f, help: `${f.help} (changed)` } : f));
    expect(gen.update(DOC_TEXT, changed)).not.toBe(DOC_TEXT);
    expect(gen.update(DOC_TEXT, [...CODE, { name: 'new_thing', type: 'gauge', labels: [], help: 'x' }])).toContain('`mxl_fabric_new_thing`');
    expect(gen.update(DOC_TEXT, CODE.slice(1))).not.toContain(`\`${PREFIX}${CODE[0]!.name}\``);
    expect(gen.table([{ name: 'a', type: 'gauge', labels: ['x'], help: '|drift| > 1' }])).toContain('| `mxl_fabric_a` | gauge | `x` | \\|drift\\| > 1 |  |');
  });

  it('every family the exporter registers is defined (a live scrape of a daemon on an empty host)', async () => {
    run = await startDaemon('empty', 'flows: []\n');
    await run.tick();
    const text = await (await run.get('/metrics')).text();
    const registered = new Set([...text.matchAll(/^# TYPE (mxl_fabric_\S+) (\S+)/gm)].map((m) => `${m[1]!} ${m[2]!}`));
    expect([...registered].sort()).toEqual(CODE.map((f) => `${PREFIX}${f.name} ${f.type}`).sort());
  });

  it('the golden scenarios print only declared labels, and every declared label of a family they print', () => {
    const seen = new Map<string, Set<string>>();
    const problems: string[] = [];
    for (const f of readdirSync(GOLDEN).filter((x) => x.endsWith('.prom'))) {
      const keys = [...parseMetrics(readFileSync(join(GOLDEN, f), 'utf8')).keys()];
      problems.push(...labelProblems(keys).map((p) => `${f}: ${p}`));
      for (const k of keys) {
        const { name, labels } = seriesLabels(k);
        if (!seen.has(name)) seen.set(name, new Set());
        for (const l of labels) seen.get(name)!.add(l);
      }
    }
    expect(problems).toEqual([]);
    for (const [name, labels] of seen) {
      if (!name.startsWith(PREFIX)) continue;
      expect([...labels].sort(), name).toEqual([...DECLARED.get(name)!].sort());
    }
    // The connection families no golden scenario prints are checked on every scrape of the
    // exporter tests (harness.ts), test/exporter/connections.test.ts among them.
    expect(CODE.filter((f) => !seen.has(PREFIX + f.name)).length).toBeLessThanOrEqual(5);
  });

  it('a series with an undeclared label, or in another order, is found (control)', () => {
    expect(labelProblems(['mxl_fabric_port_up{device="a",port="1"}'])).toEqual([]);
    expect(labelProblems(['mxl_fabric_port_up{port="1",device="a"}'])).toHaveLength(1);
    expect(labelProblems(['mxl_fabric_port_up{device="a",port="1",x="y"}'])).toHaveLength(1);
    expect(labelProblems(['mxl_fabric_nope 1'])).toHaveLength(1);
  });
});
