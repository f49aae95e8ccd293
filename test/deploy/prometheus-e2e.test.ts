/**
 * The real exporter (built dist/, fixture sysfs with counters the test advances) scraped every
 * second by a real Prometheus that loads deploy/prometheus/rules/*.yml. Every PromQL expression of
 * the Grafana dashboard and of the Grafana alert provisioning must parse and return data, with the
 * template variables as "All" (.*) and as concrete values; every rule must evaluate without error.
 * Expressions are found by walking the JSON/YAML, so a new panel or query is covered by itself.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { SysfsFixture } from '../fixtures/sysfs.js';
import { addFlow, commit } from '../domain/mxl-domain.mjs';
import { loadPosix } from '../../src/ffi/posix.js';
import { freePort, needs, ROOT, tool, waitFor } from './tools.js';

const prometheus = tool('prometheus', 'prometheus');
const MAIN = join(ROOT, 'dist', 'cli', 'main.js');
const JOB = 'mxl-fabric-exporter';
const DEVICE = 'mlx5_0';
const NETDEV = 'ens1f0np0';
const TX_FACTOR = 1.1; // tx runs 10 % above the model: drift beyond the 5 % tolerance
// The video (tx) and the audio (rx) flows are also followed in MXL domains, kept live by the
// test, so that the flow state panels, queries and rules have data. The video is received back
// on the same host (a copy in the rx domain), so that the facility's sender -> receiver rules
// have a path.
const VIDEO_ID = '0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d01';
const AUDIO_ID = '0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d04';
const CONFIG = (domain: string, rxDomain: string): string => `
sampling: { interval: 1s, window: 5s }
drift: { tolerance: 0.05 }
headroom: 0.9
ports:
  - { device: ${DEVICE}, port: 1, provider: rdma_rocev2, mtu: auto, capacity: auto }
flows:
  - { flow: flows/v210_1080p2997.json, device: ${DEVICE}, port: 1, direction: tx }
  - { flow: flows/data_60.json, device: ${DEVICE}, port: 1, direction: tx }
  - { flow: flows/audio_2ch_48k.json, device: ${DEVICE}, port: 1, direction: rx }
domains:
  - { path: ${domain}, device: ${DEVICE}, port: 1, direction: tx, include: ["Camera 1:Video"] }
  - { path: ${rxDomain}, device: ${DEVICE}, port: 1, direction: rx }
`;

interface Proc { child: ChildProcess; output: string[] }
function start(cmd: string, args: string[]): Proc {
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  child.stdout!.on('data', (d) => output.push(String(d)));
  child.stderr!.on('data', (d) => output.push(String(d)));
  return { child, output };
}
function stop(p: Proc | undefined): Promise<void> {
  if (!p || p.child.exitCode !== null || p.child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => p.child.kill('SIGKILL'), 5000);
    p.child.once('exit', () => { clearTimeout(timer); resolve(); });
    p.child.kill('SIGTERM');
  });
}

/**
 * Recording rules over the RDMA connections the kernel tracks (docs/connections.md): this host
 * has no RDMA, so the exporter here has no connection and they stay empty; promtool's unit tests
 * (deploy/prometheus/tests/facility.test.yml) give them data instead.
 */
const NEEDS_RDMA_CONNECTIONS = new Set(['flow_id:mxl_fabric_connection_path:info',
  // and traffic of a connection that carries no MXL flow, which only a fault gives (issue 32,
  // unmodelled-traffic; deploy/prometheus/tests/drift.test.yml)
  'connection:mxl_fabric_connection_unmodelled_packets:rate', 'connection:mxl_fabric_connection_unmodelled_packets:share_of_port',
  'connection:mxl_fabric_connection_unmodelled_packets:share_of_drifting_port']);
/**
 * The ACK direction of a port (recording.yml) is the one that carries no flow of its own: this
 * test's port carries flows both ways (video and data tx, audio rx), so it has none, by design;
 * deploy/prometheus/tests/drift.test.yml gives the record data on a sender's and a receiver's port.
 */
