// The connections scenario's checks (test/rxe/connections/guest.sh) on the exporter's saved
// scrapes: bindings by connection for two flows from two initiator processes, packets per grain
// (PSNs and headIndex read in the same tick) within 0.5 % of the model on both sides, rxe0 tx
// coverage within 2 %, ib_write_bw -R as a connection without a flow, the stopped initiator's
// connection down in every read after its exit and MxlFabricConnectionDown evaluated by promtool
// on the series as exported, the restarted initiator bound again with no negative rate, and a
// wrong configured binding flagged by `check` and flow_binding_mismatch.
// Writes OUT/connections-report.json; exit 1 when a check fails.
//
//   node test/rxe/connections/check.mjs OUT
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { samples } from '../lib/samples.mjs';

const out = process.argv[2];
const REPO = resolve(fileURLToPath(import.meta.url), '../../../..');
const A = '5fbec3b1-1b0f-417d-9059-8b94a4710001';
const B = '5fbec3b1-1b0f-417d-9059-8b94a4710002';
/** Grains per second of each flow (its flow_def.json grain_rate). */
const GRAIN_RATE = { [A]: 25, [B]: 30000 / 1001 };
const RX_DOMAIN = '/dev/shm/mxl-rx';
const TX_DOMAIN = '/dev/shm/mxl-tx';
const PER_GRAIN_TOLERANCE = 0.005;
const COVERAGE_TOLERANCE = 0.02;

const report = { checks: [], numbers: {} };
const check = (ok, what, numbers) => {
  report.checks.push({ ok: Boolean(ok), what, ...(numbers ? { numbers } : {}) });
  console.error(`connections: ${ok ? 'ok  ' : 'FAIL'} ${what}${numbers ? ` ${JSON.stringify(numbers)}` : ''}`);
};

/** `name{labels} value` lines: [{ name, labels, value, line }]. */
const scrape = (name) => {
  const f = join(out, `metrics-${name}.txt`);
  return existsSync(f) ? samples(readFileSync(f, 'utf8')) : [];
};
const find = (all, name, labels) => all.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
const value = (all, name, labels) => find(all, name, labels)[0]?.value;
const rel = (measured, model) => (measured === undefined || !model ? null : measured / model - 1);
const within = (r, tol) => r !== null && Math.abs(r) <= tol;

/** The model's packets per grain of a flow: its predicted packets/s on rxe0 tx over its grain rate. */
const modelPerGrain = (all, id) => {
  const p = value(all, 'mxl_fabric_flow_predicted_packets_per_second', { flow_id: id, device: 'rxe0', port: '1', direction: 'tx' });
  return p === undefined ? undefined : p / GRAIN_RATE[id];
};

/** Per grain the receiving domain counted, on both sides, within 0.5 % of the model. */
function perGrain(phase, all) {
  for (const id of [A, B]) {
    const model = modelPerGrain(all, id);
    const sides = {};
    for (const [device, direction] of [['rxe0', 'tx'], ['rxe1', 'rx']]) {
      const received = value(all, 'mxl_fabric_flow_connection_packets_per_grain', { flow_id: id, domain: RX_DOMAIN, device, port: '1', direction });
      const written = value(all, 'mxl_fabric_flow_connection_packets_per_grain', { flow_id: id, domain: TX_DOMAIN, device, port: '1', direction });
      sides[`${device} ${direction}`] = { perGrainReceived: received, perGrainWritten: written, model, drift: rel(received, model) };
    }
    report.numbers[`${phase} ${id === A ? 'A' : 'B'} packets per grain`] = sides;
    for (const [side, n] of Object.entries(sides)) {
      check(within(n.drift, PER_GRAIN_TOLERANCE), `${phase}: flow ${id === A ? 'A' : 'B'} ${side}: packets per grain received within 0.5 % of the model`, { measured: n.perGrainReceived, model, drift: n.drift });
    }
  }
}

