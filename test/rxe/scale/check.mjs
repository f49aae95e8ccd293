// The scale scenario's checks (test/rxe/scale/guest.sh) on the exporter's saved scrapes and the
// kernel's table: the exporter's CPU per second with perftest's QPs against its CPU without them
// (idle; the issue's target, 1.5x, reported in scale-report.json's targets, not asserted), every
// QP the kernel holds listed (the connection groups of the default series budget count them all), the perftest server's QPs in RTR up, and real MXL's flow A, with
// the QPs beside it, bound to its own connections and at the model per grain on both sides.
// Writes OUT/scale-report.json; exit 1 when a check fails.
//
//   node test/rxe/scale/check.mjs OUT
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { samples } from '../lib/samples.mjs';

const out = process.argv[2];
const A = '5fbec3b1-1b0f-417d-9059-8b94a4710001';
const GRAIN_RATE = 25;
const RX_DOMAIN = '/dev/shm/mxl-rx';
const PER_GRAIN_TOLERANCE = 0.005;
const CPU_RATIO_MAX = 1.5;
/** guest.sh's default perftest QPs per side. */
const QPS = Number(process.env.SCALE_QPS ?? 256);

const report = { checks: [], numbers: {} };
const check = (ok, what, numbers) => {
  report.checks.push({ ok: Boolean(ok), what, ...(numbers ? { numbers } : {}) });
  console.error(`scale: ${ok ? 'ok  ' : 'FAIL'} ${what}${numbers ? ` ${JSON.stringify(numbers)}` : ''}`);
};
const text = (name) => (existsSync(join(out, name)) ? readFileSync(join(out, name), 'utf8') : '');
const scrape = (phase) => samples(text(`metrics-${phase}.txt`));
const find = (all, name, labels = {}) => all.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
const sum = (all, name, labels) => find(all, name, labels).reduce((a, s) => a + s.value, 0);
const value = (all, name, labels) => find(all, name, labels)[0]?.value;

/** The kernel's QPs in `rdma res show qp` (iproute2): every line but the kernel's GSI QPs. */
function kernelQps(phase) {
  const lines = text(`rdma-qp-${phase}.txt`).split('\n').filter((l) => l.startsWith('link '));
  const user = lines.filter((l) => !/ type GSI /.test(l));
  return { all: lines.length, user: user.length, rtr: user.filter((l) => / state RTR /.test(l)).length };
}

/** QPs the exporter lists: its connection groups' counts, or (series budget `qp`) its connection_info series. */
function listed(all) {
  const grouped = find(all, 'mxl_fabric_connection_group_connections');
  return grouped.length > 0 ? sum(all, 'mxl_fabric_connection_group_connections') : find(all, 'mxl_fabric_connection_info').length;
}

/** Up among the perftest server's QPs (rxe1, ib_write_bw). */
function serverUp(all) {
  const grouped = find(all, 'mxl_fabric_connection_group_up', { device: 'rxe1', process: 'ib_write_bw' });
  if (grouped.length > 0) return sum(all, 'mxl_fabric_connection_group_up', { device: 'rxe1', process: 'ib_write_bw' });
  const ids = find(all, 'mxl_fabric_connection_info', { device: 'rxe1', process: 'ib_write_bw' });
  return ids.filter((i) => value(all, 'mxl_fabric_connection_up', { device: 'rxe1', local: i.labels.local, peer: i.labels.peer }) === 1).length;
}

