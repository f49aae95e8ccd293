/**
 * Units people write in configs and flags (durations, data rates, frame rates) and the way rates
 * are shown to them. Spellings are case-exact: `B` is bytes and `b` is bits, everywhere, so
 * "12.5GB/s" is 100 Gb/s and never 12.5 Gb/s. A number without a unit is refused rather than
 * guessed at.
 */
import { type Rational, rational, parseRational, mul, RationalError } from '../model/rational.js';

export class UnitError extends Error {
  override readonly name = 'UnitError';
}

// ---------------------------------------------------------------------------------------------
// Durations

const DURATION_UNITS: Readonly<Record<string, Rational>> = {
  ns: rational(1, 1_000_000_000),
  us: rational(1, 1_000_000),
  µs: rational(1, 1_000_000),
  ms: rational(1, 1000),
  s: rational(1),
  m: rational(60),
  h: rational(3600),
};
const DURATION_EXAMPLES = 'examples: 10ms, 125us, 1s, 1.5s, 1/1000s; units: ns, us, ms, s, m, h';

/** "10ms", "125us", "1s", "0.5s", "1/1000s" -> exact seconds. A bare number has no unit and is refused. */
export function parseDuration(text: string | number): Rational {
  const s = String(text).trim();
  if (/^[\d./]+$/.test(s)) throw new UnitError(`"${s}" needs a unit: ${s}ms or ${s}s? (${DURATION_EXAMPLES})`);
  const m = /^([\d./]+)\s*(ns|us|µs|ms|s|m|h)$/.exec(s);
  if (!m) throw new UnitError(`"${s}" is not a duration (${DURATION_EXAMPLES})`);
  let value: Rational;
  try {
    value = parseRational(m[1]!);
  } catch (e) {
    if (e instanceof RationalError) throw new UnitError(`"${s}" is not a duration (${DURATION_EXAMPLES})`);
    throw e;
  }
  if (value.num === 0n) throw new UnitError(`duration "${s}" must be above zero`);
  return mul(value, DURATION_UNITS[m[2]!]!);
}

/** Milliseconds from a duration, for timers. */
export const durationMs = (d: Rational): number => (Number(d.num) * 1000) / Number(d.den);

/**
 * Go's time.ParseDuration for non-negative values, as exporter-toolkit's web config writes them:
 * "1s", "1m30s", "250ms", "0". Undefined when it is not one.
 */
export function parseGoDurationMs(text: string): number | undefined {
  if (text === '0') return 0;
  const unit: Readonly<Record<string, number>> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  if (!/^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/.test(text)) return undefined;
  let ms = 0;
  for (const m of text.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)) ms += Number(m[1]) * unit[m[2]!]!;
  return Number.isFinite(ms) ? ms : undefined;
}

// ---------------------------------------------------------------------------------------------
// Data rates

/** Every accepted spelling and its value in bits per second. Decimal prefixes (SI), `Ki`... binary. */
const BIT_UNITS: Readonly<Record<string, number>> = {
  bps: 1, kbps: 1e3, Mbps: 1e6, Gbps: 1e9, Tbps: 1e12,
  'b/s': 1, 'kb/s': 1e3, 'Mb/s': 1e6, 'Gb/s': 1e9, 'Tb/s': 1e12,
  'bit/s': 1, 'kbit/s': 1e3, 'Mbit/s': 1e6, 'Gbit/s': 1e9, 'Tbit/s': 1e12,
};
const BYTE_UNITS: Readonly<Record<string, number>> = {
  'B/s': 8, 'kB/s': 8e3, 'MB/s': 8e6, 'GB/s': 8e9, 'TB/s': 8e12,
  'KiB/s': 8 * 2 ** 10, 'MiB/s': 8 * 2 ** 20, 'GiB/s': 8 * 2 ** 30, 'TiB/s': 8 * 2 ** 40,
};
const RATE_UNITS: Readonly<Record<string, number>> = { ...BIT_UNITS, ...BYTE_UNITS };
const ACCEPTED_RATES = `bits: ${Object.keys(BIT_UNITS).join(', ')}; bytes: ${Object.keys(BYTE_UNITS).join(', ')}`;

/** "100Gbps", "25 Gb/s", "12.5GB/s", "400MiB/s" -> bits per second. */
export function parseDataRate(text: string | number): number {
  const s = String(text).trim();
  const m = /^(\d+(?:\.\d+)?)\s*(\S*)$/.exec(s);
  if (!m) throw new UnitError(`"${s}" is not a data rate (examples: 100Gbps, 25Gb/s, 12.5GB/s; ${ACCEPTED_RATES})`);
  const [, number, unit] = m as unknown as [string, string, string];
  if (unit === '') throw new UnitError(`"${s}" needs a unit: ${number}Gbps (bits) or ${number}GB/s (bytes)? (${ACCEPTED_RATES})`);
  const perUnit = Object.hasOwn(RATE_UNITS, unit) ? RATE_UNITS[unit] : undefined;
  if (perUnit === undefined) throw new UnitError(`"${s}": ${unknownRateUnit(unit)}`);
  const v = Number(number) * perUnit;
  if (!(v > 0) || !Number.isFinite(v)) throw new UnitError(`data rate "${s}" must be above zero`);
  return v;
}

