/**
 * How long a config takes to load, in a process of its own: the first load (cold: the code not
 * compiled yet, as when the exporter starts), then again (warm: as on a reload), each with the
 * longest the event loop went without a turn while it ran (a 1 ms timer's longest gap, minus
 * 1 ms). Loads the way the daemon does: loadConfigAsync() with its reads on a bounded reader;
 * on code without it, loadConfig().
 *
 *   node bench/lib/load.mjs CONFIG [ROUNDS]
 *
 * Prints one JSON object.
 */
import * as load from '../../dist/config/load.js';
import { watchStalls } from './slices.mjs';

const [configFile, roundsArg] = process.argv.slice(2);
const rounds = Number(roundsArg ?? 3);

let reader;
try {
  const { BoundedReads } = await import('../../dist/reads/bounded.js');
  reader = new BoundedReads({ readTimeoutMs: 1000 });
} catch {
  reader = undefined; // code before the bounded reader
}

async function once() {
  const stalls = watchStalls();
  const t = performance.now();
  const c0 = process.cpuUsage();
  const config = load.loadConfigAsync ? await load.loadConfigAsync(configFile, reader) : load.loadConfig(configFile);
  const ms = performance.now() - t;
  const c = process.cpuUsage(c0);
  return { ms, cpuMs: (c.user + c.system) / 1000, maxStallMs: await stalls.stop(), flows: config.flows.length };
}

const runs = [];
for (let i = 0; i < rounds; i++) runs.push(await once());
reader?.close();
const warm = runs.slice(1);
process.stdout.write(`${JSON.stringify({
  async: load.loadConfigAsync !== undefined,
  flows: runs[0].flows,
  coldMs: runs[0].ms,
  coldCpuMs: runs[0].cpuMs,
  coldMaxStallMs: runs[0].maxStallMs,
  warmMs: warm.length ? Math.min(...warm.map((r) => r.ms)) : undefined,
  warmCpuMs: warm.length ? Math.min(...warm.map((r) => r.cpuMs)) : undefined,
  warmMaxStallMs: warm.length ? Math.max(...warm.map((r) => r.maxStallMs)) : undefined,
  runs,
})}\n`);