function flowAtModel(phase, all) {
  const predicted = value(all, 'mxl_fabric_flow_predicted_packets_per_second', { flow_id: A, device: 'rxe0', port: '1', direction: 'tx' });
  const model = predicted === undefined ? undefined : predicted / GRAIN_RATE;
  const sides = {};
  for (const [device, direction] of [['rxe0', 'tx'], ['rxe1', 'rx']]) {
    const perGrain = value(all, 'mxl_fabric_flow_connection_packets_per_grain', { flow_id: A, domain: RX_DOMAIN, device, port: '1', direction });
    const measured = value(all, 'mxl_fabric_flow_measured_packets_per_second', { flow_id: A, device, port: '1', direction, source: 'connection' });
    const carriers = find(all, 'mxl_fabric_connection_group_connections', { flow_id: A, device, port: '1', direction });
    const drift = perGrain === undefined || !model ? null : perGrain / model - 1;
    sides[`${device} ${direction}`] = { perGrain, model, drift, measuredPacketsPerSecond: measured, carryingConnections: carriers[0]?.value };
    check(measured !== undefined, `${phase}: flow A measured by its connection on ${device} ${direction}`);
    check(carriers.length === 1 && carriers[0].value === 1, `${phase}: flow A carried by its one connection on ${device} ${direction} (connection_group_connections 1)`, { carriers: carriers.map((c) => c.value) });
    check(drift !== null && Math.abs(drift) <= PER_GRAIN_TOLERANCE, `${phase}: flow A packets per grain on ${device} ${direction} within ${PER_GRAIN_TOLERANCE * 100} % of the model`, { perGrain, model, drift });
  }
  report.numbers[`${phase} flow A`] = sides;
}

/** CPU seconds per second over the phase's reading (cpu-PHASE.txt: ticks of 1/100 s, seconds). */
function cpu(phase) {
  const [ticks, seconds] = text(`cpu-${phase}.txt`).trim().split(/\s+/).map(Number);
  return ticks === undefined || !seconds ? undefined : (ticks * 10) / seconds;
}

for (const phase of ['idle', 'qps', 'mxl']) {
  const all = scrape(phase);
  check(all.length > 0, `${phase}: the exporter answered a scrape`);
  report.numbers[`${phase} series`] = all.length;
  report.numbers[`${phase} cpu ms/s`] = cpu(phase);
  if (phase === 'idle') continue;
  const k = kernelQps(phase);
  const n = listed(all);
  report.numbers[`${phase} QPs`] = { kernel: k.all, kernelUser: k.user, kernelRtr: k.rtr, listed: n };
  check(k.user >= 2 * QPS, `${phase}: the kernel holds perftest's ${2 * QPS} QPs`, { kernelUser: k.user });
  check(n === k.user, `${phase}: every QP the kernel holds (but its GSI QPs) is listed`, { kernel: k.user, listed: n });
  const up = serverUp(all);
  report.numbers[`${phase} perftest server`] = { rtr: k.rtr, up };
  check(k.rtr >= QPS && up === QPS, `${phase}: the perftest server's ${QPS} QPs in RTR are up`, { rtr: k.rtr, up });
  if (phase === 'mxl') flowAtModel(phase, all);
}

const idle = cpu('idle');
const qps = cpu('qps');
const ratio = idle && qps !== undefined ? qps / idle : null;
report.numbers.cpu = { idleMsPerSecond: idle, qpsMsPerSecond: qps, ratio, mxlMsPerSecond: cpu('mxl') };
// A performance target: reported with its ratio, never a failed check (timed tests fail on load,
// not on the code: the brief keeps targets in benchmarks). Both readings must exist.
check(ratio !== null, `the exporter's CPU per second read idle and with ${2 * QPS} QPs`, report.numbers.cpu);
report.targets = [{ what: `the exporter's CPU per second with ${2 * QPS} QPs within ${CPU_RATIO_MAX}x of its CPU without them`, ratio, limit: CPU_RATIO_MAX, met: ratio !== null && ratio <= CPU_RATIO_MAX }];
console.error(`scale: target (reported, not asserted): CPU with ${2 * QPS} QPs / idle = ${ratio === null ? '?' : ratio.toFixed(2)}x (target <= ${CPU_RATIO_MAX}x: ${report.targets[0].met ? 'met' : 'not met'})`);

writeFileSync(join(out, 'scale-report.json'), `${JSON.stringify(report, null, 2)}\n`);
process.exit(report.checks.every((c) => c.ok) ? 0 : 1);
