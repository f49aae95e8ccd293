// The real-MXL scenario's connections checks (test/rxe/mxl/guest.sh, connections()): from the
// exporter's metrics with bind: auto on both domains, taken while each flow ran, is the flow bound
// where its connections run (the initiator's on rxe0 tx, the target's on rxe1 rx), by the process
// that maps it, and how close are the packets its connections moved (PSNs) to the model's?
// Writes OUT/connections-report.json; exit 1 (the scenario fails) when a binding is wrong or
// missing. The packet ratios are recorded, not asserted here (the exporter runs only seconds per
// flow; the `connections` scenario asserts packets per grain and coverage over a full window),
// and under TCG the audio initiator sends fewer batches than its writer commits (check.mjs).
//
//   node test/rxe/mxl/check-connections.mjs OUT
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { samples } from '../lib/samples.mjs';

const out = process.argv[2];
const FLOWS = { video: '5fbec3b1-1b0f-417d-9059-8b94a4710001', audio: 'b3bb5be7-9fe9-4324-a5bb-4c70e1080008' };
const report = { checks: [], numbers: {} };
const check = (ok, what, numbers) => {
  report.checks.push({ ok, what, ...(numbers ? { numbers } : {}) });
  console.error(`mxl-connections: ${ok ? 'ok  ' : 'FAIL'} ${what}${numbers ? ` ${JSON.stringify(numbers)}` : ''}`);
};

/** `name{labels} value` lines: [{ name, labels, value }]. */
const find = (all, name, labels) => all.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));

for (const [phase, id] of Object.entries(FLOWS)) {
  let text;
  try {
    text = readFileSync(join(out, `metrics-${phase}-auto.txt`), 'utf8');
  } catch (e) {
    check(false, `${phase}: metrics with bind: auto were taken`, { error: e.message });
    continue;
  }
  const all = samples(text);
  for (const [device, direction] of [['rxe0', 'tx'], ['rxe1', 'rx']]) {
    const side = `${phase} ${device} ${direction}`;
    const info = find(all, 'mxl_fabric_flow_info', { flow_id: id, device, direction, origin: 'domain' });
    check(info.length === 1, `${side}: the flow is bound there by its connection`);
    const conn = find(all, 'mxl_fabric_connection_info', { flow_id: id, device, direction });
    check(conn.length === 1 && conn[0].labels.process === 'mxl-fabrics-dem', `${side}: one connection carries it, owned by mxl-fabrics-dem`, {
      connections: conn.map((c) => `${c.labels.local} -> ${c.labels.peer} pid ${c.labels.pid} ${c.labels.process}`),
    });
    const measured = find(all, 'mxl_fabric_flow_measured_packets_per_second', { flow_id: id, device, direction, source: 'connection' })[0]?.value;
    const predicted = find(all, 'mxl_fabric_flow_predicted_packets_per_second', { flow_id: id, device, direction })[0]?.value;
    const grains = find(all, 'mxl_fabric_flow_measured_grains_per_second', { flow_id: id, domain: direction === 'tx' ? '/dev/shm/mxl-tx' : '/dev/shm/mxl-rx' })[0]?.value;
    const perGrain = find(all, 'mxl_fabric_flow_connection_packets_per_grain', { flow_id: id, device, direction, domain: '/dev/shm/mxl-rx' })[0]?.value;
    report.numbers[side] = {
      measuredPacketsPerSecond: measured, predictedPacketsPerSecond: predicted, measuredGrainsPerSecond: grains, packetsPerGrainReceived: perGrain,
      packetDrift: measured !== undefined && predicted ? measured / predicted - 1 : null,
    };
  }
  const coverage = find(all, 'mxl_fabric_port_connection_coverage_ratio', { device: 'rxe0', direction: 'tx' })[0]?.value;
  report.numbers[`${phase} rxe0 tx coverage`] = coverage ?? null;
}
writeFileSync(join(out, 'connections-report.json'), `${JSON.stringify(report, null, 2)}\n`);
const failed = report.checks.filter((c) => !c.ok).length;
console.error(`mxl-connections: ${report.checks.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
