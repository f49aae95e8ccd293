/**
 * test/rxe/faults/expectations.mjs: the shipped expected.yml loads, and each kind of bad input is
 * an error naming the file, the fault and the field.
 */
import { describe, it, expect } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';
import { notificationGroup } from '../deploy/alertmanager-lib.js';
import { ALERTS_YML, EXPECTED_YML, loadExpectations, selectFaults, shippedAlertNames, substitute, validateExpectations } from '../rxe/faults/expectations.mjs';

/** Each shipped alert's severity label, which the routing tree matches on. */
const SEVERITY = new Map((parse(readFileSync(ALERTS_YML, 'utf8')) as { groups: { rules: { alert?: string; labels?: { severity?: string } }[] }[] })
  .groups.flatMap((g) => g.rules).flatMap((r) => (r.alert ? [[r.alert, r.labels?.severity ?? ''] as const] : [])));

const ISSUE_FAULTS = [
  'sender-killed', 'target-killed', 'writer-stopped', 'link-down', 'rxe-deleted', 'packet-loss', 'rate-cap',
  'unmodelled-traffic', 'mtu-lowered', 'domain-unreadable', 'exporter-restarted', 'prometheus-restarted',
];

const good = () => ({
  version: 1,
  substitutions: { flow_a: 'flow A' },
  faults: [
    { name: 'link-down', injection: 'ip link set veth0 down', pages: [{ alertname: 'MxlFabricPortDown', labels: { device: 'rxe0', port: '1' } }] },
    { name: 'sender-killed', injection: 'kill', pages: [{ alertname: 'MxlFabricConnectionDown', labels: { flow_id: '${flow_a}' } }] },
    { name: 'quiet', injection: 'nothing', silent: 'pages nothing', pages: [] },
  ],
});
const F = 'x.yml';
const bad = (mutate: (d: ReturnType<typeof good> & Record<string, unknown>) => void) => {
  const d = good() as ReturnType<typeof good> & Record<string, unknown>;
  mutate(d);
  return () => validateExpectations(d, F);
};
const fault = (d: ReturnType<typeof good>, i: number) => d.faults[i] as Record<string, unknown>;
const page = (d: ReturnType<typeof good>, i: number) => (d.faults[i]!.pages[0] as Record<string, unknown>);

