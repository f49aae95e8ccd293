// The faults scenario's time scale (issue 32, docs/faults.md): copies of the shipped rule files
// and Alertmanager config with every duration divided by one factor, so that a 5-minute `for:`
// passes in 30 s at factor 10. What is scaled: in the rules, each `for:`, `keep_firing_for:` and
// every range or subquery window and `offset` in an expression (`[5m]`, `[10m:1m]`, `offset 1h`);
// in Alertmanager, `group_wait`, `group_interval`, `repeat_interval` and `resolve_timeout`. Labels,
// annotations, inhibitions and matchers are copied unchanged; the receivers' URLs are replaced by
// one webhook (`<url>/<receiver name>`).
//
//   node test/rxe/faults/scale.mjs --factor 10 --out DIR [--webhook URL]
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import YAML from 'yaml';

// fileURLToPath, not .pathname: a checkout whose path has a space or non-ASCII is percent-encoded there.
const REPO = fileURLToPath(new URL('../../..', import.meta.url));
export const SHIPPED_RULES = ['alerts.yml', 'recording.yml'].map((f) => join(REPO, 'deploy/prometheus/rules', f));
export const SHIPPED_ALERTMANAGER = join(REPO, 'deploy/alertmanager/alertmanager.yml');

// Prometheus's duration grammar (compound, 1h30m; y w d h m s ms), not the exporter's config units
// (src/input/units.ts: one number and one unit, rationals allowed).
const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000, y: 31_536_000_000 };
// A Prometheus duration: units from largest to smallest, each at most once (1h30m, 500ms).
const DURATION = /^(?:\d+y)?(?:\d+w)?(?:\d+d)?(?:\d+h)?(?:\d+m(?!s))?(?:\d+s)?(?:\d+ms)?$/;
const PART = /(\d+)(ms|[smhdwy])/g;

/** Milliseconds of a Prometheus duration string; an error naming it when it is not one. */
export function durationMs(text) {
  if (typeof text !== 'string' || text === '' || !DURATION.test(text)) throw new Error(`not a duration: ${JSON.stringify(text)}`);
  let ms = 0;
  for (const [, n, unit] of text.matchAll(PART)) ms += Number(n) * UNIT_MS[unit];
  return ms;
}

