/**
 * A facility end to end (docs/facility.md): 8 real exporters (built dist/, child processes on
 * fixture sysfs trees and MXL domains the test writes) as the hosts of two sites, one Prometheus
 * agent per site (deploy/prometheus/agent.yml: `site` from external_labels, remote_write) into a
 * central Prometheus (central.yml, the shipped rules with short `for:`), a real Alertmanager
 * (deploy/alertmanager/alertmanager.yml) posting to a webhook the test runs. Faults one at a
 * time; for each, the webhook must receive exactly one notification for the cause (with site,
 * host, port, flow id and label) and none for its consequences, which Alertmanager must hold as
 * inhibited or the rules hold back (a port's grace); after the fault clears, exactly the resolved
 * notice. Everything listens on loopback: each host on its own 127.0.1.N address, so the agents'
 * relabelling gives each its `instance`.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { SysfsFixture } from '../fixtures/sysfs.js';
import { addFlow, commit } from '../domain/mxl-domain.mjs';
import { loadPosix } from '../../src/ffi/posix.js';
import { freePort, needs, ROOT, sleep, tool, waitFor as waitUntil } from './tools.js';
import { type Alertmanager, type Notification, type Webhook, startAlertmanager, startWebhook, summarize } from './alertmanager-lib.js';

const prometheus = tool('prometheus', 'prometheus');
const alertmanager = tool('prometheus-alertmanager', 'prometheus-alertmanager');
const MAIN = join(ROOT, 'dist', 'cli', 'main.js');
const PROM = join(ROOT, 'deploy', 'prometheus');
const FIXTURE_FLOWS = join(ROOT, 'test', 'fixtures', 'flows');
const DEVICE = 'mlx5_0';
/** The test's `for:` for every alert (production: 1m and more). */
const FOR = '3s';
const FOR_MS = 3000;
/** MxlFabricSiteSilent's "nothing for 2m" window in the test copy. */
const SILENT_WINDOW = '5s';
/**
 * MxlFabricExporterDown's window of failed scrapes (1m: 4 scrapes at the shipped 15 s, shorter
 * than its 5m of for:) in the test copy: it holds two 1 s scrapes even when remote_write brings
 * the newest a second late, and stays shorter than FOR.
 */
const DOWN_WINDOW = '2500ms';
/** After the expected notification: how long nothing more may arrive (group_interval 2s). */
const QUIET_MS = 5000;

// --- the facility ------------------------------------------------------------------------------
interface FlowSpec { id: string; label: string; file: string; format: 1 | 3; rate: [bigint, bigint]; from: string; to: string[] }
const FLOWS: FlowSpec[] = [
  // received on two hosts of the other site
  { id: '1a5e0000-0000-4000-8000-000000000001', label: 'Camera 1 video', file: 'v210_1080p2997.json', format: 1, rate: [30000n, 1001n], from: 'a1', to: ['b1', 'b2'] },
  { id: '1a5e0000-0000-4000-8000-000000000002', label: 'Studio A ANC', file: 'data_60.json', format: 3, rate: [60n, 1n], from: 'a2', to: ['a3'] },
  { id: '1a5e0000-0000-4000-8000-000000000003', label: 'Camera 3 video', file: 'v210_1080p2997.json', format: 1, rate: [30000n, 1001n], from: 'b3', to: ['a4'] },
  { id: '1a5e0000-0000-4000-8000-000000000004', label: 'Camera 4 video', file: 'v210_1080p2997.json', format: 1, rate: [30000n, 1001n], from: 'b4', to: ['a1'] },
];
const HOSTS = ['a1', 'a2', 'a3', 'a4', 'b1', 'b2', 'b3', 'b4'];
const siteOf = (h: string) => (h.startsWith('a') ? 'site-a' : 'site-b');
const ipOf = (h: string) => `127.0.1.${HOSTS.indexOf(h) + 1}`;
const byName = (f: string) => FLOWS.find((x) => x.label === f)!;

interface Proc { child: ChildProcess; output: string[] }
function start(cmd: string, args: string[]): Proc {
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  const keep = (d: Buffer) => { output.push(String(d)); if (output.length > 200) output.splice(0, 100); };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  return { child, output };
}
/**
 * Whether a request waits unread on a TCP socket of `address` (ip:port, IPv4): the agent's scrape
 * of an exporter that is stopped (SIGSTOP) is in flight. From /proc/net/tcp (Linux).
 */