/** Names what the unit could have meant when only its case is off: b is bits, B is bytes. */
function unknownRateUnit(unit: string): string {
  const near = Object.keys(RATE_UNITS).filter((u) => u.toLowerCase() === unit.toLowerCase());
  if (near.length > 0) {
    const meaning = (u: string): string => `${u} (${Object.hasOwn(BYTE_UNITS, u) ? 'bytes' : 'bits'})`;
    return `unit "${unit}" is ambiguous: units are case-exact, b is bits and B is bytes; did you mean ${near.map(meaning).join(' or ')}?`;
  }
  return `unknown unit "${unit}" (${ACCEPTED_RATES})`;
}

/** How a person wants rates shown; metrics stay in bytes (Prometheus base units). */
export type RateUnits = 'bits' | 'bytes';
export const RATE_UNIT_CHOICES: readonly RateUnits[] = ['bytes', 'bits'];

const PREFIXES = ['', 'k', 'M', 'G', 'T'] as const;

/** Decimal prefixes, as the seed presents rates (MB/s = 10^6 B/s): 141038250 -> "141.038 MB/s". */
export function formatDecimal(value: number, unit: string, digits = 3): string {
  let v = value;
  let i = 0;
  while (Math.abs(v) >= 1000 && i < PREFIXES.length - 1) {
    v /= 1000;
    i++;
  }
  return `${i === 0 ? String(+v.toFixed(digits)) : v.toFixed(digits)} ${PREFIXES[i]}${unit}`;
}

/** A rate in bytes per second, shown in bits (Gb/s) or bytes (GB/s). */
export function formatDataRate(bytesPerSecond: number, units: RateUnits, digits = 3): string {
  return units === 'bits' ? formatDecimal(bytesPerSecond * 8, 'b/s', digits) : formatDecimal(bytesPerSecond, 'B/s', digits);
}

// ---------------------------------------------------------------------------------------------
// Frame and grain rates

/** The NTSC-derived family: N x 1000/1001, written as 23.976, 29.97, 47.952, 59.94, 119.88, 239.76. */
const NTSC_BASES = [24n, 30n, 48n, 60n, 120n, 240n] as const;

export interface ParsedRate {
  readonly rate: Rational;
  /** Set when a decimal was read as its exact broadcast rational (59.94 -> 60000/1001). */
  readonly note: string | undefined;
}

/**
 * "30000/1001", "25", "12.5" or a broadcast decimal. A decimal that is N x 1000/1001 rounded to
 * the digits written (29.97, 59.94, 23.976, 23.98...) means that rational, as broadcasters say it;
 * any other decimal is taken exactly as written (12.5 is 25/2).
 */
export function parseFrameRate(text: string): ParsedRate {
  const s = text.trim();
  const frac = /^(\d+)\/(\d+)$/.exec(s);
  if (frac) {
    if (BigInt(frac[2]!) === 0n) throw new UnitError(`"${s}": the denominator must be above zero (examples: 30000/1001, 25)`);
    return checkPositive(s, rational(BigInt(frac[1]!), BigInt(frac[2]!)), undefined);
  }
  const dec = /^(\d+)(?:\.(\d+))?$/.exec(s);
  if (!dec) throw new UnitError(`"${s}" is not a rate (examples: 30000/1001, 25, 59.94)`);
  const digits = dec[2] ?? '';
  const exact = rational(BigInt(dec[1]! + digits), 10n ** BigInt(digits.length));
  if (digits.replace(/0+$/, '').length >= 2) {
    for (const n of NTSC_BASES) {
      const ntsc = rational(n * 1000n, 1001n);
      if (roundedDecimal(ntsc, digits.length) === `${dec[1]}.${digits}`) {
        return { rate: ntsc, note: `${s} is taken as ${ntsc.num}/${ntsc.den} (${n} x 1000/1001), the broadcast rate it names; write ${exact.num}/${exact.den} for exactly ${s}` };
      }
    }
  }
  return checkPositive(s, exact, undefined);
}

function checkPositive(s: string, rate: Rational, note: string | undefined): ParsedRate {
  if (rate.num === 0n) throw new UnitError(`"${s}": a rate must be above zero`);
  return { rate, note };
}

/** A rational rounded half-up to `digits` decimals, as text: 60000/1001, 2 -> "59.94". */
function roundedDecimal(r: Rational, digits: number): string {
  const scaleBy = 10n ** BigInt(digits);
  const scaled = (r.num * scaleBy * 2n + r.den) / (2n * r.den);
  const whole = scaled / scaleBy;
  const frac = (scaled % scaleBy).toString().padStart(digits, '0');
  return `${whole}.${frac}`;
}

/** A rate as broadcasters write it: 30000/1001 -> "29.97", 24000/1001 -> "23.976", 25 -> "25". */
export function frameRateLabel(r: Rational): string {
  if (r.den === 1n) return String(r.num);
  return String(+roundedDecimal(r, 3));
}
