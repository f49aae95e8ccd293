/** HTML of the landing page's parts: escaping, cells and tables of columns (a leaf: the sections import it). */

export const esc = (s: string | number): string =>
  String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export const NONE = '<span class="none">—</span>';
export const cell = (html: string, cls = ''): string => `<td${cls ? ` class="${cls}"` : ''}>${html}</td>`;

export interface Column<T> {
  readonly header: string;
  readonly title?: string;
  readonly cell: (row: T) => string;
}

export function table<T>(id: string, columns: readonly Column<T>[], rows: readonly T[], empty: string): string {
  const head = columns.map((c) => `<th${c.title ? ` title="${esc(c.title)}"` : ''}>${esc(c.header)}</th>`).join('');
  const body = rows.length
    ? rows.map((r) => `<tr>${columns.map((c) => c.cell(r)).join('')}</tr>`).join('\n')
    : `<tr><td colspan="${columns.length}" class="none">${esc(empty)}</td></tr>`;
  return `<table id="${id}"><thead><tr>${head}</tr></thead><tbody>\n${body}\n</tbody></table>`;
}
