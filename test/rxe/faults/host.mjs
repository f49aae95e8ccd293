// The host side of the faults scenario (issue 32, docs/faults.md). A real Prometheus scrapes the
// two guest exporters and evaluates the shipped rules scaled by FACTOR (scale.mjs); a real
// Alertmanager routes their alerts with the shipped config (inhibitions as shipped, timers scaled)
// to the recording webhook. For each fault: a clean baseline (nothing firing), the guest injects
// it (cmd-N / done-N files, guest.sh), the run waits until its expected pages arrive or BOUND
// passes, then asks for the undo and waits until every page that fired is resolved. Writes
// OUT/faults/report.json and fails on any extra, missing, unresolved or premature page or series gap.
//
//   node test/rxe/faults/host.mjs --out DIR --exporter HOST:PORT   (RXE_SECOND_EXPORTER=HOST:PORT)
//   FAULTS=sender-killed,packet-loss   only these faults, in this order (default: DEFAULT_FAULTS)
//   FAULTS_FACTOR=10                   the time scale
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort, sleep, startPrometheus } from '../lib/prometheus.mjs';
import { loadExpectations, selectFaults, substitute } from './expectations.mjs';
import { buildReport, judgeFault, matches } from './judge.mjs';
import { seriesGaps } from './gaps.mjs';
import { restartSpikes } from './restart.mjs';
import { writeScaled, checkFactor, pageDelayMs } from './scale.mjs';
import { startWebhook } from './webhook.mjs';

// The faults a run without FAULTS takes, in this order: every fault of expected.yml (checked at
// start). Each starts from a clean baseline, so the order only spreads the slow undos out.
export const DEFAULT_FAULTS = [
  'config-reload-refused', 'exporter-restarted', 'writer-stopped', 'writer-killed', 'packet-loss', 'sender-killed',
  'prometheus-restarted', 'target-killed', 'rate-cap', 'unmodelled-traffic', 'link-down', 'rxe-deleted',
  'mtu-lowered', 'domain-unreadable',
];
const SCRAPE_SECONDS = 3;
const BOUND_S = Number(process.env.FAULTS_BOUND_SECONDS ?? 150);
const RESOLVE_S = Number(process.env.FAULTS_RESOLVE_SECONDS ?? 180);
// After the expected pages came: long enough for a page of the same cause from the same
// evaluation to be routed too (scaled group_wait and a few evaluations).
const SETTLE_S = 10;
// A fault that must give no page (exporter-restarted) is held as long as a rate invented from it
// would take to page: the alerts of expected.yml's `silent` (ModelDrift, FlowDrift and
// TransportRetries), their longest scaled for: and group_wait, and SETTLE_S more.
const FALSE_RATE_ALERTS = ['MxlFabricModelDrift', 'MxlFabricFlowDrift', 'MxlFabricTransportRetries'];
// The guest runs the scenarios before this one first (run.sh starts host sides in turn).
const GUEST_S = 3000;

const log = (m) => console.error(`faults-host: ${m}`);

function args() {
  const { values } = parseArgs({ options: { out: { type: 'string' }, exporter: { type: 'string' } } });
  if (!values.out || !values.exporter) throw new Error('usage: host.mjs --out DIR --exporter HOST:PORT');
  const second = process.env.RXE_SECOND_EXPORTER;
  if (!second) throw new Error('RXE_SECOND_EXPORTER (the receiving end\'s exporter) is not set');
  return { out: values.out, sender: values.exporter, receiver: second };
}

/** KEY=VALUE lines after the first line of a guest answer. */
function parseAnswer(text) {
  const [status = '', ...rest] = text.split('\n');
  const vars = {};
  for (const line of rest) {
    const m = /^([a-z_]+)=(.*)$/.exec(line);
    if (m) vars[m[1]] = m[2];
  }
  return { ok: status === 'ok', status, vars };
}

class Guest {
  constructor(out) { this.out = out; this.n = 0; }
  ended() { return existsSync(join(this.out, 'guest-ended')); }
  /**
   * The guest's answer in file `name`, once whole: it ends with a line "." (guest.sh `answer`).
   * The file crosses a 9p share, where the host can see it before all of it is written (a first
   * run read an empty `done-5` and took the injection for failed).
   */
  async waitFile(name, seconds) {
    const file = join(this.out, name);
    for (let i = 0; i < seconds * 5; i++) {
      const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
      if (text.endsWith('\n.\n')) return text.slice(0, -2);
      if (this.ended()) throw new Error(`the guest ended before ${name}`);
      await sleep(200);
    }
    throw new Error(`no ${name} from the guest within ${seconds} s`);
  }
  /** Sends "VERB NAME" and waits for the guest's answer; resolves { ok, status, vars, at }. */
  async command(line, seconds = 300) {
    this.n += 1;
    const sentAt = Date.now();
    const tmp = join(this.out, `.cmd-${this.n}`);
    writeFileSync(tmp, `${line}\n`);
    renameSync(tmp, join(this.out, `cmd-${this.n}`));
    const answer = parseAnswer(await this.waitFile(`done-${this.n}`, seconds));
    return { ...answer, sentAt, at: Date.now() };
  }
}

