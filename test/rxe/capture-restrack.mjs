#!/usr/bin/env node
// Records the kernel's restrack dumps as fixtures: for every RDMA device, the raw datagrams of
// one RDMA_NLDEV_CMD_RES_QP_GET and one RDMA_NLDEV_CMD_RES_CM_ID_GET dump, one datagram per line
// in hex, the layout of test/fixtures/netlink/restrack-*.hex (gen_restrack.py), so a dump recorded
// in the soft-RoCE guest is a fixture as it stands. Uses the exporter's own reader (dist/).
//
//   node test/rxe/capture-restrack.mjs OUT_DIR [PREFIX]
//
// writes OUT_DIR/PREFIXqp-DEV.hex and OUT_DIR/PREFIXcm-id-DEV.hex (PREFIX default "restrack-")
// and prints one line per device: its QPs and cm_ids as decoded, for a look beside `rdma res show`.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const dist = fileURLToPath(new URL('../../dist/', import.meta.url));
const { RestrackSource, openRestrackSocket } = await import(join(dist, 'sources/restrack/source.js'));
const { runSync } = await import(join(dist, 'reads/program.js'));

const [out, prefix = 'restrack-'] = process.argv.slice(2);
if (!out) {
  process.stderr.write('usage: capture-restrack.mjs OUT_DIR [PREFIX]\n');
  process.exit(2);
}
mkdirSync(out, { recursive: true });
const hexLines = (dgs) => dgs.map((d) => Buffer.from(d).toString('hex') + '\n').join('');
const source = new RestrackSource(() => openRestrackSocket(2000));
const r = runSync(source.reads());
source.close();
if (!r.ok) {
  process.stderr.write(`capture-restrack: ${r.error}\n`);
  process.exit(1);
}
let failed = 0;
for (const d of r.devices) {
  if (!d.ok) {
    process.stderr.write(`capture-restrack: ${d.device}: ${d.error}\n`);
    failed++;
    continue;
  }
  writeFileSync(join(out, `${prefix}qp-${d.device}.hex`), hexLines(d.raw.qp));
  writeFileSync(join(out, `${prefix}cm-id-${d.device}.hex`), hexLines(d.raw.cmId));
  const qps = d.qps.entries.map((q) => `${q.lqpn}:${q.sqPsn}/${q.rqPsn ?? '-'}`).join(' ');
  process.stdout.write(`${d.device}: ${d.qps.entries.length} QPs (lqpn:sq/rq ${qps}), ${d.cmIds.entries.length} cm_ids\n`);
}
process.exit(failed > 0 ? 1 : 0);
