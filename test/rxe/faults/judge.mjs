// The faults scenario's verdict (docs/faults.md): one fault's expected pages against the alerts the
// webhook recorded (webhook.mjs), and the whole report. Pure: times are passed in, nothing is read.
//
// A page is one alert, known by its alertname and labels; Alertmanager sends it again in each
// later notification of its group (and on repeat_interval), so it counts once however often it
// comes. It matches an expected page when the alertname is equal and every expected label is
// equal (other labels are ignored).

/**
 * @typedef {import('./expectations.mjs').Fault} Fault
 * @typedef {import('./expectations.mjs').ExpectedPage} ExpectedPage
 * @typedef {{ at: number, alert: { status: 'firing' | 'resolved', labels: Record<string, string> } }} AlertRecord
 * @typedef {{ alertname: string, labels: Record<string, string>, status: 'firing' | 'resolved', s: number, shipped_s?: number }} Received
 * @typedef {{ alertname: string, labels: Record<string, string> }} Page
 * @typedef {{
 *   name: string, expected: ExpectedPage[], received: Received[],
 *   first_page_s: number | null, resolved_s: number | null,
 *   shipped?: { factor: number, first_page_s: number | null, resolved_s: number | null },
 *   extra: Page[], missing: ExpectedPage[], unresolved: Page[], premature: Page[],
 * }} FaultEntry
 */

/** @param {Record<string, string>} labels */
const pageKey = (labels) => JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

/**
 * @param {ExpectedPage} exp
 * @param {Record<string, string>} labels an alert's labels (alertname among them)
 */
export function matches(exp, labels) {
  return labels.alertname === exp.alertname && Object.entries(exp.labels).every(([k, v]) => labels[k] === v);
}

const round = (/** @type {number} */ s) => Math.round(s * 1000) / 1000;

/**
 * One fault's report entry.
 * @param {{ fault: Fault, injectedAt: number, undoneAt: number, records: AlertRecord[], until?: number, factor?: number }} a
 *   times in ms since the epoch; records before injectedAt (or from `until` on) belong to no fault of
 *   this one; `factor`: the time scale of the rules the run loaded (shipped durations / loaded ones)
 * @returns {FaultEntry}
 */
export function judgeFault({ fault, injectedAt, undoneAt, records, until = Infinity, factor }) {
  if (!(undoneAt >= injectedAt)) throw new Error(`fault ${fault.name}: undone (${undoneAt}) before injected (${injectedAt})`);
  const mine = records.filter((r) => r.at >= injectedAt && r.at < until).sort((a, b) => a.at - b.at);
  /** @type {Map<string, { page: Page, firstFiring?: number, lastStatus?: string, resolvedBeforeUndo: boolean, resolvedAfterUndo?: number }>} */
  const pages = new Map();
  /** @type {Received[]} */
  const received = [];
  for (const r of mine) {
    const { alertname = '', ...labels } = r.alert.labels;
    const s = round((r.at - (r.alert.status === 'resolved' && r.at >= undoneAt ? undoneAt : injectedAt)) / 1000);
    /** @type {Received} */
    const rec = { alertname, labels, status: r.alert.status, s };
    if (factor !== undefined) rec.shipped_s = round(s * factor);
    received.push(rec);
    const key = pageKey(r.alert.labels);
    let p = pages.get(key);
    if (!p) { p = { page: { alertname, labels }, resolvedBeforeUndo: false }; pages.set(key, p); }
    p.lastStatus = r.alert.status;
    if (r.alert.status === 'firing') p.firstFiring ??= r.at;
    else if (p.firstFiring !== undefined) {
      if (r.at < undoneAt) p.resolvedBeforeUndo = true;
      else p.resolvedAfterUndo ??= r.at;
    }
  }
  const fired = [...pages.values()].filter((p) => p.firstFiring !== undefined);
  const isExpected = (/** @type {Page} */ pg) => fault.pages.some((e) => matches(e, { ...pg.labels, alertname: pg.alertname }));
  const expectedFired = fired.filter((p) => isExpected(p.page));
  const extra = fired.filter((p) => !isExpected(p.page)).map((p) => p.page);
  const missing = fault.pages.filter((e) => !fired.some((p) => matches(e, { ...p.page.labels, alertname: p.page.alertname })));
  const unresolved = fired.filter((p) => p.lastStatus !== 'resolved').map((p) => p.page);
  const premature = fired.filter((p) => p.resolvedBeforeUndo).map((p) => p.page);
  const firsts = expectedFired.map((p) => /** @type {number} */ (p.firstFiring));
  const first_page_s = firsts.length ? round((Math.min(...firsts) - injectedAt) / 1000) : null;
  // every page that fired cleared after the undo: the last of them
  const clears = fired.map((p) => p.resolvedAfterUndo);
  const resolved_s = fired.length && unresolved.length === 0 && clears.every((c) => c !== undefined)
    ? round((Math.max(.../** @type {number[]} */ (clears)) - undoneAt) / 1000) : null;
  /** @type {FaultEntry} */
  const entry = { name: fault.name, expected: fault.pages, received, first_page_s, resolved_s, extra, missing, unresolved, premature };
  if (factor !== undefined) {
    entry.shipped = { factor, first_page_s: first_page_s === null ? null : round(first_page_s * factor), resolved_s: resolved_s === null ? null : round(resolved_s * factor) };
  }
  return entry;
}

/**
 * The whole report: ok only when no entry has an extra, missing, unresolved or prematurely
 * resolved page. `failures` says which, one line per problem.
 * @param {FaultEntry[]} entries
 * @param {{ factor?: number }} [meta]
 */
export function buildReport(entries, meta = {}) {
  /** @type {string[]} */
  const failures = [];
  const show = (/** @type {Page} */ p) => `${p.alertname}${JSON.stringify(p.labels)}`;
  for (const e of entries) {
    for (const p of e.extra) failures.push(`${e.name}: extra page ${show(p)}`);
    for (const p of e.missing) failures.push(`${e.name}: missing page ${show(p)}`);
    for (const p of e.unresolved) failures.push(`${e.name}: unresolved page ${show(p)}`);
    for (const p of e.premature) failures.push(`${e.name}: page resolved before the fault was undone ${show(p)}`);
  }
  return { ok: failures.length === 0, ...(meta.factor !== undefined ? { factor: meta.factor } : {}), failures, faults: entries };
}
