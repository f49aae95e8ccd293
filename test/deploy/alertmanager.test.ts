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
import { needs, ROOT, sleep, tool } from './tools.js';
import { ALERTMANAGER_YML, type Alertmanager, type Webhook, matches, notificationGroup, startAlertmanager, startWebhook, summarize } from './alertmanager-lib.js';

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
  [['alertname=MxlFabricUnmodelledTraffic', 'severity=warning', 'site=studio-a', 'instance=h1', 'pid=4242', 'process=mxl-loadgen'], 'mxl-fabric-ticket'],
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

// An alert that matches both the source and the target matchers of one inhibit rule is held back
// by any alert of the source side alone (Alertmanager excludes only alerts that match both sides
// from inhibiting it): a cause could hide another cause. No shipped alert may do that.
interface InhibitRule { source_matchers: string[]; target_matchers: string[]; equal?: string[] }
const SHIPPED_ALERTS = (parse(readFileSync(join(ROOT, 'deploy', 'prometheus', 'rules', 'alerts.yml'), 'utf8')) as { groups: { rules: { alert?: string }[] }[] })
  .groups.flatMap((g) => g.rules).flatMap((r) => (r.alert ? [r.alert] : []));
/** Every shipped alert name, with no direction, tx and rx, that matches both sides of `rule`. */
const twoSided = (rule: InhibitRule): string[] => SHIPPED_ALERTS.flatMap((alertname) => [{}, { direction: 'tx' }, { direction: 'rx' }]
  .map((more): Record<string, string> => ({ alertname, ...more }))
  .filter((l) => rule.source_matchers.every((m) => matches(m, l)) && rule.target_matchers.every((m) => matches(m, l)))
  .map((l) => Object.values(l).join(' ')));

describe('notificationGroup (the routing tree read by the faults expectations test)', () => {
  it('groups by site and alertname, flows by site and flow_id, as amtool routes them to receivers', () => {
    const g = (labels: Record<string, string>) => notificationGroup(labels);
    expect(g({ alertname: 'MxlFabricPortDown', severity: 'critical', site: 's', instance: 'h1', device: 'rxe0' }))
      .toBe(g({ alertname: 'MxlFabricPortDown', severity: 'critical', site: 's', instance: 'h2', device: 'rxe1' }));
    expect(g({ alertname: 'MxlFabricPortDown', severity: 'critical', site: 's' })).toBe('mxl-fabric-page {site="s",alertname="MxlFabricPortDown"}');
    expect(g({ alertname: 'MxlFabricFlowStalled', severity: 'warning', site: 's', flow_id: 'f1' })).toBe('mxl-fabric-ticket {site="s",flow_id="f1"}');
    expect(g({ alertname: 'MxlFabricFlowMissing', severity: 'critical', site: 's', flow_id: 'f1' })).toBe('mxl-fabric-page {site="s",flow_id="f1"}');
    expect(g({ alertname: 'MxlFabricModelDrift', severity: 'warning', site: 's' })).not.toBe(g({ alertname: 'MxlFabricUnmodelledTraffic', severity: 'warning', site: 's' }));
  });
});

