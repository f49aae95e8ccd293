/**
 * `check`: validates a config and reports each port's provisioning:
 * state ACTIVE, active MTU as the model assumes, predicted wire rate within
 * headroom of capacity. Exit 0 all good, 1 a provisioning failure, 2 invalid config.
 */
import { loadConfig } from '../config/load.js';
import { InputError, formatProblem } from '../input/problems.js';
import { planPort, type PortPlan } from '../predictions/plan.js';
import { DEFAULT_SYSFS_ROOT } from '../sources/sysfs/index.js';
import { type PortAttributes, portKey } from '../sources/types.js';
import { type FlagSpec, commandFlags, str } from './args.js';
import { decimal } from './format.js';
import type { Io } from './io.js';
import { samplePortsOnce } from './ports.js';
import { assumptionsOnce, hostFindings } from '../health/check.js';
import { DEFAULT_CONFIG } from './serve.js';

const FLAGS: FlagSpec = {
  'config.file': { type: 'string', default: DEFAULT_CONFIG, help: 'YAML config to check' },
  'path.sysfs': { type: 'string', default: DEFAULT_SYSFS_ROOT, help: 'sysfs mountpoint' },
  output: { type: 'string', default: 'text', help: 'text or json' },
  help: { type: 'boolean', help: 'show this help' },
};

/** `warn` is reported but does not fail provisioning (host assumptions, README "Fabric health"). */
export type Verdict = 'ok' | 'warn' | 'fail' | 'unknown';
export interface Finding {
  readonly check: 'present' | 'state' | 'mtu' | 'capacity' | 'pfc' | 'ecn' | 'vlan';
  readonly verdict: Verdict;
  readonly detail: string;
}

export function runCheck(argv: string[], io: Io): number {
  const flags = commandFlags(argv, io, 'check [flags]', 'Validates a config and reports provisioning per port. Exit 0 ok, 1 provisioning failure, 2 invalid config.', FLAGS);
  if (typeof flags === 'number') return flags;
  let config;
  try {
    config = loadConfig(str(flags, 'config.file')!);
  } catch (e) {
    if (!(e instanceof InputError)) throw e;
    io.stderr(`${e.problems.map(formatProblem).join('\n')}\n`);
    return 2;
  }
  const sysfsRoot = str(flags, 'path.sysfs')!;
  const sampled = new Map(samplePortsOnce(sysfsRoot).ports.map((p) => [portKey(p.ref), p]));
  const assumptions = assumptionsOnce(sysfsRoot, [...sampled.values()]);
  const report = config.ports.map((port) => {
    const sample = sampled.get(portKey(port));
    const attrs = sample?.attrs;
    const plan = planPort(port, config.flows, attrs);
    const host = hostFindings(assumptions.get(portKey(port)), sample, port.provider.l2HeaderBytes);
    return { device: port.device, port: port.port, findings: [...findings(plan, attrs), ...host], plan };
  });
  const failed = report.some((r) => r.findings.some((f) => f.verdict === 'fail'));
  if (str(flags, 'output') === 'json') {
    io.stdout(`${JSON.stringify({ config: config.file, ok: !failed, ports: report.map(({ plan: _p, ...r }) => r) }, null, 2)}\n`);
  } else {
    io.stdout(`config ${config.file}: valid, ${config.flows.length} flows on ${config.ports.length} ports\n`);
    for (const r of report) {
      io.stdout(`${r.device}/${r.port}\n`);
      for (const f of r.findings) io.stdout(`  ${f.verdict.toUpperCase().padEnd(7)} ${f.check.padEnd(8)} ${f.detail}\n`);
    }
    io.stdout(failed ? 'provisioning: FAIL\n' : 'provisioning: ok\n');
  }
  return failed ? 1 : 0;
}

export function findings(plan: PortPlan, attrs: PortAttributes | undefined): Finding[] {
  const out: Finding[] = [];
  out.push(attrs
    ? { check: 'present', verdict: 'ok', detail: `found (attributes from ${attrs.attributeSource})` }
    : { check: 'present', verdict: 'fail', detail: 'port not found on this host' });
  if (attrs) {
    out.push({ check: 'state', verdict: attrs.state === 'ACTIVE' ? 'ok' : 'fail', detail: `state ${attrs.state}` });
  }
  out.push(mtuFinding(plan, attrs));
  for (const direction of ['tx', 'rx'] as const) out.push(capacityFinding(plan, direction));
  return out;
}

function mtuFinding(plan: PortPlan, attrs: PortAttributes | undefined): Finding {
  const active = attrs?.activeIbMtu;
  if (!plan.mtu) return { check: 'mtu', verdict: 'unknown', detail: 'mtu: auto, but the port reports no active MTU' };
  const modelPayload = plan.mtu.kind === 'ib' ? plan.mtu.bytes : plan.mtu.bytes - plan.port.provider.mtuOverheadBytes;
  if (active === undefined) return { check: 'mtu', verdict: 'unknown', detail: `model assumes ${modelPayload} B payload per packet; active MTU unknown` };
  if (active < modelPayload) {
    return { check: 'mtu', verdict: 'fail', detail: `active IB MTU ${active} is below the model's ${modelPayload} B payload per packet: more packets than predicted` };
  }
  return { check: 'mtu', verdict: 'ok', detail: `active IB MTU ${active}, model payload per packet ${modelPayload}` };
}

function capacityFinding(plan: PortPlan, direction: 'tx' | 'rx'): Finding {
  const t = plan.totals[direction];
  const cap = plan.capacityBytesPerSecond;
  const headroom = plan.port.headroom;
  if (!t) return { check: 'capacity', verdict: 'unknown', detail: `${direction}: MTU unknown, nothing predicted` };
  const wire = t.bytesPerSecond.wire;
  if (cap === undefined) return { check: 'capacity', verdict: 'unknown', detail: `${direction}: ${decimal(wire, 'B/s')} predicted; capacity unknown` };
  const share = wire / cap;
  const detail = `${direction}: ${decimal(wire, 'B/s')} predicted of ${decimal(cap, 'B/s')} (${(share * 100).toFixed(2)} %, headroom ${(headroom * 100).toFixed(0)} %)`;
  return { check: 'capacity', verdict: share <= headroom ? 'ok' : 'fail', detail };
}
