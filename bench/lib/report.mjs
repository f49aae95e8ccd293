/** The printed tables of a run (its results.json): the machine, then each case's, the targets before the profiles. */
import { CASES, TARGETS_BEFORE } from '../cases/index.mjs';
import { f, mb } from './table.mjs';
import { printTargets } from './targets.mjs';

function header(r, ctx) {
  const m = r.machine;
  return [
    `exporter run as: node ${ctx.nodeFlags.join(' ')} (the flags of npm start)`,
    `machine: ${m.cpuModel}, ${m.cores} cores, ${mb(m.memoryBytes)} MiB, ${m.os}, ${m.kernel}, node ${m.node}, node_exporter ${m.nodeExporter}`,
    `CPU busy before: ${f(r.cpuBusyBefore * 100, 0)} %; CPU seconds used by other processes during the run: ${r.otherCpuSeconds} of ${r.durationSeconds * m.cores}`,
  ];
}

export function report(r, ctx) {
  const parts = [header(r, ctx)];
  for (const c of CASES) {
    if (c === TARGETS_BEFORE) parts.push(printTargets(r));
    if (c.print) parts.push(c.print(r, ctx));
  }
  return parts.flat().join('\n');
}
