// Host side of the soft-RoCE scenario: a real Prometheus scrapes the exporter in the guest
// (through qemu's hostfwd), evaluates the project's alert rules with a short `for:`, and this
// script checks, per phase, what the issue asks:
//   A (known flows only): predicted = the model exactly; measured packets and l2 bytes within
//     2 % of it (port_drift_ratio) for rxe0 tx and rxe1 rx; the ACKs coming back (rxe0 rx, rxe1
//     tx) within 5 % of the reverse prediction; the drift alert is not firing.
//   B (a flow the config does not know joins): the drift alert fires for rxe0 tx. The guest keeps
//     both flows running until ack-b: a slow guest (failed scrapes restart the pending alert) is
//     waited for, up to PHASE_B_DEADLINE_MS, not failed.
// usage: node scenario-host.mjs --out DIR --exporter HOST:PORT
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import YAML from 'yaml';
import { query, sleep, startPrometheus, testRules } from './lib/prometheus.mjs';
import { scenarioReport } from './lib/report.mjs';

const { values: args } = parseArgs({ options: { out: { type: 'string' }, exporter: { type: 'string' } } });
const OUT = args.out;
const TEST_FOR = '5s';
/**
 * Scrape interval and timeout. The emulated guest under a loaded host can take over a second to
 * answer; a failed scrape marks every series stale and restarts the pending drift alert, so a
 * slow guest failed phase B at 1 s. The flows scenario scrapes at 2 s for the same reason.
 */
const SCRAPE_SECONDS = 2;
/** How long phase B may take to see the drift page; 7-27 s on an idle host. */
const PHASE_B_DEADLINE_MS = 180_000;
const DRIFT_LIMIT = 0.02;
const ACK_DRIFT_LIMIT = 0.05;
const { report, log, check, phase, ack, writeHostDone, exit } = scenarioReport(OUT, 'scenario-host');

function driftAlertNames(ruleFiles) {
  const names = [];
  for (const f of ruleFiles) {
    for (const g of YAML.parse(readFileSync(f, 'utf8')).groups) {
      for (const r of g.rules) if (r.alert && /port_drift_ratio/.test(r.expr)) names.push(r.alert);
    }
  }
  if (!names.length) throw new Error('no alert rule on mxl_fabric_port_drift_ratio in deploy/prometheus/rules');
  return names;
}

function modelTotals() {
  const flows = JSON.parse(readFileSync(join(OUT, 'known.json'), 'utf8'));
  return {
    packets: flows.reduce((a, f) => a + f.packetsPerSecond, 0),
    l2: flows.reduce((a, f) => a + f.bytesPerSecond.l2, 0),
    // The responder's ACKs, on the opposite direction of each binding (one per RDMA write).
    ackPackets: flows.reduce((a, f) => a + f.ack.packetsPerSecond, 0),
    ackL2: flows.reduce((a, f) => a + f.ack.bytesPerSecond.l2, 0),
  };
}

/** The reverse direction: rxe0 receives and rxe1 sends the ACKs of the flows' writes. */
async function reverse(base, model) {
  for (const [device, direction] of [['rxe0', 'rx'], ['rxe1', 'tx']]) {
    const sel = `device="${device}",direction="${direction}"`;
    const [pp] = await query(base, `mxl_fabric_port_predicted_packets_per_second{${sel}}`);
    check(Math.abs(pp?.value - model.ackPackets) <= 1e-9 * model.ackPackets, `${device} ${direction} predicted packets/s = the model's ACKs`, { prometheus: pp?.value, model: model.ackPackets });
    const [d] = await query(base, `mxl_fabric_port_drift_ratio{${sel},quantity="packets"}`);
    check(d !== undefined && Math.abs(d.value) <= ACK_DRIFT_LIMIT, `${device} ${direction} ACK packets drift within 5 %`, { drift: d?.value });
  }
}

