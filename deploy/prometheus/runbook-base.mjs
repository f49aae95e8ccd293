#!/usr/bin/env node
// Where the shipped alerts link to their runbooks. Every alert (deploy/prometheus/rules/alerts.yml,
// and the Grafana rule in deploy/grafana/provisioning/alerting/) carries
//   runbook_url: BASE#<alert name in lower case>
// and BASE#... is a section of docs/alerts.md. The files as shipped use the repository's own docs
// path, docs/alerts.md, which names the page in any copy of the repository (a checkout, a forge's
// web view, /opt/mxl-fabric-exporter/docs/ of an install) without inventing a host. Set the base
// once per deploy, to where your copy of docs/alerts.md is served:
//
//   node deploy/prometheus/runbook-base.mjs https://git.example.net/you/mxl-fabric-exporter/blob/main/docs/alerts.md
//       rewrites BASE in both rule files and rebuilds deploy/kubernetes/prometheusrule.yaml
//   node deploy/prometheus/runbook-base.mjs
//       prints the base the rule files use
//
// Only the runbook_url lines change: comments and every other line stay as they are.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const DEFAULT_BASE = 'docs/alerts.md';
export const RULE_FILES = [
  join(root, 'deploy', 'prometheus', 'rules', 'alerts.yml'),
  join(root, 'deploy', 'grafana', 'provisioning', 'alerting', 'mxl-fabric-drift.yml'),
];
const LINE = /^(\s*runbook_url:\s*)(\S+)#([a-z0-9-]+)\s*$/gm;

/** An alert's runbook section: its name in lower case (GitHub's anchor of the heading). */
export const runbookUrl = (base, alert) => `${base}#${alert.toLowerCase()}`;

/** The bases of a rule file's runbook_url lines (one, when the file is consistent). */
export function basesOf(text) {
  return [...new Set([...text.matchAll(LINE)].map((m) => m[2]))];
}

/** `text` with every runbook_url line's base replaced by `base` (the anchors kept). */
export function rebase(text, base) {
  return text.replace(LINE, (_all, key, _old, anchor) => `${key}${base}#${anchor}`);
}

/** The base argument, or why it is refused: an http(s) URL of the docs page, no `#`, no blanks. */
export function checkBase(base) {
  return /^https?:\/\/[^\s#]+$/.test(base) ? undefined : `the runbook base must be an http(s) URL without #, got "${base}"`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const base = process.argv[2];
  if (base === undefined) {
    for (const f of RULE_FILES) console.log(`${relative(process.cwd(), f)}: ${basesOf(readFileSync(f, 'utf8')).join(', ')}`);
    process.exit(0);
  }
  const why = checkBase(base);
  if (why) {
    console.error(why);
    process.exit(2);
  }
  for (const f of RULE_FILES) {
    writeFileSync(f, rebase(readFileSync(f, 'utf8'), base));
    console.log(`wrote ${relative(process.cwd(), f)}`);
  }
  const { build, OUTPUT } = await import('../kubernetes/build-prometheusrule.mjs');
  writeFileSync(OUTPUT, build());
  console.log(`wrote ${relative(process.cwd(), OUTPUT)}`);
}
