/**
 * Bundled by real.test.ts and run as another user (uid 65534): reads the pids given ('self': its
 * own) through the same programs, so the kernel's own ptrace check answers (root passes every one of them).
 * Prints one JSON line; bigints as strings.
 */
import { runSync } from '../../../src/reads/program.js';
import { mappedFlowsReads, processReads } from '../../../src/sources/procfs/index.js';

const [procRoot, domain, ...pids] = process.argv.slice(2);
const out = pids.map((p) => (p === 'self' ? process.pid : Number(p))).map((pid) => ({
  pid,
  process: runSync(processReads(procRoot!, pid)),
  maps: runSync(mappedFlowsReads(procRoot!, pid, [domain!])),
}));
process.stdout.write(JSON.stringify({ uid: process.getuid?.(), self: process.pid, out }, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)) + '\n');
