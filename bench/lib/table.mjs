/** Text tables and the number formats the printed tables use. */

export function table(headers, rows) {
  const cells = rows.map((r) => r.map((c) => (c === undefined || c === null ? '-' : String(c))));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i].length)));
  const line = (r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [line(headers), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.map(line)].join('\n');
}

export const f = (x, d = 2) => (x === undefined || x === null || !Number.isFinite(x) ? '-' : x.toFixed(d));
export const mb = (b) => f(b / 2 ** 20, 1);
export const ratio = (a, b) => (a !== undefined && b ? a / b : undefined);

/** A profile summary (lib/profile.mjs) as two tables: self time by file, top functions. */
export function profileTables(title, pr) {
  return ['', title,
    table(['file', 'self %'], pr.byFile.slice(0, 6).map((x) => [x.file, f(x.percent, 1)])),
    table(['function', 'self %'], pr.topFunctions.slice(0, 10).map((x) => [x.function, f(x.percent, 1)]))];
}
