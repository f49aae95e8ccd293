/**
 * deploy/grafana: the dashboard's structure (variables, data source references, layer-matched
 * byte comparisons, the per-flow table) and the alert provisioning file's shape. Whether the
 * queries return data is tested against a real Prometheus in prometheus-e2e.test.ts.
 */
import { describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ROOT } from './tools.js';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const dashboard = JSON.parse(readFileSync(join(ROOT, 'deploy', 'grafana', 'dashboard.json'), 'utf8')) as Obj;
const prometheusAlerts: Obj[] = (parse(readFileSync(join(ROOT, 'deploy', 'prometheus', 'rules', 'alerts.yml'), 'utf8')) as Obj).groups.flatMap((g: Obj) => g.rules);
/** The series and recording rules an expression reads (every name with mxl_fabric_ in it). */
const seriesRead = (expr: string) => [...new Set(expr.match(/[a-z_:]*mxl_fabric_[a-z_:]*/g))].sort();
const alerting = parse(readFileSync(join(ROOT, 'deploy', 'grafana', 'provisioning', 'alerting', 'mxl-fabric-drift.yml'), 'utf8')) as Obj;
const panels: Obj[] = dashboard.panels.flatMap((p: Obj) => [p, ...(p.panels ?? [])]);
const dataPanels = panels.filter((p) => p.type !== 'row');
const targets: { panel: Obj; target: Obj }[] = dataPanels.flatMap((panel) => (panel.targets ?? []).map((target: Obj) => ({ panel, target })));

describe('deploy/grafana/dashboard.json', () => {
  it('is a Grafana dashboard model of schemaVersion 39 with a stable uid', () => {
    expect(dashboard.schemaVersion).toBe(39);
    expect(dashboard.uid).toMatch(/^[a-zA-Z0-9_-]{1,40}$/);
    expect(dashboard.title).toBeTruthy();
    const ids = panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const p of panels) {
      expect(p.gridPos.x + p.gridPos.w, `${p.title} gridPos`).toBeLessThanOrEqual(24);
    }
  });

  it('is templated by datasource, instance (host), device and port through label_values', () => {
    const vars = new Map<string, Obj>(dashboard.templating.list.map((v: Obj) => [v.name, v]));
    expect(vars.get('datasource')).toMatchObject({ type: 'datasource', query: 'prometheus' });
    for (const [name, label] of [['instance', 'instance'], ['device', 'device'], ['port', 'port']]) {
      const v = vars.get(name)!;
      expect(v, name).toBeDefined();
      expect(v.type).toBe('query');
      expect(v.datasource.uid).toBe('${datasource}');
      expect(v.query.query).toMatch(new RegExp(`^label_values\\(.+, ${label}\\)$`));
      expect(v.includeAll && v.multi, name).toBe(true);
    }
    // device follows the chosen hosts, port the chosen devices
    expect(vars.get('device')!.query.query).toContain('instance=~"$instance"');
    expect(vars.get('port')!.query.query).toContain('device=~"$device"');
  });

  it('every panel and query uses the datasource variable and filters by the chosen hosts', () => {
    expect(targets.length).toBeGreaterThanOrEqual(20);
    for (const p of dataPanels) expect(p.datasource, p.title).toEqual({ type: 'prometheus', uid: '${datasource}' });
    for (const { panel, target } of targets) {
      expect(target.datasource?.uid, `${panel.title} ${target.refId}`).toBe('${datasource}');
      expect(target.expr, `${panel.title} ${target.refId}`).toContain('instance=~"$instance"');
    }
    const refIds = dataPanels.map((p) => (p.targets ?? []).map((t: Obj) => t.refId));
    for (const ids of refIds) expect(new Set(ids).size).toBe(ids.length);
  });

  it('compares bytes only at matching layers: every predicted-bytes query names a layer or joins on it', () => {
    const byteQueries = targets.filter(({ target }) => /mxl_fabric_(port|flow)_predicted_bytes_per_second/.test(target.expr));
    expect(byteQueries.length).toBeGreaterThan(0);
    for (const { panel, target } of byteQueries) {
      const ok = /layer="[a-z0-9]+"/.test(target.expr) || /on \([^)]*\blayer\b[^)]*\)/.test(target.expr) || /^instance:/.test(target.expr);
      expect(ok, `${panel.title} ${target.refId}: ${target.expr}`).toBe(true);
    }
    // predicted vs measured per direction for bytes and packets, drift, utilisation
    const titles = dataPanels.map((p) => p.title as string);
    for (const t of ['Bytes/s tx', 'Bytes/s rx', 'Packets/s tx', 'Packets/s rx']) expect(titles).toContain(t);
    expect(titles.some((t) => /drift/i.test(t))).toBe(true);
    expect(titles.some((t) => /utilisation/i.test(t))).toBe(true);
  });

  it('has a per-flow table joining flow_info with the flow predictions', () => {
    const table = dataPanels.find((p) => p.type === 'table' && p.title === 'Flows and their predicted cost')!;
    expect(table).toBeDefined();
    const exprs = (table.targets as Obj[]).map((t) => t.expr as string);
    expect(exprs.some((e) => e.includes('mxl_fabric_flow_predicted_bytes_per_second'))).toBe(true);
    expect(exprs.some((e) => e.includes('mxl_fabric_flow_predicted_packets_per_second'))).toBe(true);
    for (const e of exprs) expect(e).toMatch(/group_left \(label, media_type/);
    for (const t of table.targets as Obj[]) expect(t).toMatchObject({ format: 'table', instant: true });
    expect(table.transformations.map((t: Obj) => t.id)).toContain('merge');
  });
});

