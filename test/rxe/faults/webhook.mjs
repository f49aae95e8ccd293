// A webhook receiver for Alertmanager (webhook payload version 4): every alert of every
// notification is kept with the notification's arrival time, in memory and, when a file is given,
// appended to it as one JSON line. A body that is not a notification is answered 400 and kept as an
// error. The faults scenario judges these records (judge.mjs); test/deploy's Alertmanager tests use
// the same server.
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';

/**
 * @typedef {{ status: 'firing' | 'resolved', labels: Record<string, string>, annotations: Record<string, string>, startsAt: string, endsAt: string, fingerprint: string }} WebhookAlert
 * @typedef {{ version: string, receiver: string, status: 'firing' | 'resolved', groupKey: string, groupLabels: Record<string, string>, commonLabels: Record<string, string>, alerts: WebhookAlert[] }} Notification
 * @typedef {{ at: number, path: string, receiver: string, groupKey: string, alert: WebhookAlert }} Record_
 * @typedef {{ at: number, path: string, error: string, body: string }} ErrorRecord
 * @typedef {{ url: string, notifications: (Notification & { at: number, path: string })[], records: Record_[], errors: ErrorRecord[], stop(): Promise<void> }} Webhook
 */

/**
 * Why `body` is not an Alertmanager notification, or undefined when it is one.
 * @param {unknown} body
 * @returns {string | undefined}
 */
export function notificationProblem(body) {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'not a JSON object';
  const n = /** @type {Record<string, unknown>} */ (body);
  if (n.version !== '4') return `version ${JSON.stringify(n.version)}, not "4"`;
  if (n.status !== 'firing' && n.status !== 'resolved') return `status ${JSON.stringify(n.status)}`;
  if (!Array.isArray(n.alerts)) return 'no alerts list';
  for (const [i, a] of n.alerts.entries()) {
    if (typeof a !== 'object' || a === null) return `alerts[${i}] is not an object`;
    if (a.status !== 'firing' && a.status !== 'resolved') return `alerts[${i}].status ${JSON.stringify(a.status)}`;
    if (typeof a.labels !== 'object' || a.labels === null || typeof a.labels.alertname !== 'string') return `alerts[${i}] has no labels.alertname`;
    for (const k of ['startsAt', 'endsAt', 'fingerprint']) if (typeof a[k] !== 'string') return `alerts[${i}].${k} missing`;
  }
  return undefined;
}

/**
 * Starts the receiver on 127.0.0.1 (any free port unless given); every path is accepted, so one
 * server can stand for several receivers (`${url}/${receiver}`).
 * @param {{ file?: string, port?: number, host?: string, now?: () => number }} [opts]
 * @returns {Promise<Webhook>}
 */
export async function startWebhook(opts = {}) {
  const now = opts.now ?? Date.now;
  /** @type {Webhook['notifications']} */
  const notifications = [];
  /** @type {Record_[]} */
  const records = [];
  /** @type {ErrorRecord[]} */
  const errors = [];
  /** @param {object} line */
  const write = (line) => { if (opts.file) appendFileSync(opts.file, `${JSON.stringify(line)}\n`); };
  const server = createServer((req, res) => {
    /** @type {Buffer[]} */
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const at = now();
      const path = req.url ?? '/';
      const text = Buffer.concat(chunks).toString('utf8');
      /** @type {unknown} */
      let body;
      let problem = req.method === 'POST' ? undefined : `method ${req.method}, not POST`;
      if (!problem) {
        try { body = JSON.parse(text); } catch (e) { problem = `not JSON: ${/** @type {Error} */ (e).message}`; }
      }
      problem ??= notificationProblem(body);
      if (problem) {
        const err = { at, path, error: problem, body: text.slice(0, 2000) };
        errors.push(err);
        write({ kind: 'error', ...err });
        res.writeHead(400, { 'content-type': 'text/plain' }).end(`${problem}\n`);
        return;
      }
      const n = /** @type {Notification} */ (body);
      notifications.push({ ...n, at, path });
      for (const alert of n.alerts) {
        const r = { at, path, receiver: n.receiver, groupKey: n.groupKey, alert };
        records.push(r);
        write({ kind: 'alert', ...r });
      }
      res.writeHead(200).end();
    });
  });
  const host = opts.host ?? '127.0.0.1';
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => resolve(undefined));
  });
  const address = /** @type {import('node:net').AddressInfo} */ (server.address());
  return {
    url: `http://${host}:${address.port}`,
    notifications,
    records,
    errors,
    stop: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}
