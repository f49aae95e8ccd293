/**
 * Child of verbs.test.ts: a device of the stand-in libibverbs.so.1 is deleted and added again
 * under the verbs inventory, as `rdma link delete rxe1` / `rdma link add` would, and what the
 * inventory answered at each step is printed as JSON on stdout. Run with LD_LIBRARY_PATH at
 * native/build/fake-verbs, FAKE_IBV_DEVICES_FILE (the list libibverbs answers, rewritten here),
 * FAKE_IBV_LOG, and MFE_TEST_SYSFS: a sysfs root whose class/infiniband_verbs/uverbsN are
 * symlinks to devices/GEN/uverbsN, as the kernel's class directory links to its devices.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { openVerbsReads } from '../../src/sources/verbs/index.js';
import { BoundedReads } from '../../src/reads/bounded.js';
import { runSync } from '../../src/reads/program.js';
import type { PortRef } from '../../src/sources/types.js';

const root = process.env.MFE_TEST_SYSFS!;
const devicesFile = process.env.FAKE_IBV_DEVICES_FILE!;
const log = process.env.FAKE_IBV_LOG!;
const classDir = path.join(root, 'class', 'infiniband_verbs');
const calls = (): string[] => (fs.existsSync(log) ? fs.readFileSync(log, 'utf8').trim().split('\n') : []);

/** The uverbs class device `node` appears, its device directory made anew under `gen`. */
function addNode(node: string, gen: string): void {
  const target = path.join(root, 'devices', gen, node);
  fs.mkdirSync(target, { recursive: true });
  fs.rmSync(path.join(classDir, node), { force: true });
  fs.symlinkSync(path.relative(classDir, target), path.join(classDir, node));
}

fs.mkdirSync(classDir, { recursive: true });
fs.writeFileSync(devicesFile, 'mlx5_0:1,mlx5_1:2\n');
addNode('uverbs0', 'gen1');
addNode('uverbs1', 'gen1');

const opened = runSync(openVerbsReads({ sysfsRoot: root }));
if (!opened.ok) throw opened.error;
const inv = opened.inventory;
const A: PortRef = { device: 'mlx5_0', port: 1 };
const B: PortRef = { device: 'mlx5_1', port: 1 };
const B2: PortRef = { device: 'mlx5_1', port: 2 };
const state = (ref: PortRef): string | undefined => runSync(inv.stateReads(ref))?.state;
let known = runSync(inv.listReads());
/** One tick's worth: whether the list changed, then (as the sampler does when it did) the listing. */
const round = (): { changed: boolean; ports: PortRef[] | undefined } => {
  const changed = runSync(inv.listChangedReads(known));
  if (changed) known = runSync(inv.listReads());
  return { changed, ports: changed ? known : undefined };
};

const steps: Record<string, unknown> = {};
steps.start = { ports: known, states: [state(A), state(B), state(B2)], calls: calls() };
steps.steady = round();

// rdma link delete mlx5_1: its uverbs node goes at once, and libibverbs no longer lists it.
fs.writeFileSync(devicesFile, 'mlx5_0:1\n');
fs.rmSync(path.join(classDir, 'uverbs1'));
steps.deleted = { ...round(), states: [state(A), state(B)], attrsA: runSync(inv.attributeReads(A))?.state ?? null, attrsB: runSync(inv.attributeReads(B)) ?? null, calls: calls() };
steps.afterDelete = round();

// rdma link add: the device and its node again (a new directory), read on the reader threads.
fs.writeFileSync(devicesFile, 'mlx5_0:1,mlx5_1:2\n');
addNode('uverbs1', 'gen2');
const reader = new BoundedReads({ readTimeoutMs: 1000 });
const [changed] = await reader.run([{ group: 'inventory', program: inv.listChangedReads(known) }]);
const [listed] = await reader.run([{ group: 'inventory', program: inv.listReads() }]);
if (listed?.kind === 'done') known = listed.value;
const attributes = await reader.run([A, B, B2].map((p) => ({ group: `${p.device}/${p.port}`, program: inv.attributeReads(p) })));
steps.added = { changed, listed, attributes: attributes.map((o) => (o.kind === 'done' ? o.value?.state ?? null : o.kind)), calls: calls() };

// Deleted and added again between two looks (mlx5: a driver reload): the same name, a new node.
addNode('uverbs1', 'gen3');
steps.replaced = { ...round(), state: state(B), calls: calls() };

inv.close();
reader.close();
steps.calls = calls();
process.stdout.write(`${JSON.stringify(steps)}\n`);