/** A duration of `ms` milliseconds as Prometheus and Alertmanager read it (whole seconds when it is). */
export function formatMs(ms) {
  if (!Number.isInteger(ms) || ms <= 0) throw new Error(`a scaled duration must be a whole number of milliseconds above 0, not ${ms}`);
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

/** `text` (a duration) divided by `factor`, rounded to the millisecond (a zero duration stays 0s). */
export function scaleDuration(text, factor) {
  const ms = durationMs(text);
  return ms === 0 ? '0s' : formatMs(Math.max(1, Math.round(ms / factor)));
}

/** `factor` when it is a number of at least 1; `given` is what the user wrote, for the message. */
export function checkFactor(factor, given = factor) {
  if (typeof factor !== 'number' || !Number.isFinite(factor) || factor < 1) {
    throw new Error(`--factor must be a number of at least 1 (shipped durations are divided by it), not ${typeof given === 'string' ? JSON.stringify(given) : String(given)}`);
  }
  return factor;
}

// `[5m]`, `[10m:1m]`, `[1h:]` and `offset 5m` in PromQL; durations elsewhere (label values in
// quotes) are left alone because the expressions never quote a duration-looking string.
const WINDOW = /\[([0-9a-z]+)(?::([0-9a-z]*))?\]/g;
const OFFSET = /\boffset\s+(-?)([0-9a-z]+)/g;

// Windows the scale leaves alone: they mirror a real duration, not a detection time, and the
// scale does not shorten real durations (emulation makes them longer).
// - MxlFabricConnectionDown remembers a vanished connection's flow over
//   last_over_time(mxl_fabric_connection_info[10m]) because the exporter keeps that connection 10
//   minutes with connection_up 0 (docs/connections.md); scaled to 1 minute, the page would resolve
//   1 minute after the kill while the exporter still reports the connection down.
// - The one-minute graces over ALERTS, max_over_time(ALERTS{...}[1m]) (the port grace and the
//   flows' causes, alerts.yml), cover MXL's reconnect after its cause is gone: under emulation
//   that took 20-40 s (docs/faults.md), longer than the grace and ConnectionDown's for: together
//   at factor 5 (12 s + 12 s). A longer window over ALERTS (TransportRetriesExceeded's 10m, the
//   length of its own count) is scaled with the count.
export const KEPT_WINDOWS = [
  /last_over_time\(mxl_fabric_connection_info\b[^[]*\[[0-9a-z]+\]\)/g,
  /max_over_time\(ALERTS\{[^}]*\}\[1m\]\)/g,
];

/** A PromQL expression with its range windows, subquery steps and offsets divided by `factor`. */
export function scaleExpr(expr, factor) {
  const kept = [];
  const held = KEPT_WINDOWS.reduce((e, re) => e.replace(re, (m) => { kept.push(m); return `\u0000${kept.length - 1}\u0000`; }), expr);
  return held
    .replace(WINDOW, (_, range, step) => `[${scaleDuration(range, factor)}${step === undefined ? '' : `:${step === '' ? '' : scaleDuration(step, factor)}`}]`)
    .replace(OFFSET, (_, sign, d) => `offset ${sign}${scaleDuration(d, factor)}`)
    .replace(/\u0000(\d+)\u0000/g, (_, i) => kept[Number(i)]);
}

/** One parsed rule file (`groups`), scaled; `interval` sets every group's evaluation interval. */
export function scaleRules(doc, factor, { interval } = {}) {
  checkFactor(factor);
  if (!doc || !Array.isArray(doc.groups)) throw new Error('a rule file has a top-level `groups` list');
  return {
    ...doc,
    groups: doc.groups.map((g) => ({
      ...g,
      ...(interval ? { interval } : g.interval ? { interval: scaleDuration(g.interval, factor) } : {}),
      rules: g.rules.map((r) => ({
        ...r,
        expr: scaleExpr(String(r.expr), factor),
        ...(r.for ? { for: scaleDuration(r.for, factor) } : {}),
        ...(r.keep_firing_for ? { keep_firing_for: scaleDuration(r.keep_firing_for, factor) } : {}),
      })),
    })),
  };
}

const ROUTE_TIMES = ['group_wait', 'group_interval', 'repeat_interval'];

function scaleRoute(route, factor) {
  const out = { ...route };
  for (const k of ROUTE_TIMES) if (out[k]) out[k] = scaleDuration(out[k], factor);
  if (Array.isArray(out.routes)) out.routes = out.routes.map((r) => scaleRoute(r, factor));
  return out;
}

/**
 * The parsed Alertmanager config, scaled. Alertmanager's defaults (group_wait 30s,
 * group_interval 5m, repeat_interval 4h, resolve_timeout 5m) are written out scaled where the
 * file leaves them out, so that nothing runs at shipped speed. Every receiver sends to `webhook`.
 */
export function scaleAlertmanager(doc, factor, { webhook } = {}) {
  checkFactor(factor);
  if (!doc || !doc.route || !Array.isArray(doc.receivers)) throw new Error('an Alertmanager config has `route` and `receivers`');
  const defaults = { group_wait: '30s', group_interval: '5m', repeat_interval: '4h' };
  const route = scaleRoute({ ...defaults, ...doc.route }, factor);
  const global = { ...doc.global, resolve_timeout: scaleDuration(doc.global?.resolve_timeout ?? '5m', factor) };
  const receivers = webhook
    ? doc.receivers.map((r) => ({ name: r.name, webhook_configs: [{ url: `${webhook}/${r.name}`, send_resolved: true }] }))
    : doc.receivers;
  return { ...doc, global, route, receivers };
}

/** Writes the scaled copies into `dir`: { rules: [paths], alertmanager: path }. */
export function writeScaled(dir, factor, opts = {}) {
  checkFactor(factor);
  mkdirSync(dir, { recursive: true });
  const read = (file) => {
    try {
      return YAML.parse(readFileSync(file, 'utf8'));
    } catch (e) {
      throw new Error(`${file}: ${e.code === 'ENOENT' ? 'missing' : e.message}`);
    }
  };
  const rules = (opts.rules ?? SHIPPED_RULES).map((file) => {
    const target = join(dir, `scaled-${basename(file)}`);
    writeFileSync(target, `# ${file} with durations divided by ${factor} (test/rxe/faults/scale.mjs)\n${YAML.stringify(scaleRules(read(file), factor, opts))}`);
    return target;
  });
  const am = opts.alertmanager ?? SHIPPED_ALERTMANAGER;
  const alertmanager = join(dir, 'scaled-alertmanager.yml');
  writeFileSync(alertmanager, `# ${am} with durations divided by ${factor} (test/rxe/faults/scale.mjs)\n${YAML.stringify(scaleAlertmanager(read(am), factor, opts))}`);
  return { rules, alertmanager };
}

/**
 * The longest a page of one of `alerts` can take under the scaled copies `written` (writeScaled's
 * answer), in ms: the longest `for:` among them and the longest `group_wait` of any route.
 */
export function pageDelayMs(written, alerts) {
  const fors = new Map();
  for (const file of written.rules) {
    for (const g of YAML.parse(readFileSync(file, 'utf8')).groups) {
      for (const r of g.rules) if (r.alert) fors.set(r.alert, r.for ? durationMs(r.for) : 0);
    }
  }
  const unknown = alerts.filter((a) => !fors.has(a));
  if (alerts.length === 0 || unknown.length) throw new Error(`no alert ${unknown.join(', ') || '(none asked for)'} in ${written.rules.join(', ')}`);
  // a route without group_wait has its parent's (Alertmanager's default at the root: 30s)
  const waits = (route, parent) => {
    const own = route.group_wait ?? parent;
    return [durationMs(own), ...(route.routes ?? []).flatMap((r) => waits(r, own))];
  };
  const route = YAML.parse(readFileSync(written.alertmanager, 'utf8')).route;
  return Math.max(...alerts.map((a) => fors.get(a))) + Math.max(...waits(route, '30s'));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    const { values } = parseArgs({ options: { factor: { type: 'string' }, out: { type: 'string' }, webhook: { type: 'string' } } });
    if (!values.out) throw new Error('--out DIR is required');
    if (values.factor === undefined) throw new Error('--factor N is required');
    const factor = checkFactor(Number(values.factor), values.factor);
    const written = writeScaled(values.out, factor, { webhook: values.webhook });
    console.log(JSON.stringify(written));
  } catch (e) {
    console.error(`scale.mjs: ${e.message}`);
    process.exit(2);
  }
}
