/**
 * Items grouped by a key, in first-seen order; an item whose key is undefined is left out.
 * One pass: each group's array grows in place.
 */
export function groupBy<T, K>(items: Iterable<T>, keyOf: (item: T) => K | undefined): Map<K, T[]> {
  const out = new Map<K, T[]>();
  for (const item of items) {
    const k = keyOf(item);
    if (k === undefined) continue;
    const group = out.get(k);
    if (group) group.push(item);
    else out.set(k, [item]);
  }
  return out;
}
