/**
 * Child of verbs.test.ts: opens the verbs inventory and reads every port, on this thread
 * (runSync) and on the bounded reader, and prints what it got as JSON on stdout. Run with
 * LD_LIBRARY_PATH at native/build/fake-verbs (a library is matched by SONAME process-wide, so
 * the stand-in libibverbs.so.1 can only be chosen before the process loads the real one).
 */
import { openVerbsReads } from '../../src/sources/verbs/index.js';
import { BoundedReads } from '../../src/reads/bounded.js';
import { runSync } from '../../src/reads/program.js';

const opened = runSync(openVerbsReads());
if (!opened.ok) {
  const { reason, errno, message } = opened.error;
  process.stdout.write(`${JSON.stringify({ ok: false, reason, errno, message })}\n`);
} else {
  const inv = opened.inventory;
  const ports = runSync(inv.listReads());
  const direct = ports.map((p) => ({ attrs: runSync(inv.attributeReads(p)), gids: runSync(inv.gidReads(p))?.map((g) => [g.gidIndex, g.gidText, g.gidType, g.ndevIfindex]) }));
  const reader = new BoundedReads({ readTimeoutMs: 1000 });
  const states = await reader.run(ports.map((p) => ({ group: `${p.device}/${p.port}`, program: inv.stateReads(p) })));
  const attributes = await reader.run(ports.map((p) => ({ group: `${p.device}/${p.port}`, program: inv.attributeReads(p) })));
  const gone = runSync(inv.attributeReads({ device: ports[0]!.device, port: 99 }));
  inv.close();
  inv.close();
  const afterClose = runSync(inv.attributeReads(ports[0]!));
  reader.close();
  process.stdout.write(`${JSON.stringify({ ok: true, ports, skipped: inv.skipped, direct, mode: reader.mode, states, attributes, gone: gone ?? null, afterClose: afterClose ?? null })}\n`);
}
