// Checks the real-MXL scenario (guest.sh) from its files: the exporter's predictions for the two
// flows (scraped during each transfer) against the kernel's counters (snapshotted around it).
//   video: rxe0 tx packets/s and veth0 l2 bytes/s within 1 % of the prediction over the first
//          window in which the guest kept up with 25 grains/s; rxe0 rx ACK packets/s and veth1 tx
//          bytes/s within 5 % of the ACK prediction.
//   audio: packets and l2 bytes per batch sent within 2 % of the prediction (TCG may not keep
//          up with 100 batches/s, so per batch, counted by the kernel).
// usage: node check.mjs OUT_DIR   (writes OUT_DIR/report.json; exit 1 on a failed check)
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { scenarioReport } from '../lib/report.mjs';

const OUT = process.argv[2];
const FLOWS = { video: '5fbec3b1-1b0f-417d-9059-8b94a4710001', audio: 'b3bb5be7-9fe9-4324-a5bb-4c70e1080008' };
const { report, check, write, exit } = scenarioReport(OUT, 'mxl-check');
const read = (f) => readFileSync(join(OUT, f), 'utf8');
const counters = (f) => JSON.parse(read(`counters-${f}.json`));

/** Prometheus text -> [{ name, labels, value }]. */
function samples(text) {
  const out = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

function metric(all, name, labels) {
  const hits = all.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (hits.length !== 1) throw new Error(`${name}${JSON.stringify(labels)}: ${hits.length} series`);
  return hits[0].value;
}

const within = (measured, predicted, tolerance) => Math.abs(measured / predicted - 1) <= tolerance;
const ratio = (measured, predicted) => +(measured / predicted - 1).toFixed(5);

function prediction(phase, flowId) {
  const m = samples(read(`metrics-${phase}.txt`));
  const tx = { flow_id: flowId, device: 'rxe0', port: '1', direction: 'tx' };
  const rx = { flow_id: flowId, device: 'rxe1', port: '1', direction: 'rx' };
  return {
    packets: metric(m, 'mxl_fabric_flow_predicted_packets_per_second', tx),
    l2: metric(m, 'mxl_fabric_flow_predicted_bytes_per_second', { ...tx, layer: 'l2' }),
    media: metric(m, 'mxl_fabric_flow_predicted_bytes_per_second', { ...tx, layer: 'media' }),
    // The sender's rx carries the ACKs of its tx flow; the receiver's tx those of its rx copy.
    ackPacketsRxe0: metric(m, 'mxl_fabric_flow_predicted_ack_packets_per_second', { ...tx, direction: 'rx' }),
    ackPacketsRxe1: metric(m, 'mxl_fabric_flow_predicted_ack_packets_per_second', { ...rx, direction: 'tx' }),
    ackL2Rxe1: metric(m, 'mxl_fabric_flow_predicted_ack_bytes_per_second', { ...rx, direction: 'tx', layer: 'l2' }),
  };
}

function delta(a, b) {
  const d = {};
  for (const k of Object.keys(b)) d[k] = b[k] - a[k];
  return d;
}

/*
 * Over a window between two snapshots (connection up, no CM traffic): transfers = the target's receive
 * completions (rxe1 rdma_recvs: one per write with immediate = one per grain or batch, rxe_resp.c
 * do_complete). Under TCG the target is sometimes slow to repost receives: rxe1 answers the write
 * with immediate with an RNR NAK and rxe0 sends that packet again (rxe0 rcvd_rnr_err), and rxe
 * resends on timeouts (rxe1 duplicate_request). First transmissions = sent_pkts minus both. rxe1
 * acknowledges every duplicate write packet again (rxe_resp.c duplicate_request: "Ack again",
 * IBA C9-105), so the ACKs of first transmissions = rxe0 rcvd_pkts minus the RNR NAKs and minus
 * the duplicates, and rxe1's ACK bytes (veth1 tx) carry one extra ACK per duplicate. The model
 * predicts first transmissions and their ACKs.
 */
function windowOf(from, to) {
  const w = delta(counters(from), counters(to));
  const transfers = w['rxe1.rdma_recvs'];
  const retransmitted = w['rxe1.duplicate_request'] + w['rxe0.rcvd_rnr_err'];
  return {
    from, to, seconds: w.t, transfers, transfersPerSecond: transfers / w.t, retransmitted,
    duplicates: w['rxe1.duplicate_request'], rnrNaks: w['rxe0.rcvd_rnr_err'],
    txPackets: w['rxe0.sent_pkts'], firstTxPackets: w['rxe0.sent_pkts'] - retransmitted,
    txL2Bytes: w['veth0.tx_bytes'], rxAckPackets: w['rxe0.rcvd_pkts'] - w['rxe0.rcvd_rnr_err'] - w['rxe1.duplicate_request'],
    rxe1TxPackets: w['rxe1.sent_pkts'], veth1TxBytes: w['veth1.tx_bytes'],
  };
}

/** The snapshots w0, w1, ... a phase took. */
function snapshots(phase) {
  const names = [];
  for (let i = 0; existsSync(join(OUT, `counters-${phase}-w${i}.json`)); i++) names.push(`${phase}-w${i}`);
  if (names.length < 2) throw new Error(`${phase}: fewer than two counter snapshots`);
  return names;
}

/**
 * A per-second comparison needs a window in which the emulated guest kept up: the first window
 * with the flow at its rate (0.5 %) and no retransmission; else the one closest to its rate.
 */
function steadyWindow(phase, rate) {
  const names = snapshots(phase);
  const windows = names.slice(1).map((to, i) => windowOf(names[i], to));
  const off = (w) => Math.abs(w.transfersPerSecond / rate - 1);
  const clean = windows.find((w) => off(w) <= 0.005 && w.retransmitted === 0);
  return { chosen: clean ?? windows.reduce((a, b) => (off(b) < off(a) ? b : a)), clean: clean !== undefined, windows };
}

/** l2 bytes may exceed the model by the retransmitted packets, each at most a full data packet (4096 + 58 + 16 + 4). */
const bytesWithin = (measured, predicted, tolerance, retransmittedBytesAtMost) =>
  measured >= predicted * (1 - tolerance) && measured <= predicted * (1 + tolerance) + retransmittedBytesAtMost;
const FULL_PACKET = 4096 + 58 + 16 + 4;

function video() {
  const p = prediction('video', FLOWS.video);
  const rate = 25;
  const steady = steadyWindow('video', rate);
  const w = steady.chosen;
  const perSecond = (n) => n / w.seconds;
  report.numbers.video = {
    predicted: { ...p, packetsPerGrain: p.packets / rate, l2PerGrain: p.l2 / rate, acksPerGrain: p.ackPacketsRxe0 / rate },
    window: w, steadyWindowFound: steady.clean, windows: steady.windows,
    perGrain: { packets: w.txPackets / w.transfers, firstPackets: w.firstTxPackets / w.transfers, l2: w.txL2Bytes / w.transfers, acks: w.rxAckPackets / w.transfers },
  };
  check(p.packets === 42 * rate && p.l2 === 171_928 * rate, 'exporter predicts 42 packets and 171,928 l2 bytes per 320x180 grain', { packets: p.packets, l2: p.l2 });
  check(within(w.transfersPerSecond, rate, 0.01), 'video: the grains went out at 25/s in the window compared',
    { grainsPerSecond: w.transfersPerSecond, window: `${w.from}..${w.to}`, clean: steady.clean, perWindow: steady.windows.map((x) => +x.transfersPerSecond.toFixed(3)) });
  check(within(perSecond(w.firstTxPackets), p.packets, 0.01), 'video: rxe0 tx packets/s within 1 % of the prediction',
    { measured: perSecond(w.firstTxPackets), raw: perSecond(w.txPackets), predicted: p.packets, drift: ratio(perSecond(w.firstTxPackets), p.packets) });
  check(bytesWithin(perSecond(w.txL2Bytes), p.l2, 0.01, perSecond(w.retransmitted * FULL_PACKET)), 'video: veth0 tx l2 bytes/s within 1 % of the prediction',
    { measured: perSecond(w.txL2Bytes), predicted: p.l2, drift: ratio(perSecond(w.txL2Bytes), p.l2), retransmitted: w.retransmitted });
  check(within(w.firstTxPackets / w.transfers, p.packets / rate, 0.01), 'video: packets per grain sent within 1 % of the model (retransmissions aside)',
    { measured: w.firstTxPackets / w.transfers, predicted: p.packets / rate });
  check(within(perSecond(w.rxAckPackets), p.ackPacketsRxe0, 0.05), 'video: rxe0 rx ACK packets/s within 5 % of the reverse prediction',
    { measured: perSecond(w.rxAckPackets), predicted: p.ackPacketsRxe0, drift: ratio(perSecond(w.rxAckPackets), p.ackPacketsRxe0) });
  // The duplicates' ACKs are as large as the model's (l2 bytes per predicted ACK).
  const firstAckBytes = w.veth1TxBytes - w.duplicates * (p.ackL2Rxe1 / p.ackPacketsRxe1);
  check(within(perSecond(firstAckBytes), p.ackL2Rxe1, 0.05), 'video: veth1 tx l2 bytes/s (the receiver\'s ACKs, duplicates\' ACKs aside) within 5 % of the reverse prediction',
    { measured: perSecond(firstAckBytes), raw: perSecond(w.veth1TxBytes), predicted: p.ackL2Rxe1, drift: ratio(perSecond(firstAckBytes), p.ackL2Rxe1) });
}

function audio() {
  const p = prediction('audio', FLOWS.audio);
  const rate = 100;
  const names = snapshots('audio');
  const w = windowOf(names[0], names[names.length - 1]);
  const perBatch = (n) => n / w.transfers;
  report.numbers.audio = {
    predicted: { ...p, packetsPerBatch: p.packets / rate, l2PerBatch: p.l2 / rate, acksPerBatch: p.ackPacketsRxe0 / rate },
    window: w,
    perBatch: { packets: perBatch(w.txPackets), firstPackets: perBatch(w.firstTxPackets), l2: perBatch(w.txL2Bytes), acks: perBatch(w.rxAckPackets) },
  };
  check(w.transfers >= 100, 'audio: the initiator sent batches', { batches: w.transfers, perSecond: w.transfersPerSecond });
  check(p.packets / rate === 5, 'exporter predicts 5 packets per 8-channel batch', { packetsPerBatch: p.packets / rate });
  check(within(perBatch(w.firstTxPackets), p.packets / rate, 0.02), 'audio: rxe0 tx packets per batch within 2 % of the prediction',
    { measured: perBatch(w.firstTxPackets), raw: perBatch(w.txPackets), predicted: p.packets / rate, drift: ratio(perBatch(w.firstTxPackets), p.packets / rate) });
  check(bytesWithin(perBatch(w.txL2Bytes), p.l2 / rate, 0.02, perBatch(w.retransmitted * FULL_PACKET)), 'audio: veth0 tx l2 bytes per batch within 2 % of the prediction',
    { measured: perBatch(w.txL2Bytes), predicted: p.l2 / rate, drift: ratio(perBatch(w.txL2Bytes), p.l2 / rate), retransmitted: w.retransmitted });
  check(within(perBatch(w.rxAckPackets), p.ackPacketsRxe0 / rate, 0.05), 'audio: ACKs per batch (one per write) within 5 % of the prediction',
    { measured: perBatch(w.rxAckPackets), predicted: p.ackPacketsRxe0 / rate });
}

for (const phase of [video, audio]) {
  try {
    phase();
  } catch (e) {
    check(false, `${phase.name}: ${e.message}`, {});
  }
}
write();
exit();