function requestWaiting(address: string): boolean {
  const [ip, port] = address.split(':') as [string, string];
  const local = `${ip.split('.').reverse().map((b) => Number(b).toString(16).padStart(2, '0')).join('')}:${Number(port).toString(16).padStart(4, '0')}`.toUpperCase();
  return readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1).some((line) => {
    const f = line.trim().split(/\s+/);
    return f[1] === local && parseInt(f[4]?.split(':')[1] ?? '0', 16) > 0;
  });
}

function stop(p: Proc | undefined, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (!p || p.child.exitCode !== null || p.child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => p.child.kill('SIGKILL'), 5000);
    p.child.once('exit', () => { clearTimeout(timer); resolve(); });
    p.child.kill(signal);
  });
}

interface Host {
  name: string;
  fx: SysfsFixture;
  config: string;
  address: string;
  exporter?: Proc;
  /** Flow folders this host writes: `${flowId} ${direction}` -> folder. */
  dirs: Map<string, string>;
}

/** The shipped rule files with every `for:` at FOR, 1 s evaluation and the windows of SiteSilent and ExporterDown shortened. */
function testRules(dir: string): string[] {
  return ['recording.yml', 'alerts.yml'].map((f) => {
    const doc = parse(readFileSync(join(PROM, 'rules', f), 'utf8')) as { groups: { interval?: string; rules: { alert?: string; expr: string; for?: string }[] }[] };
    for (const g of doc.groups) {
      g.interval = '1s';
      for (const r of g.rules) {
        // absent() holds at the centre until the agents' first samples arrive; not a fault here.
        if (r.for && r.alert !== 'MxlFabricExporterAbsent') r.for = FOR;
        if (r.alert === 'MxlFabricSiteSilent') {
          expect(r.expr).toContain('[2m]');
          r.expr = r.expr.replace('[2m]', `[${SILENT_WINDOW}]`);
        }
        if (r.alert === 'MxlFabricExporterDown') {
          expect(r.expr.match(/\[1m\]/g)).toHaveLength(2);
          r.expr = r.expr.replaceAll('[1m]', `[${DOWN_WINDOW}]`);
        }
      }
    }
    const out = join(dir, `test-${f}`);
    writeFileSync(out, stringify(doc));
    return out;
  });
}

/** agent.yml for one site: its hosts, its `site`, the centre's receiver, 1 s scrapes. */
function agentConfig(site: string, targets: string[], centre: string): string {
  const doc = parse(readFileSync(join(PROM, 'agent.yml'), 'utf8')) as {
    global: Record<string, unknown> & { external_labels: Record<string, string> };
    scrape_configs: { static_configs: { targets: string[] }[] }[];
    remote_write: { url: string; queue_config?: Record<string, unknown> }[];
  };
  Object.assign(doc.global, { scrape_interval: '1s', scrape_timeout: '1s' });
  doc.global.external_labels.site = site;
  doc.scrape_configs[0]!.static_configs = [{ targets }];
  doc.remote_write[0]!.url = `${centre}/api/v1/write`;
  doc.remote_write[0]!.queue_config = { ...doc.remote_write[0]!.queue_config, batch_send_deadline: '500ms', min_backoff: '100ms', max_backoff: '1s' };
  return stringify(doc);
}

function centralConfig(rules: string[], alertmanagerAddress: string): string {
  const doc = parse(readFileSync(join(PROM, 'central.yml'), 'utf8')) as {
    global: Record<string, unknown>; rule_files: string[]; alerting: { alertmanagers: { static_configs: { targets: string[] }[] }[] };
  };
  doc.global.evaluation_interval = '1s';
  doc.rule_files = rules;
  doc.alerting.alertmanagers[0]!.static_configs[0]!.targets = [alertmanagerAddress];
  return stringify(doc);
}

needs(prometheus).it('the prometheus server is installed (facility test)', () => {
  expect(prometheus.require()).toBeTruthy();
});
needs(alertmanager).it('prometheus-alertmanager is installed (facility test)', () => {
  expect(alertmanager.require()).toBeTruthy();
});

