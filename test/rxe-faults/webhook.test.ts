/**
 * test/rxe/faults/webhook.mjs: notifications posted with node's fetch and by a real Alertmanager
 * (the shipped config, test/deploy/alertmanager-lib.ts) are kept with their arrival time, in memory
 * and as JSON lines; a malformed body is answered 400 and kept as an error. The real Alertmanager's
 * firing and resolved notifications are then judged (judge.mjs).
 */
import { describe, it, expect, afterEach } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startWebhook } from '../rxe/faults/webhook.mjs';
import { judgeFault } from '../rxe/faults/judge.mjs';
import { needs, tool } from '../deploy/tools.js';
import { startAlertmanager, type Alertmanager } from '../deploy/alertmanager-lib.js';

const alertmanager = tool('prometheus-alertmanager', 'prometheus-alertmanager');

let dir = '';
let stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.reverse()) await s();
  stops = [];
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = '';
});

const alert = (status: 'firing' | 'resolved', labels: Record<string, string>) => ({
  status, labels, annotations: { summary: 's' }, startsAt: '2026-01-01T00:00:00Z', endsAt: '0001-01-01T00:00:00Z', fingerprint: 'f00d',
});
const notification = (alerts: ReturnType<typeof alert>[]) => ({
  version: '4', receiver: 'mxl-fabric-page', status: alerts.some((a) => a.status === 'firing') ? 'firing' : 'resolved', groupKey: '{}:{}',
  groupLabels: {}, commonLabels: {}, commonAnnotations: {}, externalURL: 'http://am', truncatedAlerts: 0, alerts,
});

describe('webhook', () => {
  it('keeps every alert of a POSTed notification with its arrival time, in memory and in the JSON-lines file', async () => {
    dir = mkdtempSync(join(tmpdir(), 'mfe-hook-'));
    const file = join(dir, 'notifications.jsonl');
    let clock = 1000;
    const hook = await startWebhook({ file, now: () => clock });
    stops.push(hook.stop);
    const a = alert('firing', { alertname: 'MxlFabricPortDown', device: 'rxe0', port: '1' });
    const b = alert('firing', { alertname: 'MxlFabricPortDown', device: 'rxe1', port: '1' });
    const r1 = await fetch(`${hook.url}/mxl-fabric-page`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(notification([a, b])) });
    expect(r1.status).toBe(200);
    clock = 2500;
    const r2 = await fetch(`${hook.url}/mxl-fabric-page`, { method: 'POST', body: JSON.stringify(notification([{ ...a, status: 'resolved' }])) });
    expect(r2.status).toBe(200);
    expect(hook.records.map((r) => [r.at, r.path, r.receiver, r.alert.labels.device, r.alert.status])).toEqual([
      [1000, '/mxl-fabric-page', 'mxl-fabric-page', 'rxe0', 'firing'],
      [1000, '/mxl-fabric-page', 'mxl-fabric-page', 'rxe1', 'firing'],
      [2500, '/mxl-fabric-page', 'mxl-fabric-page', 'rxe0', 'resolved'],
    ]);
    expect(hook.notifications.map((n) => [n.at, n.alerts.length])).toEqual([[1000, 2], [2500, 1]]);
    const lines = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { kind: string; at: number; alert: { fingerprint: string } });
    expect(lines.map((l) => [l.kind, l.at, l.alert.fingerprint])).toEqual([['alert', 1000, 'f00d'], ['alert', 1000, 'f00d'], ['alert', 2500, 'f00d']]);
    expect(hook.errors).toEqual([]);
  });

  it('a malformed body is answered 400 and kept as an error, in memory and in the file', async () => {
    dir = mkdtempSync(join(tmpdir(), 'mfe-hook-'));
    const file = join(dir, 'notifications.jsonl');
    const hook = await startWebhook({ file });
    stops.push(hook.stop);
    const cases: [string, string][] = [
      ['{"version": "4", "alerts": [', 'not JSON'],
      [JSON.stringify({ ...notification([]), version: '3' }), 'version "3", not "4"'],
      [JSON.stringify(notification([{ ...alert('firing', {}) }])), 'alerts[0] has no labels.alertname'],
      [JSON.stringify(notification([{ ...alert('firing', { alertname: 'A' }), status: 'pending' as 'firing' }])), 'alerts[0].status "pending"'],
      [JSON.stringify([1]), 'not a JSON object'],
    ];
    for (const [body, why] of cases) {
      const r = await fetch(hook.url, { method: 'POST', body });
      expect(r.status, body).toBe(400);
      expect(await r.text()).toContain(why);
    }
    expect((await fetch(hook.url)).status).toBe(400); // GET
    expect(hook.records).toEqual([]);
    expect(hook.errors.map((e) => e.error)).toEqual([expect.stringMatching(/^not JSON/), ...cases.slice(1).map(([, w]) => w), 'method GET, not POST']);
    const lines = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { kind: string });
    expect(lines.map((l) => l.kind)).toEqual(Array(6).fill('error'));
  });
});

