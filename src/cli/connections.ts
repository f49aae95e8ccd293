/**
 * `connections`: every RDMA connection the kernel tracks, with the process and MXL flow behind it
 * and its packets per second, joined as the daemon joins them (src/sources/restrack). Two reads
 * `--interval` apart: the PSNs' movement gives the direction and the rates.
 */
import { existsSync } from 'node:fs';
import { loadConfig } from '../config/load.js';
import type { Config } from '../config/types.js';
import { InputError, formatProblem } from '../input/problems.js';
import { durationMs, parseDuration } from '../input/units.js';
import { type Connection, directionOf } from '../model/connections.js';
import { toNumber } from '../model/index.js';
import { Planner } from '../predictions/plan.js';
import { DEFAULT_PROC_ROOT } from '../sources/procfs/index.js';
import { pinsOf } from '../sources/restrack/assign.js';
import { ConnectionMonitor } from '../sources/restrack/monitor.js';
import { RestrackSource, type TransportOpen, openRestrackSocket } from '../sources/restrack/source.js';
import { type FlagSpec, commandFlags, str } from './args.js';
import type { Io } from './io.js';
import { DEFAULT_CONFIG } from './serve.js';

const FLAGS: FlagSpec = {
  'config.file': { type: 'string', default: DEFAULT_CONFIG, help: 'config whose domains, peer: pins and flows are joined (the default is skipped when missing)' },
  'path.proc': { type: 'string', default: DEFAULT_PROC_ROOT, help: 'procfs mountpoint' },
  interval: { type: 'string', default: '1s', help: 'between the two reads the rates come from' },
  output: { type: 'string', default: 'text', help: 'output format', choices: ['text', 'json'] },
  help: { type: 'boolean', help: 'show this help' },
};

export interface ConnectionRow {
  readonly device: string;
  readonly port: number;
  readonly local: string;
  readonly peer: string;
  readonly qpn: number;
  readonly qpType: string;
  readonly state: string;
  readonly direction: string;
  readonly pid: number | null;
  readonly process: string;
  readonly container: string;
  readonly flowId: string;
  readonly sentPacketsPerSecond: number | null;
  readonly receivedPacketsPerSecond: number | null;
  /** The carried flow's predicted packets per second where the config binds it on this port and direction. */
  readonly predictedPacketsPerSecond: number | null;
}

export interface ConnectionsDeps {
  readonly open?: () => TransportOpen;
  /** Between the two reads (tests: none). */
  readonly sleep?: (ms: number) => void;
}

/** Blocks this thread for `ms` (the CLI has nothing else to do meanwhile). */
export function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Two reads `intervalMs` apart, joined with `config`'s domains and pins. */
export function observeConnections(config: Config | undefined, procRoot: string, intervalMs: number, deps: ConnectionsDeps = {}): ConnectionMonitor {
  const open = deps.open ?? ((): TransportOpen => openRestrackSocket(2000));
  const m = new ConnectionMonitor(new RestrackSource(open), undefined, undefined, {
    domainPaths: () => config?.domains.map((d) => d.path) ?? [],
    pins: () => pinsOf(config),
    procRoot,
  });
  m.tickSync(0);
  // Nothing to read (no RDMA netlink): no second look.
  if (m.lastStatus.error === undefined) {
    (deps.sleep ?? sleepSync)(intervalMs);
    m.tickSync(intervalMs);
  }
  m.close();
  return m;
}

const perSecond = (n: number, ms: number): number => (n * 1000) / ms;

