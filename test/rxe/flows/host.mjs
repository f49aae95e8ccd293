// Host side of the flow-state scenario (test/rxe/run.sh, scenario "flows"): one real Prometheus
// scrapes both exporters in the guest (sender on rxe0 at the guest's :9842, receiver on rxe1 at
// :9843) through qemu's hostfwd, evaluates the project's rules with `for:` shortened to
// FOR_SECONDS, and checks each phase of guest.sh, then acknowledges it. Numbers go to report.json.
// usage: RXE_SECOND_EXPORTER=HOST:PORT node host.mjs --out DIR --exporter HOST:PORT
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { sleep, startPrometheus, testRules } from '../lib/prometheus.mjs';
import { scenarioReport } from '../lib/report.mjs';

const { values: args } = parseArgs({ options: { out: { type: 'string' }, exporter: { type: 'string' } } });
const OUT = args.out;
const S = args.exporter;
const R = process.env.RXE_SECOND_EXPORTER;
if (!OUT || !S || !R) throw new Error('usage: RXE_SECOND_EXPORTER=HOST:PORT node host.mjs --out DIR --exporter HOST:PORT');
const FOR_SECONDS = 10;
const SCRAPE_SECONDS = 2;
const TOLERANCE = 0.05;
const HERE = new URL('.', import.meta.url).pathname;
const idOf = (f) => JSON.parse(readFileSync(join(HERE, 'flows', f), 'utf8')).id;
const FLOWS = { video: idOf('video.json'), audio: idOf('audio.json'), data: idOf('data.json') };
const MXL_VIDEO = idOf('mxl-video.json');
const MXL_AUDIO = idOf('mxl-audio.json');
const AUDIO_BATCH_S = 0.01; // MXL's audio commit batch (480 samples at 48 kHz) = the binding's grain duration
const INTERVAL_S = 1; // sender.yaml sampling.interval (the exporter's, not the scrape's)

const { report, log, check, phase, ack, writeHostDone, exit } = scenarioReport(OUT, 'flows-host');

let prom;
const q = (expr) => prom.query(expr);
const one = async (expr) => (await q(expr))[0]?.value;
const TX = `instance="${S}",device="rxe0",port="1",direction="tx"`;
const alerts = (name, sel = '', state = 'firing') => q(`ALERTS{alertname="${name}",alertstate${state === 'any' ? '=~".+"' : `="${state}"`}${sel ? `,${sel}` : ''}}`);

/** Polls `fn` every 500 ms until it returns a value other than undefined; { value, seconds } or undefined on timeout. */
async function until(fn, timeoutMs, from = Date.now()) {
  while (Date.now() - from < timeoutMs) {
    const v = await fn();
    if (v !== undefined) return { value: v, seconds: (Date.now() - from) / 1000 };
    await sleep(500);
  }
  return undefined;
}

async function drift() {
  const rows = await q(`mxl_fabric_port_drift_ratio{${TX}}`);
  return Object.fromEntries(rows.map((r) => [r.labels.quantity, r.value]));
}
const live = async (id, sel = TX) => one(`mxl_fabric_flow_live{${sel},flow_id="${id}"}`);
async function allLive() {
  for (const id of Object.values(FLOWS)) if ((await live(id)) !== 1) return false;
  return true;
}
/** What per-port drift over every configured flow (the old prediction) shows now, at l2. */
const provisionedDrift = () => one(`max without (source) (mxl_fabric_port_measured_bytes_per_second{${TX},layer="l2"})
  / on (instance, device, port, direction, layer) mxl_fabric_port_provisioned_bytes_per_second{${TX},layer="l2"} - 1`);

async function phaseRun() {
  await phase('a-run');
  const settled = await until(async () => {
    const d = await drift();
    return (await allLive()) && Math.abs(d.bytes ?? 1) <= 0.02 && Math.abs(d.packets ?? 1) <= 0.02 ? d : undefined;
  }, 90_000);
  check(settled !== undefined, 'A: three flows on rxe0 live, port drift within 2 % of the model', { drift: settled?.value ?? await drift(), seconds: settled?.seconds });
  report.numbers.dataShareOfPortL2 = (await one(`mxl_fabric_flow_predicted_bytes_per_second{${TX},flow_id="${FLOWS.data}",layer="l2"}`))
    / (await one(`mxl_fabric_port_predicted_bytes_per_second{${TX},layer="l2"}`));
  const firing = await q(`ALERTS{alertstate="firing",instance="${S}",alertname=~"MxlFabricModelDrift|MxlFabricFlowMissing"}`);
  check(firing.length === 0, 'A: no drift or missing-flow alert while all three run', { firing: firing.map((a) => a.labels) });
  ack('a-run');
}

