/**
 * The fabric-health series of one port: every counter the vocabulary knows, under its family.
 *
 * A counter read by two sources (netlink and sysfs hw_counters carry the same names) is taken
 * once, from the first source in the sampler's order (netlink first), like the measured rates.
 * Distinct counters that share a family's labels (irdma's ip4InDiscards and ip6InDiscards) are
 * distinct series, told apart by `counter`: sums over them count every packet once.
 */
import type { SampledPort } from '../sampler/sampler.js';
import { type HealthFamily, type HealthMeaning, healthMeaning } from '../sources/vocabulary/index.js';
import type { CounterSourceKind } from '../sources/types.js';

export interface HealthSeries {
  readonly family: HealthFamily;
  /** The family's own labels (direction, priority, kind, reason), in exposition order. */
  readonly labels: Readonly<Record<string, string>>;
  readonly source: CounterSourceKind;
  readonly counter: string;
  /** Counter total in the family's unit (seconds for pause_duration). */
  readonly value: number;
}

export function familyLabels(m: HealthMeaning): Record<string, string> {
  switch (m.family) {
    case 'pause_frames':
    case 'pause_duration':
      return { direction: m.direction, priority: m.priority };
    case 'transport_errors':
      return { kind: m.kind };
    case 'discards':
      return { direction: m.direction, reason: m.reason };
    default:
      return {};
  }
}

const scaleOf = (m: HealthMeaning): number => (m.family === 'pause_duration' ? m.scale : 1);

export function healthSeries(port: SampledPort): HealthSeries[] {
  const out: HealthSeries[] = [];
  const seen = new Set<string>();
  for (const c of port.counters) {
    const name = c.series.spec.name;
    const meaning = healthMeaning(c.source, name);
    if (meaning === undefined || c.series.total === undefined || seen.has(name)) continue;
    seen.add(name);
    out.push({ family: meaning.family, labels: familyLabels(meaning), source: c.source, counter: name, value: Number(c.series.total) * scaleOf(meaning) });
  }
  return out;
}
