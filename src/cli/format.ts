/** Decimal-unit formatting, as the seed presents rates (MB/s = 10^6 B/s). */
const PREFIXES = ['', 'k', 'M', 'G', 'T'] as const;

export function decimal(value: number, unit: string, digits = 3): string {
  let v = value;
  let i = 0;
  while (Math.abs(v) >= 1000 && i < PREFIXES.length - 1) {
    v /= 1000;
    i++;
  }
  return `${i === 0 ? String(+v.toFixed(digits)) : v.toFixed(digits)} ${PREFIXES[i]}${unit}`;
}

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