describe('inhibit rules', () => {
  it('no shipped alert matches both the source and the target of one rule', () => {
    const rules = (parse(readFileSync(ALERTMANAGER_YML, 'utf8')) as { inhibit_rules: InhibitRule[] }).inhibit_rules;
    expect(SHIPPED_ALERTS).toContain('MxlFabricFlowStalled');
    for (const [i, rule] of rules.entries()) expect(twoSided(rule), `inhibit_rules[${i}]`).toEqual([]);
  });
  it('the check finds one (a FlowStalled tx as a target of its own rule)', () => {
    expect(twoSided({ source_matchers: ['alertname=~"MxlFabricFlow(Missing|Stalled)"', 'direction="tx"'], target_matchers: ['alertname=~"MxlFabricFlow(NotReceived|Stalled|Drift)"'] }))
      .toEqual(['MxlFabricFlowStalled tx']);
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

const warn = (alertname: string, more: Record<string, string>) => alert({ alertname, severity: 'warning', ...more });
const KEYS = ['instance', 'device', 'port', 'flow_id', 'direction', 'quantity'] as const;
const named = (l: Record<string, string>): string => [l.site, l.alertname, ...KEYS.filter((k) => l[k] !== undefined).map((k) => `${k}=${l[k]}`)].join(' ');

// One page per cause (issue 32: the faults of test/rxe/faults/expected.yml, whose notes name the
// inhibitions below). Each test posts a cause with its consequences on sites of its own (a prefix)
// and flow ids of its own, and compares what reaches the webhook from those sites.
needs(alertmanager).describe('one page per cause on a real Alertmanager: the show-day faults (issue 32)', { timeout: 60_000 }, () => {
  let dir = '';
  let hook: Webhook | undefined;
  let am: Alertmanager | undefined;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mfe-am-faults-'));
    hook = await startWebhook();
    am = await startAlertmanager(alertmanager.require(), dir, hook.url);
  }, 30_000);
  afterAll(async () => {
    await am?.stop();
    await hook?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /**
   * Posts `alerts` (every one on a site starting with `prefix`); the notifications of those sites
   * must be `pages` (summarize) and the alerts Alertmanager holds as inhibited `held` (site,
   * alertname and key labels): held back, not lost or unrouted.
   */
  async function onePagePerCause(prefix: string, alerts: ReturnType<typeof alert>[], pages: string[], held: string[]): Promise<void> {
    expect(alerts.every((a) => a.labels.site?.startsWith(prefix))).toBe(true);
    const r = await fetch(`${am!.base}/api/v2/alerts`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(alerts) });
    expect(r.status).toBe(200);
    const received = () => hook!.notifications.filter((n) => n.groupLabels.site?.startsWith(prefix)).map((n) => summarize(n, KEYS)).sort();
    const end = Date.now() + 20_000;
    while (Date.now() < end && received().length < pages.length) await sleep(200);
    await sleep(3000); // anything more would come by now (group_interval 2s)
    expect(received()).toEqual([...pages].sort());
    const listed = (await (await fetch(`${am!.base}/api/v2/alerts?inhibited=true`)).json()) as { labels: Record<string, string>; status: { inhibitedBy: string[] } }[];
    const mine = listed.filter((a) => a.labels.site?.startsWith(prefix));
    expect(mine.length, 'every posted alert is at Alertmanager').toBe(alerts.length);
    expect(mine.filter((a) => a.status.inhibitedBy.length > 0).map((a) => named(a.labels)).sort()).toEqual([...held].sort());
  }

  it('link-down, rxe-deleted: PortDown or PortAbsent holds back the transport and MTU alerts of its port; TransportRetries without one still pages', async () => {
    const a = { site: 'pd-a', instance: 'h1', ...port };
    const b = { site: 'pd-b', instance: 'h1', device: 'rxe0', port: '1' };
    await onePagePerCause('pd-', [
      // the link of h1 mlx5_0/1 is down: QPs retry and give up, the port's active MTU reads low
      crit('MxlFabricPortDown', a),
      crit('MxlFabricTransportRetriesExceeded', a),
      warn('MxlFabricTransportRetries', a),
      warn('MxlFabricPortMtuBelowModel', a),
      // rxe0 deleted: the QPs on it give up
      warn('MxlFabricPortAbsent', b),
      crit('MxlFabricTransportRetriesExceeded', b),
      // a lossy port 1 (no port down there) while port 2 of the same host is down
      warn('MxlFabricTransportRetries', { site: 'pd-c', instance: 'h1', ...port }),
      crit('MxlFabricPortDown', { site: 'pd-c', instance: 'h1', device: 'mlx5_0', port: '2' }),
      crit('MxlFabricTransportRetriesExceeded', { site: 'pd-c', instance: 'h2', device: 'mlx5_0', port: '2' }),
    ], [
      'mxl-fabric-page firing {alertname=MxlFabricPortDown,site=pd-a} [MxlFabricPortDown instance=h1 device=mlx5_0 port=1]',
      'mxl-fabric-ticket firing {alertname=MxlFabricPortAbsent,site=pd-b} [MxlFabricPortAbsent instance=h1 device=rxe0 port=1]',
      'mxl-fabric-ticket firing {alertname=MxlFabricTransportRetries,site=pd-c} [MxlFabricTransportRetries instance=h1 device=mlx5_0 port=1]',
      'mxl-fabric-page firing {alertname=MxlFabricPortDown,site=pd-c} [MxlFabricPortDown instance=h1 device=mlx5_0 port=2]',
      'mxl-fabric-page firing {alertname=MxlFabricTransportRetriesExceeded,site=pd-c} [MxlFabricTransportRetriesExceeded instance=h2 device=mlx5_0 port=2]',
    ], [
      'pd-a MxlFabricTransportRetriesExceeded instance=h1 device=mlx5_0 port=1',
      'pd-a MxlFabricTransportRetries instance=h1 device=mlx5_0 port=1',
      'pd-a MxlFabricPortMtuBelowModel instance=h1 device=mlx5_0 port=1',
      'pd-b MxlFabricTransportRetriesExceeded instance=h1 device=rxe0 port=1',
    ]);
  });

  it('writer-stopped: a flow missing or stalled at its sender holds back its receivers\' NotReceived and Stalled and the flow\'s drift anywhere; a FlowStalled tx alone still pages', async () => {
    const sender = { site: 'fs-a', instance: 'h1', ...port };
    const receiver = { site: 'fs-b', instance: 'h2', device: 'rxe1', port: '1', direction: 'rx' };
    await onePagePerCause('fs-', [
      // fs-f1's writer stopped on h1 (fs-a): its target on h2 (fs-b) waits, both ends drift
      warn('MxlFabricFlowStalled', { ...sender, direction: 'tx', flow_id: 'fs-f1' }),
      warn('MxlFabricFlowStalled', { ...receiver, flow_id: 'fs-f1' }),
      crit('MxlFabricFlowNotReceived', { ...receiver, instance: 'h3', flow_id: 'fs-f1' }),
      warn('MxlFabricFlowDrift', { ...sender, direction: 'tx', flow_id: 'fs-f1', quantity: 'packets' }),
      warn('MxlFabricFlowDrift', { ...receiver, flow_id: 'fs-f1', quantity: 'packets' }),
      // fs-f2 missing at its sender: the receiver's drift is held back too
      crit('MxlFabricFlowMissing', { ...sender, direction: 'tx', flow_id: 'fs-f2' }),
      warn('MxlFabricFlowDrift', { ...receiver, flow_id: 'fs-f2', quantity: 'packets' }),
      // fs-f3 stalled at its sender, nothing else: it pages (a FlowStalled tx is never a target)
      warn('MxlFabricFlowStalled', { ...sender, instance: 'h4', direction: 'tx', flow_id: 'fs-f3' }),
      // fs-f4: stalled and drifting on a receiver whose sender raises nothing: both page
      warn('MxlFabricFlowStalled', { ...receiver, flow_id: 'fs-f4' }),
      warn('MxlFabricFlowDrift', { ...receiver, flow_id: 'fs-f4', quantity: 'packets' }),
    ], [
      'mxl-fabric-ticket firing {flow_id=fs-f1,site=fs-a} [MxlFabricFlowStalled instance=h1 device=mlx5_0 port=1 flow_id=fs-f1 direction=tx]',
      'mxl-fabric-page firing {flow_id=fs-f2,site=fs-a} [MxlFabricFlowMissing instance=h1 device=mlx5_0 port=1 flow_id=fs-f2 direction=tx]',
      'mxl-fabric-ticket firing {flow_id=fs-f3,site=fs-a} [MxlFabricFlowStalled instance=h4 device=mlx5_0 port=1 flow_id=fs-f3 direction=tx]',
      'mxl-fabric-ticket firing {flow_id=fs-f4,site=fs-b} [MxlFabricFlowDrift instance=h2 device=rxe1 port=1 flow_id=fs-f4 direction=rx quantity=packets; MxlFabricFlowStalled instance=h2 device=rxe1 port=1 flow_id=fs-f4 direction=rx]',
    ], [
      'fs-b MxlFabricFlowStalled instance=h2 device=rxe1 port=1 flow_id=fs-f1 direction=rx',
      'fs-b MxlFabricFlowNotReceived instance=h3 device=rxe1 port=1 flow_id=fs-f1 direction=rx',
      'fs-a MxlFabricFlowDrift instance=h1 device=mlx5_0 port=1 flow_id=fs-f1 direction=tx quantity=packets',
      'fs-b MxlFabricFlowDrift instance=h2 device=rxe1 port=1 flow_id=fs-f1 direction=rx quantity=packets',
      'fs-b MxlFabricFlowDrift instance=h2 device=rxe1 port=1 flow_id=fs-f2 direction=rx quantity=packets',
    ]);
  });

  it('packet-loss: TransportRetries holds back the model and flow drift of its port (retransmissions inflate the rates); not those of another port or host', async () => {
    const lossy = { site: 'tr-a', instance: 'h1', ...port };
    await onePagePerCause('tr-', [
      warn('MxlFabricTransportRetries', lossy),
      warn('MxlFabricModelDrift', { ...lossy, direction: 'tx', quantity: 'bytes' }),
      warn('MxlFabricModelDrift', { ...lossy, direction: 'rx', quantity: 'packets' }),
      warn('MxlFabricFlowDrift', { ...lossy, direction: 'tx', flow_id: 'tr-f1', quantity: 'packets' }),
      // drift on port 2 of the host and on port 1 of another host: not this loss
      warn('MxlFabricModelDrift', { ...lossy, port: '2', direction: 'tx', quantity: 'bytes' }),
      warn('MxlFabricFlowDrift', { ...lossy, instance: 'h2', direction: 'rx', flow_id: 'tr-f2', quantity: 'packets' }),
    ], [
      'mxl-fabric-ticket firing {alertname=MxlFabricTransportRetries,site=tr-a} [MxlFabricTransportRetries instance=h1 device=mlx5_0 port=1]',
      'mxl-fabric-ticket firing {alertname=MxlFabricModelDrift,site=tr-a} [MxlFabricModelDrift instance=h1 device=mlx5_0 port=2 direction=tx quantity=bytes]',
      'mxl-fabric-ticket firing {flow_id=tr-f2,site=tr-a} [MxlFabricFlowDrift instance=h2 device=mlx5_0 port=1 flow_id=tr-f2 direction=rx quantity=packets]',
    ], [
      'tr-a MxlFabricModelDrift instance=h1 device=mlx5_0 port=1 direction=tx quantity=bytes',
      'tr-a MxlFabricModelDrift instance=h1 device=mlx5_0 port=1 direction=rx quantity=packets',
      'tr-a MxlFabricFlowDrift instance=h1 device=mlx5_0 port=1 flow_id=tr-f1 direction=tx quantity=packets',
    ]);
  });

  it('mtu-lowered: PortMtuBelowModel holds back the drift and transport alerts of its port; not those of another port', async () => {
    const low = { site: 'mtu-a', instance: 'h1', device: 'rxe0', port: '1' };
    await onePagePerCause('mtu-', [
      warn('MxlFabricPortMtuBelowModel', low),
      warn('MxlFabricModelDrift', { ...low, direction: 'tx', quantity: 'packets' }),
      warn('MxlFabricFlowDrift', { ...low, direction: 'tx', flow_id: 'mtu-f1', quantity: 'packets' }),
      warn('MxlFabricTransportRetries', low),
      crit('MxlFabricTransportRetriesExceeded', low),
      // the receiving end's port has its own MTU: its drift is not held back by rxe0's
      warn('MxlFabricModelDrift', { ...low, instance: 'h2', device: 'rxe1', direction: 'rx', quantity: 'packets' }),
      // a low MTU and the drift it causes without retransmissions (the QPs were restarted)
      warn('MxlFabricPortMtuBelowModel', { site: 'mtu-b', instance: 'h3', ...port }),
      warn('MxlFabricModelDrift', { site: 'mtu-b', instance: 'h3', ...port, direction: 'rx', quantity: 'packets' }),
      warn('MxlFabricFlowDrift', { site: 'mtu-b', instance: 'h3', ...port, direction: 'rx', flow_id: 'mtu-f2', quantity: 'packets' }),
    ], [
      'mxl-fabric-ticket firing {alertname=MxlFabricPortMtuBelowModel,site=mtu-a} [MxlFabricPortMtuBelowModel instance=h1 device=rxe0 port=1]',
      'mxl-fabric-ticket firing {alertname=MxlFabricPortMtuBelowModel,site=mtu-b} [MxlFabricPortMtuBelowModel instance=h3 device=mlx5_0 port=1]',
      'mxl-fabric-ticket firing {alertname=MxlFabricModelDrift,site=mtu-a} [MxlFabricModelDrift instance=h2 device=rxe1 port=1 direction=rx quantity=packets]',
    ], [
      'mtu-a MxlFabricModelDrift instance=h1 device=rxe0 port=1 direction=tx quantity=packets',
      'mtu-a MxlFabricFlowDrift instance=h1 device=rxe0 port=1 flow_id=mtu-f1 direction=tx quantity=packets',
      'mtu-a MxlFabricTransportRetries instance=h1 device=rxe0 port=1',
      'mtu-a MxlFabricTransportRetriesExceeded instance=h1 device=rxe0 port=1',
      'mtu-b MxlFabricModelDrift instance=h3 device=mlx5_0 port=1 direction=rx quantity=packets',
      'mtu-b MxlFabricFlowDrift instance=h3 device=mlx5_0 port=1 flow_id=mtu-f2 direction=rx quantity=packets',
    ]);
  });

  it('unmodelled-traffic: UnmodelledTraffic is a ticket of its own (ModelDrift of its port holds back in the rule, drift.test.yml); ExporterDown holds back its host\'s', async () => {
    const conn = { device: 'rxe0', port: '1', direction: 'tx', local: '192.168.77.1:51234', peer: '192.168.77.2:7490', process: 'mxl-loadgen' };
    await onePagePerCause('ut-', [
      // ut-a: the loadgen's host; ut-b: a host whose exporter cannot be scraped meanwhile
      warn('MxlFabricUnmodelledTraffic', { site: 'ut-a', instance: 'h1', ...conn, pid: '4242' }),
      crit('MxlFabricExporterDown', { site: 'ut-b', instance: 'h2' }),
      warn('MxlFabricUnmodelledTraffic', { site: 'ut-b', instance: 'h2', ...conn, pid: '4243' }),
    ], [
      'mxl-fabric-ticket firing {alertname=MxlFabricUnmodelledTraffic,site=ut-a} [MxlFabricUnmodelledTraffic instance=h1 device=rxe0 port=1 direction=tx]',
      'mxl-fabric-page firing {alertname=MxlFabricExporterDown,site=ut-b} [MxlFabricExporterDown instance=h2]',
    ], [
      'ut-b MxlFabricUnmodelledTraffic instance=h2 device=rxe0 port=1 direction=tx',
    ]);
  });

  it('domain-unreadable: DomainUnreadable holds back FlowMissing and FlowStalled of its host; not those of another host', async () => {
    const h1 = { site: 'dom-a', instance: 'h1' };
    await onePagePerCause('dom-', [
      warn('MxlFabricDomainUnreadable', { ...h1, domain: '/dev/shm/mxl' }),
      crit('MxlFabricFlowMissing', { ...h1, ...port, direction: 'tx', flow_id: 'dom-f1' }),
      warn('MxlFabricFlowStalled', { ...h1, ...port, direction: 'tx', flow_id: 'dom-f2' }),
      crit('MxlFabricFlowMissing', { site: 'dom-a', instance: 'h2', ...port, direction: 'tx', flow_id: 'dom-f3' }),
    ], [
      'mxl-fabric-ticket firing {alertname=MxlFabricDomainUnreadable,site=dom-a} [MxlFabricDomainUnreadable instance=h1]',
      'mxl-fabric-page firing {flow_id=dom-f3,site=dom-a} [MxlFabricFlowMissing instance=h2 device=mlx5_0 port=1 flow_id=dom-f3 direction=tx]',
    ], [
      'dom-a MxlFabricFlowMissing instance=h1 device=mlx5_0 port=1 flow_id=dom-f1 direction=tx',
      'dom-a MxlFabricFlowStalled instance=h1 device=mlx5_0 port=1 flow_id=dom-f2 direction=tx',
    ]);
  });
});
