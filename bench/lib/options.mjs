/**
 * The benchmark's one argument parser: `npm run bench -- [options]`.
 */
import * as path from 'node:path';

export const CASE_NAMES = ['ticks', 'node-exporter', 'exporter', 'config-load', 'steady', 'steady-cost', 'connections', 'profiles'];

export const USAGE = `npm run bench -- [options]   (node bench/run.mjs)

  the exporter against node_exporter and against a C floor, on generated mlx5-like sysfs
  trees, in one run (bench/README.md: what is measured and how). Writes bench/results.json (or
  --out) and prints the tables. Traffic goes to 127.0.0.1 only.

  --quick              short windows, one round: for trying changes
  --no-build           do not run npm run build first
  --no-profile         no CPU profiles
  --duration S         concurrent scrape load per case (5)
  --connections N      concurrent scrape connections (10)
  --ports 1,8,32       sysfs trees to generate and measure
  --flows 10,100,1000,10000
                       configs to generate and measure
  --quiet-budget S     how long the run may wait, in all, for other work on the machine (60)
  --steady S           steady CPU window (60)
  --steady-cost S      steady-cost window (30; at least 20)
  --steady-warmup S    how long the daemon runs before the steady-cost window (60): its first
                       window (3 s after start) is reported beside the steady one
  --connections-window S
                       the connections case's CPU and event-loop windows (20)
  --connections-warmup S
                       how long each of its daemons runs before them (20)
  --qps 100,1000,10000,50000
                       the connections case's sizes (QPs; devices and processes go with them)
  --only CASE,...      run these cases only: ${CASE_NAMES.join(', ')}
                       (--only steady-cost runs the steady-cost case and the C floor it is set beside)
  --out FILE           where the results go (bench/results.json)
  --help               this text`;

/** The options of a full run; --quick shortens the windows. */
function defaults(benchDir) {
  return {
    quick: false, build: true, profile: true, duration: 5, connections: 10, idle: 5, sequential: 3, tickSeconds: 1,
    floorSeconds: 1, rounds: 3, quietBudgetSeconds: 60, ports: [1, 8, 32], flows: [10, 100, 1000, 10000], out: path.join(benchDir, 'results.json'),
    steadySeconds: 60, steadyCostSeconds: 30, steadyWarmupSeconds: 60, connectionsSeconds: 20, connectionsWarmupSeconds: 20, connectionsQps: undefined, only: undefined, help: false,
  };
}

const QUICK = { quick: true, duration: 1, idle: 2, sequential: 1, tickSeconds: 0.5, floorSeconds: 0.3, rounds: 1, steadySeconds: 16, steadyCostSeconds: 20, steadyWarmupSeconds: 25 };

const list = (v) => v.split(',').map(Number).filter((n) => Number.isInteger(n) && n > 0);

/** Flags that take a value: how each sets the options. */
const VALUED = {
  '--duration': (o, v) => (o.duration = Number(v)),
  '--quiet-budget': (o, v) => (o.quietBudgetSeconds = Number(v)),
  '--connections': (o, v) => (o.connections = Number(v)),
  '--ports': (o, v) => (o.ports = list(v)),
  '--flows': (o, v) => (o.flows = list(v)),
  '--out': (o, v) => (o.out = path.resolve(v)),
  '--steady': (o, v) => (o.steadySeconds = Number(v)),
  '--steady-cost': (o, v) => (o.steadyCostSeconds = Math.max(20, Number(v))),
  '--steady-warmup': (o, v) => (o.steadyWarmupSeconds = Math.max(0, Number(v))),
  '--connections-window': (o, v) => (o.connectionsSeconds = Math.max(5, Number(v))),
  '--connections-warmup': (o, v) => (o.connectionsWarmupSeconds = Math.max(5, Number(v))),
  '--qps': (o, v) => (o.connectionsQps = list(v)),
  '--only': (o, v) => (o.only = v.split(',')),
};

const SWITCHES = {
  '--quick': (o) => Object.assign(o, QUICK),
  '--no-build': (o) => (o.build = false),
  '--no-profile': (o) => (o.profile = false),
  '--help': (o) => (o.help = true),
  '-h': (o) => (o.help = true),
};

/** The options `argv` (process.argv.slice(2)) asks for; throws on an unknown flag or case. */
export function parseArgs(argv, benchDir) {
  const o = defaults(benchDir);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (SWITCHES[a]) SWITCHES[a](o);
    else if (VALUED[a]) {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value (see --help)`);
      VALUED[a](o, argv[++i]);
    } else throw new Error(`unknown argument ${a} (see --help)`);
  }
  for (const c of o.only ?? []) if (!CASE_NAMES.includes(c)) throw new Error(`unknown case ${c} (cases: ${CASE_NAMES.join(', ')})`);
  return o;
}