function spawnAlertmanager(dir, config, port) {
  const proc = spawn('prometheus-alertmanager', [`--config.file=${config}`, `--storage.path=${join(dir, 'am-data')}`,
    `--web.listen-address=127.0.0.1:${port}`, '--cluster.listen-address=', '--log.level=warn'], { stdio: ['ignore', 'ignore', 'pipe'] });
  proc.stderr.on('data', (d) => writeFileSync(join(dir, 'alertmanager.log'), d, { flag: 'a' }));
  return proc;
}

/**
 * Both ends run in one guest, so each exporter also finds the other end's device (it measures
 * every RDMA port it finds, docs/flows-and-domains.md). Two hosts would not: each target keeps only
 * the series of its own device (series without a device label are kept).
 */
export function oneHostEach({ sender, receiver }) {
  const esc = (s) => s.replace(/[.]/g, '\\.');
  return [{ source_labels: ['instance', 'device'], regex: `${esc(sender)};rxe1|${esc(receiver)};rxe0`, action: 'drop' }];
}

async function waitReady(base, what) {
  for (let i = 0; i < 150; i++) {
    try { if ((await fetch(`${base}/-/ready`)).ok) return; } catch { /* starting */ }
    await sleep(200);
  }
  throw new Error(`${what} did not become ready`);
}

/** Pages that fired since `from` and whose last notification is not resolved. */
function openPages(records, from) {
  const last = new Map();
  for (const r of records) if (r.at >= from) last.set(JSON.stringify(r.alert.labels), r.alert.status);
  return [...last.entries()].filter(([, s]) => s === 'firing').map(([k]) => JSON.parse(k));
}

/** Alerts Prometheus holds (firing or pending) and targets not up: what stops a clean baseline. */
async function notClean(prom, hook, from) {
  const alerts = (await prom.query('ALERTS')).map((s) => s.labels);
  const down = (await prom.query('up{job="mxl-fabric-exporter"} != 1')).map((s) => ({ alertname: '(target down)', ...s.labels }));
  const targets = await prom.query('up{job="mxl-fabric-exporter"}');
  const missing = targets.length < 2 ? [{ alertname: '(targets not scraped yet)' }] : [];
  return [...alerts, ...down, ...missing, ...openPages(hook.records, from)];
}

/**
 * Until no alert fires or is pending in Prometheus, both targets are up and no page is open at the
 * webhook, for `quiet` s in a row.
 */
async function cleanBaseline(prom, hook, from, seconds, quiet = 6) {
  let since;
  let last = [];
  for (let t = 0; t < seconds; t++) {
    last = await notClean(prom, hook, from);
    if (last.length === 0) {
      since ??= Date.now();
      if (Date.now() - since >= quiet * 1000) return { ok: true, open: [] };
    } else since = undefined;
    await sleep(1000);
  }
  return { ok: false, open: last };
}

async function runFault(ctx, fault) {
  const { guest, hook, prom, exp, base } = ctx;
  log(`${fault.name}: injecting (${fault.injection})`);
  const inj = await guest.command(`inject ${fault.name}`);
  const vars = { ...base, ...inj.vars };
  const [expected] = substitute(exp, [fault], vars);
  const problems = inj.ok ? [] : [inj.status];
  // The fault starts when the guest is asked (an injection that reconnects MXL takes seconds).
  const arrived = () => expected.pages.every((p) => hook.records.some((r) => r.at >= inj.sentAt && r.alert.status === 'firing' && matches(p, r.alert.labels)));
  let restartedAt;
  for (let t = 0; t < BOUND_S && inj.ok && !arrived(); t++) await sleep(1000);
  if (expected.pages.length && !arrived()) { problems.push(`its pages did not all arrive within ${BOUND_S} s`); log(`${fault.name}: ${problems.at(-1)}`); }
  await sleep(expected.pages.length ? SETTLE_S * 1000 : ctx.silentHoldMs);
  if (fault.name === 'prometheus-restarted') {
    log(`${fault.name}: restarting Prometheus (same TSDB)`);
    restartedAt = Date.now();
    await prom.restart();
    // a full `for:` and group interval of the restored alert, so a second page or a resolve would show
    await sleep(40_000);
  }
  log(`${fault.name}: undoing`);
  const und = await guest.command(`undo ${fault.name}`);
  if (!und.ok) problems.push(und.status);
  const cleared = await cleanBaseline(prom, hook, inj.sentAt, RESOLVE_S);
  if (!cleared.ok) problems.push(`not clean ${RESOLVE_S} s after the undo: ${cleared.open.map((l) => l.alertname).join(', ')}`);
  // The undo counts from when it was asked: an undo that restarts MXL processes takes seconds.
  const entry = judgeFault({ fault: expected, injectedAt: inj.sentAt, undoneAt: und.sentAt, records: hook.records, until: Date.now(), factor: ctx.factor });
  if (fault.name === 'exporter-restarted') {
    // The injection killed the sender's exporter and answered once the new one was ready.
    entry.restart = await restartSpikes(prom, { instance: ctx.sender, restartAt: inj.sentAt, readyAt: inj.at, until: und.sentAt });
    for (const x of entry.restart.spikes) problems.push(`a rate invented from the restart: ${x.series} ${x.before} before, ${x.after} after`);
    if (entry.restart.compared === 0) problems.push('no rate of the restarted exporter to compare');
  }
  log(`${fault.name}: first page ${entry.first_page_s} s, resolved ${entry.resolved_s} s after the undo; extra ${entry.extra.length}, missing ${entry.missing.length}`);
  return { entry: { ...entry, guest: { injection: inj.status, undo: und.status }, problems, ...(restartedAt ? { prometheus_restarted_s: (restartedAt - inj.sentAt) / 1000 } : {}) }, window: { name: fault.name, from: inj.sentAt, to: und.at, restartedAt } };
}

