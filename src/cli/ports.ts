/** What `devices` and `check` say about the host's ports: one sample, no daemon. */
import { Sampler, type SampledPort } from '../sampler/sampler.js';
import { selectSources } from '../sources/select.js';
import type { CounterSourceKind, Direction, Quantity } from '../sources/types.js';

export interface QuantitySource {
  readonly direction: Direction;
  readonly quantity: Quantity;
  /** Sources that have a counter for it, preferred first. */
  readonly sources: readonly { readonly kind: CounterSourceKind; readonly counter: string; readonly layer: string | undefined; readonly readable: boolean }[];
}

/** Samples the host's ports once, then closes every source. */
export function samplePortsOnce(sysfsRoot: string): { ports: SampledPort[]; notes: readonly string[] } {
  const m = selectSources({ sysfsRoot });
  const sampler = new Sampler({ inventory: m.inventory, sources: m.sources, intervalMs: 1000, windowMs: 10_000 });
  sampler.tick();
  const ports = [...sampler.ports.values()];
  sampler.stop();
  m.inventory.close();
  for (const s of m.sources) s.close();
  m.dcb?.close();
  return { ports, notes: m.notes };
}

export function quantitySources(p: SampledPort): QuantitySource[] {
  const out: QuantitySource[] = [];
  for (const direction of ['tx', 'rx'] as const) {
    for (const quantity of ['bytes', 'packets'] as const) {
      const sources = p.counters
        .filter((c) => c.series.spec.meaning?.direction === direction && c.series.spec.meaning.quantity === quantity)
        .map((c) => ({ kind: c.source, counter: c.series.spec.name, layer: c.series.spec.meaning?.layer, readable: c.series.state !== 'error' }));
      out.push({ direction, quantity, sources });
    }
  }
  return out;
}
