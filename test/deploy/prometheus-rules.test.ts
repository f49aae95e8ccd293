/** deploy/prometheus: promtool check + unit tests, every alert covered both ways, runbook anchors. */
import { describe, it, expect } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ROOT, tool } from './tools.js';
import { headings } from '../contract/markdown.js';

const PROM = join(ROOT, 'deploy', 'prometheus');
const RULE_FILES = ['rules/recording.yml', 'rules/alerts.yml'].map((f) => join(PROM, f));
const TEST_FILES = readdirSync(join(PROM, 'tests')).filter((f) => f.endsWith('.yml')).map((f) => join(PROM, 'tests', f));
const promtool = tool('promtool', 'prometheus');

interface Rule { alert?: string; record?: string; expr: string; for?: string; labels?: Record<string, string>; annotations?: Record<string, string> }
const rulesOf = (file: string): Rule[] => (parse(readFileSync(file, 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules);
const ALERTS = rulesOf(join(PROM, 'rules', 'alerts.yml')).filter((r) => r.alert);


describe('deploy/prometheus rules', { timeout: 60_000 }, () => {
  it.skipIf(promtool.skip)('promtool check rules accepts both rule files', () => {
    const r = spawnSync(promtool.require(), ['check', 'rules', ...RULE_FILES], { encoding: 'utf8' });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/alerts\.yml[\s\S]*SUCCESS/);
    expect(r.stdout).toMatch(/recording\.yml[\s\S]*SUCCESS/);
  });

  it.skipIf(promtool.skip)('promtool test rules passes every unit test file', () => {
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

  it('every alert has a severity, summary, description with its value, no invented runbook URL and a production for:', () => {
    const required = ['MxlFabricModelDrift', 'MxlFabricPortPredictedOverHeadroom', 'MxlFabricPortMtuBelowModel', 'MxlFabricPortDown', 'MxlFabricPortAbsent',
      'MxlFabricCounterSaturated', 'MxlFabricCounterUnreadable', 'MxlFabricConfigReloadFailed', 'MxlFabricExporterDown'];
    expect(ALERTS.map((a) => a.alert)).toEqual(expect.arrayContaining(required));
    const seconds = (d: string): number => Number(d.slice(0, -1)) * ({ s: 1, m: 60, h: 3600 } as Record<string, number>)[d.slice(-1)]!;
    for (const a of ALERTS) {
      expect(['warning', 'critical'], a.alert).toContain(a.labels?.severity);
      expect(a.annotations?.summary, a.alert).toBeTruthy();
      expect(a.annotations?.description, a.alert).toMatch(/\$value/);
      expect(a.annotations?.runbook_url, `${a.alert}: runbook_url is added at build time (--runbook-base), not invented`).toBeUndefined();
      expect(seconds(a.for ?? '0s'), `${a.alert} for:`).toBeGreaterThanOrEqual(60);
    }
  });

  it("build-prometheusrule.mjs --runbook-base adds runbook_url per alert, each anchor a heading of docs/alerts.md; without it none", async () => {
    const anchors = new Set(headings(readFileSync(join(ROOT, 'docs', 'alerts.md'), 'utf8')).map((h) => h.anchor));
    const { build } = (await import('../../deploy/kubernetes/build-prometheusrule.mjs')) as { build(o?: { runbookBase?: string }): string };
    type Built = { spec: { groups: { rules: Rule[] }[] } };
    const alerts = (text: string): Rule[] => (parse(text.replace(/^#.*\n/gm, '')) as Built).spec.groups.flatMap((g) => g.rules).filter((r) => r.alert);
    const base = 'https://git.example.net/mfe/docs/alerts.md';
    const built = alerts(build({ runbookBase: base }));
    expect(built.map((a) => a.alert)).toEqual(ALERTS.map((a) => a.alert));
    for (const a of built) {
      expect(a.annotations!.runbook_url).toBe(`${base}#${a.alert!.toLowerCase()}`);
      expect([...anchors], a.alert).toContain(a.alert!.toLowerCase());
    }
    expect(alerts(build()).filter((a) => a.annotations?.runbook_url)).toEqual([]);
    const grafana = readFileSync(join(ROOT, 'deploy', 'grafana', 'provisioning', 'alerting', 'mxl-fabric-drift.yml'), 'utf8');
    expect(grafana).not.toMatch(/runbook_url/);
  });

  it('recording rules follow level:metric:operations and every one is unit-tested', () => {
    const records = rulesOf(join(PROM, 'rules', 'recording.yml')).map((r) => r.record!);
    const tested = TEST_FILES.map((f) => readFileSync(f, 'utf8')).join('\n');
    for (const r of records) {
      expect(r).toMatch(/^[a-z_]+:mxl_fabric_[a-z_]+:[a-z_]+$/);
      expect(tested, `${r} has no promql_expr_test`).toContain(`expr: ${r}`);
    }
  });

  it('the example scrape config is valid (promtool check config)', () => {
    if (promtool.skip) return;
    const out = execFileSync(promtool.require(), ['check', 'config', join(PROM, 'scrape-config.yml')], { encoding: 'utf8', cwd: PROM });
    expect(out).toMatch(/SUCCESS/);
  });

  it.skipIf(promtool.skip)('the facility configs are valid: agent.yml in agent mode, central.yml with the shipped rules', () => {
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