async function phaseDataStopped() {
  const t0 = await phase('a-data-stopped');
  const seen = [];
  let driftFired = false;
  const watch = async () => {
    seen.push(...Object.values(await drift()));
    driftFired ||= (await alerts('MxlFabricModelDrift', `instance="${S}",device="rxe0"`)).length > 0;
  };
  const fired = await until(async () => {
    await watch();
    const a = await alerts('MxlFabricFlowMissing', `instance="${S}"`);
    return a.length > 0 ? a : undefined;
  }, 90_000, t0);
  const names = fired?.value.map((a) => a.labels.flow_id) ?? [];
  check(fired !== undefined && names.length === 1 && names[0] === FLOWS.data,
    `A: MxlFabricFlowMissing names the data flow alone (for: ${FOR_SECONDS}s)`, { seconds: fired?.seconds, flows: names });
  const api = await (await fetch(`${prom.base}/api/v1/alerts`)).json();
  const missing = api.data.alerts.find((a) => a.labels.alertname === 'MxlFabricFlowMissing' && a.labels.flow_id === FLOWS.data);
  check(/"rxe data"/.test(missing?.annotations.summary ?? ''), 'A: its summary gives the flow label', { summary: missing?.annotations.summary });
  // The sampling window (5 s) has passed: what the port shows now, with and without the prediction following the flows.
  const now = await drift();
  const old = await provisionedDrift();
  await watch();
  const worst = Math.max(...seen.map(Math.abs));
  report.numbers.dataStopped = { missingAfterSeconds: fired?.seconds, portDrift: now, maxAbsPortDriftSeen: worst, driftOverEveryConfiguredFlow: old };
  check(Object.keys(now).length === 2 && Object.values(now).every((v) => Math.abs(v) <= TOLERANCE) && !driftFired,
    'A: port drift stays within tolerance; the drift alert does not fire', report.numbers.dataStopped);
  check(old !== undefined && Math.abs(old) <= TOLERANCE, 'A: drift over every configured flow would also stay within tolerance (per-port drift alone misses it)', { drift: old });
  ack('a-data-stopped');
}

async function phaseAllStopped() {
  const t0 = await phase('a-all-stopped');
  const idle = await until(async () => ((await one(`mxl_fabric_port_idle{${TX}}`)) === 1 ? true : undefined), 30_000, t0);
  check(idle !== undefined, 'A: with every flow stopped rxe0 tx reports itself idle', { seconds: idle?.seconds });
  let driftSeries = 0;
  let driftAlerts = 0;
  await sleep(2000); // one scrape and evaluation after the port went idle
  const end = Date.now() + (FOR_SECONDS + 5) * 1000;
  while (Date.now() < end) {
    driftSeries += (await q(`mxl_fabric_port_drift_ratio{${TX}}`)).length;
    driftAlerts += (await alerts('MxlFabricModelDrift', `instance="${S}",device="rxe0"`, 'any')).length;
    await sleep(1000);
  }
  check(driftSeries === 0 && driftAlerts === 0, `A: no drift and no drift alert (firing or pending) over ${FOR_SECONDS + 5} s of idle`, { driftSeries, driftAlerts });
  const missing = await until(async () => {
    const a = await alerts('MxlFabricFlowMissing', `instance="${S}"`);
    return a.length === 3 ? a : undefined;
  }, 30_000, t0);
  check(missing !== undefined, 'A: MxlFabricFlowMissing names all three flows', { seconds: missing?.seconds });
  ack('a-all-stopped');
}

async function phaseRestarted() {
  const t0 = await phase('a-restarted');
  let driftFired = false;
  const clear = await until(async () => {
    driftFired ||= (await alerts('MxlFabricModelDrift', `instance="${S}",device="rxe0"`)).length > 0;
    const d = await drift();
    const ok = (await allLive()) && (await one(`mxl_fabric_port_idle{${TX}}`)) === 0
      && (await alerts('MxlFabricFlowMissing', `instance="${S}"`)).length === 0
      && Math.abs(d.bytes ?? 1) <= TOLERANCE && Math.abs(d.packets ?? 1) <= TOLERANCE;
    return ok ? d : undefined;
  }, 90_000, t0);
  check(clear !== undefined && !driftFired, 'A: started again, everything clears (live, not idle, no missing alert, drift within tolerance)',
    { seconds: clear?.seconds, drift: clear?.value, driftFired });
  ack('a-restarted');
}

