/**
 * One page per cause (issue 32): MxlFabricConnectionDown with process_exited="true" (its
 * connection vanished because its own process exited) on a real Alertmanager with the shipped
 * deploy/alertmanager/alertmanager.yml: the notifications its webhook receives, compared exactly.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { needs, tool } from './tools.js';
import { type Alertmanager, type Webhook, startAlertmanager, startWebhook, summarize } from './alertmanager-lib.js';

const alertmanager = tool('prometheus-alertmanager', 'prometheus-alertmanager');
const crit = (alertname: string, labels: Record<string, string>) =>
  ({ labels: { alertname, severity: 'critical', ...labels }, annotations: { summary: alertname }, startsAt: new Date().toISOString() });

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