needs(alertmanager).describe('webhook behind a real Alertmanager (shipped config)', { timeout: 60_000 }, () => {
  it('records its firing and resolved notifications (version 4, fingerprint), and the judge reads them', async () => {
    dir = mkdtempSync(join(tmpdir(), 'mfe-hook-am-'));
    const hook = await startWebhook({ file: join(dir, 'notifications.jsonl') });
    stops.push(hook.stop);
    const am: Alertmanager = await startAlertmanager(alertmanager.require(), dir, hook.url);
    stops.push(am.stop);
    const labels = { alertname: 'MxlFabricPortDown', severity: 'critical', site: 'guest', instance: 'sender:9842', device: 'rxe0', port: '1' };
    const post = (endsAt?: string) => fetch(`${am.base}/api/v2/alerts`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify([{ labels, annotations: { summary: 'rxe0/1 is down' }, startsAt: new Date(Date.now() - 1000).toISOString(), ...(endsAt ? { endsAt } : {}) }]),
    });
    const injectedAt = Date.now();
    expect((await post()).status).toBe(200);
    const waitFor = async (n: number) => {
      const end = Date.now() + 20_000;
      while (Date.now() < end && hook.records.length < n) await new Promise((r) => setTimeout(r, 100));
      expect(hook.records.length, am.output.join('')).toBeGreaterThanOrEqual(n);
    };
    await waitFor(1);
    const undoneAt = Date.now();
    expect((await post(new Date().toISOString())).status).toBe(200);
    await waitFor(2);
    expect(hook.errors).toEqual([]);
    const [firing, resolved] = hook.records;
    expect(firing!.path).toBe('/mxl-fabric-page');
    expect(firing!.alert).toMatchObject({ status: 'firing', labels, annotations: { summary: 'rxe0/1 is down' } });
    expect(firing!.alert.fingerprint).toMatch(/^[0-9a-f]{16}$/);
    expect(resolved!.alert).toMatchObject({ status: 'resolved', fingerprint: firing!.alert.fingerprint });
    expect(hook.notifications[0]).toMatchObject({ version: '4', receiver: 'mxl-fabric-page', status: 'firing', groupLabels: { site: 'guest', alertname: 'MxlFabricPortDown' } });
    const entry = judgeFault({
      fault: { name: 'link-down', injection: 'posted', pages: [{ alertname: 'MxlFabricPortDown', labels: { device: 'rxe0', port: '1' } }] },
      injectedAt, undoneAt, records: hook.records,
    });
    expect(entry).toMatchObject({ extra: [], missing: [], unresolved: [], premature: [] });
    expect(entry.first_page_s).toBeGreaterThan(0);
    expect(entry.resolved_s).toBeGreaterThanOrEqual(0);
  });
});