async function main() {
  const a = args();
  const dir = a.out;
  const factor = checkFactor(Number(process.env.FAULTS_FACTOR ?? 10));
  const exp = loadExpectations();
  const names = process.env.FAULTS ? process.env.FAULTS.split(',').filter(Boolean) : DEFAULT_FAULTS;
  const unlisted = exp.faults.map((f) => f.name).filter((n) => !DEFAULT_FAULTS.includes(n));
  if (!process.env.FAULTS && unlisted.length) throw new Error(`expected.yml has faults DEFAULT_FAULTS in host.mjs does not run: ${unlisted.join(', ')}`);
  const faults = selectFaults(exp, names);
  const notRun = exp.faults.map((f) => f.name).filter((n) => !names.includes(n));
  const guest = new Guest(dir);
  const ready = parseAnswer(await guest.waitFile('ready', GUEST_S));
  if (!ready.ok) throw new Error(`the guest is not ready: ${ready.status}`);
  const hook = await startWebhook({ file: join(dir, 'webhook.jsonl') });
  const scaledDir = join(dir, 'scaled');
  const scaled = writeScaled(scaledDir, factor, { webhook: hook.url, interval: '1s' });
  const silentHoldMs = pageDelayMs(scaled, FALSE_RATE_ALERTS) + SETTLE_S * 1000;
  const amPort = await freePort();
  const am = spawnAlertmanager(dir, scaled.alertmanager, amPort);
  let prom;
  const stopAll = async () => { await prom?.stop(); am.kill('SIGTERM'); await hook.stop(); };
  for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => { stopAll().finally(() => process.exit(1)); });
  const report = { ok: false, failures: [] };
  try {
    await waitReady(`http://127.0.0.1:${amPort}`, 'alertmanager');
    prom = await startPrometheus(dir, [a.sender, a.receiver], scaled.rules, SCRAPE_SECONDS, { alertmanager: `127.0.0.1:${amPort}`, metricRelabel: oneHostEach(a) });
    const runFrom = Date.now();
    const base = { ...ready.vars, sender_instance: a.sender, receiver_instance: a.receiver };
    const ctx = { guest, hook, prom, exp, base, factor, sender: a.sender, silentHoldMs };
    log(`baseline: waiting for nothing to fire (factor ${factor}, faults: ${faults.map((f) => f.name).join(' ')})`);
    const entries = [];
    const windows = [];
    for (const fault of faults) {
      const clean = await cleanBaseline(prom, hook, runFrom, 240);
      if (!clean.ok) {
        entries.push({ name: fault.name, expected: fault.pages, received: [], extra: [], missing: fault.pages, unresolved: [], premature: [], problems: [`no clean baseline before it: ${clean.open.map((l) => `${l.alertname}${JSON.stringify(l)}`).join(', ')}`] });
        continue;
      }
      const { entry, window } = await runFault(ctx, fault);
      entries.push(entry);
      windows.push(window);
    }
    const gaps = await seriesGaps(prom, { from: runFrom, to: Date.now(), step: SCRAPE_SECONDS, windows, instances: [a.sender, a.receiver] });
    Object.assign(report, buildReport(entries, { factor }), { gaps, not_run: notRun, scrape_seconds: SCRAPE_SECONDS });
    for (const e of entries) for (const p of e.problems ?? []) report.failures.push(`${e.name}: ${p}`);
    for (const g of gaps.outside) report.failures.push(`series gap: ${g.series} ${g.from_s}-${g.to_s} s into the run`);
    report.ok = report.failures.length === 0;
  } catch (e) {
    report.failures.push(String(e.message ?? e));
  } finally {
    writeFileSync(join(dir, 'host-done'), '');
    await guest.command('end', 5).catch(() => {});
    await stopAll();
  }
  mkdirSync(join(dir, 'faults'), { recursive: true });
  writeFileSync(join(dir, 'faults', 'report.json'), `${JSON.stringify(report, null, 2)}\n`);
  if (report.not_run?.length) log(`not run (not in DEFAULT_FAULTS or FAULTS): ${report.not_run.join(', ')}`);
  for (const f of report.failures) log(`FAIL: ${f}`);
  log(report.ok ? 'PASSED' : `FAILED: ${dir}/faults/report.json`);
  process.exit(report.ok ? 0 : 1);
}

main().catch((e) => { log(`FAIL: ${e.message}`); process.exit(1); });
