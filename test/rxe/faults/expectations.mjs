// The faults scenario's expected pages (test/rxe/faults/expected.yml, docs/faults.md): loaded,
// checked key by key, ${name} substitutions filled in, and selected by fault name. Every error names
// the file, the fault and the field.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const HERE = dirname(fileURLToPath(import.meta.url));
export const EXPECTED_YML = join(HERE, 'expected.yml');
export const ALERTS_YML = join(HERE, '..', '..', '..', 'deploy', 'prometheus', 'rules', 'alerts.yml');

/**
 * @typedef {{ alertname: string, labels: Record<string, string> }} ExpectedPage
 * @typedef {{ name: string, injection: string, undo?: string, pages: ExpectedPage[], silent?: string, notes?: string }} Fault
 * @typedef {{ file: string, substitutions: Record<string, string>, faults: Fault[] }} Expectations
 */

const TOP_KEYS = ['version', 'substitutions', 'faults'];
const FAULT_KEYS = ['name', 'injection', 'undo', 'pages', 'silent', 'notes'];
const PAGE_KEYS = ['alertname', 'labels'];
const NAME = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const VAR = /\$\{([^}]*)\}/g;

/** The alert names deploy/prometheus/rules/alerts.yml ships. */
export function shippedAlertNames(file = ALERTS_YML) {
  /** @type {{ groups: { rules: { alert?: string }[] }[] }} */
  const doc = parse(readFileSync(file, 'utf8'));
  return new Set(doc.groups.flatMap((g) => g.rules.map((r) => r.alert).filter((a) => a !== undefined)));
}

const isMap = (/** @type {unknown} */ v) => typeof v === 'object' && v !== null && !Array.isArray(v);
const nonEmpty = (/** @type {unknown} */ v) => typeof v === 'string' && v.trim() !== '';

/**
 * Checks a parsed expectations document; throws on the first problem.
 * @param {unknown} doc
 * @param {string} file the name errors give
 * @param {{ alertNames?: Set<string> }} [opts] alert names a page may have (default: the shipped ones)
 * @returns {Expectations}
 */