describe('the shipped expected.yml', () => {
  const exp = loadExpectations();
  it('has the 12 faults of issue 32, each with its injection and pages (or why it has none)', () => {
    const names = exp.faults.map((f) => f.name);
    for (const n of ISSUE_FAULTS) expect(names).toContain(n);
    expect(names.length).toBeGreaterThanOrEqual(12);
    for (const f of exp.faults) expect(f.pages.length > 0 || f.silent !== undefined, f.name).toBe(true);
  });
  it('names only alerts the shipped rules have, one page per fault', () => {
    const known = shippedAlertNames();
    for (const f of exp.faults) {
      // One page: one alert, or alerts the shipped routing tree sends as one notification (one
      // group): link-down's two ports of one cable.
      const groups = new Set(f.pages.map((p) => notificationGroup({ alertname: p.alertname, severity: SEVERITY.get(p.alertname) ?? '', ...p.labels })));
      expect(groups.size, f.name).toBeLessThanOrEqual(1);
      for (const p of f.pages) expect(known.has(p.alertname), `${f.name} ${p.alertname}`).toBe(true);
    }
  });
  it('fills every substitution it uses', () => {
    const vars = Object.fromEntries(Object.keys(exp.substitutions).map((k) => [k, `<${k}>`]));
    const all = substitute(exp, exp.faults, vars);
    expect(JSON.stringify(all)).not.toMatch(/\$\{/);
    expect(all.find((f) => f.name === 'sender-killed')!.pages[0]!.labels).toEqual({ device: 'rxe0', port: '1', flow_id: '<flow_a>', pid: '<initiator_a_pid>' });
    expect(all.find((f) => f.name === 'unmodelled-traffic')!.pages[0]).toEqual({
      alertname: 'MxlFabricUnmodelledTraffic', labels: { device: 'rxe0', port: '1', direction: 'tx', process: 'mxl-loadgen', pid: '<unknown_pid>' },
    });
  });
  // host.mjs fills a fault's substitutions from its own base (the two exporters' instances) and
  // the KEY=VALUE lines guest.sh answers with (ready, and each injection's done-N): every name
  // must come from one of them, or the fault's page cannot be matched when it runs.
  it('every substitution is one host.mjs knows or guest.sh prints', () => {
    const guest = readFileSync(fileURLToPath(new URL('../rxe/faults/guest.sh', import.meta.url)), 'utf8');
    const host = readFileSync(fileURLToPath(new URL('../rxe/faults/host.mjs', import.meta.url)), 'utf8');
    for (const name of Object.keys(exp.substitutions)) {
      const fromHost = new RegExp(`\\b${name}: a\\.`).test(host);
      const fromGuest = new RegExp(`echo "${name}=`).test(guest);
      expect(fromHost || fromGuest, `${name}: neither host.mjs's base nor an echo "${name}=..." in guest.sh`).toBe(true);
    }
  });
});

describe('bad expectations are errors naming file, fault and field', () => {
  it('the good document passes', () => {
    expect(validateExpectations(good(), F).faults.map((f) => f.name)).toEqual(['link-down', 'sender-killed', 'quiet']);
  });
  const cases: [string, () => unknown, RegExp][] = [
    ['unknown top-level key', bad((d) => { d.fault = []; }), /^x\.yml: top level: field fault: unknown key \(known: version, substitutions, faults\)$/],
    ['wrong version', bad((d) => { d.version = 2; }), /^x\.yml: top level: field version: must be 1, not 2$/],
    ['no faults', bad((d) => { d.faults = []; }), /^x\.yml: top level: field faults: must be a non-empty list$/],
    ['unknown fault key', bad((d) => { fault(d, 0).pagez = []; }), /^x\.yml: fault link-down: field pagez: unknown key/],
    ['a fault without a name', bad((d) => { delete fault(d, 0).name; }), /^x\.yml: fault #1: field name: missing$/],
    ['a name not kebab-case', bad((d) => { fault(d, 0).name = 'Link_Down'; }), /^x\.yml: fault Link_Down: field name: must be kebab-case/],
    ['a name twice', bad((d) => { fault(d, 1).name = 'link-down'; }), /^x\.yml: fault link-down: field name: given twice$/],
    ['no injection', bad((d) => { delete fault(d, 0).injection; }), /^x\.yml: fault link-down: field injection: missing/],
    ['no pages', bad((d) => { delete fault(d, 0).pages; }), /^x\.yml: fault link-down: field pages: missing/],
    ['empty pages without silent', bad((d) => { fault(d, 0).pages = []; }), /^x\.yml: fault link-down: field pages: empty: list the pages, or give `silent:`/],
    ['silent with pages', bad((d) => { fault(d, 0).silent = 'why'; }), /^x\.yml: fault link-down: field silent: given with pages/],
    ['missing alertname', bad((d) => { delete page(d, 0).alertname; }), /^x\.yml: fault link-down: pages\[0\]: field alertname: missing$/],
    ['alertname not shipped', bad((d) => { page(d, 0).alertname = 'MxlFabricPortGone'; }), /^x\.yml: fault link-down: pages\[0\]: field alertname: MxlFabricPortGone is not an alert of the shipped rules$/],
    ['unknown page key', bad((d) => { page(d, 0).label = {}; }), /^x\.yml: fault link-down: pages\[0\]: field label: unknown key \(known: alertname, labels\)$/],
    ['a label value not a string', bad((d) => { page(d, 0).labels = { port: 1 }; }), /^x\.yml: fault link-down: pages\[0\]: field labels\.port: must be a string \(quote it: "1"\)$/],
    ['an unknown substitution', bad((d) => { page(d, 1).labels = { flow_id: '${flow_c}' }; }), /^x\.yml: fault sender-killed: pages\[0\]: field labels\.flow_id: \$\{flow_c\} is not in substitutions \(known: flow_a\)$/],
  ];
  for (const [what, run, message] of cases) it(what, () => expect(run).toThrow(message));

  it('a missing file', () => {
    expect(() => loadExpectations('/nonexistent/expected.yml')).toThrow(/^\/nonexistent\/expected\.yml: cannot read the expectations file \(ENOENT\)$/);
  });
  it('a file that is not YAML', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mfe-faults-'));
    try {
      const f = join(dir, 'bad.yml');
      writeFileSync(f, 'faults: [\n');
      expect(() => loadExpectations(f)).toThrow(new RegExp(`^${f}: not YAML: `));
      writeFileSync(f, stringify(good()));
      expect(loadExpectations(f).file).toBe(f);
    } finally { rmSync(dir, { recursive: true, force: true }); }
  });
  it('a value missing for a substitution when filled in', () => {
    const exp = validateExpectations(good(), F);
    expect(() => substitute(exp, exp.faults, {})).toThrow(/^x\.yml: fault sender-killed: field labels\.flow_id: no value given for \$\{flow_a\}$/);
  });
});

describe('selectFaults', () => {
  const exp = validateExpectations(good(), F);
  it('all of them by default, else the named ones in the order asked', () => {
    expect(selectFaults(exp).map((f) => f.name)).toEqual(['link-down', 'sender-killed', 'quiet']);
    expect(selectFaults(exp, ['sender-killed', 'link-down']).map((f) => f.name)).toEqual(['sender-killed', 'link-down']);
  });
  it('an unknown name is an error listing the known ones', () => {
    expect(() => selectFaults(exp, ['link-down', 'psu-failed'])).toThrow('x.yml: unknown fault psu-failed (known: link-down, sender-killed, quiet)');
  });
  it('the shipped file by name', () => {
    expect(selectFaults(loadExpectations(), ['rate-cap'])[0]!.pages[0]!.alertname).toBe('MxlFabricModelDrift');
    expect(() => selectFaults(loadExpectations(), ['nope'])).toThrow(`${EXPECTED_YML}: unknown fault nope (known: sender-killed, `);
  });
});
