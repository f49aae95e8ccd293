/** Units people write in configs and flags: durations, bit rates, byte sizes. */
import { type Rational, rational, parseRational, mul, RationalError } from '../model/rational.js';

export class UnitError extends Error {
  override readonly name = 'UnitError';
}

const DURATION_UNITS: Record<string, Rational> = {
  ns: rational(1, 1_000_000_000),
  us: rational(1, 1_000_000),
  µs: rational(1, 1_000_000),
  ms: rational(1, 1000),
  s: rational(1),
  m: rational(60),
  h: rational(3600),
};

/** "10ms", "125us", "1s", "0.5s", "1/1000" (seconds), 0.01 (seconds) -> exact seconds. */
export function parseDuration(text: string | number): Rational {
  const s = String(text).trim();
  const m = /^([\d./]+)\s*(ns|us|µs|ms|s|m|h)?$/.exec(s);
  if (!m) throw new UnitError(`"${s}" is not a duration (examples: 10ms, 125us, 1s, 1/1000)`);
  try {
    const value = parseRational(m[1]!);
    if (value.num === 0n) throw new UnitError(`duration "${s}" must be above zero`);
    return mul(value, DURATION_UNITS[m[2] ?? 's']!);
  } catch (e) {
    if (e instanceof RationalError) throw new UnitError(`"${s}" is not a duration (examples: 10ms, 125us, 1s, 1/1000)`);
    throw e;
  }
}

const RATE_UNITS: Record<string, number> = {
  bps: 1, kbps: 1e3, mbps: 1e6, gbps: 1e9, tbps: 1e12,
  'b/s': 1, 'kb/s': 1e3, 'mb/s': 1e6, 'gb/s': 1e9, 'tb/s': 1e12,
};

/** "100Gbps", "25 Gb/s", "400000000000" (bits/s) -> bits per second (decimal prefixes). */
export function parseBitRate(text: string | number): number {
  const s = String(text).trim();
  const m = /^(\d+(?:\.\d+)?)\s*([kmgt]?(?:bps|b\/s))?$/i.exec(s);
  if (!m) throw new UnitError(`"${s}" is not a bit rate (examples: 100Gbps, 25Gb/s, 10000000000)`);
  const v = Number(m[1]) * RATE_UNITS[(m[2] ?? 'bps').toLowerCase()]!;
  if (!(v > 0)) throw new UnitError(`bit rate "${s}" must be above zero`);
  return v;
}

/** Milliseconds from a duration, for timers. */
export const durationMs = (d: Rational): number => (Number(d.num) * 1000) / Number(d.den);