const NEEDS_ONE_WAY_PORT = new Set(['instance_device_port:mxl_fabric_port_predicted_wire_bytes_per_second:ack_direction']);
/** The Grafana alert rules (by title) whose query reads those: it must parse here, it cannot return data. */
const GRAFANA_NEEDS_RDMA_CONNECTIONS = new Set(['MXL fabric unmodelled traffic']);
/**
 * Recording rules over ALERTS that have data only while (or shortly after) an alert is pending or
 * fires: the port grace (a port-level cause within the last minute), the flows whose sending port
 * has one, and the ports whose flows have a cause of their own have none while every port and
 * flow here is fine; deploy/prometheus/tests/port-grace.test.yml gives them data instead.
 */
const NEEDS_FIRING_ALERT = new Set(['instance_device_port:mxl_fabric_port_cause_alerts:max1m',
  'flow_id:mxl_fabric_flow_sending_port_cause_alerts:max1m', 'instance_device_port:mxl_fabric_flow_cause_alerts:max1m',
  'flow_id:mxl_fabric_flow_sender_alerts:max1m']);

interface PromResult { metric: Record<string, string>; value: [number, string] }
let promBase = '';
async function query(expr: string): Promise<{ status: string; error?: string; result: PromResult[] }> {
  const r = await fetch(`${promBase}/api/v1/query?${new URLSearchParams({ query: expr })}`);
  const body = (await r.json()) as { status: string; error?: string; data?: { result: PromResult[] } };
  return { status: body.status, ...(body.error ? { error: body.error } : {}), result: body.data?.result ?? [] };
}

/** Grafana template variables -> values; `$__` built-ins get sensible durations. */
function substitute(expr: string, vars: Record<string, string>): string {
  const builtins: Record<string, string> = { __rate_interval: '1m', __interval: '15s', __range: '1h', __range_s: '3600', __interval_ms: '15000' };
  return expr.replace(/\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)/g, (_m, a?: string, b?: string, c?: string) => {
    const name = (a ?? b ?? c)!;
    const v = vars[name] ?? builtins[name];
    if (v === undefined) throw new Error(`no test value for template variable $${name} in ${expr}`);
    return v;
  });
}

/** Every `expr` of every `targets[]` entry anywhere in the dashboard, with where it is. */
function dashboardExprs(node: unknown, where = 'dashboard', out: { where: string; expr: string }[] = []): { where: string; expr: string }[] {
  if (Array.isArray(node)) node.forEach((n, i) => dashboardExprs(n, `${where}[${i}]`, out));
  else if (node && typeof node === 'object') {
    const o = node as Record<string, unknown>;
    const here = typeof o.title === 'string' ? `${where} "${o.title}"` : where;
    if (Array.isArray(o.targets)) {
      for (const t of o.targets as Record<string, unknown>[]) {
        if (typeof t.expr === 'string') out.push({ where: `${here} ${String(t.refId)}`, expr: t.expr });
      }
    }
    for (const [k, v] of Object.entries(o)) if (k !== 'targets') dashboardExprs(v, here, out);
  }
  return out;
}

/**
 * Families read only on the real /sys (ethtool ioctls, DCB netlink): a fake --path.sysfs has none,
 * so their panels must parse here but cannot return data (test/exporter/fabric-health.test.ts
 * covers their values with injected sources).
 */
const NATIVE_ONLY = /mxl_fabric_port_(pause_frames|pause_duration_seconds|pfc_enabled)_?/;

const dashboard = JSON.parse(readFileSync(join(ROOT, 'deploy', 'grafana', 'dashboard.json'), 'utf8')) as {
  templating: { list: { name: string; type: string; query: string | { query: string } }[] };
};
const grafanaAlerts = parse(readFileSync(join(ROOT, 'deploy', 'grafana', 'provisioning', 'alerting', 'mxl-fabric-drift.yml'), 'utf8')) as {
  groups: { rules: { title: string; data: { refId: string; datasourceUid: string; model: { expr?: string } }[] }[] }[];
};

// Counted as a failed test (not only a failed hook) when CI lacks the Debian prometheus package.
needs(prometheus).it('the prometheus server is installed', () => {
  expect(prometheus.require()).toBeTruthy();
});

