/**
 * The label names each family declares (src/exporter: `labels`, what docs/metrics.md lists)
 * against the series it prints: a series' label names are the declared ones in their order,
 * some perhaps left out, never another. The exporter tests' harness checks every scrape with it.
 */
import { FAMILIES } from '../../src/exporter/families.js';
import { PREFIX } from '../../src/exporter/family.js';
import { REGISTRY_FAMILIES } from '../../src/exporter/metrics.js';

export const DECLARED = new Map<string, readonly string[]>([...FAMILIES, ...REGISTRY_FAMILIES].map((f) => [PREFIX + f.name, f.labels]));

/** `name{a="x",b="y"}` -> name and label names in order. */
export function seriesLabels(key: string): { name: string; labels: string[] } {
  const brace = key.indexOf('{');
  if (brace < 0) return { name: key, labels: [] };
  return { name: key.slice(0, brace), labels: [...key.slice(brace).matchAll(/[{,]([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"/g)].map((m) => m[1]!) };
}

/** Whether `names` are `declared` with some left out, in the same order. */
function inOrder(names: readonly string[], declared: readonly string[]): boolean {
  let at = 0;
  for (const n of names) {
    at = declared.indexOf(n, at);
    if (at < 0) return false;
    at++;
  }
  return true;
}

/** One line per mxl_fabric_ series whose labels its family does not declare (so), empty when all agree. */
export function labelProblems(seriesKeys: Iterable<string>): string[] {
  const out: string[] = [];
  for (const key of seriesKeys) {
    const { name, labels } = seriesLabels(key);
    if (!name.startsWith(PREFIX)) continue;
    const declared = DECLARED.get(name);
    if (declared === undefined) out.push(`${key}: no family ${name} is defined`);
    else if (!inOrder(labels, declared)) out.push(`${key}: ${name} declares labels [${declared.join(', ')}]`);
  }
  return out;
}
