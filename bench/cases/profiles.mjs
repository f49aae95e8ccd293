/** Case `profiles`: CPU profiles of the worst cases (why, when a target is missed). */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { cannon, get, sequential } from '../lib/http.mjs';
import { startHarness } from '../lib/processes.mjs';
import { summarizeProfile } from '../lib/profile.mjs';
import { profileTables } from '../lib/table.mjs';

export const name = 'profiles';
export const key = 'profiles';

/** A CPU profile of the exporter under the same scrape load as the measurements (start-up excluded). */
async function profileScrapes(ctx, tree, config, dir, file) {
  fs.mkdirSync(dir, { recursive: true });
  const h = startHarness(ctx, config, tree);
  try {
    const ready = await h.ready;
    for (let i = 0; i < 5; i++) await get(ready.port);
    await h.ask('profile-start');
    await sequential(ready.port, Math.max(1, ctx.opts.sequential));
    await cannon(ready.port, ctx.opts);
    const out = path.join(dir, `${file}.cpuprofile`);
    await h.ask('profile-stop', { file: out });
    return { file: path.relative(ctx.root, out), ...summarizeProfile(out, ctx.root) };
  } finally {
    await h.stop();
  }
}

/** `node --cpu-prof` over the tick benchmark (start-up is a few ms of its seconds of ticks). */
function profileTicks(ctx, tree, dir) {
  fs.mkdirSync(dir, { recursive: true });
  const name = 'tick.cpuprofile';
  fs.rmSync(path.join(dir, name), { force: true }); // its own file only: steady-cost's profile is beside it
  const r = spawnSync(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-name=${name}`, '--cpu-prof-interval=100',
    path.join(ctx.benchDir, 'lib', 'tick.mjs'), tree, String(ctx.opts.tickSeconds)], { cwd: ctx.root });
  if (r.status !== 0) throw new Error(`tick profile failed: ${r.stderr}`);
  const file = path.join(dir, name);
  return { file: path.relative(ctx.root, file), ...summarizeProfile(file, ctx.root) };
}

export async function run(ctx) {
  const { opts, trees, configs } = ctx;
  if (!opts.profile) return undefined;
  const p = Math.max(...opts.ports);
  const n = Math.max(...opts.flows);
  const few = Math.min(...opts.flows);
  const dir = path.join(ctx.outDir, 'prof');
  ctx.log(`profiling: ${p}-port tick; scrapes with ${few} and ${n} flows on ${p} ports`);
  return {
    tick: { ports: p, ...profileTicks(ctx, trees[p], dir) },
    [`scrape_p${p}_f${few}`]: { ports: p, flows: few, ...(await profileScrapes(ctx, trees[p], configs[few][p], dir, `scrape-p${p}-f${few}`)) },
    [`scrape_p${p}_f${n}`]: { ports: p, flows: n, ...(await profileScrapes(ctx, trees[p], configs[n][p], dir, `scrape-p${p}-f${n}`)) },
  };
}

export function print(r) {
  return Object.entries(r.profiles ?? {}).flatMap(([k, pr]) => profileTables(`Profile: ${k} (${pr.file}); self time by file, top functions`, pr));
}
