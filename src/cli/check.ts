/**
 * `check`: the pre-show gate. Validates a config, looks once at the host (ports, MXL domains)
 * and runs the named checks of ./checks.ts on every port the config names.
 * Exit 0 all good, 1 a provisioning failure, 2 invalid config or usage.
 */
import { Writable } from 'node:stream';
import { loadConfig } from '../config/load.js';
import type { Config, FlowBinding } from '../config/types.js';
import { DomainMonitor } from '../domain/monitor.js';
import { loadPosix, type Posix } from '../ffi/posix.js';
import { InputError, formatProblem } from '../input/problems.js';
import { RATE_UNIT_CHOICES, type RateUnits } from '../input/units.js';
import { createLogger } from '../log.js';
import { Planner } from '../predictions/plan.js';
import { DEFAULT_SYSFS_ROOT } from '../sources/sysfs/index.js';
import { portKey } from '../sources/types.js';
import { type CommandShape, type FlagSpec, commandFlags, str, UsageError } from './args.js';
import { type DomainSummary, type Finding, runPortChecks } from './checks.js';
import type { Io } from './io.js';
import { samplePortsOnce } from './ports.js';
import { assumptionsOnce } from '../health/check.js';
import { DEFAULT_CONFIG, checkConfigFile } from './serve.js';

export type { Finding, Verdict } from './checks.js';

const FLAGS: FlagSpec = {
  'config.file': { type: 'string', default: DEFAULT_CONFIG, help: 'YAML config to check' },
  'path.sysfs': { type: 'string', default: DEFAULT_SYSFS_ROOT, help: 'sysfs mountpoint' },
  output: { type: 'string', default: 'text', help: 'output format', choices: ['text', 'json'] },
  units: { type: 'string', default: 'bytes', help: 'rates in bytes (GB/s) or bits (Gb/s) first; the other follows in brackets', choices: RATE_UNIT_CHOICES },
  help: { type: 'boolean', help: 'show this help' },
};

const SHAPE: CommandShape = {
  usage: 'check [flags]',
  summary: `Validates a config and checks each of its ports before a show: present, ACTIVE, RoCE v2 GID,
link rate against the configured capacity, IB MTU and netdev MTU against the model, MXL domain
flows found, the predicted wire rate within headroom of capacity, and the host assumptions
(PFC, ECN, VLAN: these warn, never fail).
Exit status: 0 ok or only warnings, 1 a check failed, 2 invalid config or flags.`,
  flags: FLAGS,
};

export interface PortReport {
  readonly device: string;
  readonly port: number;
  readonly findings: readonly Finding[];
}

export function runCheck(argv: string[], io: Io): number {
  const flags = commandFlags(argv, io, SHAPE);
  if (typeof flags === 'number') return flags;
  let config: Config;
  try {
    checkConfigFile(str(flags, 'config.file')!, flags.given.has('config.file'));
    config = loadConfig(str(flags, 'config.file')!);
  } catch (e) {
    if (e instanceof UsageError) io.stderr(`check: ${e.message}\n`);
    else if (e instanceof InputError) io.stderr(`${e.problems.map(formatProblem).join('\n')}\n`);
    else throw e;
    return 2;
  }
  const sysfsRoot = str(flags, 'path.sysfs')!;
  const units = str(flags, 'units') as RateUnits;
  const sampled = samplePortsOnce(sysfsRoot).ports;
  const hostPorts = sampled.map((p) => p.attrs);
  const byKey = new Map(hostPorts.map((a) => [portKey(a), a]));
  const samples = new Map(sampled.map((p) => [portKey(p.ref), p]));
  const assumptions = assumptionsOnce(sysfsRoot, sampled);
  const { summaries, bindings } = lookAtDomains(config);
  const planner = new Planner(config);
  if (bindings.length) planner.setDiscovered(bindings);
  const plans = planner.plans((device, port) => byKey.get(portKey({ device, port })));
  const report: PortReport[] = plans.map((plan) => {
    const key = portKey(plan.port);
    const context = { plan, attrs: byKey.get(key), sample: samples.get(key), assumptions: assumptions.get(key), hostPorts, sysfsRoot, domains: summaries, units };
    return { device: plan.port.device, port: plan.port.port, findings: runPortChecks(context) };
  });
  const failed = report.some((r) => r.findings.some((f) => f.verdict === 'fail'));
  const flowCount = planner.allBindings().length;
  if (str(flags, 'output') === 'json') {
    io.stdout(`${JSON.stringify({ config: config.file, ok: !failed, flows: flowCount, ports: report }, null, 2)}\n`);
  } else {
    io.stdout(renderText(config, report, flowCount, failed));
  }
  return failed ? 1 : 0;
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

function renderText(config: Config, report: readonly PortReport[], flowCount: number, failed: boolean): string {
  const found = flowCount - config.flows.length;
  const fromDomains = config.domains.length ? ` (${config.flows.length} configured, ${found} found in MXL domains)` : '';
  let out = `config ${config.file}: valid, ${plural(flowCount, 'flow')}${fromDomains} on ${plural(report.length, 'port')}\n`;
  const width = Math.max(...report.flatMap((r) => r.findings.map((f) => f.check.length)), 8);
  for (const r of report) {
    out += `${r.device}/${r.port}\n`;
    for (const f of r.findings) out += `  ${f.verdict.toUpperCase().padEnd(7)} ${f.check.padEnd(width)} ${f.detail}\n`;
  }
  return `${out}${failed ? 'provisioning: FAIL' : 'provisioning: ok'}\n`;
}

/** One scan of each configured MXL domain: what is there, and the flows it binds. */
function lookAtDomains(config: Config): { summaries: DomainSummary[]; bindings: FlowBinding[] } {
  if (config.domains.length === 0) return { summaries: [], bindings: [] };
  const quiet = createLogger('fatal', 'json', new Writable({ write: (_c, _e, cb) => cb() }));
  let posix: Posix | undefined;
  try {
    posix = loadPosix();
  } catch {
    posix = undefined;
  }
  const clock = { monotonicNs: process.hrtime.bigint, taiNs: () => (posix ? posix.taiNowNs() : BigInt(Date.now()) * 1_000_000n) };
  const summaries: DomainSummary[] = [];
  const bindings: FlowBinding[] = [];
  for (const domain of config.domains) {
    const monitor = new DomainMonitor([domain], { clock, probe: posix, log: quiet });
    monitor.tick({ windowNs: BigInt(config.sampling.windowMs) * 1_000_000n, intervalNs: BigInt(config.sampling.intervalMs) * 1_000_000n });
    const flows = monitor.flows().map((e) => e.flow);
    const selected = monitor.bindings();
    bindings.push(...selected);
    const selectedIds = new Set(selected.map((b) => b.flow.id));
    const writers = flows.filter((f) => selectedIds.has(f.id)).map((f) => f.writerActive);
    summaries.push({
      domain,
      error: monitor.errors()[0]?.error,
      found: flows.length,
      selected: selected.length,
      unusable: flows.filter((f) => f.defError !== undefined).map((f) => f.id),
      writersActive: writers.some((w) => w === undefined) ? undefined : writers.filter(Boolean).length,
    });
    monitor.close();
  }
  return { summaries, bindings };
}

