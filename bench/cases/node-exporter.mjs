/** Case `node-exporter`: Debian's prometheus-node-exporter on each tree, the same scrapes and CPU accounting. */
import { CLK_TCK, procCpuTicks, round } from '../lib/stats.mjs';
import { freePort, get, scrapeLoad, seriesIn, waitForHttp } from '../lib/http.mjs';
import { sleep } from '../lib/machine.mjs';
import { startNodeExporter, stopChild } from '../lib/processes.mjs';

export const name = 'node-exporter';
export const key = 'nodeExporter';

async function one(tree, opts) {
  const port = await freePort();
  const child = startNodeExporter(tree, port);
  let stderr = '';
  child.stderr.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
  try {
    const first = await waitForHttp(port);
    for (let i = 0; i < 20; i++) await get(port);
    const i0 = procCpuTicks(child.pid);
    await sleep(2000);
    const idleCpuMsPerSec = ((procCpuTicks(child.pid) - i0) * 1000) / CLK_TCK / 2;
    const load = await scrapeLoad(child.pid, port, idleCpuMsPerSec, opts);
    const body = first.body.toString('utf8');
    return {
      bytes: first.body.length, gzipBytes: first.wireBytes, series: seriesIn(first.body),
      infinibandSeries: body.split('\n').filter((l) => l.startsWith('node_infiniband_')).length,
      idleCpuMsPerSec: round(idleCpuMsPerSec, 3), ...load,
    };
  } catch (e) {
    throw new Error(`node_exporter on ${tree}: ${e.message}\n${stderr}`);
  } finally {
    await stopChild(child); // reaped before returning, so its CPU counts as ours
  }
}

export async function run(ctx) {
  const out = {};
  for (const p of ctx.opts.ports) {
    ctx.log(`node_exporter, ${p} port(s)`);
    out[p] = await ctx.measured(() => one(ctx.trees[p], ctx.opts));
  }
  return out;
}
