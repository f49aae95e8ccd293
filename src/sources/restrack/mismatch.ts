/**
 * A flow binding that disagrees with its connection (pure): the connection that carries the flow
 * (assign.ts) runs on another port or in the other direction than every binding of that flow.
 * One rule for `check` (src/cli/check-connections.ts) and the metric flow_binding_mismatch.
 */
import type { FlowBinding } from '../../config/types.js';
import { type Connection, directionOf } from '../../model/connections.js';
import type { ConnectionOwner } from './assign.js';

export interface BindingVerdict {
  readonly binding: FlowBinding;
  readonly connection: Connection;
  readonly direction: 'tx' | 'rx';
  /** The binding names the connection's port and direction. */
  readonly agrees: boolean;
}

/** Per present connection that carries a flow and has a direction: each binding of that flow, agreeing or not. */
export function bindingVerdicts(
  connections: readonly Connection[],
  ownerOf: (key: string) => ConnectionOwner | undefined,
  bindings: readonly FlowBinding[],
): BindingVerdict[] {
  const out: BindingVerdict[] = [];
  for (const c of connections) {
    const flowId = ownerOf(c.key)?.carried?.flowId;
    const direction = directionOf(c);
    if (!c.present || flowId === undefined || (direction !== 'tx' && direction !== 'rx')) continue;
    const mine = bindings.filter((b) => b.flow.id === flowId);
    const here = mine.filter((b) => b.device === c.obs.device && b.port === c.obs.port && b.direction === direction);
    for (const binding of here.length > 0 ? here : mine) out.push({ binding, connection: c, direction, agrees: here.length > 0 });
  }
  return out;
}
