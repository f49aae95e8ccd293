/**
 * The bytes a counter read returns, as a number: the contract of the `preadCounter` op (ops.ts),
 * which the native reader (native/reader) and direct.ts both keep, and of every other read of a
 * counter file. sysfs prints "%llu\n" (show_hw_stats(), show_pma_counter(), netstat_show() in
 * the kernel).
 */

/** A raw counter value: a number while it is exact (below 2^53), a bigint above. */
export type CounterNumber = number | bigint;

/**
 * The one parse of a counter's text, straight from the bytes a read returned. Surrounding whitespace is
 * ignored; anything but 1..20 decimal digits ("N/A (no PMA)", "", "-1") is undefined. Values up
 * to 2^53 - 1 come back as exact numbers (no allocation), larger ones as bigint.
 */
export function parseCounterBytes(b: Uint8Array, start = 0, end = b.length): CounterNumber | undefined {
  while (start < end && isSpace(b[start]!)) start++;
  while (end > start && isSpace(b[end - 1]!)) end--;
  const digits = end - start;
  if (digits < 1 || digits > 20) return undefined;
  let v = 0;
  for (let i = start; i < end; i++) {
    const d = b[i]! - 48;
    if (d < 0 || d > 9) return undefined;
    v = v * 10 + d;
  }
  if (digits <= 15) return v; // below 10^15 < 2^53: every step above was exact
  let big = 0n;
  for (let i = start; i < end; i++) big = big * 10n + BigInt(b[i]! - 48);
  return big <= MAX_EXACT ? Number(big) : big;
}

/** parseCounterBytes() of a string. */
export function parseCounterText(text: string): CounterNumber | undefined {
  return parseCounterBytes(Buffer.from(text, 'latin1'));
}

const MAX_EXACT = BigInt(Number.MAX_SAFE_INTEGER);
// Space, \t, \n, \v, \f, \r: what String.prototype.trim() drops among ASCII.
const isSpace = (c: number): boolean => c === 32 || (c >= 9 && c <= 13);
