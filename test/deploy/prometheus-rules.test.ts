/** deploy/prometheus: promtool check + unit tests, every alert covered both ways, runbook links and their base. */
import { describe, it, expect } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { needs, ROOT, tool } from './tools.js';
import { headings } from '../contract/markdown.js';

const PROM = join(ROOT, 'deploy', 'prometheus');
const RULE_FILES = ['rules/recording.yml', 'rules/alerts.yml'].map((f) => join(PROM, f));
const TEST_FILES = readdirSync(join(PROM, 'tests')).filter((f) => f.endsWith('.yml')).map((f) => join(PROM, 'tests', f));
const promtool = tool('promtool', 'prometheus');

interface Rule { alert?: string; record?: string; expr: string; for?: string; labels?: Record<string, string>; annotations?: Record<string, string> }
const rulesOf = (file: string): Rule[] => (parse(readFileSync(file, 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules);
const ALERTS = rulesOf(join(PROM, 'rules', 'alerts.yml')).filter((r) => r.alert);
const GRAFANA_RULE = join(ROOT, 'deploy', 'grafana', 'provisioning', 'alerting', 'mxl-fabric-drift.yml');
const runbook = (await import('../../deploy/prometheus/runbook-base.mjs')) as {
  DEFAULT_BASE: string; RULE_FILES: string[]; basesOf(t: string): string[]; rebase(t: string, b: string): string; checkBase(b: string): string | undefined;
};


describe('deploy/prometheus rules', { timeout: 60_000 }, () => {
  needs(promtool).it('promtool check rules accepts both rule files', () => {
    const r = spawnSync(promtool.require(), ['check', 'rules', ...RULE_FILES], { encoding: 'utf8' });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/alerts\.yml[\s\S]*SUCCESS/);
    expect(r.stdout).toMatch(/recording\.yml[\s\S]*SUCCESS/);
  });

  needs(promtool).it('promtool test rules passes every unit test file', () => {
    expect(TEST_FILES.length).toBeGreaterThanOrEqual(2);
    const r = spawnSync(promtool.require(), ['test', 'rules', ...TEST_FILES], { encoding: 'utf8', cwd: ROOT });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout.match(/SUCCESS/g)?.length).toBe(TEST_FILES.length);
  });

  it('the unit tests cover every alert: firing with labels and annotations, and silent', () => {
    const fires = new Map<string, number>();
    const silent = new Map<string, number>();
    for (const f of TEST_FILES) {
      const doc = parse(readFileSync(f, 'utf8')) as { tests: { alert_rule_test?: { alertname: string; exp_alerts?: { exp_annotations?: object }[] }[] }[] };
      for (const t of doc.tests) {
        for (const a of t.alert_rule_test ?? []) {
          const exp = a.exp_alerts ?? [];
          if (exp.length === 0) silent.set(a.alertname, (silent.get(a.alertname) ?? 0) + 1);
          else if (exp.some((e) => e.exp_annotations)) fires.set(a.alertname, (fires.get(a.alertname) ?? 0) + 1);
        }
      }
    }
    const names = ALERTS.map((a) => a.alert!);
    expect(names.length).toBeGreaterThanOrEqual(8);
    for (const n of names) {
      expect(fires.get(n), `${n}: no test where it fires (with exp_annotations)`).toBeGreaterThan(0);
      expect(silent.get(n), `${n}: no test where it stays silent`).toBeGreaterThan(0);
    }
    for (const n of [...fires.keys(), ...silent.keys()]) expect(names, `tests name an unknown alert ${n}`).toContain(n);
  });

  it('every alert has a severity, summary, description with its value, a runbook_url and a production for:', () => {
    const required = ['MxlFabricModelDrift', 'MxlFabricPortPredictedOverHeadroom', 'MxlFabricPortMtuBelowModel', 'MxlFabricPortDown', 'MxlFabricPortAbsent',
      'MxlFabricCounterSaturated', 'MxlFabricCounterUnreadable', 'MxlFabricConfigReloadFailed', 'MxlFabricExporterDown'];
    expect(ALERTS.map((a) => a.alert)).toEqual(expect.arrayContaining(required));
    const seconds = (d: string): number => Number(d.slice(0, -1)) * ({ s: 1, m: 60, h: 3600 } as Record<string, number>)[d.slice(-1)]!;
    for (const a of ALERTS) {
      expect(['warning', 'critical'], a.alert).toContain(a.labels?.severity);
      expect(a.annotations?.summary, a.alert).toBeTruthy();
      expect(a.annotations?.description, a.alert).toMatch(/\$value/);
      expect(a.annotations?.runbook_url, a.alert).toBe(`docs/alerts.md#${a.alert!.toLowerCase()}`);
      expect(seconds(a.for ?? '0s'), `${a.alert} for:`).toBeGreaterThanOrEqual(60);
    }
  });

  it('every alert links to its section of docs/alerts.md, and every alert section there is an alert', () => {
    const sections = headings(readFileSync(join(ROOT, 'docs', 'alerts.md'), 'utf8')).filter((h) => /^MxlFabric/.test(h.text));
    const anchors = new Set(sections.map((h) => h.anchor));
    const grafana = parse(readFileSync(GRAFANA_RULE, 'utf8')) as { groups: { rules: { annotations: Record<string, string> }[] }[] };
    const grafanaUrls = grafana.groups.flatMap((g) => g.rules.map((r) => r.annotations.runbook_url!));
    const urls = [...ALERTS.map((a) => a.annotations!.runbook_url!), ...grafanaUrls];
    expect(grafanaUrls.length).toBe(2); // MxlFabricModelDrift and MxlFabricUnmodelledTraffic, mirrored
    for (const u of urls) {
      const [base, anchor] = u.split('#');
      expect(base, u).toBe(runbook.DEFAULT_BASE);
      expect([...anchors], u).toContain(anchor);
    }
    expect(sections.map((h) => h.text).sort(), 'a section of docs/alerts.md names no shipped alert').toEqual(ALERTS.map((a) => a.alert!).sort());
  });

  it('runbook-base.mjs sets the base once: every runbook_url of both rule files, nothing else', () => {
    const base = 'https://git.example.net/mfe/blob/main/docs/alerts.md';
    for (const file of runbook.RULE_FILES) {
      const text = readFileSync(file, 'utf8');
      expect(runbook.basesOf(text), file).toEqual([runbook.DEFAULT_BASE]);
      const moved = runbook.rebase(text, base);
      expect(runbook.basesOf(moved)).toEqual([base]);
      const changed = moved.split('\n').filter((l, i) => l !== text.split('\n')[i]);
      expect(changed.length).toBe((text.match(/runbook_url:/g) ?? []).length);
      expect(changed.every((l) => new RegExp(`^\\s*runbook_url: ${base}#mxlfabric[a-z]+$`).test(l)), changed.join('\n')).toBe(true);
      expect(runbook.rebase(moved, runbook.DEFAULT_BASE)).toBe(text);
    }
    expect(runbook.checkBase(base)).toBeUndefined();
    for (const bad of ['docs/alerts.md', 'https://x/a#b', 'ftp://x/a', 'https://x/a b']) expect(runbook.checkBase(bad), bad).toMatch(/http\(s\) URL/);
  });

  needs(promtool).it('the rules with another runbook base still pass promtool check rules', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mfe-runbook-'));
    try {
      const file = join(dir, 'alerts.yml');
      writeFileSync(file, runbook.rebase(readFileSync(join(PROM, 'rules', 'alerts.yml'), 'utf8'), 'https://wiki.example.net/mxl/alerts.md'));
      const r = spawnSync(promtool.require(), ['check', 'rules', file], { encoding: 'utf8' });
      expect(r.status, r.stdout + r.stderr).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('build-prometheusrule.mjs keeps the rule files\' runbook_url; --runbook-base gives BASE#<alert> in what it writes', async () => {
    const { build } = (await import('../../deploy/kubernetes/build-prometheusrule.mjs')) as { build(o?: { runbookBase?: string }): string };
    type Built = { spec: { groups: { rules: Rule[] }[] } };
    const alerts = (text: string): Rule[] => (parse(text.replace(/^#.*\n/gm, '')) as Built).spec.groups.flatMap((g) => g.rules).filter((r) => r.alert);
    const base = 'https://git.example.net/mfe/docs/alerts.md';
    const built = alerts(build({ runbookBase: base }));
    expect(built.map((a) => a.alert)).toEqual(ALERTS.map((a) => a.alert));
    for (const a of built) expect(a.annotations!.runbook_url).toBe(`${base}#${a.alert!.toLowerCase()}`);
    for (const a of alerts(build())) expect(a.annotations!.runbook_url).toBe(`docs/alerts.md#${a.alert!.toLowerCase()}`);
  });

  it('recording rules follow level:metric:operations and every one is unit-tested', () => {
    const records = rulesOf(join(PROM, 'rules', 'recording.yml')).map((r) => r.record!);
    const tested = TEST_FILES.map((f) => readFileSync(f, 'utf8')).join('\n');
    for (const r of records) {
      expect(r).toMatch(/^[a-z_]+:mxl_fabric_[a-z_]+:[a-z_]+$/);
      expect(tested, `${r} has no promql_expr_test`).toContain(`expr: ${r}`);
    }
  });

  needs(promtool).it('the example scrape config is valid (promtool check config)', () => {
    const out = execFileSync(promtool.require(), ['check', 'config', join(PROM, 'scrape-config.yml')], { encoding: 'utf8', cwd: PROM });
    expect(out).toMatch(/SUCCESS/);
  });

  needs(promtool).it('the facility configs are valid: agent.yml in agent mode, central.yml with the shipped rules', () => {
    const agent = spawnSync(promtool.require(), ['check', 'config', '--agent', join(PROM, 'agent.yml')], { encoding: 'utf8', cwd: PROM });
    expect(agent.status, agent.stdout + agent.stderr).toBe(0);
    const central = spawnSync(promtool.require(), ['check', 'config', join(PROM, 'central.yml')], { encoding: 'utf8', cwd: PROM });
    expect(central.status, central.stdout + central.stderr).toBe(0);
    expect(central.stdout).toMatch(/2 rule files found/);
    const agentDoc = parse(readFileSync(join(PROM, 'agent.yml'), 'utf8')) as { global: { external_labels: Record<string, string> }; remote_write: { url: string }[]; scrape_configs: { job_name: string }[] };
    expect(agentDoc.global.external_labels.site).toBeTruthy();
    expect(agentDoc.remote_write[0]!.url).toMatch(/\/api\/v1\/write$/);
    expect(agentDoc.scrape_configs.map((s) => s.job_name)).toEqual(['mxl-fabric-exporter']);
  });
});