needs(prometheus, alertmanager).describe('a facility: 8 hosts, 2 site agents, a central Prometheus, Alertmanager', { timeout: 300_000 }, () => {
  let dir = '';
  const hosts = new Map<string, Host>();
  const agents = new Map<string, Proc>();
  let central: Proc | undefined;
  let centre = '';
  let am: Alertmanager | undefined;
  let hook: Webhook | undefined;
  let driver: NodeJS.Timeout | undefined;
  /** Flow copies the driver does not commit (the writer or the fabrics target stopped): `${host} ${flowId}`. */
  const paused = new Set<string>();
  let agentRuns = 0;

  const logs = () => [
    ...[...hosts.values()].map((h) => `--- exporter ${h.name} ---\n${h.exporter?.output.join('').slice(-1500) ?? ''}`),
    ...[...agents.entries()].map(([s, a]) => `--- agent ${s} ---\n${a.output.join('').slice(-1500)}`),
    `--- central ---\n${central?.output.join('').slice(-3000) ?? ''}`,
    `--- alertmanager ---\n${am?.output.join('').slice(-1500) ?? ''}`,
    `--- notifications ---\n${hook?.notifications.map((n) => summarize(n)).join('\n') ?? ''}`,
  ].join('\n');

  const waitFor = <T>(what: string, fn: () => Promise<T | undefined>, timeoutMs: number): Promise<T> => waitUntil(what, fn, timeoutMs, logs);

  async function query(expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]> {
    const body = (await (await fetch(`${centre}/api/v1/query?${new URLSearchParams({ query: expr })}`)).json()) as {
      status: string; error?: string; data: { result: { metric: Record<string, string>; value: [number, string] }[] };
    };
    if (body.status !== 'success') throw new Error(`${expr}: ${body.error}`);
    return body.data.result;
  }

  interface AmAlert { labels: Record<string, string>; status: { state: string; inhibitedBy: string[] } }
  const amAlerts = async (): Promise<AmAlert[]> => (await (await fetch(`${am!.base}/api/v2/alerts`)).json()) as AmAlert[];
  const firingAtCentre = async (): Promise<string[]> => {
    const body = (await (await fetch(`${centre}/api/v1/alerts`)).json()) as { data: { alerts: { labels: Record<string, string>; state: string }[] } };
    return body.data.alerts.map((a) => `${a.state} ${a.labels.alertname} ${a.labels.site ?? ''} ${a.labels.instance ?? ''} ${a.labels.flow_id ?? ''}`);
  };

  function startExporter(h: Host): void {
    h.exporter = start(process.execPath, [MAIN, 'serve', '--config.file', h.config, '--path.sysfs', h.fx.root,
      '--web.listen-address', h.address, '--log.level', 'warn']);
  }
  async function exporterReady(h: Host): Promise<void> {
    await waitFor(`exporter ${h.name}`, async () => {
      const text = await (await fetch(`http://${h.address}/metrics`)).text();
      const live = text.split('\n').filter((l) => l.startsWith('mxl_fabric_flow_live{') && l.endsWith(' 1')).length;
      return live === h.dirs.size ? true : undefined;
    }, 30_000);
  }
  /** One site's agent from agent.yml; each start gets a fresh WAL folder (a restarted or replaced agent). */
  async function startAgent(site: string): Promise<void> {
    const targets = HOSTS.filter((h) => siteOf(h) === site).map((h) => hosts.get(h)!.address);
    const agentDir = join(dir, `agent-${site}-${agentRuns++}`);
    mkdirSync(agentDir);
    writeFileSync(join(agentDir, 'agent.yml'), agentConfig(site, targets, centre));
    const port = await freePort();
    agents.set(site, start(prometheus.require(), ['--enable-feature=agent', `--config.file=${join(agentDir, 'agent.yml')}`,
      `--storage.agent.path=${join(agentDir, 'wal')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn']));
    await waitFor(`agent ${site}`, async () => ((await fetch(`http://127.0.0.1:${port}/-/ready`)).ok ? true : undefined), 20_000);
  }

  const has = (status: string, alertname: string) => (ns: Notification[]) =>
    ns.some((n) => n.status === status && n.alerts.some((a) => a.labels.alertname === alertname && a.status === status));

  beforeAll(async () => {
    if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
    dir = mkdtempSync(join(tmpdir(), 'mfe-facility-'));
    const tai = () => loadPosix().taiNowNs();
    for (const name of HOSTS) {
      const hdir = join(dir, name);
      const [tx, rx, cfg] = ['tx', 'rx', 'cfg'].map((d) => join(hdir, d));
      for (const d of [tx, rx, cfg]) mkdirSync(d, { recursive: true });
      const h: Host = { name, fx: SysfsFixture.copy('mlx5_roce'), config: join(cfg, 'config.yaml'), address: `${ipOf(name)}:${await freePort()}`, dirs: new Map() };
      for (const f of FLOWS) {
        const def = { ...JSON.parse(readFileSync(join(FIXTURE_FLOWS, f.file), 'utf8')) as object, id: f.id, label: f.label };
        const header = { id: f.id, format: f.format, rate: f.rate, grainCount: 3, headIndex: 0n, lastWriteTime: tai() };
        if (f.from === name) h.dirs.set(`${f.id} tx`, addFlow(tx, def, header));
        if (f.to.includes(name)) h.dirs.set(`${f.id} rx`, addFlow(rx, def, header));
      }
      // The sender's domain expects its flows on the wire (a missing one is an alert); drift
      // tolerance 1: the fixture's counters stand still, which is not what this test is about.
      writeFileSync(h.config, `
sampling: { interval: 1s, window: 3s }
drift: { tolerance: 1 }
ports:
  - { device: ${DEVICE}, port: 1, provider: rdma_rocev2, mtu: auto, capacity: 100Gbps }
domains:
  - { path: ${tx}, device: ${DEVICE}, port: 1, direction: tx, expect: always }
  - { path: ${rx}, device: ${DEVICE}, port: 1, direction: rx }
`);
      hosts.set(name, h);
    }
    // Every writer commits at its grain rate, as long as its copy is not paused.
    const t0 = performance.now();
    const advance = () => {
      const s = (performance.now() - t0) / 1000;
      for (const h of hosts.values()) {
        for (const [key, folder] of h.dirs) {
          const f = FLOWS.find((x) => x.id === key.split(' ')[0])!;
          if (!paused.has(`${h.name} ${f.id}`)) commit(folder, BigInt(Math.floor((s * Number(f.rate[0])) / Number(f.rate[1]))), tai());
        }
      }
    };
    advance();
    driver = setInterval(advance, 100);
    for (const h of hosts.values()) startExporter(h);
    for (const h of hosts.values()) await exporterReady(h);

    hook = await startWebhook();
    am = await startAlertmanager(alertmanager.require(), dir, hook.url);
    const centralPort = await freePort();
    centre = `http://127.0.0.1:${centralPort}`;
    writeFileSync(join(dir, 'central.yml'), centralConfig(testRules(dir), am.base.replace('http://', '')));
    central = start(prometheus.require(), [`--config.file=${join(dir, 'central.yml')}`, `--storage.tsdb.path=${join(dir, 'central-tsdb')}`,
      `--web.listen-address=127.0.0.1:${centralPort}`, '--web.enable-remote-write-receiver', '--log.level=warn']);
    await waitFor('the central Prometheus', async () => ((await fetch(`${centre}/-/ready`)).ok ? true : undefined), 20_000);
    await startAgent('site-a');
    await startAgent('site-b');

    // Steady: every host up at the centre with its site, every path recorded, no alert at all.
    await waitFor('8 hosts up at the centre and 5 paths recorded', async () => {
      const up = await query('up{job="mxl-fabric-exporter"} == 1');
      const paths = await query('flow_id:mxl_fabric_flow_path:state{tx_state="live",rx_state="live"}');
      return up.length === 8 && paths.length === 5 ? true : undefined;
    }, 60_000);
    await waitFor('no alert pending or firing, none at Alertmanager', async () =>
      ((await firingAtCentre()).length === 0 && (await amAlerts()).length === 0 ? true : undefined), 60_000);
  }, 240_000);

  afterAll(async () => {
    if (driver) clearInterval(driver);
    await Promise.all([...agents.values()].map((a) => stop(a)));
    await stop(central);
    await am?.stop();
    await hook?.close();
    await Promise.all([...hosts.values()].map((h) => stop(h.exporter)));
    for (const h of hosts.values()) h.fx.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the agents add `site` and keep `instance` per host: every host at the centre under its site', async () => {
    const up = (await query('up{job="mxl-fabric-exporter"}')).map((s) => `${s.metric.site} ${s.metric.instance}`).sort();
    expect(up).toEqual(HOSTS.map((h) => `${siteOf(h)} ${ipOf(h)}`).sort());
  });

  it("the facility rules give each flow's sender and every receiver, with place and state on both ends", async () => {
    const paths = (await query('flow_id:mxl_fabric_flow_path:state')).map((s) => {
      const m = s.metric;
      return `${m.label} ${m.flow_id}: ${m.tx_site} ${m.tx_instance} ${m.tx_device}/${m.tx_port} ${m.tx_state} -> ${m.rx_site} ${m.rx_instance} ${m.rx_device}/${m.rx_port} ${m.rx_state} = ${s.value[1]}`;
    }).sort();
    const expected = FLOWS.flatMap((f) => f.to.map((to) =>
      `${f.label} ${f.id}: ${siteOf(f.from)} ${ipOf(f.from)} ${DEVICE}/1 live -> ${siteOf(to)} ${ipOf(to)} ${DEVICE}/1 live = 1`)).sort();
    expect(expected).toHaveLength(5);
    expect(paths).toEqual(expected);
    const senders = (await query('flow_id:mxl_fabric_flow_sender:state')).map((s) => `${s.metric.flow_id} ${s.metric.instance}`).sort();
    expect(senders).toEqual(FLOWS.map((f) => `${f.id} ${ipOf(f.from)}`).sort());
    const receivers = (await query('flow_id:mxl_fabric_flow_receiver:state')).map((s) => `${s.metric.flow_id} ${s.metric.instance}`).sort();
    expect(receivers).toEqual(FLOWS.flatMap((f) => f.to.map((to) => `${f.id} ${ipOf(to)}`)).sort());
  });

  it('sender vs receiver grains per second and the per-site totals', async () => {
    const ratios = await query('flow_id:mxl_fabric_flow_measured_grains_per_second:receiver_over_sender');
    expect(ratios.map((s) => `${s.metric.flow_id} ${s.metric.instance}`).sort()).toEqual(FLOWS.flatMap((f) => f.to.map((to) => `${f.id} ${ipOf(to)}`)).sort());
    // every copy is committed from the same clock; the windows of two exporters differ by < 1 sample
    for (const s of ratios) expect(Number(s.value[1]), JSON.stringify(s.metric)).toBeGreaterThan(0.8);
    for (const s of ratios) expect(Number(s.value[1]), JSON.stringify(s.metric)).toBeLessThan(1.25);
    const sender = await query(`flow_id:mxl_fabric_flow_measured_grains_per_second:sender{flow_id="${byName('Studio A ANC').id}"}`);
    expect(Number(sender[0]!.value[1])).toBeCloseTo(60, -1);
    // the site totals are the sums of their hosts' ports
    const totals = await query('site:mxl_fabric_port_predicted_bytes_per_second:sum{layer="wire"}');
    const byHost = await query('sum by (site, direction) (mxl_fabric_port_predicted_bytes_per_second{layer="wire"})');
    const key = (s: { metric: Record<string, string> }) => `${s.metric.site} ${s.metric.direction}`;
    expect(totals.map(key).sort()).toEqual(['site-a rx', 'site-a tx', 'site-b rx', 'site-b tx']);
    for (const t of totals) expect(Number(t.value[1])).toBeCloseTo(Number(byHost.find((b) => key(b) === key(t))!.value[1]), 0);
  });

  /** Faults start and end in the steady state: nothing pending or firing, nothing at Alertmanager. */
  const steady = () => waitFor('the steady state again', async () =>
    ((await firingAtCentre()).length === 0 && (await amAlerts()).length === 0 ? true : undefined), 60_000);
  const mark = () => hook!.notifications.length;
  /** Notifications since `from`, once `done` holds and a quiet QUIET_MS more have passed (group_interval is 2s). */
  async function since(from: number, what: string, done: (ns: Notification[]) => boolean): Promise<string[]> {
    await waitFor(what, async () => (done(hook!.notifications.slice(from)) ? true : undefined), 60_000);
    await sleep(QUIET_MS);
    return hook!.notifications.slice(from).map((n) => summarize(n));
  }
  const page = (status: string, group: string, alert: string) => `mxl-fabric-page ${status} {${group}} [${alert}]`;

  /** Every alert pending or firing at the centre during `ms` (sampled every 250 ms) that `keep` selects. */
  async function seenDuring(ms: number, keep: (alert: string) => boolean): Promise<string[]> {
    const seen = new Set<string>();
    for (const end = Date.now() + ms; Date.now() < end; await sleep(250)) for (const a of await firingAtCentre()) if (keep(a)) seen.add(a);
    return [...seen].sort();
  }

  // The port grace (instance_device_port:mxl_fabric_port_cause_alerts:max1m): the flow and
  // connection alerts of a port whose page fires, or fired within the last minute, hold back in
  // the rule itself, so they never reach Alertmanager, neither while the port is down nor while
  // MXL reconnects after it is back (the inhibition ends with the port page).
  it("a host's port down: one page for the port, its flow's NotReceived held back in the rule while the port is down and after it is back; resolved once the port is back", async () => {
    const b1 = hosts.get('b1')!;
    const f1 = byName('Camera 1 video');
    const portDown = `MxlFabricPortDown instance=${ipOf('b1')} device=${DEVICE} port=1`;
    const grace = `instance_device_port:mxl_fabric_port_cause_alerts:max1m{instance="${ipOf('b1')}",device="${DEVICE}",port="1"}`;
    // MxlFabricFlowNotReceived's condition for b1's copy, without the grace
    const notReceived = `(mxl_fabric_flow_live{direction="rx",instance="${ipOf('b1')}",flow_id="${f1.id}"} == 0) and on (flow_id) (flow_id:mxl_fabric_flow_live:max_tx == 1)`;
    const consequence = (a: string) => !a.includes(' MxlFabricPortDown ');
    let from = mark();
    b1.fx.setPortState(DEVICE, 1, 'DOWN');
    await waitFor('PortDown at Alertmanager', async () => ((await amAlerts()).some((a) => a.labels.alertname === 'MxlFabricPortDown') ? true : undefined), 60_000);
    await waitFor('the port grace of b1 at the centre', async () => ((await query(grace)).length === 1 ? true : undefined), 30_000);
    // The consequence follows: b1's fabrics target gets no grains of Camera 1 video.
    paused.add(`b1 ${f1.id}`);
    await waitFor('Camera 1 video not received on b1, at the centre', async () => ((await query(notReceived)).length === 1 ? true : undefined), 60_000);
    // NotReceived's condition holds for three times its `for:`; the rule holds it back: never
    // pending or firing at the centre, so nothing of it at Alertmanager either.
    expect(await seenDuring(3 * FOR_MS, consequence), 'held back at the centre while the port is down').toEqual([]);
    expect(await query(notReceived)).toHaveLength(1);
    expect(await since(from, 'the PortDown page', has('firing', 'MxlFabricPortDown'))).toEqual([page('firing', 'alertname=MxlFabricPortDown,site=site-b', portDown)]);
    const n = hook!.notifications[from]!;
    expect(n.alerts[0]!.labels).toMatchObject({ site: 'site-b', instance: ipOf('b1'), device: DEVICE, port: '1', severity: 'critical' });
    expect((await amAlerts()).map((a) => `${a.labels.alertname} ${a.labels.instance} ${a.status.inhibitedBy.length > 0 ? 'inhibited' : 'active'}`)).toEqual(
      [`MxlFabricPortDown ${ipOf('b1')} active`]);

    // Clear: the port comes back first and the flow a while later (MXL reconnecting). PortDown
    // resolves; the grace still holds NotReceived back (an inhibition would not: its source is gone).
    from = mark();
    b1.fx.setPortState(DEVICE, 1, 'ACTIVE');
    await waitFor('PortDown resolved at the centre', async () => ((await firingAtCentre()).some((a) => !consequence(a)) ? undefined : true), 30_000);
    expect(await seenDuring(3 * FOR_MS, consequence), 'held back at the centre after the port is back').toEqual([]);
    expect(await query(notReceived), 'not received all along').toHaveLength(1);
    expect(await query(grace), 'within the grace').toHaveLength(1);
    paused.delete(`b1 ${f1.id}`);
    await waitFor('Camera 1 video received on b1 again', async () => ((await query(notReceived)).length === 0 ? true : undefined), 30_000);
    expect(await since(from, 'the PortDown resolved notice', has('resolved', 'MxlFabricPortDown'))).toEqual([page('resolved', 'alertname=MxlFabricPortDown,site=site-b', portDown)]);
    await steady();
  });

  it('a flow missing at its sender: one page naming the flow on the sender; its two receivers raise nothing; resolved when it is back', async () => {
    const f1 = byName('Camera 1 video');
    const missing = `MxlFabricFlowMissing instance=${ipOf('a1')} device=${DEVICE} port=1 flow_id=${f1.id} direction=tx`;
    let from = mark();
    paused.add(`a1 ${f1.id}`); // the writer on a1 stops
    await waitFor('FlowMissing at Alertmanager', async () => ((await amAlerts()).some((a) => a.labels.alertname === 'MxlFabricFlowMissing') ? true : undefined), 60_000);
    paused.add(`b1 ${f1.id}`); // and so the grains stop arriving on b1 and b2
    paused.add(`b2 ${f1.id}`);
    await waitFor('the receivers not live at the centre', async () =>
      ((await query(`flow_id:mxl_fabric_flow_receiver:state{flow_id="${f1.id}",state="absent"}`)).length === 2 ? true : undefined), 60_000);
    expect(await since(from, 'the FlowMissing page', has('firing', 'MxlFabricFlowMissing'))).toEqual([page('firing', `flow_id=${f1.id},site=site-a`, missing)]);
    const a = hook!.notifications[from]!.alerts[0]!;
    expect(a.labels).toMatchObject({ site: 'site-a', instance: ipOf('a1'), device: DEVICE, port: '1', flow_id: f1.id, direction: 'tx' });
    expect(a.annotations.summary).toContain(`"${f1.label}" (${f1.id}) is missing on ${ipOf('a1')} ${DEVICE}/1 tx`);
    expect((await amAlerts()).map((x) => x.labels.alertname)).toEqual(['MxlFabricFlowMissing']);

    // Clear: the receivers are ready again, then the writer is back.
    from = mark();
    paused.delete(`b1 ${f1.id}`);
    paused.delete(`b2 ${f1.id}`);
    await waitFor('the receivers live at the centre', async () =>
      ((await query(`flow_id:mxl_fabric_flow_receiver:state{flow_id="${f1.id}",state="live"}`)).length === 2 ? true : undefined), 60_000);
    paused.delete(`a1 ${f1.id}`);
    expect(await since(from, 'the FlowMissing resolved notice', has('resolved', 'MxlFabricFlowMissing'))).toEqual([page('resolved', `flow_id=${f1.id},site=site-a`, missing)]);
    await steady();
  });

  it('an exporter killed: one page for that host, nothing from its flows; resolved once it runs again', async () => {
    const b3 = hosts.get('b3')!;
    const down = `MxlFabricExporterDown instance=${ipOf('b3')}`;
    let from = mark();
    await stop(b3.exporter, 'SIGKILL');
    expect(await since(from, 'the ExporterDown page', has('firing', 'MxlFabricExporterDown'))).toEqual([page('firing', 'alertname=MxlFabricExporterDown,site=site-b', down)]);
    expect(hook!.notifications[from]!.alerts[0]!.labels).toMatchObject({ site: 'site-b', instance: ipOf('b3'), job: 'mxl-fabric-exporter' });
    expect((await amAlerts()).map((x) => x.labels.alertname)).toEqual(['MxlFabricExporterDown']);

    from = mark();
    startExporter(b3);
    await exporterReady(b3);
    expect(await since(from, 'the ExporterDown resolved notice', has('resolved', 'MxlFabricExporterDown'))).toEqual([page('resolved', 'alertname=MxlFabricExporterDown,site=site-b', down)]);
    await steady();
  });

  const running = (p: Proc | undefined) => p !== undefined && p.child.exitCode === null && p.child.signalCode === null;
  /** One stop of site-b's agent (SIGTERM: one whose last `up` 0 of b4 reached the centre) and its page, inhibition and resolve. */
  async function agentStopped(signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
    const b4 = hosts.get('b4')!;
    let from = mark();
    if (signal === 'SIGTERM') {
      // Prometheus does not always send that `up` 0 before it exits (about 1 stop in 3 alone,
      // far fewer beside the rest of test/deploy on 2 cores): until it has, the agent is started
      // again at once, before SiteSilent's window passes. The 6th stop counts either way, so a
      // loaded run may not show the case (it says so) but the stop's page is still checked.
      for (let stops = 1; ; stops++) {
        from = mark();
        const last = stops === 6;
        // Hold b4's exporter until the agent's scrape of it waits (well within its 1 s timeout),
        // so that this scrape is in flight when the agent stops.
        b4.exporter!.child.kill('SIGSTOP');
        let inFlight = false;
        try {
          const end = Date.now() + 900;
          while (!(inFlight = requestWaiting(b4.address)) && Date.now() < end) await sleep(10);
          if (inFlight || last) await stop(agents.get('site-b'), 'SIGTERM');
        } finally {
          b4.exporter!.child.kill('SIGCONT');
        }
        if (!inFlight && !last) {
          // no scrape of b4 seen waiting (it may have been in the exporter already): again
          await steady();
          continue;
        }
        // read once the agent is gone and has sent all it will
        await sleep(1000);
        const arrived = (await query(`up{job="mxl-fabric-exporter",instance="${ipOf('b4')}"} == 0`)).length === 1;
        if (arrived || last) {
          console.info(arrived ? `the agent's last up 0 of b4 reached the centre at stop ${stops}`
            : `the agent's last up 0 of b4 did not reach the centre in ${stops} stops: this run does not show that case`);
          break;
        }
        await startAgent('site-b');
        await steady();
      }
    } else {
      await stop(agents.get('site-b'), 'SIGKILL');
    }
    expect(await since(from, 'the SiteSilent page', has('firing', 'MxlFabricSiteSilent'))).toEqual([page('firing', 'alertname=MxlFabricSiteSilent,site=site-b', 'MxlFabricSiteSilent')]);
    const a = hook!.notifications[from]!.alerts[0]!;
    expect(a.labels).toMatchObject({ site: 'site-b', severity: 'critical' });
    expect(a.annotations.description).toContain('though 4 of its exporters reported');
    expect((await amAlerts()).map((x) => x.labels.alertname)).toEqual(['MxlFabricSiteSilent']);
    // not merely held back by the inhibition: not pending or firing at the centre either
    expect((await firingAtCentre()).filter((x) => x.includes('MxlFabricExporterDown'))).toEqual([]);

    from = mark();
    await startAgent('site-b');
    expect(await since(from, 'the SiteSilent resolved notice', has('resolved', 'MxlFabricSiteSilent'))).toEqual([page('resolved', 'alertname=MxlFabricSiteSilent,site=site-b', 'MxlFabricSiteSilent')]);
    await steady();
  }

  // An agent stopped with SIGTERM cancels the scrapes it is in and still remote-writes their `up`
  // 0. That last sample stays the current value for the 5 m lookback; MxlFabricExporterDown needs
  // more than one failed scrape, so it does not page for it (the rule before did, FOR after the
  // agent stopped, whenever SiteSilent's inhibition did not reach Alertmanager first: seen once
  // in CI, 127.0.1.8).
  it("one site's agent stopped (SIGTERM) with a host's scrape in flight: one page for the site, nothing for its hosts; resolved once the agent sends again", async () => {
    try {
      await agentStopped('SIGTERM');
    } finally {
      if (!running(agents.get('site-b'))) await startAgent('site-b');
    }
  });

  // Killed (SIGKILL), as a site goes silent when its uplink is cut: it sends nothing more.
  it("one site's agent killed (SIGKILL): one page for the site, nothing for its hosts; resolved once the agent sends again", async () => {
    try {
      await agentStopped('SIGKILL');
    } finally {
      if (!running(agents.get('site-b'))) await startAgent('site-b');
    }
  });
});
