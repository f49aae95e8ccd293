/** Table and CSV formatting for the commands; rates and units come from src/input/units.ts. */

/** 141038250 -> "141,038,250"; fractional values keep up to 3 decimals. */
export function grouped(value: number): string {
  return value.toLocaleString('en-US', { maximumFractionDigits: 3 });
}

/** Pads columns of a table; the first row is the header. */
export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  // Columns whose first value is a number are right-aligned, header included.
  const right = (rows[1] ?? []).map((cell) => /^[\d,.]+( |$)/.test(cell));
  const line = (r: string[]): string =>
    r.map((cell, c) => (right[c] ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!))).join('  ').trimEnd();
  return [line(rows[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n');
}

export function csv(rows: (string | number)[][]): string {
  const cell = (v: string | number): string => {
    const s = String(v);
    return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  return rows.map((r) => r.map(cell).join(',')).join('\n');
}
