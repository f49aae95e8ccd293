/**
 * How long a config takes to load, in a process of its own: the first load (cold: the code not
 * compiled yet, as when the exporter starts), then again (warm: as on a reload), each with the
 * longest the event loop went without a turn while it ran (a 1 ms timer's longest gap, minus
 * 1 ms). Loads the way the daemon does: loadConfigAsync() with its reads on a bounded reader;
 * on code without it, loadConfig().
 *
 *   node bench/lib/load.mjs CONFIG [ROUNDS] [MODULE]
 *
 * MODULE: another build of the loader (bench/fastyaml-ab.mjs's bundles), exporting
 * loadConfigAsync and BoundedReads; dist/config/load.js by default. Prints one JSON object.
 */
import { pathToFileURL } from 'node:url';
import { watchStalls } from './slices.mjs';

const [configFile, roundsArg, moduleArg] = process.argv.slice(2);
const rounds = Number(roundsArg ?? 3);
const load = await import(moduleArg ? pathToFileURL(moduleArg).href : '../../dist/config/load.js');

let reader;
try {
  const { BoundedReads } = load.BoundedReads ? load : await import('../../dist/reads/bounded.js');
  // The worktree's reader library, wherever the loader was built to.
  const library = (await import('../../dist/reads/native.js').catch(() => ({}))).READER_LIBRARY;
  reader = new BoundedReads({ readTimeoutMs: 1000, ...(library ? { library } : {}) });
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
