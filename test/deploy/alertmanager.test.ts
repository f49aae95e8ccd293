/**
 * deploy/alertmanager/alertmanager.yml: amtool check-config, the routing tree with
 * `amtool config routes test`, and grouping and inhibition on a real Alertmanager: alerts are
 * posted to its API and the notifications its webhook receivers get are compared exactly.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { needs, tool } from './tools.js';
import { ALERTMANAGER_YML, type Alertmanager, type Webhook, startAlertmanager, startWebhook, summarize } from './alertmanager-lib.js';

const amtool = tool('amtool', 'prometheus-alertmanager');
const alertmanager = tool('prometheus-alertmanager', 'prometheus-alertmanager');

const amtoolRun = (args: string[]) => spawnSync(amtool.require(), args, { encoding: 'utf8' });

// labels -> the receiver the routing tree picks
const ROUTES: [labels: string[], receiver: string][] = [
  [['alertname=MxlFabricFlowMissing', 'severity=critical', 'site=studio-a', 'flow_id=f1'], 'mxl-fabric-page'],
  [['alertname=MxlFabricFlowNotReceived', 'severity=critical', 'site=studio-b', 'flow_id=f1'], 'mxl-fabric-page'],
  [['alertname=MxlFabricFlowStalled', 'severity=warning', 'site=studio-a', 'flow_id=f1'], 'mxl-fabric-ticket'],
  [['alertname=MxlFabricPortDown', 'severity=critical', 'site=studio-a', 'instance=h1'], 'mxl-fabric-page'],
  [['alertname=MxlFabricExporterDown', 'severity=critical', 'site=studio-a', 'instance=h1'], 'mxl-fabric-page'],
  [['alertname=MxlFabricSiteSilent', 'severity=critical', 'site=studio-a'], 'mxl-fabric-page'],
  [['alertname=MxlFabricModelDrift', 'severity=warning', 'site=studio-a', 'instance=h1'], 'mxl-fabric-ticket'],
  [['alertname=SomethingElse'], 'mxl-fabric-ticket'],
];

needs(amtool).it('amtool check-config accepts deploy/alertmanager/alertmanager.yml', () => {
  const r = amtoolRun(['check-config', ALERTMANAGER_YML]);
  expect(r.status, r.stdout + r.stderr).toBe(0);
  expect(r.stdout).toMatch(/SUCCESS/);
  // Every inhibit rule of the file, as amtool counts them.
  const rules = (parse(readFileSync(ALERTMANAGER_YML, 'utf8')) as { inhibit_rules: unknown[] }).inhibit_rules.length;
  expect(r.stdout).toContain(` ${rules} inhibit rules`);
});

needs(amtool).describe('amtool config routes test', () => {
  for (const [labels, receiver] of ROUTES) {
    it(`${labels.join(' ')} -> ${receiver}`, () => {
      const r = amtoolRun(['config', 'routes', 'test', `--config.file=${ALERTMANAGER_YML}`, `--verify.receivers=${receiver}`, ...labels]);
      expect(r.status, r.stdout + r.stderr).toBe(0);
      expect(r.stdout.trim()).toBe(receiver);
    });
  }
  it('a wrong expectation fails (the check can fail)', () => {
    const r = amtoolRun(['config', 'routes', 'test', `--config.file=${ALERTMANAGER_YML}`, '--verify.receivers=mxl-fabric-page', 'alertname=MxlFabricModelDrift', 'severity=warning']);
    expect(r.status).not.toBe(0);
  });
});

const alert = (labels: Record<string, string>) => ({ labels, annotations: { summary: labels.alertname! }, startsAt: new Date().toISOString() });
const crit = (alertname: string, more: Record<string, string>) => alert({ alertname, severity: 'critical', ...more });
const port = { device: 'mlx5_0', port: '1' };

needs(alertmanager).describe('grouping and inhibition on a real Alertmanager', { timeout: 60_000 }, () => {
  let dir = '';
  let hook: Webhook | undefined;
  let am: Alertmanager | undefined;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mfe-am-'));
    hook = await startWebhook();
    am = await startAlertmanager(alertmanager.require(), dir, hook.url);
  }, 30_000);
  afterAll(async () => {
    await am?.stop();
    await hook?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('one notification per cause: consequences are inhibited, unrelated alerts are not, flow alerts group per flow and site', async () => {
    const alerts = [
      // s1: the exporter of h1 is down; h1's flow and port alerts are inhibited, h2's flow alert is not
      crit('MxlFabricExporterDown', { site: 's1', instance: 'h1' }),
      crit('MxlFabricFlowMissing', { site: 's1', instance: 'h1', ...port, direction: 'tx', flow_id: 'f1' }),
      crit('MxlFabricPortDown', { site: 's1', instance: 'h1', ...port }),
      crit('MxlFabricFlowMissing', { site: 's1', instance: 'h2', ...port, direction: 'tx', flow_id: 'f9' }),
      // s2: port 1 of h1 is down; its receivers' alert is inhibited, the one on port 2 is not
      crit('MxlFabricPortDown', { site: 's2', instance: 'h1', ...port }),
      crit('MxlFabricFlowNotReceived', { site: 's2', instance: 'h1', ...port, direction: 'rx', flow_id: 'f2' }),
      alert({ alertname: 'MxlFabricModelDrift', severity: 'warning', site: 's2', instance: 'h1', ...port, direction: 'rx' }),
      crit('MxlFabricFlowNotReceived', { site: 's2', instance: 'h1', device: 'mlx5_0', port: '2', direction: 'rx', flow_id: 'f4' }),
      // s3 sends f3 and misses it; its receivers on s3 and s4 are inhibited
      crit('MxlFabricFlowMissing', { site: 's3', instance: 'h1', ...port, direction: 'tx', flow_id: 'f3' }),
      crit('MxlFabricFlowNotReceived', { site: 's3', instance: 'h2', ...port, direction: 'rx', flow_id: 'f3' }),
      crit('MxlFabricFlowNotReceived', { site: 's4', instance: 'h3', ...port, direction: 'rx', flow_id: 'f3' }),
      // s4: two receivers of f5 on one site: one notification for the flow
      crit('MxlFabricFlowNotReceived', { site: 's4', instance: 'h4', ...port, direction: 'rx', flow_id: 'f5' }),
      crit('MxlFabricFlowNotReceived', { site: 's4', instance: 'h5', ...port, direction: 'rx', flow_id: 'f5' }),
      // s5's agent is silent: everything else of s5 is inhibited
      crit('MxlFabricSiteSilent', { site: 's5' }),
      crit('MxlFabricExporterDown', { site: 's5', instance: 'h1' }),
    ];
    const r = await fetch(`${am!.base}/api/v2/alerts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(alerts) });
    expect(r.status).toBe(200);
    const expected = [
      'mxl-fabric-page firing {alertname=MxlFabricExporterDown,site=s1} [MxlFabricExporterDown instance=h1]',
      'mxl-fabric-page firing {flow_id=f9,site=s1} [MxlFabricFlowMissing instance=h2 device=mlx5_0 port=1 flow_id=f9 direction=tx]',
      'mxl-fabric-page firing {alertname=MxlFabricPortDown,site=s2} [MxlFabricPortDown instance=h1 device=mlx5_0 port=1]',
      'mxl-fabric-page firing {flow_id=f4,site=s2} [MxlFabricFlowNotReceived instance=h1 device=mlx5_0 port=2 flow_id=f4 direction=rx]',
      'mxl-fabric-page firing {flow_id=f3,site=s3} [MxlFabricFlowMissing instance=h1 device=mlx5_0 port=1 flow_id=f3 direction=tx]',
      'mxl-fabric-page firing {flow_id=f5,site=s4} [MxlFabricFlowNotReceived instance=h4 device=mlx5_0 port=1 flow_id=f5 direction=rx; MxlFabricFlowNotReceived instance=h5 device=mlx5_0 port=1 flow_id=f5 direction=rx]',
      'mxl-fabric-page firing {alertname=MxlFabricSiteSilent,site=s5} [MxlFabricSiteSilent]',
    ].sort();
    const end = Date.now() + 20_000;
    while (Date.now() < end && hook!.notifications.length < expected.length) await new Promise((res) => setTimeout(res, 200));
    await new Promise((res) => setTimeout(res, 3000)); // anything more would come by now (group_interval 2s)
    expect(hook!.notifications.map((n) => summarize(n)).sort()).toEqual(expected);

    // The inhibited ones are there, suppressed by an inhibition (not lost or unrouted).
    const listed = (await (await fetch(`${am!.base}/api/v2/alerts?inhibited=true`)).json()) as { labels: Record<string, string>; status: { state: string; inhibitedBy: string[] } }[];
    const suppressed = listed.filter((a) => a.status.inhibitedBy.length > 0).map((a) => `${a.labels.site} ${a.labels.alertname} ${a.labels.instance}`).sort();
    expect(suppressed).toEqual([
      's1 MxlFabricFlowMissing h1', 's1 MxlFabricPortDown h1', 's2 MxlFabricFlowNotReceived h1', 's2 MxlFabricModelDrift h1',
      's3 MxlFabricFlowNotReceived h2', 's4 MxlFabricFlowNotReceived h3', 's5 MxlFabricExporterDown h1',
    ]);
  });
});

needs(alertmanager).describe('one page per cause: a connection down because its process exited (issue 32)', { timeout: 60_000 }, () => {
  let dir = '';
  let hook: Webhook | undefined;
  let am: Alertmanager | undefined;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mfe-am-'));
    hook = await startWebhook();
    am = await startAlertmanager(alertmanager.require(), dir, hook.url);
  }, 30_000);
  afterAll(async () => {
    await am?.stop();
    await hook?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the end whose process exited pages alone for the flow; a ConnectionDown without process_exited still pages; two exited ends both page', async () => {
    const down = (site: string, flow_id: string, end: 'sender' | 'receiver', more: Record<string, string> = {}) => crit('MxlFabricConnectionDown', {
      site, flow_id, instance: end,
      ...(end === 'sender'
        ? { device: 'rxe0', port: '1', local: '192.168.77.1:44056', peer: '192.168.77.2:1312', pid: '309' }
        : { device: 'rxe1', port: '1', local: '192.168.77.2:1312', peer: '192.168.77.1:44056', pid: '181' }),
      ...more,
    });
    const exited = { process_exited: 'true' };
    const alerts = [
      // s1, flow A's initiator killed, as measured in the soft-RoCE guest: both ends' connections
      // down, and the flow not received downstream; only the end whose process exited pages
      down('s1', 'fA', 'sender', exited),
      down('s1', 'fA', 'receiver'),
      crit('MxlFabricFlowNotReceived', { site: 's1', instance: 'receiver', device: 'rxe1', port: '1', direction: 'rx', flow_id: 'fA' }),
      crit('MxlFabricFlowConnectionDown', { site: 's1', instance: 'receiver', device: 'rxe1', port: '1', flow_id: 'fA' }),
      // s2: a connection down whose process did not exit, alone: it pages
      down('s2', 'fB', 'receiver'),
      // s3: both ends' processes exited: neither inhibits the other (nor itself)
      down('s3', 'fC', 'sender', exited),
      down('s3', 'fC', 'receiver', exited),
    ];
    const r = await fetch(`${am!.base}/api/v2/alerts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(alerts) });
    expect(r.status).toBe(200);
    const keys = ['instance', 'device', 'flow_id', 'process_exited'];
    const expected = [
      'mxl-fabric-page firing {flow_id=fA,site=s1} [MxlFabricConnectionDown instance=sender device=rxe0 flow_id=fA process_exited=true]',
      'mxl-fabric-page firing {flow_id=fB,site=s2} [MxlFabricConnectionDown instance=receiver device=rxe1 flow_id=fB]',
      'mxl-fabric-page firing {flow_id=fC,site=s3} [MxlFabricConnectionDown instance=receiver device=rxe1 flow_id=fC process_exited=true; MxlFabricConnectionDown instance=sender device=rxe0 flow_id=fC process_exited=true]',
    ].sort();
    const end = Date.now() + 20_000;
    while (Date.now() < end && hook!.notifications.length < expected.length) await new Promise((res) => setTimeout(res, 200));
    await new Promise((res) => setTimeout(res, 3000)); // anything more would come by now (group_interval 2s)
    expect(hook!.notifications.map((n) => summarize(n, keys)).sort()).toEqual(expected);

    const listed = (await (await fetch(`${am!.base}/api/v2/alerts?inhibited=true`)).json()) as { labels: Record<string, string>; status: { inhibitedBy: string[] } }[];
    const suppressed = listed.filter((a) => a.status.inhibitedBy.length > 0).map((a) => `${a.labels.site} ${a.labels.alertname} ${a.labels.instance}`).sort();
    expect(suppressed).toEqual(['s1 MxlFabricConnectionDown receiver', 's1 MxlFabricFlowConnectionDown receiver', 's1 MxlFabricFlowNotReceived receiver']);
  });
});