// --- two flows, two initiators, one port
const two = scrape('two');
check(two.length > 0, 'two: the exporter was scraped with both flows');
const senders = {};
for (const id of [A, B]) {
  const name = id === A ? 'A' : 'B';
  for (const [device, direction] of [['rxe0', 'tx'], ['rxe1', 'rx']]) {
    check(find(two, 'mxl_fabric_flow_info', { flow_id: id, device, direction, origin: 'domain' }).length === 1, `two: flow ${name} is bound to ${device} ${direction} by its connection`);
    const conn = find(two, 'mxl_fabric_connection_info', { flow_id: id, device, direction });
    check(conn.length === 1 && conn[0].labels.process === 'mxl-fabrics-dem', `two: flow ${name} ${device} ${direction}: one mxl-fabrics-dem connection carries it`, {
      connections: conn.map((c) => `${c.labels.local} -> ${c.labels.peer} pid ${c.labels.pid}`),
    });
    if (direction === 'tx' && conn[0]) senders[name] = conn[0].labels;
  }
}
check(senders.A && senders.B && senders.A.pid !== senders.B.pid, 'two: the two flows leave rxe0 from two initiator processes', { A: senders.A?.pid, B: senders.B?.pid });
perGrain('two', two);
const coverage = value(two, 'mxl_fabric_port_connection_coverage_ratio', { device: 'rxe0', port: '1', direction: 'tx' });
const perSecond = Object.fromEntries([A, B].map((id) => [id === A ? 'A' : 'B', value(two, 'mxl_fabric_flow_measured_packets_per_second', { flow_id: id, device: 'rxe0', direction: 'tx', source: 'connection' })]));
report.numbers['two rxe0 tx'] = { coverage, connectionPacketsPerSecond: perSecond };
check(coverage !== undefined && Math.abs(coverage - 1) <= COVERAGE_TOLERANCE, 'two: rxe0 tx coverage within 2 % of 1 (both flows\' connections against the port, same ticks)', { coverage });

// --- ib_write_bw -R beside them
const pt = scrape('perftest');
const perf = find(pt, 'mxl_fabric_connection_info', { device: 'rxe0', process: 'ib_write_bw' });
check(perf.length >= 1 && perf.every((c) => c.labels.flow_id === ''), 'perftest: ib_write_bw -R shows as a connection on rxe0 with no flow', {
  connections: perf.map((c) => `${c.labels.local} -> ${c.labels.peer} ${c.labels.direction} flow "${c.labels.flow_id}"`),
});
perGrain('perftest', pt);
const share = (all) => {
  const predicted = value(all, 'mxl_fabric_port_predicted_packets_per_second', { device: 'rxe0', port: '1', direction: 'tx' });
  const measured = find(all, 'mxl_fabric_port_measured_packets_per_second', { device: 'rxe0', port: '1', direction: 'tx' })[0]?.value;
  return predicted === undefined || !measured ? null : predicted / measured;
};
const shares = { two: share(two), perftest: share(pt) };
report.numbers['flows\' predictions / rxe0 tx packets'] = shares;
report.numbers['perftest rxe0 tx coverage'] = value(pt, 'mxl_fabric_port_connection_coverage_ratio', { device: 'rxe0', port: '1', direction: 'tx' });
// How far the share falls depends on how much of the TCG guest perftest gets (0.885 and 0.904 of
// the two flows' share in two runs): asserted beyond the 2 % the two flows alone are held to.
check(shares.two !== null && shares.perftest !== null && shares.perftest < shares.two - 0.02, 'perftest: the flows\' predictions cover less of rxe0 tx (untracked by any flow)', shares);

// --- the initiator of A stopped
const events = readFileSync(join(out, 'events.txt'), 'utf8').split('\n').filter(Boolean).map((l) => {
  const [t, ...rest] = l.split(' ');
  return { t: Number(t), what: rest.join(' ') };
});
const at = (prefix) => events.find((e) => e.what.startsWith(prefix))?.t;
const scrapeTimes = existsSync(join(out, 'scrapes.txt'))
  ? readFileSync(join(out, 'scrapes.txt'), 'utf8').split('\n').filter(Boolean).map((l) => ({ t: Number(l.split(' ')[0]), name: l.split(' ')[1] }))
  : [];
const identityOf = (l) => ({ device: l.device, port: l.port, local: l.local, peer: l.peer, pid: l.pid });
const oldA = senders.A ? identityOf(senders.A) : undefined;
const exited = at('stop-exited A');
// Each stop scrape as the exporter read it: rxe0's tables asked for at `readAt` (the exporter's
// own stamp, the same clock as the guest's events) and A's old connection then (1 up, 0 down,
// undefined gone). A scrape taken while a slow guest had not read again yet shows an older read,
// which the stamp says: the check is on reads, not on how fast the scrapes came.
const reads = scrapeTimes.map((s) => {
  const all = scrape(s.name);
  return { scrape: s.name, readAt: value(all, 'mxl_fabric_connections_last_read_timestamp_seconds', { device: 'rxe0' }), up: oldA && value(all, 'mxl_fabric_connection_up', oldA) };
});
const downAt = reads.find((r) => r.up !== 1);
const upAfterExit = exited === undefined ? [] : reads.filter((r) => r.up === 1 && r.readAt !== undefined && r.readAt > exited);
report.numbers['stop A'] = { exited, reads: reads.map((r) => ({ ...r, sinceExit: r.readAt === undefined || exited === undefined ? null : r.readAt - exited })) };
check(exited !== undefined && downAt !== undefined && downAt.readAt !== undefined && upAfterExit.length === 0,
  'stop: the stopped initiator\'s connection is down (connection_up 0) in every read of rxe0 asked for after its exit', {
    firstDown: downAt ? { scrape: downAt.scrape, readSinceExit: downAt.readAt === undefined || exited === undefined ? null : downAt.readAt - exited, up: downAt.up ?? 'gone' } : null,
    upAfterExit: upAfterExit.map((r) => r.scrape),
  });

