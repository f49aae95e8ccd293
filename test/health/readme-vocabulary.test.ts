/** docs/fabric-health.md's per-driver vocabulary table is the tables' own content (no name documented by hand). */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DRIVER_TABLES, DISCARD_REASONS, TRANSPORT_ERROR_KINDS, type HealthMeaning } from '../../src/sources/vocabulary/index.js';
import { familyLabels } from '../../src/health/vocabulary-series.js';

const FAMILY_METRIC: Record<HealthMeaning['family'], string> = {
  ecn_marked_packets: 'port_ecn_marked_packets_total',
  cnp_sent: 'port_cnp_sent_total',
  cnp_handled: 'port_cnp_handled_total',
  cnp_ignored: 'port_cnp_ignored_total',
  pause_frames: 'port_pause_frames_total',
  pause_duration: 'port_pause_duration_seconds_total',
  transport_errors: 'port_transport_errors_total',
  discards: 'port_discards_total',
};

/** One row per driver and family+labels; per-priority names folded to `{p}`. */
export function vocabularyMarkdown(): string {
  const rows: string[] = ['| driver | counters | metric and labels | driver names |', '| --- | --- | --- | --- |'];
  for (const t of DRIVER_TABLES) {
    const groups = new Map<string, Set<string>>();
    for (const e of t.entries) {
      const labels = familyLabels(e.meaning);
      const folded = 'priority' in labels && labels.priority !== 'global';
      const key = `\`${FAMILY_METRIC[e.meaning.family]}\`${Object.entries(labels).filter(([k]) => !(folded && k === 'priority'))
        .map(([k, v]) => ` ${k}=${v}`).join('')}${folded ? ' priority={p}' : ''}`;
      const name = folded ? e.name.replace(new RegExp(`(?<=[a-z_])${labels.priority}(?=[_.a-z]|$)`), '{p}') : e.name;
      if (!groups.has(key)) groups.set(key, new Set());
      groups.get(key)!.add(`\`${name}\``);
    }
    for (const [key, names] of groups) rows.push(`| ${t.driver} | ${t.counters} | ${key} | ${[...names].join(', ')} |`);
  }
  return rows.join('\n');
}

describe('docs/fabric-health.md vocabulary', () => {
  const readme = readFileSync(join(__dirname, '..', '..', 'docs', 'fabric-health.md'), 'utf8');
  it('contains the per-driver table generated from the vocabulary tables', () => {
    expect(readme).toContain(vocabularyMarkdown());
  });
  it('documents every transport-error kind and discard reason', () => {
    for (const [k, why] of Object.entries(TRANSPORT_ERROR_KINDS)) expect(readme).toContain(`| \`${k}\` | ${why} |`);
    for (const [r, why] of Object.entries(DISCARD_REASONS)) expect(readme).toContain(`| \`${r}\` | ${why} |`);
  });
});

if (process.env.PRINT_VOCABULARY) process.stdout.write(`${vocabularyMarkdown()}\n`);