export function connectionRows(m: ConnectionMonitor, config: Config | undefined): ConnectionRow[] {
  const plans = config ? new Planner(config).plans(() => undefined) : [];
  return m.connections().filter((c) => c.present).map((c: Connection): ConnectionRow => {
    const o = m.ownerOf(c.key);
    const w = c.window;
    const direction = directionOf(c);
    const flowId = o?.carried?.flowId ?? '';
    const plan = plans.find((p) => p.port.device === c.obs.device && p.port.port === c.obs.port);
    const fp = plan?.flows.find((f) => f.binding.flow.id === flowId && f.binding.direction === (direction === 'rx' ? 'rx' : 'tx'));
    return {
      device: c.obs.device, port: c.obs.port, local: c.obs.local, peer: c.obs.peer, qpn: c.obs.qpn, qpType: c.obs.qpType, state: c.obs.state,
      direction, pid: c.obs.pid ?? null, process: o?.process || c.obs.kernName || '', container: o?.container ?? '', flowId,
      sentPacketsPerSecond: w && w.ms > 0 ? perSecond(w.sent, w.ms) : null,
      receivedPacketsPerSecond: w && w.ms > 0 && c.received ? perSecond(w.received, w.ms) : null,
      predictedPacketsPerSecond: fp?.prediction ? toNumber(fp.prediction.packetsPerSecond) : null,
    };
  });
}

const num = (n: number | null): string => (n === null ? '-' : String(Math.round(n)));

function renderText(rows: readonly ConnectionRow[]): string {
  const head = ['PORT', 'LOCAL -> PEER', 'TYPE', 'STATE', 'DIR', 'PID', 'PROCESS', 'FLOW', 'SENT/s', 'RCVD/s', 'PREDICTED/s'];
  const cells = rows.map((r) => [
    `${r.device}/${r.port}`, `${r.local} -> ${r.peer || '-'}`, r.qpType, r.state, r.direction || '-', r.pid === null ? '-' : String(r.pid),
    r.process || '-', r.flowId || '-', num(r.sentPacketsPerSecond), num(r.receivedPacketsPerSecond), num(r.predictedPacketsPerSecond),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: readonly string[]): string => `${c.map((x, i) => x.padEnd(widths[i]!)).join('  ').trimEnd()}\n`;
  return line(head) + cells.map(line).join('');
}

export function runConnections(argv: string[], io: Io, deps: ConnectionsDeps = {}): number {
  const flags = commandFlags(argv, io, {
    usage: 'connections [flags]',
    summary: `Lists every RDMA connection the kernel tracks (restrack: what \`rdma res show qp\` and
\`cm_id\` print) with its process, container and the MXL flow it carries, and its packets per
second between two reads --interval apart.
Exit status: 0 the connection tables were read, 1 they cannot be read (no RDMA netlink), 2 invalid config or flags.`,
    flags: FLAGS,
  });
  if (typeof flags === 'number') return flags;
  let intervalMs: number;
  let config: Config | undefined;
  try {
    intervalMs = durationMs(parseDuration(str(flags, 'interval')!));
    const file = str(flags, 'config.file')!;
    if (flags.given.has('config.file') || existsSync(file)) config = loadConfig(file);
  } catch (e) {
    if (e instanceof InputError) io.stderr(`${e.problems.map(formatProblem).join('\n')}\n`);
    else io.stderr(`connections: ${(e as Error).message}\n`);
    return 2;
  }
  const m = observeConnections(config, str(flags, 'path.proc')!, intervalMs, deps);
  const rows = connectionRows(m, config);
  const s = m.lastStatus;
  if (str(flags, 'output') === 'json') {
    io.stdout(`${JSON.stringify({ error: s.error ?? null, mapsDenied: s.mapsDenied ?? null, connections: rows }, null, 2)}\n`);
    return s.error ? 1 : 0;
  }
  if (s.error) io.stderr(`connections: ${s.error}\n`);
  if (s.mapsDenied) io.stderr(`connections: another user's /proc/PID/maps needs CAP_SYS_PTRACE; flows of such processes are not shown (${s.mapsDenied})\n`);
  // Tables that could not be read say nothing about connections: only the error (on stderr).
  if (rows.length > 0) io.stdout(renderText(rows));
  else if (!s.error) io.stdout('No RDMA connection is tracked by the kernel.\n');
  return s.error ? 1 : 0;
}
