/**
 * `check`: the pre-show gate. Validates a config, looks once at the host (ports, MXL domains)
 * and runs the named checks of ./checks.ts on every port the config names.
 * Exit 0 all good, 1 a provisioning failure, 2 invalid config or usage.
 */
import { Writable } from 'node:stream';
import { loadConfig } from '../config/load.js';
import type { Config, FlowBinding } from '../config/types.js';
import { DomainMonitor, type DomainMonitorOptions } from '../domain/monitor.js';
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
import { BoundedReads } from '../reads/bounded.js';
import { DEFAULT_CONFIG, checkConfigFile } from './serve.js';
import { type ConnectionsDeps, observeConnections } from './connections.js';
import { connectionFindings } from './check-connections.js';
import { DEFAULT_PROC_ROOT } from '../sources/procfs/index.js';

export type { Finding, Verdict } from './checks.js';

const FLAGS: FlagSpec = {
  'config.file': { type: 'string', default: DEFAULT_CONFIG, help: 'YAML config to check' },
  'path.sysfs': { type: 'string', default: DEFAULT_SYSFS_ROOT, help: 'sysfs mountpoint' },
  'path.proc': { type: 'string', default: DEFAULT_PROC_ROOT, help: 'procfs mountpoint (the processes behind RDMA connections)' },
  output: { type: 'string', default: 'text', help: 'output format', choices: ['text', 'json'] },
  units: { type: 'string', default: 'bytes', help: 'rates in bytes (GB/s) or bits (Gb/s) first; the other follows in brackets', choices: RATE_UNIT_CHOICES },
  help: { type: 'boolean', help: 'show this help' },
};

const SHAPE: CommandShape = {
  usage: 'check [flags]',
  summary: `Validates a config, checks that the bounded reader (native/build/libmfe-reader.so) loads,
and checks each of its ports before a show: present, ACTIVE, RoCE v2 GID,
link rate against the configured capacity, IB MTU and netdev MTU against the model, MXL domain
flows found, the predicted wire rate within headroom of capacity, the host assumptions
(PFC, ECN, VLAN: these warn, never fail), and whether each flow's RDMA connection runs on the
port and direction it is bound to.
Exit status: 0 ok or only warnings, 1 a check failed, 2 invalid config or flags.`,
  flags: FLAGS,
};

export interface PortReport {
  readonly device: string;
  readonly port: number;
  /** The provider profiles the predictions use: the port's first, then any its flows name. */
  readonly providers: readonly string[];
  readonly findings: readonly Finding[];
}

export interface CheckOptions extends ConnectionsDeps {
  /** Another build of libmfe-reader (tests: a missing one). */
  readonly readerLibrary?: string;
}