// --- restarted
const last = scrape('restart-4');
const newA = find(last, 'mxl_fabric_connection_info', { flow_id: A, device: 'rxe0', direction: 'tx' }).filter((c) => c.labels.pid !== oldA?.pid || c.labels.local !== oldA?.local);
check(newA.length === 1 && find(last, 'mxl_fabric_flow_info', { flow_id: A, device: 'rxe0', direction: 'tx', origin: 'domain' }).length === 1,
  'restart: flow A is bound to rxe0 tx again, by the new initiator\'s connection', {
    connections: newA.map((c) => `${c.labels.local} -> ${c.labels.peer} pid ${c.labels.pid}`),
    // When none is: every rxe0 connection the scrape holds, to tell a missing QP from one not joined.
    ...(newA.length === 1 ? {} : { rxe0: find(last, 'mxl_fabric_connection_info', { device: 'rxe0' }).map((c) => {
      const up = value(last, 'mxl_fabric_connection_up', identityOf(c.labels));
      return `${c.labels.local} -> ${c.labels.peer} pid ${c.labels.pid} ${c.labels.process} ${c.labels.direction} flow "${c.labels.flow_id}" up ${up}`;
    }), scraped: last.length > 0 }),
  });
const sameIdentity = newA[0] && oldA && newA[0].labels.local === oldA.local && newA[0].labels.pid === oldA.pid;
report.numbers['restart A'] = {
  old: oldA, new: newA[0] ? identityOf(newA[0].labels) : null, sameIdentity: Boolean(sameIdentity),
  restartsTotalNew: newA[0] ? value(last, 'mxl_fabric_connection_restarts_total', identityOf(newA[0].labels)) : null,
  restartsTotalOld: oldA ? value(last, 'mxl_fabric_connection_restarts_total', oldA) : null,
  oldUp: oldA ? value(last, 'mxl_fabric_connection_up', oldA) : null,
  perGrainReceived: value(last, 'mxl_fabric_flow_connection_packets_per_grain', { flow_id: A, domain: RX_DOMAIN, device: 'rxe0', direction: 'tx' }) ?? null,
};
if (sameIdentity) check(report.numbers['restart A'].restartsTotalNew === 1, 'restart: the same identity came back: restarts_total 1');
// No negative rate and no counter going back, in any scrape, in time order.
const order = ['two', 'perftest', ...scrapeTimes.map((s) => s.name), 'restart-1', 'restart-2', 'restart-3', 'restart-4'];
const negatives = [];
const backwards = [];
const lastTotal = new Map();
for (const name of order) {
  for (const s of scrape(name)) {
    // Measured quantities only (unexplained bytes and drift are signed by definition).
    if (/_measured_.*_per_second$|_per_grain$|_coverage_ratio$/.test(s.name) && s.value < 0) negatives.push(`${name}: ${s.name}${JSON.stringify(s.labels)} ${s.value}`);
    if (s.name.startsWith('mxl_fabric_connection_') && s.name.endsWith('_total')) {
      const k = `${s.name}${JSON.stringify(s.labels)}`;
      if (lastTotal.has(k) && s.value < lastTotal.get(k)) backwards.push(`${name}: ${k} ${lastTotal.get(k)} -> ${s.value}`);
      lastTotal.set(k, s.value);
    }
  }
}
check(negatives.length === 0, 'restart: no negative rate in any scrape', { negatives: negatives.slice(0, 5) });
check(backwards.length === 0, 'restart: no connection counter goes back in any scrape', { backwards: backwards.slice(0, 5) });

// --- MxlFabricConnectionDown, the shipped rule evaluated by promtool on the series as exported:
// A's connection up (as scraped before the stop), then down from the first scrape that showed it
// down, held there as the exporter holds a vanished connection (10 minutes); the new connection
// up from 20 s on.
report.numbers.promtool = promtoolConnectionDown(oldA, senders.A, newA[0]?.labels);
check(report.numbers.promtool.ok, 'stop: MxlFabricConnectionDown fires for flow A\'s stopped connection after its 1 m, silent before, and resolves once the restarted connection carries the flow', report.numbers.promtool);