needs(prometheus).describe('Prometheus + exporter end to end: dashboard and alert queries return data', { timeout: 90_000 }, () => {
  let fx: SysfsFixture | undefined;
  let dir = '';
  let exporter: Proc | undefined;
  let prom: Proc | undefined;
  let driver: NodeJS.Timeout | undefined;
  let instance = '';
  const logs = () => `--- exporter ---\n${exporter?.output.join('').slice(-3000) ?? ''}\n--- prometheus ---\n${prom?.output.join('').slice(-3000) ?? ''}`;

  beforeAll(async () => {
    const promBin = prometheus.require();
    if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run npm run build first`);
    fx = SysfsFixture.copy('mlx5_roce');
    dir = mkdtempSync(join(tmpdir(), 'mfe-deploy-e2e-'));
    mkdirSync(join(dir, 'cfg', 'flows'), { recursive: true });
    for (const f of ['v210_1080p2997.json', 'data_60.json', 'audio_2ch_48k.json']) {
      copyFileSync(join(ROOT, 'test', 'fixtures', 'flows', f), join(dir, 'cfg', 'flows', f));
    }
    const domain = join(dir, 'mxl-domain');
    const rxDomain = join(dir, 'mxl-domain-rx');
    mkdirSync(domain);
    mkdirSync(rxDomain);
    const tai = () => loadPosix().taiNowNs();
    const flowText = (f: string) => readFileSync(join(dir, 'cfg', 'flows', f), 'utf8');
    const videoDir = addFlow(domain, flowText('v210_1080p2997.json'),
      { id: VIDEO_ID, format: 1, rate: [30000n, 1001n], grainCount: 3, headIndex: 0n, lastWriteTime: tai() });
    const audioDir = addFlow(rxDomain, flowText('audio_2ch_48k.json'), { id: AUDIO_ID, format: 2, rate: [48000n, 1n], channelCount: 2 });
    const videoRxDir = addFlow(rxDomain, flowText('v210_1080p2997.json'),
      { id: VIDEO_ID, format: 1, rate: [30000n, 1001n], grainCount: 3, headIndex: 0n, lastWriteTime: tai() });
    writeFileSync(join(dir, 'cfg', 'config.yaml'), CONFIG(domain, rxDomain));

    const exporterPort = await freePort();
    instance = `127.0.0.1:${exporterPort}`;
    exporter = start(process.execPath, [MAIN, 'serve', '--config.file', join(dir, 'cfg', 'config.yaml'), '--path.sysfs', fx.root,
      '--web.listen-address', instance, '--log.level', 'warn']);
    const metrics = await waitFor('the exporter', async () => {
      const r = await fetch(`http://${instance}/metrics`);
      return r.ok ? r.text() : undefined;
    }, 15_000, logs);

    // Traffic: tx at 110 % of the model's l2 bytes and packets, rx exactly as predicted; the PMA
    // data counters count 4-byte words. Counters are rewritten every 50 ms from the elapsed time.
    // Every flow is on the wire, so the sum over all of them (provisioned) is the prediction.
    const predicted = (name: string, direction: string, layer?: string): number => {
      const line = metrics.split('\n').find((l) => l.startsWith(`mxl_fabric_port_provisioned_${name}_per_second{`) &&
        l.includes(`direction="${direction}"`) && (!layer || l.includes(`layer="${layer}"`)));
      if (!line) throw new Error(`no predicted ${name} ${direction} in\n${metrics}`);
      return Number(line.slice(line.lastIndexOf(' ') + 1));
    };
    const rates = {
      tx: { bytes: predicted('bytes', 'tx', 'l2') * TX_FACTOR, packets: predicted('packets', 'tx') * TX_FACTOR },
      rx: { bytes: predicted('bytes', 'rx', 'l2'), packets: predicted('packets', 'rx') },
    };
    const read = (p: string) => BigInt(readFileSync(p, 'utf8').trim());
    const pma = (n: string) => fx!.portPath(DEVICE, 1, 'counters', n);
    const nd = (n: string) => fx!.path('class', 'net', NETDEV, 'statistics', n);
    const base = {
      xmitData: read(pma('port_xmit_data')), xmitPackets: read(pma('port_xmit_packets')),
      rcvData: read(pma('port_rcv_data')), rcvPackets: read(pma('port_rcv_packets')),
      txBytes: read(nd('tx_bytes')), txPackets: read(nd('tx_packets')), rxBytes: read(nd('rx_bytes')), rxPackets: read(nd('rx_packets')),
    };
    const t0 = performance.now();
    const advance = () => {
      const s = (performance.now() - t0) / 1000;
      const n = (rate: number, div = 1) => BigInt(Math.floor((rate * s) / div));
      fx!.setCounter(DEVICE, 1, 'counters', 'port_xmit_data', base.xmitData + n(rates.tx.bytes, 4));
      fx!.setCounter(DEVICE, 1, 'counters', 'port_xmit_packets', base.xmitPackets + n(rates.tx.packets));
      fx!.setCounter(DEVICE, 1, 'counters', 'port_rcv_data', base.rcvData + n(rates.rx.bytes, 4));
      fx!.setCounter(DEVICE, 1, 'counters', 'port_rcv_packets', base.rcvPackets + n(rates.rx.packets));
      fx!.setNetdevStat(NETDEV, 'tx_bytes', base.txBytes + n(rates.tx.bytes));
      fx!.setNetdevStat(NETDEV, 'tx_packets', base.txPackets + n(rates.tx.packets));
      fx!.setNetdevStat(NETDEV, 'rx_bytes', base.rxBytes + n(rates.rx.bytes));
      fx!.setNetdevStat(NETDEV, 'rx_packets', base.rxPackets + n(rates.rx.packets));
      commit(videoDir, n(30000 / 1001), tai());
      commit(videoRxDir, n(30000 / 1001), tai());
      commit(audioDir, n(48000), 0n);
    };
    advance();
    driver = setInterval(advance, 50);

    const promPort = await freePort();
    promBase = `http://127.0.0.1:${promPort}`;
    writeFileSync(join(dir, 'prometheus.yml'), [
      'global:',
      '  scrape_interval: 1s',
      '  scrape_timeout: 1s',
      '  evaluation_interval: 1s',
      'rule_files:',
      `  - ${JSON.stringify(join(ROOT, 'deploy', 'prometheus', 'rules', 'recording.yml'))}`,
      `  - ${JSON.stringify(join(ROOT, 'deploy', 'prometheus', 'rules', 'alerts.yml'))}`,
      'scrape_configs:',
      `  - job_name: ${JOB}`,
      '    static_configs:',
      `      - targets: [${JSON.stringify(instance)}]`,
      '',
    ].join('\n'));
    prom = start(promBin, [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'tsdb')}`,
      `--web.listen-address=127.0.0.1:${promPort}`, '--log.level=warn', '--storage.tsdb.retention.time=1h']);
    await waitFor('Prometheus to be ready', async () => ((await fetch(`${promBase}/-/ready`)).ok ? true : undefined), 20_000, logs);
    // A few scrapes, measured rates and the recording rules over them.
    await waitFor('five scrapes, drift and recorded per-host measured rates', async () => {
      const scrapes = (await query(`count_over_time(up{job="${JOB}"}[1m])`)).result[0]?.value[1];
      if (Number(scrapes ?? 0) < 5) return undefined;
      if ((await query('mxl_fabric_port_drift_ratio')).result.length < 4) return undefined;
      if ((await query('instance:mxl_fabric_port_measured_bytes_per_second:sum')).result.length === 0) return undefined;
      return true;
    }, 40_000, logs);
  }, 90_000);

  afterAll(async () => {
    if (driver) clearInterval(driver);
    await stop(prom);
    await stop(exporter);
    fx?.cleanup();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const allValues = () => ({ job: '.*', instance: '.*', device: '.*', port: '.*', datasource: 'prometheus' });
  const concrete = () => ({ job: JOB, instance, device: DEVICE, port: '1', datasource: 'prometheus' });

  it('every dashboard target expression parses and returns data, for All and for one host/device/port', async () => {
    const exprs = dashboardExprs(dashboard);
    expect(exprs.length).toBeGreaterThanOrEqual(20);
    const failures: string[] = [];
    for (const [name, vars] of [['All', allValues()], ['concrete', concrete()]] as const) {
      for (const { where, expr } of exprs) {
        const q = substitute(expr, vars);
        const r = await query(q);
        if (r.status !== 'success') failures.push(`${name} ${where}: ${r.error}\n  ${q}`);
        else if (r.result.length === 0 && !NATIVE_ONLY.test(q)) failures.push(`${name} ${where}: no data\n  ${q}`);
      }
    }
    expect(failures, failures.join('\n')).toEqual([]);
  });

  it('every template variable query (label_values) finds values', async () => {
    const failures: string[] = [];
    for (const v of dashboard.templating.list.filter((x) => x.type === 'query')) {
      const text = typeof v.query === 'string' ? v.query : v.query.query;
      const m = /^label_values\((.*),\s*(\w+)\)$/.exec(text.trim());
      if (!m) { failures.push(`${v.name}: not a label_values(selector, label) query: ${text}`); continue; }
      const selector = substitute(m[1]!, allValues());
      const r = await fetch(`${promBase}/api/v1/label/${m[2]}/values?${new URLSearchParams({ 'match[]': selector })}`);
      const body = (await r.json()) as { status: string; data?: string[]; error?: string };
      if (body.status !== 'success' || !body.data?.length) failures.push(`${v.name}: ${body.error ?? 'no values'} for ${selector}`);
    }
    expect(failures, failures.join('\n')).toEqual([]);
  });

  it('every Prometheus query of the Grafana alert provisioning parses and returns data', async () => {
    const queries = grafanaAlerts.groups.flatMap((g) => g.rules.flatMap((r) => r.data
      .filter((d) => d.datasourceUid !== '__expr__')
      .map((d) => ({ where: `${r.title} ${d.refId}`, expr: d.model.expr, connections: GRAFANA_NEEDS_RDMA_CONNECTIONS.has(r.title) }))));
    expect(queries.length).toBeGreaterThan(0);
    const failures: string[] = [];
    for (const { where, expr, connections } of queries) {
      if (!expr) { failures.push(`${where}: no expr`); continue; }
      const r = await query(expr);
      if (r.status !== 'success') failures.push(`${where}: ${r.error}`);
      else if (r.result.length === 0 && !connections) failures.push(`${where}: no data`);
    }
    expect(failures, failures.join('\n')).toEqual([]);
  });

  it('Prometheus loaded every rule, all evaluate without error, and every recording rule has data', async () => {
    const body = (await (await fetch(`${promBase}/api/v1/rules`)).json()) as {
      data: { groups: { rules: { name: string; type: string; health: string; lastError?: string }[] }[] };
    };
    const rules = body.data.groups.flatMap((g) => g.rules);
    const files = ['recording.yml', 'alerts.yml'].flatMap((f) =>
      (parse(readFileSync(join(ROOT, 'deploy', 'prometheus', 'rules', f), 'utf8')) as { groups: { rules: unknown[] }[] }).groups.flatMap((g) => g.rules));
    expect(rules.length).toBe(files.length);
    const bad = rules.filter((r) => r.health !== 'ok').map((r) => `${r.name}: ${r.health} ${r.lastError ?? ''}`);
    expect(bad, bad.join('\n')).toEqual([]);
    const empty: string[] = [];
    for (const r of rules.filter((x) => x.type === 'recording' && !NEEDS_RDMA_CONNECTIONS.has(x.name) && !NEEDS_ONE_WAY_PORT.has(x.name) && !NEEDS_FIRING_ALERT.has(x.name))) {
      if ((await query(r.name)).result.length === 0) empty.push(r.name);
    }
    expect(empty, `recording rules without data: ${empty.join(', ')}`).toEqual([]);
  });

  it('the +10 % tx traffic makes MxlFabricModelDrift pend, with its annotations expanded', async () => {
    const alert = await waitFor('MxlFabricModelDrift on tx', async () => {
      const body = (await (await fetch(`${promBase}/api/v1/alerts`)).json()) as {
        data: { alerts: { labels: Record<string, string>; annotations: Record<string, string>; state: string; value: string }[] };
      };
      // Wait past the first evaluations, whose window may still reach back before the traffic (-100 %).
      return body.data.alerts.find((a) => a.labels.alertname === 'MxlFabricModelDrift' && a.labels.direction === 'tx' &&
        a.labels.quantity === 'bytes' && Number(a.value) > 0.05);
    }, 20_000, logs);
    expect(alert.state).toBe('pending'); // for: 5m
    expect(Number(alert.value)).toBeGreaterThan(0.05);
    expect(alert.annotations.description).not.toMatch(/error/i);
    expect(alert.annotations.description).toMatch(/drift tolerance of 5%/);
    expect(alert.annotations.description).toMatch(/Predicted [\d.]+[kMG]?\/s at layer l2\. Measured [\d.]+[kMG]?\/s\./);
    expect(alert.annotations.runbook_url).toBe('docs/alerts.md#mxlfabricmodeldrift'); // as shipped: the repository's docs path
  });
});
