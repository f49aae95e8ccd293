#!/usr/bin/env node
/**
 * `npm run bench`: the exporter against node_exporter and against a C floor, on generated
 * mlx5-like sysfs trees, in one run. See bench/README.md for what is measured and how, and
 * `--help` (lib/options.mjs) for the options. One module per case under cases/ (cases/index.mjs:
 * the order they run in); each gives its part of results.json and of the printed tables.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateConfigs, generateTree, GID_TABLE } from './lib/gen.mjs';
import { Contention, cpuBusy, jiffies, loadavg, machine, otherCpuSecondsSince, sleep } from './lib/machine.mjs';
import { USAGE, parseArgs } from './lib/options.mjs';
import { nodeFlags } from './lib/processes.mjs';
import { targets } from './lib/targets.mjs';
import { CASES, TARGETS_BEFORE } from './cases/index.mjs';
import { report } from './lib/report.mjs';

/** Wait (up to 30 s) for other work on the machine to finish: it skews every number. */
async function quietStart(log) {
  let busy = await cpuBusy();
  for (let waited = 0; busy > 0.2 && waited < 30; waited += 5) {
    if (waited === 0) log(`${Math.round(busy * 100)} % of the CPUs are busy; waiting up to 30 s for a quiet machine`);
    await sleep(4000);
    busy = await cpuBusy();
  }
  return busy;
}

/** dist/ (npm run build) and the C floor (bench/floor.c); the floor's binary path. */
function build(ctx) {
  if (ctx.opts.build) {
    ctx.log('building dist/ (npm run build)');
    const b = spawnSync('npm', ['run', 'build'], { cwd: ctx.root, stdio: ['ignore', 'ignore', 'inherit'] });
    if (b.status !== 0) throw new Error('npm run build failed');
  }
  fs.mkdirSync(ctx.outDir, { recursive: true });
  const floorBin = path.join(ctx.outDir, 'floor');
  const cc = spawnSync('gcc', ['-O2', '-Wall', '-Wextra', '-o', floorBin, path.join(ctx.benchDir, 'floor.c')], { encoding: 'utf8' });
  if (cc.status !== 0) throw new Error(`gcc failed: ${cc.stderr}`);
  return floorBin;
}

/** The sysfs trees and configs every case shares, under bench/out/. */
function inputs(ctx) {
  const { opts, outDir, root } = ctx;
  ctx.log(`generating trees (${opts.ports.join(', ')} ports) and configs (${opts.flows.join(', ')} flows) under ${path.relative(root, outDir)}/`);
  ctx.trees = Object.fromEntries(opts.ports.map((p) => [p, generateTree(path.join(outDir, 'trees', `p${p}`), p)]));
  ctx.configs = Object.fromEntries(opts.flows.map((n) => [n, generateConfigs(path.join(outDir, 'configs', `f${n}`), n, opts.ports)]));
  return {
    trees: Object.fromEntries(opts.ports.map((p) => [p, path.relative(root, ctx.trees[p])])),
    gidTableEntries: GID_TABLE,
    configs: Object.fromEntries(opts.flows.map((n) => [n, Object.fromEntries(opts.ports.map((p) => [p, path.relative(root, ctx.configs[n][p])]))])),
  };
}

async function main(argv) {
  const benchDir = path.dirname(fileURLToPath(import.meta.url));
  const opts = parseArgs(argv, benchDir);
  if (opts.help) {
    console.log(USAGE);
    return;
  }
  const started = Date.now();
  const log = (...a) => console.error(`[${((Date.now() - started) / 1000).toFixed(0).padStart(4)}s]`, ...a);
  const root = path.dirname(benchDir);
  const ctx = { opts, root, benchDir, outDir: path.join(benchDir, 'out'), nodeFlags: nodeFlags(root), log };
  const busy = await quietStart(log);
  const contention = new Contention(opts.quietBudgetSeconds, log);
  ctx.measured = (fn) => contention.measured(fn);
  const results = { generatedAt: new Date().toISOString(), machine: machine(root), loadavgBefore: loadavg(), cpuBusyBefore: busy, options: { ...opts, out: undefined, help: undefined } };
  const j0 = jiffies();
  if (results.cpuBusyBefore > 0.1) log(`warning: ${Math.round(results.cpuBusyBefore * 100)} % of the CPUs were busy before the run; other work on this machine skews the numbers`);
  ctx.floorBin = build(ctx);
  results.inputs = inputs(ctx);

  for (const c of CASES) {
    if (c === TARGETS_BEFORE) results.targets = targets(results, opts);
    if (opts.only !== undefined && !opts.only.includes(c.name)) continue;
    const r = await c.run(ctx);
    if (r !== undefined) results[c.key] = r;
  }

  // CPU seconds other processes used while this ran (steal not counted): the contention indicator.
  results.otherCpuSeconds = otherCpuSecondsSince(j0);
  results.loadavgAfter = loadavg();
  results.cpuBusyAfter = await cpuBusy();
  results.durationSeconds = Math.round((Date.now() - started) / 1000);
  fs.writeFileSync(opts.out, `${JSON.stringify(results, null, 2)}\n`);
  console.log(report(results, ctx));
  log(`wrote ${path.relative(process.cwd(), opts.out)} in ${results.durationSeconds} s`);
}

main(process.argv.slice(2)).catch((e) => {
  console.error(e);
  process.exit(1);
});
