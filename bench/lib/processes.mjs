/**
 * The processes a case measures: the exporter in bench/lib/daemon-harness.mjs, node_exporter on
 * a tree, the stack floor, and the one-shot JSON-printing scripts (tick.mjs, load.mjs, floor).
 */
import { fork, spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { NODE_EXPORTER } from './machine.mjs';

/** The Node.js flags `npm start` runs the exporter with (package.json): the exporter under test gets the same. */
export function nodeFlags(root) {
  const start = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).scripts?.start ?? '';
  const m = /^node\s+(.*?)\s*dist\/cli\/main\.js/.exec(start);
  return m?.[1] ? m[1].split(/\s+/).filter(Boolean) : [];
}

/** Runs a command that prints one JSON object last; that object. */
export function runJson(root, cmd, args, what) {
  const r = spawnSync(cmd, args, { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`${what} failed (${r.status}): ${r.stderr || r.stdout}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

/** SIGTERM, and wait until it is reaped (so its CPU counts as ours: Contention.measured()). */
export function stopChild(child, signal = 'SIGTERM') {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', resolve);
    child.kill(signal);
  });
}

/** node_exporter with the infiniband collector only, on `tree`. */
export function startNodeExporter(tree, port, stdio = ['ignore', 'ignore', 'pipe']) {
  return spawn(NODE_EXPORTER, [
    '--collector.disable-defaults', '--collector.infiniband', `--path.sysfs=${tree}`, `--web.listen-address=127.0.0.1:${port}`,
  ], { stdio });
}

/** The exporter's Daemon in bench/lib/daemon-harness.mjs: `ready` (its port), ask(cmd) and stop(). */
export function startHarness(ctx, config, tree, execArgv = ctx.nodeFlags) {
  const child = fork(path.join(ctx.benchDir, 'lib', 'daemon-harness.mjs'), [config, tree], { cwd: ctx.root, execArgv, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
  const waiters = [];
  child.on('message', (m) => waiters.shift()?.(m));
  const next = () => new Promise((resolve, reject) => {
    waiters.push(resolve);
    child.once('exit', (code) => reject(new Error(`exporter harness exited (${code}): ${stderr}`)));
  });
  const ask = (cmd, extra = {}) => {
    const p = next();
    child.send({ cmd, ...extra });
    return p;
  };
  const stop = () => new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => (clearTimeout(timer), resolve()));
    child.send({ cmd: 'stop' });
  });
  return { child, ready: next(), ask, stop, stderr: () => stderr };
}