export function validateExpectations(doc, file, opts = {}) {
  const alertNames = opts.alertNames ?? shippedAlertNames();
  /** @param {string} where @param {string} what */
  const fail = (where, what) => { throw new Error(`${file}: ${where}: ${what}`); };
  if (!isMap(doc)) fail('top level', 'must be a mapping with version, substitutions and faults');
  const top = /** @type {Record<string, unknown>} */ (doc);
  for (const k of Object.keys(top)) if (!TOP_KEYS.includes(k)) fail(`top level: field ${k}`, `unknown key (known: ${TOP_KEYS.join(', ')})`);
  if (top.version !== 1) fail('top level: field version', `must be 1, not ${JSON.stringify(top.version)}`);
  const subs = top.substitutions ?? {};
  if (!isMap(subs)) fail('top level: field substitutions', 'must be a mapping of name: description');
  /** @type {Record<string, string>} */
  const substitutions = {};
  for (const [k, v] of Object.entries(/** @type {Record<string, unknown>} */ (subs))) {
    if (!LABEL.test(k)) fail(`substitutions: field ${k}`, 'a name is letters, digits and _');
    if (!nonEmpty(v)) fail(`substitutions: field ${k}`, 'needs a description');
    substitutions[k] = /** @type {string} */ (v);
  }
  if (!Array.isArray(top.faults) || top.faults.length === 0) fail('top level: field faults', 'must be a non-empty list');
  const seen = new Set();
  const faults = /** @type {unknown[]} */ (top.faults).map((f, i) => {
    if (!isMap(f)) fail(`fault #${i + 1}`, 'must be a mapping');
    const raw = /** @type {Record<string, unknown>} */ (f);
    const name = raw.name;
    if (!nonEmpty(name)) fail(`fault #${i + 1}: field name`, 'missing');
    if (!NAME.test(/** @type {string} */ (name))) fail(`fault ${name}: field name`, 'must be kebab-case (a-z, 0-9, -)');
    const at = `fault ${name}`;
    if (seen.has(name)) fail(`${at}: field name`, 'given twice');
    seen.add(name);
    for (const k of Object.keys(raw)) if (!FAULT_KEYS.includes(k)) fail(`${at}: field ${k}`, `unknown key (known: ${FAULT_KEYS.join(', ')})`);
    if (!nonEmpty(raw.injection)) fail(`${at}: field injection`, 'missing: one line telling what is done');
    for (const k of ['undo', 'silent', 'notes']) if (raw[k] !== undefined && !nonEmpty(raw[k])) fail(`${at}: field ${k}`, 'must be a non-empty string');
    if (!Array.isArray(raw.pages)) fail(`${at}: field pages`, 'missing: a list of {alertname, labels}');
    const pagesRaw = /** @type {unknown[]} */ (raw.pages);
    if (pagesRaw.length === 0 && raw.silent === undefined) fail(`${at}: field pages`, 'empty: list the pages, or give `silent:` saying why the fault pages nothing');
    if (pagesRaw.length > 0 && raw.silent !== undefined) fail(`${at}: field silent`, 'given with pages: a silent fault has pages: []');
    const pages = pagesRaw.map((p, j) => {
      const pat = `${at}: pages[${j}]`;
      if (!isMap(p)) fail(pat, 'must be a mapping {alertname, labels}');
      const page = /** @type {Record<string, unknown>} */ (p);
      for (const k of Object.keys(page)) if (!PAGE_KEYS.includes(k)) fail(`${pat}: field ${k}`, `unknown key (known: ${PAGE_KEYS.join(', ')})`);
      if (!nonEmpty(page.alertname)) fail(`${pat}: field alertname`, 'missing');
      const alertname = /** @type {string} */ (page.alertname);
      if (!alertNames.has(alertname)) fail(`${pat}: field alertname`, `${alertname} is not an alert of the shipped rules`);
      const labels = page.labels ?? {};
      if (!isMap(labels)) fail(`${pat}: field labels`, 'must be a mapping of label: value');
      /** @type {Record<string, string>} */
      const out = {};
      for (const [k, v] of Object.entries(/** @type {Record<string, unknown>} */ (labels))) {
        if (!LABEL.test(k)) fail(`${pat}: field labels.${k}`, 'not a label name');
        if (k === 'alertname') fail(`${pat}: field labels.alertname`, 'give it as the page\'s alertname');
        if (typeof v !== 'string') fail(`${pat}: field labels.${k}`, `must be a string (quote it: "${String(v)}")`);
        for (const m of /** @type {string} */ (v).matchAll(VAR)) {
          if (!(m[1] in substitutions)) fail(`${pat}: field labels.${k}`, `\${${m[1]}} is not in substitutions (known: ${Object.keys(substitutions).join(', ') || 'none'})`);
        }
        out[k] = /** @type {string} */ (v);
      }
      return { alertname, labels: out };
    });
    /** @type {Fault} */
    const fault = { name: /** @type {string} */ (name), injection: /** @type {string} */ (raw.injection), pages };
    for (const k of /** @type {const} */ (['undo', 'silent', 'notes'])) if (raw[k] !== undefined) fault[k] = /** @type {string} */ (raw[k]);
    return fault;
  });
  return { file, substitutions, faults };
}

/**
 * Reads and checks an expectations file (default: expected.yml beside this module).
 * @param {string} [file]
 * @param {{ alertNames?: Set<string> }} [opts]
 * @returns {Expectations}
 */
export function loadExpectations(file = EXPECTED_YML, opts = {}) {
  let text;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new Error(`${file}: cannot read the expectations file (${/** @type {NodeJS.ErrnoException} */ (e).code ?? String(e)})`);
  }
  let doc;
  try {
    doc = parse(text);
  } catch (e) {
    throw new Error(`${file}: not YAML: ${/** @type {Error} */ (e).message}`);
  }
  return validateExpectations(doc, file, opts);
}

/**
 * The faults named, in the order asked (all of them when `names` is empty or absent).
 * @param {Expectations} exp
 * @param {string[]} [names]
 * @returns {Fault[]}
 */
export function selectFaults(exp, names) {
  if (!names || names.length === 0) return exp.faults;
  const known = exp.faults.map((f) => f.name);
  const unknown = names.filter((n) => !known.includes(n));
  if (unknown.length) throw new Error(`${exp.file}: unknown fault ${unknown.join(', ')} (known: ${known.join(', ')})`);
  return names.map((n) => /** @type {Fault} */ (exp.faults.find((f) => f.name === n)));
}

/**
 * The faults with every ${name} in their page labels replaced by vars[name].
 * @param {Expectations} exp
 * @param {Fault[]} faults
 * @param {Record<string, string>} vars
 * @returns {Fault[]}
 */
export function substitute(exp, faults, vars) {
  return faults.map((f) => ({
    ...f,
    pages: f.pages.map((p) => ({
      alertname: p.alertname,
      labels: Object.fromEntries(Object.entries(p.labels).map(([k, v]) => [k, v.replace(VAR, (_, n) => {
        if (typeof vars[n] !== 'string') throw new Error(`${exp.file}: fault ${f.name}: field labels.${k}: no value given for \${${n}}`);
        return vars[n];
      })])),
    })),
  }));
}