export function runCheck(argv: string[], io: Io, opts: CheckOptions = {}): number {
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
  // The connections first: under bind: auto they say where each flow found runs (docs/connections.md).
  const connections = config.connections.enabled ? observeConnections(config, str(flags, 'path.proc')!, 1000, opts) : undefined;
  const { summaries, bindings, unbound } = lookAtDomains(config, (path, flowId) => connections?.placements(path, flowId) ?? []);
  const planner = new Planner(config);
  if (bindings.length) planner.setDiscovered(bindings);
  const plans = planner.plans((device, port) => byKey.get(portKey({ device, port })));
  // Flows whose connection runs elsewhere than they are bound.
  const byConnection = connections ? connectionFindings(connections, planner.allBindings()) : new Map<string, Finding[]>();
  const report: PortReport[] = plans.map((plan) => {
    const key = portKey(plan.port);
    const context = { plan, attrs: byKey.get(key), sample: samples.get(key), assumptions: assumptions.get(key), hostPorts, sysfsRoot, domains: summaries, units };
    const providers = [...new Set([plan.port.provider.name, ...plan.flows.map((f) => f.binding.provider.name)])];
    return { device: plan.port.device, port: plan.port.port, providers, findings: [...runPortChecks(context), ...(byConnection.get(key) ?? [])] };
  });
  const findings = scopeFindings(config);
  const exporter = [readerFinding(opts.readerLibrary)];
  const failed = [...findings, ...exporter, ...report.flatMap((r) => r.findings)].some((f) => f.verdict === 'fail');
  const flowCount = planner.allBindings().length;
  if (str(flags, 'output') === 'json') {
    io.stdout(`${JSON.stringify({ config: config.file, ok: !failed, flows: flowCount, unbound, findings, exporter, ports: report }, null, 2)}\n`);
  } else {
    io.stdout(renderText(config, { findings, exporter }, report, { flowCount, unbound: unbound.length }, failed));
  }
  return failed ? 1 : 0;
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/**
 * The config itself: one that names no port, no flow and no MXL domain leaves nothing to check,
 * and a gate that passes having checked nothing would let a wrong or empty file through.
 */
function scopeFindings(config: Config): Finding[] {
  const warnings = (config.warnings ?? []).map((w): Finding => ({ check: 'config', verdict: 'warn', detail: formatProblem(w), values: {} }));
  if (config.ports.length > 0 || config.flows.length > 0 || config.domains.length > 0) return warnings;
  return [...warnings, {
    check: 'scope', verdict: 'fail', values: {},
    detail: 'the config names no port, no flow and no MXL domain: there is nothing to check before a show ' +
      '(serve on it measures every RDMA port it finds and predicts nothing); name the ports and flows, or a domain (docs/configuration.md)',
  }];
}

/**
 * The exporter itself: its bounded reader (native/build/libmfe-reader.so) loads. Without it
 * `serve` reads on the event loop with no timeout, so a host that would run so fails the gate.
 */
function readerFinding(library: string | undefined): Finding {
  const reader = new BoundedReads({ readTimeoutMs: 1000, ...(library !== undefined ? { library } : {}) });
  reader.close();
  if (reader.mode === 'native') return { check: 'reader', verdict: 'ok', detail: 'bounded reader loaded: every read has a timeout', values: { bounded: true } };
  return {
    check: 'reader', verdict: 'fail', values: { bounded: false },
    detail: `bounded reader unavailable (${reader.unavailable ?? 'unknown'}): serve would read on the event loop with no timeout; ` +
      'build it with npm run build (make -C native reader, needs a C compiler) and ship native/build/libmfe-reader.so beside dist/ (scripts/stage.sh)',
  };
}

function renderText(config: Config, top: { findings: readonly Finding[]; exporter: readonly Finding[] }, report: readonly PortReport[], counts: FlowCounts, failed: boolean): string {
  const width = Math.max(...[...top.findings, ...top.exporter, ...report.flatMap((r) => r.findings)].map((f) => f.check.length), 8);
  const line = (f: Finding): string => `  ${f.verdict.toUpperCase().padEnd(7)} ${f.check.padEnd(width)} ${f.detail}\n`;
  let out = `config ${config.file}: valid, ${flowSummary(config, counts)} on ${plural(report.length, 'port')}\n`;
  out += top.findings.map(line).join('');
  out += 'exporter\n';
  out += top.exporter.map(line).join('');
  for (const r of report) {
    out += `${r.device}/${r.port} (provider profile${r.providers.length === 1 ? '' : 's'} ${r.providers.join(', ')})\n`;
    out += r.findings.map(line).join('');
  }
  return `${out}${failed ? 'provisioning: FAIL' : 'provisioning: ok'}\n`;
}

interface FlowCounts {
  /** Flows bound to a port: configured, and found in domains. */
  readonly flowCount: number;
  /** Flows found in `bind: auto` domains that no connection carries yet. */
  readonly unbound: number;
}

/**
 * "3 flows (2 configured, 1 found in MXL domains)". Under bind: auto a flow found is bound only
 * once a connection carries it: the flows found and not bound yet are said, and with no flow at
 * all, that flows are bound when their connections appear.
 */
export function flowSummary(config: Config, { flowCount, unbound }: FlowCounts): string {
  if (config.domains.length === 0) return plural(flowCount, 'flow');
  const bound = flowCount - config.flows.length;
  const auto = config.domains.some((d) => d.bind === 'auto');
  const waiting = unbound > 0
    ? `; ${unbound} more found, not bound yet: no connection carries ${unbound === 1 ? 'it' : 'them'} (bind: auto)`
    : auto && flowCount === 0 ? '; bind: auto binds each flow found once a connection carries it' : '';
  return `${plural(flowCount, 'flow')} (${config.flows.length} configured, ${bound} found in MXL domains${waiting})`;
}

/**
 * One scan of each configured MXL domain: what is there, the flows it binds (bind: auto: where
 * `placements` puts them), and the bind: auto flows nothing places yet.
 */
function lookAtDomains(config: Config, placements: DomainMonitorOptions['placements']): { summaries: DomainSummary[]; bindings: FlowBinding[]; unbound: { domain: string; flowId: string }[] } {
  if (config.domains.length === 0) return { summaries: [], bindings: [], unbound: [] };
  const quiet = createLogger('fatal', 'json', new Writable({ write: (_c, _e, cb) => cb() }));
  let posix: Posix | undefined;
  try {
    posix = loadPosix();
  } catch {
    posix = undefined;
  }
  const clock = { monotonicNs: () => process.hrtime.bigint(), taiNs: () => (posix ? posix.taiNowNs() : BigInt(Date.now()) * 1_000_000n) };
  const summaries: DomainSummary[] = [];
  const bindings: FlowBinding[] = [];
  const unbound: { domain: string; flowId: string }[] = [];
  for (const domain of config.domains) {
    const monitor = new DomainMonitor([domain], { clock, probe: posix, log: quiet, ...(placements ? { placements } : {}) });
    // Without a reader the tick runs here and now (DomainMonitor.tick); the promise only carries "changed".
    void monitor.tick({ windowNs: BigInt(config.sampling.windowMs) * 1_000_000n, intervalNs: BigInt(config.sampling.intervalMs) * 1_000_000n });
    const flows = monitor.flows().map((e) => e.flow);
    const selected = monitor.bindings();
    bindings.push(...selected);
    unbound.push(...monitor.unbound());
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
  return { summaries, bindings, unbound };
}

