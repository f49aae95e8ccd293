import { describe, it, expect } from 'vitest';
import { formatDataRate, frameRateLabel, parseDataRate, parseDuration, parseFrameRate, parseGoDurationMs } from '../../src/input/units.js';
import { rational } from '../../src/model/rational.js';

describe('data rates are case-exact: B is bytes, b is bits', () => {
  it('reads bytes as bytes (12.5GB/s was read as 12.5 Gb/s before)', () => {
    expect(parseDataRate('12.5GB/s')).toBe(100e9);
    expect(parseDataRate('12.5GB/s') / 8).toBe(12.5e9);
    expect(parseDataRate('12.5 Gb/s')).toBe(12.5e9);
  });

  it('takes every documented spelling', () => {
    expect(parseDataRate('100Gbps')).toBe(100e9);
    expect(parseDataRate('25Gb/s')).toBe(25e9);
    expect(parseDataRate('400Gbit/s')).toBe(400e9);
    expect(parseDataRate('10 Mbps')).toBe(10e6);
    expect(parseDataRate('1kbps')).toBe(1000);
    expect(parseDataRate('3.125GB/s')).toBe(25e9);
    expect(parseDataRate('1MiB/s')).toBe(8 * 1024 * 1024);
    expect(parseDataRate('2 GiB/s')).toBe(16 * 2 ** 30);
    expect(parseDataRate('1TB/s')).toBe(8e12);
  });

  it('refuses ambiguous spellings and names what they could mean', () => {
    expect(() => parseDataRate('100gbps')).toThrow('"100gbps": unit "gbps" is ambiguous: units are case-exact, b is bits and B is bytes; did you mean Gbps (bits)?');
    expect(() => parseDataRate('12.5gb/s')).toThrow('did you mean Gb/s (bits) or GB/s (bytes)?');
    expect(() => parseDataRate('1GBPS')).toThrow(/ambiguous.*Gbps \(bits\)/);
    expect(() => parseDataRate('1Kbps')).toThrow(/did you mean kbps \(bits\)/);
  });

  it('refuses a number without a unit, unknown units and zero, listing the accepted forms', () => {
    expect(() => parseDataRate('100000000000')).toThrow('"100000000000" needs a unit: 100000000000Gbps (bits) or 100000000000GB/s (bytes)?');
    expect(() => parseDataRate(25)).toThrow(/needs a unit/);
    expect(() => parseDataRate('10 furlongs/s')).toThrow(/unknown unit "furlongs\/s" \(bits: bps, kbps, Mbps, Gbps, Tbps, b\/s.*bytes: B\/s, kB\/s, MB\/s, GB\/s, TB\/s, KiB\/s/);
    expect(() => parseDataRate('0Gbps')).toThrow('must be above zero');
    expect(() => parseDataRate('fast')).toThrow(/is not a data rate/);
  });

  it('shows rates in bits or bytes with decimal prefixes', () => {
    expect(formatDataRate(12.5e9, 'bytes')).toBe('12.500 GB/s');
    expect(formatDataRate(12.5e9, 'bits')).toBe('100.000 Gb/s');
    expect(formatDataRate(141_038_250, 'bits')).toBe('1.128 Gb/s');
    expect(formatDataRate(100, 'bytes')).toBe('100 B/s');
  });
});

describe('durations need a unit', () => {
  it('reads exact durations', () => {
    expect(parseDuration('10ms')).toEqual(rational(1, 100));
    expect(parseDuration('125us')).toEqual(rational(1, 8000));
    expect(parseDuration('125µs')).toEqual(rational(1, 8000));
    expect(parseDuration('1.5s')).toEqual(rational(3, 2));
    expect(parseDuration('1/1000s')).toEqual(rational(1, 1000));
    expect(parseDuration('2m')).toEqual(rational(120));
  });

  it('refuses a bare number (10 was 10 seconds before) and names the unit', () => {
    expect(() => parseDuration('10')).toThrow('"10" needs a unit: 10ms or 10s? (examples: 10ms, 125us, 1s, 1.5s, 1/1000s; units: ns, us, ms, s, m, h)');
    expect(() => parseDuration(0.01)).toThrow(/needs a unit/);
    expect(() => parseDuration('0ms')).toThrow('must be above zero');
    expect(() => parseDuration('10 fortnights')).toThrow(/is not a duration/);
  });

  it("reads Go durations for exporter-toolkit's web config", () => {
    expect(parseGoDurationMs('1m30s')).toBe(90_000);
    expect(parseGoDurationMs('250ms')).toBe(250);
    expect(parseGoDurationMs('0')).toBe(0);
    expect(parseGoDurationMs('10')).toBeUndefined();
  });
});

describe('frame rates as broadcasters write them', () => {
  it.each([
    ['59.94', 60000n, 1001n], ['29.97', 30000n, 1001n], ['23.976', 24000n, 1001n], ['23.98', 24000n, 1001n],
    ['119.88', 120000n, 1001n], ['47.952', 48000n, 1001n], ['29.970', 30000n, 1001n],
  ])('%s is %i/%i, and says so', (text, num, den) => {
    const r = parseFrameRate(text);
    expect(r.rate).toEqual({ num, den });
    expect(r.note).toContain(`${num}/${den}`);
  });

  it('keeps integers and other decimals exact', () => {
    expect(parseFrameRate('25')).toEqual({ rate: rational(25), note: undefined });
    expect(parseFrameRate('50')).toEqual({ rate: rational(50), note: undefined });
    expect(parseFrameRate('30000/1001')).toEqual({ rate: rational(30000, 1001), note: undefined });
    expect(parseFrameRate('12.5')).toEqual({ rate: rational(25, 2), note: undefined });
    expect(parseFrameRate('59.9').rate).toEqual(rational(599, 10));
  });

  it('refuses a zero denominator and zero with a message about rates (was "0 is out of range")', () => {
    expect(() => parseFrameRate('1/0')).toThrow('"1/0": the denominator must be above zero (examples: 30000/1001, 25)');
    expect(() => parseFrameRate('0')).toThrow('"0": a rate must be above zero');
    expect(() => parseFrameRate('fast')).toThrow('"fast" is not a rate');
  });

  it('labels rates the way they are said', () => {
    expect(frameRateLabel(rational(30000, 1001))).toBe('29.97');
    expect(frameRateLabel(rational(60000, 1001))).toBe('59.94');
    expect(frameRateLabel(rational(24000, 1001))).toBe('23.976');
    expect(frameRateLabel(rational(25))).toBe('25');
  });
});
