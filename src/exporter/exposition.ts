/**
 * Prometheus text exposition format 0.0.4 for the exporter's own families, written directly
 * so that text that does not change (every per-flow prediction) is formatted once and kept.
 * https://prometheus.io/docs/instrumenting/exposition_formats/
 */

export type Labels = Readonly<Record<string, string | number>>;

export interface Sample {
  /** The labels, or their text already formatted by formatLabels() (kept by the caller). */
  readonly labels: Labels | string;
  readonly value: number;
}

const NEEDS_ESCAPE = /[\\\n"]/;
const escapeLabel = (v: string): string =>
  NEEDS_ESCAPE.test(v) ? v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"') : v;
const escapeHelp = (v: string): string => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');

function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

export function formatLabels(labels: Labels): string {
  let out = '';
  for (const k in labels) out += `${out ? ',' : '{'}${k}="${escapeLabel(String(labels[k]))}"`;
  return out ? `${out}}` : '';
}

export function familyHeader(name: string, help: string, type: 'gauge' | 'counter'): string {
  return `# HELP ${name} ${escapeHelp(help)}\n# TYPE ${name} ${type}\n`;
}

/** The lines of samples[from, to). */
export function formatSamples(name: string, samples: readonly Sample[], from: number, to: number): string {
  let out = '';
  for (let i = from; i < to; i++) {
    const s = samples[i]!;
    out += `${name}${typeof s.labels === 'string' ? s.labels : formatLabels(s.labels)} ${formatValue(s.value)}\n`;
  }
  return out;
}