function promtoolConnectionDown(identity, infoLabels, restarted) {
  if (!identity || !infoLabels || !downAt) return { ok: false, error: 'no stopped connection to evaluate' };
  const job = 'job="mxl-fabric-exporter",instance="guest:9842"';
  const lbl = (l) => Object.entries(l).map(([k, v]) => `${k}="${v}"`).join(',');
  const downValue = value(scrape(downAt.scrape), 'mxl_fabric_connection_up', identity) ?? 0;
  const series = [
    { series: `mxl_fabric_connection_up{${job},${lbl(identity)}}`, values: `1x9 ${downValue}x110` },
    { series: `mxl_fabric_connection_info{${job},${lbl(infoLabels)}}`, values: '1x9' },
  ];
  if (restarted) {
    series.push({ series: `mxl_fabric_connection_up{${job},${lbl(identityOf(restarted))}}`, values: '_x19 1x100' });
    series.push({ series: `mxl_fabric_connection_info{${job},${lbl(restarted)}}`, values: '_x19 1x100' });
  }
  const alert = { alertname: 'MxlFabricConnectionDown' };
  const labels = { severity: 'critical', job: 'mxl-fabric-exporter', instance: 'guest:9842', ...identity, flow_id: A };
  // The rule's annotations for a connection gone from the tables (no connection_state series).
  const { local, peer, pid } = identity;
  const annotations = {
    runbook_url: 'docs/alerts.md#mxlfabricconnectiondown',
    summary: `The RDMA connection of MXL flow ${A} is down on guest:9842 rxe0/1 (${local} -> ${peer})`,
    description: `The connection ${local} -> ${peer} (pid ${pid}) on rxe0 port 1 of guest:9842, which carried flow ${A}, has not been up for 1 minute (connection_up = ${downValue}): it is gone from the kernel's tables. The flow's grains are not moving over this connection.`,
  };
  const test = {
    rule_files: [join(REPO, 'deploy/prometheus/rules/alerts.yml')],
    evaluation_interval: '1s',
    tests: [{
      interval: '1s',
      input_series: series,
      alert_rule_test: [
        { eval_time: '9s', ...alert, exp_alerts: [] },
        { eval_time: '40s', ...alert, exp_alerts: [] },
        // Without the restart the alert would fire from 10 s + 1 m; the new connection carries
        // the flow from 20 s, so it must stay silent: checked apart below.
        { eval_time: '100s', ...alert, exp_alerts: [] },
      ],
    }, {
      interval: '1s',
      input_series: series.slice(0, 2),
      alert_rule_test: [
        { eval_time: '69s', ...alert, exp_alerts: [] },
        { eval_time: '71s', ...alert, exp_alerts: [{ exp_labels: labels, exp_annotations: annotations }] },
      ],
    }],
  };
  const file = join(out, 'connection-down.test.json');
  writeFileSync(file, JSON.stringify(test, null, 2));
  const r = spawnSync('promtool', ['test', 'rules', file], { encoding: 'utf8' });
  writeFileSync(join(out, 'connection-down.promtool.txt'), `${r.stdout}${r.stderr}`);
  return { ok: r.status === 0, status: r.status, output: `${r.stdout}${r.stderr}`.trim().split('\n').slice(-6).join(' | '), file };
}

// --- the wrong binding
const rc = existsSync(join(out, 'check-wrong.rc')) ? Number(readFileSync(join(out, 'check-wrong.rc'), 'utf8')) : null;
const text = existsSync(join(out, 'check-wrong.txt')) ? readFileSync(join(out, 'check-wrong.txt'), 'utf8') : '';
const finding = text.split('\n').find((l) => /FAIL +connection/.test(l) && l.includes(B));
check(rc === 1 && finding !== undefined && /is bound to rxe0\/1 rx, but its connection .* runs on rxe0\/1 tx/.test(finding), 'wrong: check fails flow B bound to rxe0 rx while its connection sends on rxe0 tx', { rc, finding });
const wrong = scrape('wrong');
const mismatch = find(wrong, 'mxl_fabric_flow_binding_mismatch', { flow_id: B, device: 'rxe0', port: '1', direction: 'rx', connection_device: 'rxe0', connection_port: '1', connection_direction: 'tx' });
check(mismatch.length === 1 && mismatch[0].value === 1, 'wrong: flow_binding_mismatch 1 for flow B (bound rxe0 rx, connection rxe0 tx)');
check(find(wrong, 'mxl_fabric_flow_binding_mismatch', { flow_id: A }).length === 0, 'wrong: no mismatch for flow A (bind: auto)');

writeFileSync(join(out, 'connections-report.json'), `${JSON.stringify(report, null, 2)}\n`);
const failed = report.checks.filter((c) => !c.ok).length;
console.error(`connections: ${report.checks.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
