#!/usr/bin/env node
// Writes the generated table of docs/metrics.md from the family definitions in the code: every
// family of src/exporter (FAMILIES: name, type, labels, help) and the exporter's own gauges that
// prom-client serves (REGISTRY_FAMILIES), one row each, by name. The last column, notes, is
// written by hand in docs/metrics.md and kept across runs (a new family starts with none; a
// family gone from the code takes its notes with it).
//
//   npm run build && node scripts/metrics-doc.mjs           rewrite the table
//   npm run build && node scripts/metrics-doc.mjs --check   exit 1 if docs/metrics.md is out of date
//
// test/contract/metrics-doc.test.ts runs the same check on the sources.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const DOC = join(dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'metrics.md');
export const PREFIX = 'mxl_fabric_';
export const BEGIN = '<!-- BEGIN GENERATED: scripts/metrics-doc.mjs writes this table from the code; edit only the notes column -->';
export const END = '<!-- END GENERATED -->';
const HEADER = ['| metric | type | labels | help (from the code) | notes |', '| --- | --- | --- | --- | --- |'];

/** A table cell: pipes escaped, nothing that would end the row. */
const cell = (text) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** The cells of one table row, split on pipes that are not escaped. */
export function cells(row) {
  return row.trim().replace(/^\||\|$/g, '').split(/(?<!\\)\|/).map((c) => c.trim());
}

/** The generated block's rows as { name, type, labels, help, notes } (names with the prefix). */
export function documentedRows(markdown) {
  const block = generatedBlock(markdown);
  return block.split('\n').filter((l) => l.startsWith('| `')).map((l) => {
    const [name, type, labels, help, notes] = cells(l);
    return { name: name.replace(/`/g, ''), type, labels, help, notes: notes ?? '' };
  });
}

function generatedBlock(markdown) {
  const at = markdown.indexOf(BEGIN);
  const end = markdown.indexOf(END);
  if (at < 0 || end < at) throw new Error(`${relative(process.cwd(), DOC)} has no generated block (${BEGIN} ... ${END})`);
  return markdown.slice(at + BEGIN.length, end);
}

/** The table for `families` ({ name, type, labels, help }, names without the prefix), keeping `notes` by full name. */
export function table(families, notes = new Map()) {
  const rows = [...families].sort((a, b) => a.name.localeCompare(b.name)).map((f) => {
    const name = PREFIX + f.name;
    const labels = f.labels.length === 0 ? '' : f.labels.map((l) => `\`${l}\``).join(', ');
    return `| \`${name}\` | ${f.type} | ${labels} | ${cell(f.help)} | ${notes.get(name) ?? ''} |`;
  });
  return [...HEADER, ...rows].join('\n');
}

/** `markdown` with its generated block made from `families`, the notes kept. */
export function update(markdown, families) {
  const notes = new Map(documentedRows(markdown).map((r) => [r.name, r.notes]));
  const at = markdown.indexOf(BEGIN) + BEGIN.length;
  return `${markdown.slice(0, at)}\n${table(families, notes)}\n${markdown.slice(markdown.indexOf(END))}`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const dist = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'exporter');
  const { FAMILIES } = await import(join(dist, 'families.js'));
  const { REGISTRY_FAMILIES } = await import(join(dist, 'metrics.js'));
  const current = readFileSync(DOC, 'utf8');
  const next = update(current, [...FAMILIES, ...REGISTRY_FAMILIES]);
  if (process.argv.includes('--check')) {
    if (next !== current) {
      console.error(`${relative(process.cwd(), DOC)} is out of date: run npm run build && node scripts/metrics-doc.mjs`);
      process.exit(1);
    }
  } else {
    writeFileSync(DOC, next);
    console.log(`wrote ${relative(process.cwd(), DOC)}`);
  }
}
