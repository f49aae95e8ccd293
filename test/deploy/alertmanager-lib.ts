/**
 * A real Alertmanager (Debian prometheus-alertmanager) on loopback with the shipped
 * deploy/alertmanager/alertmanager.yml, its receivers pointed at a webhook server the test runs
 * and its timers shortened; the webhook (test/rxe/faults/webhook.mjs) keeps every notification it
 * receives.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { ROOT, freePort } from './tools.js';
import { startWebhook as startRecorder } from '../rxe/faults/webhook.mjs';

export const ALERTMANAGER_YML = join(ROOT, 'deploy', 'alertmanager', 'alertmanager.yml');

/** Whether `labels` satisfy one Alertmanager matcher string (`name="v"`, `!=`, `=~`, `!~`; anchored). */
export function matches(matcher: string, labels: Record<string, string>): boolean {
  const m = /^([a-zA-Z_]\w*)\s*(=~|!~|!=|=)\s*"(.*)"$/.exec(matcher.trim());
  if (!m) throw new Error(`matcher not understood: ${matcher}`);
  const [, name, op, value] = m as unknown as [string, string, string, string];
  const v = labels[name] ?? '';
  const re = new RegExp(`^(?:${value})$`);
  return op === '=' ? v === value : op === '!=' ? v !== value : op === '=~' ? re.test(v) : !re.test(v);
}

interface Route { receiver?: string; group_by?: string[]; matchers?: string[]; continue?: boolean; routes?: Route[] }

/**
 * The notification group an alert with `labels` lands in under the shipped routing tree: its
 * receiver and the values of its route's group_by, both inherited from the parent where a route
 * leaves them out, the first matching child taken at each level (no route here sets `continue`).
 */
export function notificationGroup(labels: Record<string, string>, file = ALERTMANAGER_YML): string {
  let route = (parse(readFileSync(file, 'utf8')) as { route: Route }).route;
  let receiver = route.receiver ?? '';
  let groupBy = route.group_by ?? [];
  for (;;) {
    const child = route.routes?.find((r) => (r.matchers ?? []).every((m) => matches(m, labels)));
    if (!child) break;
    if (child.continue) throw new Error('notificationGroup does not follow `continue: true`');
    route = child;
    receiver = child.receiver ?? receiver;
    groupBy = child.group_by ?? groupBy;
  }
  return `${receiver} {${groupBy.map((l) => `${l}="${labels[l] ?? ''}"`).join(',')}}`;
}

/** One alert of a webhook notification (Alertmanager's webhook payload, version 4). */
export interface WebhookAlert { status: 'firing' | 'resolved'; labels: Record<string, string>; annotations: Record<string, string> }
export interface Notification {
  receiver: string;
  status: 'firing' | 'resolved';
  groupLabels: Record<string, string>;
  commonLabels: Record<string, string>;
  alerts: WebhookAlert[];
}

export interface Webhook { url: string; notifications: Notification[]; close(): Promise<void> }

/** The faults scenario's webhook receiver (test/rxe/faults/webhook.mjs): one receiver for both. */
export async function startWebhook(): Promise<Webhook> {
  const w = await startRecorder();
  return { url: w.url, notifications: w.notifications as Notification[], close: () => w.stop() };
}

interface AmConfig {
  route: Record<string, unknown>;
  receivers: { name: string; webhook_configs?: { url: string }[] }[];
}

/** The shipped config with each receiver posting to `${webhook}/${receiver name}` and short timers. */
export function testAlertmanagerConfig(webhook: string): string {
  const doc = parse(readFileSync(ALERTMANAGER_YML, 'utf8')) as AmConfig;
  Object.assign(doc.route, { group_wait: '1s', group_interval: '2s', repeat_interval: '1h' });
  for (const r of doc.receivers) for (const w of r.webhook_configs ?? []) w.url = `${webhook}/${r.name}`;
  return stringify(doc);
}

export interface Alertmanager { base: string; proc: ChildProcess; output: string[]; stop(): Promise<void> }

export async function startAlertmanager(bin: string, dir: string, webhook: string): Promise<Alertmanager> {
  writeFileSync(join(dir, 'alertmanager.yml'), testAlertmanagerConfig(webhook));
  const port = await freePort();
  const proc = spawn(bin, [`--config.file=${join(dir, 'alertmanager.yml')}`, `--storage.path=${join(dir, 'am-data')}`,
    `--web.listen-address=127.0.0.1:${port}`, '--cluster.listen-address=', '--log.level=warn'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  proc.stdout!.on('data', (d) => output.push(String(d)));
  proc.stderr!.on('data', (d) => output.push(String(d)));
  const base = `http://127.0.0.1:${port}`;
  const stop = (): Promise<void> => new Promise((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
    const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
    proc.once('exit', () => { clearTimeout(timer); resolve(); });
    proc.kill('SIGTERM');
  });
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(`${base}/-/ready`)).ok) return { base, proc, output, stop };
    } catch { /* starting */ }
    await new Promise((r) => setTimeout(r, 200));
  }
  await stop();
  throw new Error(`alertmanager did not become ready\n${output.join('')}`);
}

/** What the test compares: receiver, group labels and the alerts' names and key labels, sorted. */
export function summarize(n: Notification, keys: readonly string[] = ['instance', 'device', 'port', 'flow_id', 'direction']): string {
  const group = Object.entries(n.groupLabels).sort().map(([k, v]) => `${k}=${v}`).join(',');
  const alerts = n.alerts.map((a) => [a.labels.alertname, ...keys.filter((k) => a.labels[k] !== undefined).map((k) => `${k}=${a.labels[k]}`)].join(' ')).sort();
  return `${n.receiver} ${n.status} {${group}} [${alerts.join('; ')}]`;
}