describe('deploy/grafana/provisioning/alerting/mxl-fabric-drift.yml', () => {
  it('is a unified-alerting provisioning file: query, reduce and threshold, condition on the threshold', () => {
    expect(alerting.apiVersion).toBe(1);
    const rules: Obj[] = alerting.groups.flatMap((g: Obj) => {
      expect(g.name).toBeTruthy();
      expect(g.folder).toBeTruthy();
      expect(g.interval).toMatch(/^\d+[smh]$/);
      return g.rules;
    });
    // The Prometheus alerts it mirrors, by uid: the drift, and the unmodelled traffic the drift holds back for.
    const mirrors: Record<string, string> = { 'mxl-fabric-model-drift': 'MxlFabricModelDrift', 'mxl-fabric-unmodelled-traffic': 'MxlFabricUnmodelledTraffic' };
    expect(rules.map((r) => r.uid)).toEqual(Object.keys(mirrors));
    for (const r of rules) {
      expect(r.uid).toMatch(/^[a-zA-Z0-9_-]{1,40}$/);
      expect(r.for).toMatch(/^\d+[smh]$/);
      const byRef = new Map<string, Obj>(r.data.map((d: Obj) => [d.refId, d]));
      expect(byRef.size).toBe(r.data.length);
      for (const d of r.data) expect(d.model.refId).toBe(d.refId);
      const query = r.data.find((d: Obj) => d.datasourceUid !== '__expr__');
      // A mirror reads what its Prometheus alert reads (the threshold moves to the threshold step).
      const mirrored = prometheusAlerts.find((a) => a.alert === mirrors[r.uid]);
      expect(seriesRead(query.model.expr), r.uid).toEqual(seriesRead(String(mirrored?.expr)));
      const reduce = r.data.find((d: Obj) => d.model.type === 'reduce');
      const threshold = r.data.find((d: Obj) => d.model.type === 'threshold');
      expect(reduce.model.expression).toBe(query.refId);
      expect(threshold.model.expression).toBe(reduce.refId);
      expect(threshold.model.conditions[0].evaluator).toEqual({ type: 'gt', params: [1] });
      expect(r.condition).toBe(threshold.refId);
      expect(r.labels.severity).toBe('warning');
      expect(r.annotations.runbook_url).toBe(`docs/alerts.md#${mirrors[r.uid]!.toLowerCase()}`); // its section of docs/alerts.md
    }
  });
});

describe('deploy/grafana/dashboard.json fabric-health row', () => {
  const dashboard = JSON.parse(readFileSync(join(ROOT, 'deploy', 'grafana', 'dashboard.json'), 'utf8')) as { panels: { type: string; title: string; gridPos: { y: number; h: number }; targets?: { expr: string }[] }[] };
  it('sits right below the drift panels and covers pause, ECN/CNP, transport errors, discards and the flows on the port', () => {
    const titles = dashboard.panels.map((p) => p.title);
    const drift = titles.indexOf('|Drift| / tolerance');
    expect(titles[drift + 1]).toBe('Fabric health: why a port drifts');
    const row = dashboard.panels.slice(drift + 2, drift + 8);
    const exprs = row.flatMap((p) => (p.targets ?? []).map((t) => t.expr)).join('\n');
    for (const family of ['port_pause_duration_seconds_total', 'port_pause_frames_total', 'port_ecn_marked_packets_total', 'port_cnp_ignored_total',
      'port_transport_errors_total', 'port_discards_total', 'flow_info', 'port_pfc_enabled', 'port_vlan_tagged']) expect(exprs).toContain(`mxl_fabric_${family}`);
    for (const e of exprs.split('\n')) expect(e).toContain('device=~"$device",port=~"$port"');
  });
});

describe('deploy/grafana/dashboard.json facility row', () => {
  it('lists the flows sender -> receiver with the state on both ends, from the facility recording rules', () => {
    const titles = dataPanels.map((p) => p.title as string);
    const row = panels.find((p) => p.type === 'row' && /^Facility/.test(p.title));
    expect(row).toBeDefined();
    const table = dataPanels.find((p) => p.title === 'Flows across hosts: sender -> receiver')!;
    expect(table.gridPos.y).toBeGreaterThan(row!.gridPos.y);
    const expr = (table.targets as Obj[]).map((t) => t.expr as string).join('\n');
    expect(expr).toContain('flow_id:mxl_fabric_flow_path:state{rx_instance=~"$instance"}');
    expect(expr).toContain('flow_id:mxl_fabric_flow_path:state{tx_instance=~"$instance"}');
    const order = table.transformations.find((t: Obj) => t.id === 'organize').options.indexByName as Record<string, number>;
    expect(Object.entries(order).sort((a, b) => a[1] - b[1]).map(([k]) => k)).toEqual(
      ['label', 'tx_site', 'tx_instance', 'tx_device', 'tx_port', 'tx_state', 'rx_site', 'rx_instance', 'rx_device', 'rx_port', 'rx_state', 'flow_id']);
    expect(table.fieldConfig.overrides.map((o: Obj) => o.matcher.options)).toEqual(['sender state', 'receiver state']);
    expect(titles).toContain('Grains received / sent');
  });
});