async function phaseMxlRun() {
  const t0 = await phase('b-run');
  const rx = `instance="${R}",device="rxe1",port="1",direction="rx"`;
  const both = await until(async () => ((await live(MXL_VIDEO, rx)) === 1 && (await live(MXL_VIDEO)) === 1 ? true : undefined), 120_000, t0);
  check(both !== undefined, "B: real MXL: the target's copy in the receiving domain is live (rxe1 rx) while the initiator runs, as is the source (rxe0 tx)", { seconds: both?.seconds });
  const grains = (await until(async () => {
    const g = await q(`mxl_fabric_flow_measured_grains_per_second{flow_id="${MXL_VIDEO}"}`);
    return g.length === 2 ? g : undefined;
  }, 20_000))?.value ?? await q(`mxl_fabric_flow_measured_grains_per_second{flow_id="${MXL_VIDEO}"}`);
  report.numbers.mxlGrainsPerSecond = Object.fromEntries(grains.map((g) => [`${g.labels.instance} ${g.labels.domain}`, g.value]));
  check(grains.length === 2 && new Set(grains.map((g) => g.labels.domain)).size === 2, "B: the sender's and the receiver's copy are two series (domain label)", report.numbers.mxlGrainsPerSecond);
  const observe = 20;
  let firing = 0;
  let pending = 0;
  await sleep(2000); // one evaluation after both went live
  for (let i = 0; i < observe; i++) {
    firing += (await alerts('MxlFabricFlowNotReceived')).length;
    pending += (await alerts('MxlFabricFlowNotReceived', '', 'pending')).length;
    await sleep(1000);
  }
  check(firing === 0, `B: MxlFabricFlowNotReceived does not fire while the flow arrives (${observe} s)`, { firing, pendingSamples: pending });
  const audioAge = await one(`max_over_time(mxl_fabric_flow_last_write_age_seconds{instance="${S}",flow_id="${MXL_AUDIO}"}[${observe}s])`);
  const audioSamples = await one(`count_over_time(mxl_fabric_flow_last_write_age_seconds{instance="${S}",flow_id="${MXL_AUDIO}"}[${observe}s])`);
  const videoAge = await one(`max_over_time(mxl_fabric_flow_last_write_age_seconds{instance="${S}",flow_id="${MXL_VIDEO}",domain="/dev/shm/mxl-tx"}[${observe}s])`);
  report.numbers.writeAge = { audioMaxSeconds: audioAge, audioSamples, videoMaxSeconds: videoAge, boundSeconds: AUDIO_BATCH_S + INTERVAL_S };
  check(audioAge !== undefined && audioSamples >= 5 && audioAge < AUDIO_BATCH_S + INTERVAL_S,
    'B: real MXL audio flow_last_write_age_seconds stays under one grain duration plus the sampling interval', report.numbers.writeAge);
  ack('b-run');
}

async function phaseInitiatorStopped() {
  const t0 = await phase('b-initiator-stopped');
  const rx = `instance="${R}",device="rxe1",port="1",direction="rx",flow_id="${MXL_VIDEO}"`;
  const down = await until(async () => ((await one(`mxl_fabric_flow_live{${rx}}`)) === 0 ? true : undefined), 60_000, t0);
  const stalled = await one(`mxl_fabric_flow_state{${rx},state="stalled"}`);
  check(down !== undefined && stalled === 1, "B: after the initiator stops the target's copy is not live (stalled: the target still holds it)", { seconds: down?.seconds, stalled });
  const fired = await until(async () => {
    const a = await alerts('MxlFabricFlowNotReceived');
    return a.length > 0 ? a : undefined;
  }, 90_000, t0);
  const labels = fired?.value.map((a) => `${a.labels.instance} ${a.labels.device} ${a.labels.flow_id}`) ?? [];
  check(labels.length === 1 && labels[0] === `${R} rxe1 ${MXL_VIDEO}`, `B: two exporters, one Prometheus: MxlFabricFlowNotReceived fires for the flow sent but not received (for: ${FOR_SECONDS}s)`,
    { seconds: fired?.seconds, alerts: labels });
  ack('b-initiator-stopped');
}

async function phaseTargetStopped() {
  const t0 = await phase('b-target-stopped');
  const gone = await until(async () => {
    const left = await q(`mxl_fabric_flow_live{instance="${R}",flow_id="${MXL_VIDEO}"}`);
    const a = await alerts('MxlFabricFlowNotReceived', '', 'any');
    return left.length === 0 && a.length === 0 ? true : undefined;
  }, 60_000, t0);
  check(gone !== undefined, "B: the target's clean exit deletes its copy: flow_live absent on the receiver, the alert resolves", { seconds: gone?.seconds });
  ack('b-target-stopped');
}

async function main() {
  const dir = join(OUT, 'prometheus');
  mkdirSync(dir, { recursive: true });
  // The guest runs the scenarios before this one first, on the same forwarded ports: Prometheus
  // starts once this scenario's exporter is up, so that it only ever sees this scenario's.
  await phase('ready', 1_500_000);
  prom = await startPrometheus(dir, [S, R], testRules(dir, `${FOR_SECONDS}s`), SCRAPE_SECONDS);
  for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => { prom.proc.kill('SIGTERM'); process.exit(1); });
  try {
    await phaseRun();
    await phaseDataStopped();
    await phaseAllStopped();
    await phaseRestarted();
    await phaseMxlRun();
    await phaseInitiatorStopped();
    await phaseTargetStopped();
    await phase('done', 60_000);
  } finally {
    writeHostDone();
    prom?.proc.kill('SIGTERM');
  }
  exit();
}

main().catch((e) => {
  log(`error: ${e.message}`);
  writeHostDone(e.message);
  prom?.proc.kill('SIGTERM');
  process.exit(1);
});
