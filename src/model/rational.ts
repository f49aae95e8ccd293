/** Exact non-negative rationals over bigint, always reduced, denominator > 0. */
export interface Rational {
  readonly num: bigint;
  readonly den: bigint;
}

export class RationalError extends Error {
  override readonly name = 'RationalError';
}

function gcd(a: bigint, b: bigint): bigint {
  let x = a < 0n ? -a : a;
  let y = b < 0n ? -b : b;
  while (y !== 0n) [x, y] = [y, x % y];
  return x;
}

export function rational(num: bigint | number, den: bigint | number = 1n): Rational {
  const n = BigInt(num);
  const d = BigInt(den);
  if (d === 0n) throw new RationalError(`denominator is zero in ${n}/${d}`);
  const sign = d < 0n ? -1n : 1n;
  const g = gcd(n, d) || 1n;
  return { num: (sign * n) / g, den: (sign * d) / g };
}

export const ZERO = rational(0n);

export const add = (a: Rational, b: Rational): Rational => rational(a.num * b.den + b.num * a.den, a.den * b.den);
export const mul = (a: Rational, b: Rational): Rational => rational(a.num * b.num, a.den * b.den);
export const div = (a: Rational, b: Rational): Rational => rational(a.num * b.den, a.den * b.num);
export const scale = (a: Rational, k: bigint | number): Rational => rational(a.num * BigInt(k), a.den);
export const isInteger = (a: Rational): boolean => a.den === 1n;
export const equals = (a: Rational, b: Rational): boolean => a.num === b.num && a.den === b.den;
export const compare = (a: Rational, b: Rational): number => {
  const d = a.num * b.den - b.num * a.den;
  return d === 0n ? 0 : d < 0n ? -1 : 1;
};

/** Nearest double; exact for every integer below 2^53. */
export function toNumber(a: Rational): number {
  if (a.den === 1n) return Number(a.num);
  const whole = a.num / a.den;
  const rest = a.num % a.den;
  return Number(whole) + Number(rest) / Number(a.den);
}

export const format = (a: Rational): string => `${a.num}/${a.den}`;

/** Ceiling of a non-negative integer division. */
export function ceilDiv(a: bigint, b: bigint): bigint {
  if (b <= 0n) throw new RationalError(`ceilDiv by ${b}`);
  return (a + b - 1n) / b;
}

/**
 * Parses "30000/1001", "25", "29.97" or a number; decimals are taken exactly
 * as written ("29.97" is 2997/100, not 30000/1001).
 */
export function parseRational(text: string | number): Rational {
  const s = String(text).trim();
  const frac = /^(\d+)\s*\/\s*(\d+)$/.exec(s);
  if (frac) return rational(BigInt(frac[1]!), BigInt(frac[2]!));
  const dec = /^(\d+)(?:\.(\d+))?$/.exec(s);
  if (dec) {
    const digits = dec[2] ?? '';
    return rational(BigInt(dec[1]! + digits), 10n ** BigInt(digits.length));
  }
  throw new RationalError(`"${s}" is not a rational number (expected N, N.M or N/M)`);
}
