/**
 * `check`'s look at the connections: a flow whose connection (the one its process's maps and
 * the `peer:` pins say carries it, src/sources/restrack/assign.ts) runs on another port or in
 * the other direction than the config binds it fails; one that runs where it is bound is ok.
 * Nothing is said for flows no connection is known to carry.
 */
import type { FlowBinding } from '../config/types.js';
import type { ConnectionMonitor } from '../sources/restrack/monitor.js';
import { bindingVerdicts } from '../sources/restrack/mismatch.js';
import { portKey } from '../sources/types.js';
import type { Finding } from './checks.js';

const CONNECTION_CHECK = 'connection';

/** Findings by the port (`device/port`) of the binding they are about. */
export function connectionFindings(m: ConnectionMonitor, bindings: readonly FlowBinding[]): Map<string, Finding[]> {
  const out = new Map<string, Finding[]>();
  const add = (b: FlowBinding, f: Finding): void => void out.set(portKey(b), [...(out.get(portKey(b)) ?? []), f]);
  for (const { binding: b, connection: c, direction, agrees } of bindingVerdicts(m.connections(), (k) => m.ownerOf(k), bindings)) {
    const where = `${c.obs.device}/${c.obs.port} ${direction}`;
    const conn = `${c.obs.local} -> ${c.obs.peer} (pid ${c.obs.pid ?? '?'})`;
    if (agrees) {
      add(b, { check: CONNECTION_CHECK, verdict: 'ok', detail: `flow "${b.flow.label}" runs where it is bound: connection ${conn} on ${where}` });
      continue;
    }
    add(b, {
      check: CONNECTION_CHECK,
      verdict: 'fail',
      detail: `flow "${b.flow.label}" (${b.flow.id}) is bound to ${b.device}/${b.port} ${b.direction}, but its connection ${conn} runs on ${where}`,
      values: { connectionDevice: c.obs.device, connectionPort: c.obs.port, connectionDirection: direction },
    });
  }
  return out;
}