async function phaseA(base, alerts) {
  const model = modelTotals();
  report.numbers.model = model;
  for (const [device, direction] of [['rxe0', 'tx'], ['rxe1', 'rx']]) {
    const sel = `device="${device}",direction="${direction}"`;
    const [pp] = await query(base, `mxl_fabric_port_predicted_packets_per_second{${sel}}`);
    const [pb] = await query(base, `mxl_fabric_port_predicted_bytes_per_second{${sel},layer="l2"}`);
    check(Math.abs(pp?.value - model.packets) <= 1e-9 * model.packets, `${device} ${direction} predicted packets/s = model`, { prometheus: pp?.value, model: model.packets });
    check(Math.abs(pb?.value - model.l2) <= 1e-9 * model.l2, `${device} ${direction} predicted l2 bytes/s = model`, { prometheus: pb?.value, model: model.l2 });
    const measured = await query(base, `mxl_fabric_port_measured_packets_per_second{${sel}}`);
    const measuredBytes = await query(base, `mxl_fabric_port_measured_bytes_per_second{${sel},layer="l2"}`);
    report.numbers[`${device}_${direction}_measured`] = {
      packets: Object.fromEntries(measured.map((m) => [m.labels.source, m.value])),
      l2bytes: Object.fromEntries(measuredBytes.map((m) => [m.labels.source, m.value])),
    };
    for (const quantity of ['packets', 'bytes']) {
      const [d] = await query(base, `mxl_fabric_port_drift_ratio{${sel},quantity="${quantity}"}`);
      check(d !== undefined && Math.abs(d.value) <= DRIFT_LIMIT, `${device} ${direction} ${quantity} drift within 2 %`, { drift: d?.value });
    }
  }
  await reverse(base, model);
  const [attrs] = await query(base, 'mxl_fabric_port_info{device="rxe0"}');
  check(attrs?.labels.attributes_source === 'verbs', 'rxe0 attributes come from libibverbs', attrs?.labels);
  const nl = await query(base, 'mxl_fabric_port_measured_packets_per_second{device="rxe0",direction="tx",source="netlink"}');
  check(nl.length === 1, 'rxe0 packets measured over RDMA netlink');
  const firing = await query(base, `ALERTS{alertname=~"${alerts.join('|')}"}`);
  check(firing.length === 0, 'drift alert inactive while traffic matches the model', { alerts: firing.map((a) => a.labels) });
}

async function phaseB(base, alerts, start, deadline) {
  while (Date.now() < deadline) {
    const firing = await query(base, `ALERTS{alertname=~"${alerts.join('|')}",alertstate="firing",device="rxe0"}`);
    if (firing.length) {
      const [d] = await query(base, 'mxl_fabric_port_drift_ratio{device="rxe0",direction="tx",quantity="bytes"}');
      check(true, 'drift alert fires for rxe0 when an unknown flow joins', { alert: firing[0].labels.alertname, drift: d?.value, seconds: (Date.now() - start) / 1000 });
      return;
    }
    await sleep(1000);
  }
  check(false, 'drift alert fires for rxe0 when an unknown flow joins (timed out)');
}

async function main() {
  const dir = join(OUT, 'prometheus');
  mkdirSync(dir, { recursive: true });
  const rules = testRules(dir, TEST_FOR);
  const alerts = driftAlertNames(rules);
  const prom = await startPrometheus(dir, [args.exporter], rules, SCRAPE_SECONDS);
  for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => { prom.proc.kill('SIGTERM'); process.exit(1); });
  try {
    const ruleCheck = await (await fetch(`${prom.base}/api/v1/rules`)).json();
    check(ruleCheck.data.groups.length > 0, `Prometheus loaded the project's rules (${alerts.join(', ')} for drift)`);
    await phase('ready', 420_000);
    const startA = await phase('a', 60_000);
    await sleep(Math.max(0, startA + 22_000 - Date.now()));
    await phaseA(prom.base, alerts);
    const startB = await phase('b', 60_000);
    await phaseB(prom.base, alerts, startB, startB + PHASE_B_DEADLINE_MS);
    ack('b');
    await phase('idle', 90_000);
  } finally {
    writeHostDone();
    prom.proc.kill('SIGTERM');
  }
  exit();
}

main().catch((e) => {
  log(`error: ${e.message}`);
  writeHostDone(e.message);
  process.exit(1);
});
