#!/usr/bin/env node
/**
 * A/B of the config's YAML parser: the loader as built (A: src/input/fastyaml.ts, the fast path,
 * then `yaml` only for a config with a problem) against the same loader with the fast path
 * replaced by `yaml`'s parse() (B: the plain values the fast path would give, validated the same
 * way). Both are esbuild bundles of dist/ built here, so they differ only in that module. Each
 * load runs in a fresh process (bench/lib/load.mjs: a cold load, as at start, then warm ones, as a
 * reload), A and B alternating, on bench/lib/gen.mjs's configs of 1,000 and 10,000 flows on 32
 * ports. Whole-process numbers on a shared machine: compare the ratios of one run.
 *
 *   npm run build && flock /work/heavy.lock node bench/fastyaml-ab.mjs [ROUNDS] [--out FILE]
 *
 * Prints a table; with --out writes the rounds as JSON.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { generateConfigs } from './lib/gen.mjs';
import { runJson, nodeFlags } from './lib/processes.mjs';
import { round } from './lib/stats.mjs';
import { f, table } from './lib/table.mjs';

const BENCH = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.dirname(BENCH);
const OUT = path.join(BENCH, 'out', 'fastyaml-ab');
const args = process.argv.slice(2);
const outAt = args.indexOf('--out');
const outFile = outAt >= 0 ? args[outAt + 1] : undefined;
const rounds = Number(args.find((a, i) => /^\d+$/.test(a) && args[i - 1] !== '--out') ?? 5);
const FLOWS = [1000, 10_000];
const PORTS = 32;

/** The loader and the bounded reader as one module; `yamlOnly`: the fast path swapped for yaml's parse(). */
async function bundle(name, yamlOnly) {
  const entry = path.join(OUT, 'entry.mjs');
  fs.writeFileSync(entry, `export { loadConfigAsync } from '${path.join(ROOT, 'dist/config/load.js')}';\nexport { BoundedReads } from '${path.join(ROOT, 'dist/reads/bounded.js')}';\n`);
  const shim = path.join(OUT, 'yaml-parse.mjs');
  fs.writeFileSync(shim, "import { parse } from 'yaml';\n/** What B parses with: yaml's parse(), in one go (it cannot yield). */\n// eslint-disable-next-line require-yield\nexport function* parseYamlFast(text) {\n  return parse(text);\n}\n");
  const swap = { name: 'yaml-only', setup: (b) => b.onResolve({ filter: /input\/fastyaml\.js$/ }, () => ({ path: shim })) };
  const file = path.join(OUT, `${name}.mjs`);
  await build({ entryPoints: [entry], bundle: true, format: 'esm', platform: 'node', packages: 'external', outfile: file, logLevel: 'error', plugins: yamlOnly ? [swap] : [] });
  return file;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

async function main() {
  if (!fs.existsSync(path.join(ROOT, 'dist/config/load.js'))) throw new Error('dist/ is missing: npm run build first');
  fs.mkdirSync(OUT, { recursive: true });
  const variants = { A: await bundle('a-fastyaml', false), B: await bundle('b-yaml', true) };
  const flags = nodeFlags(ROOT);
  const results = {};
  for (const n of FLOWS) {
    const config = generateConfigs(path.join(OUT, `f${n}`), n, [PORTS])[PORTS];
    const runs = { A: [], B: [] };
    for (let r = 0; r < rounds; r++) {
      for (const v of r % 2 ? ['B', 'A'] : ['A', 'B']) {
        process.stderr.write(`${n} flows, round ${r + 1}/${rounds}, ${v}\n`);
        runs[v].push(runJson(ROOT, process.execPath, [...flags, path.join(BENCH, 'lib', 'load.mjs'), config, '4', variants[v]], `load ${v}`));
      }
    }
    const sum = (v, k) => round(median(runs[v].map((x) => x[k])), 1);
    const pairRatio = (k) => round(median(runs.A.map((a, i) => runs.B[i][k] / a[k])), 2);
    results[n] = {
      bytes: fs.statSync(config).size,
      A: Object.fromEntries(['coldMs', 'coldCpuMs', 'coldMaxStallMs', 'warmMs', 'warmCpuMs', 'warmMaxStallMs'].map((k) => [k, sum('A', k)])),
      B: Object.fromEntries(['coldMs', 'coldCpuMs', 'coldMaxStallMs', 'warmMs', 'warmCpuMs', 'warmMaxStallMs'].map((k) => [k, sum('B', k)])),
      ratioBA: { coldMs: pairRatio('coldMs'), warmMs: pairRatio('warmMs'), warmCpuMs: pairRatio('warmCpuMs'), warmMaxStallMs: pairRatio('warmMaxStallMs') },
      runs,
    };
  }
  const rows = FLOWS.flatMap((n) => ['A', 'B'].map((v) => {
    const x = results[n][v];
    return [`${n}`, v === 'A' ? 'A fastyaml' : 'B yaml', f(x.coldMs, 0), f(x.coldCpuMs, 0), f(x.coldMaxStallMs, 1), f(x.warmMs, 0), f(x.warmCpuMs, 0), f(x.warmMaxStallMs, 1)];
  }));
  process.stdout.write(`Config load, A (fast path) against B (yaml parse()), ${rounds} fresh processes each, alternating; medians, ms:\n`);
  process.stdout.write(`${table(['flows', 'parser', 'first load', 'its cpu', 'its stall', 'again', 'its cpu', 'its stall'], rows)}\n`);
  process.stdout.write(`${table(['flows', 'config bytes', 'B/A first', 'B/A again', 'B/A again cpu', 'B/A again stall'], FLOWS.map((n) => {
    const r = results[n];
    return [`${n}`, `${r.bytes}`, f(r.ratioBA.coldMs, 2), f(r.ratioBA.warmMs, 2), f(r.ratioBA.warmCpuMs, 2), f(r.ratioBA.warmMaxStallMs, 2)];
  }))}\n`);
  if (outFile) fs.writeFileSync(outFile, `${JSON.stringify({ rounds, ports: PORTS, results }, null, 2)}\n`);
}

await main();
