import { describe, expect, it } from 'vitest';
import { parseLinkLayer, parseNumberedName, parseRate, roceActiveMtu } from '../../src/sources/sysfs/parse.js';
import { parseCounterText } from '../../src/reads/counter-bytes.js';
import { isSafeName, isSafePortName, isSafePortNumber } from '../../src/sources/sysfs/paths.js';

describe('parseRate', () => {
  it.each([
    ['100 Gb/sec (4X EDR)', 100e9],
    ['10 Gb/sec (1X FDR10)', 10e9],
    ['2.5 Gb/sec (1X SDR)', 2.5e9],
    ['56 Gb/sec (4X FDR)', 56e9],
    ['400 Gb/sec (4X NDR)', 400e9],
    ['25 Gb/sec (1X EDR)\n', 25e9],
  ])('%s -> %d bit/s', (text, bits) => {
    expect(parseRate(text)).toBe(bits);
  });

  it('rejects text that is not a rate', () => {
    expect(parseRate(undefined)).toBeUndefined();
    expect(parseRate('')).toBeUndefined();
    expect(parseRate('fast')).toBeUndefined();
  });
});

describe('parseNumberedName', () => {
  it('strips the number state_show() and phys_state_show() print', () => {
    expect(parseNumberedName('4: ACTIVE')).toBe('ACTIVE');
    expect(parseNumberedName('1: DOWN\n')).toBe('DOWN');
    expect(parseNumberedName('5: LinkUp')).toBe('LinkUp');
    expect(parseNumberedName('7: Phy Test')).toBe('Phy Test');
    expect(parseNumberedName('ACTIVE')).toBeUndefined();
    expect(parseNumberedName(undefined)).toBeUndefined();
  });
});

describe('parseLinkLayer', () => {
  it('knows Ethernet and InfiniBand, nothing else', () => {
    expect(parseLinkLayer('Ethernet')).toBe('Ethernet');
    expect(parseLinkLayer('InfiniBand')).toBe('InfiniBand');
    expect(parseLinkLayer('Unknown')).toBe('unknown');
    expect(parseLinkLayer(undefined)).toBe('unknown');
  });
});

describe('roceActiveMtu', () => {
  it('matches the rxe measurement: 9000 -> 4096, 1500 -> 1024', () => {
    expect(roceActiveMtu(9000, 'rxe')).toBe(4096);
    expect(roceActiveMtu(1500, 'rxe')).toBe(1024);
    expect(roceActiveMtu(9000, 'iboe')).toBe(4096);
    expect(roceActiveMtu(1500, 'iboe')).toBe(1024);
  });

  it('differs at the boundaries: rxe subtracts 80, iboe_get_mtu() 96', () => {
    expect(roceActiveMtu(4176, 'rxe')).toBe(4096);
    expect(roceActiveMtu(4176, 'iboe')).toBe(2048);
    expect(roceActiveMtu(4192, 'iboe')).toBe(4096);
    expect(roceActiveMtu(2128, 'rxe')).toBe(2048);
    expect(roceActiveMtu(2128, 'iboe')).toBe(1024);
  });

  it('below 256: rxe falls back to 256, iboe_get_mtu() gives no MTU', () => {
    expect(roceActiveMtu(300, 'rxe')).toBe(256);
    expect(roceActiveMtu(300, 'iboe')).toBeUndefined();
    expect(roceActiveMtu(352, 'iboe')).toBe(256);
    expect(roceActiveMtu(0, 'rxe')).toBeUndefined();
    expect(roceActiveMtu(Number.NaN, 'iboe')).toBeUndefined();
  });
});

describe('parseCounterText', () => {
  it('parses decimal text: exact numbers below 2^53, bigint above, full u64 range', () => {
    expect(parseCounterText('123\n')).toBe(123);
    expect(parseCounterText('0')).toBe(0);
    expect(parseCounterText('9007199254740991')).toBe(2 ** 53 - 1); // the largest exact number
    expect(parseCounterText('9007199254740992')).toBe(2n ** 53n);
    expect(parseCounterText('18446744073709551615\n')).toBe(18446744073709551615n);
    expect(parseCounterText('99999999999999999999')).toBe(99999999999999999999n); // 20 digits, as before
  });

  it('refuses anything else', () => {
    expect(parseCounterText('N/A (no PMA)\n')).toBeUndefined();
    expect(parseCounterText('')).toBeUndefined();
    expect(parseCounterText('-1')).toBeUndefined();
    expect(parseCounterText('0x10')).toBeUndefined();
  });
});

describe('name validation', () => {
  it('accepts real device and netdev names', () => {
    for (const n of ['mlx5_0', 'rxe0', 'bnxt_re0', 'ens1f0np0', 'veth0', 'ib0.8001', 'eth0@if3']) {
      expect(isSafeName(n)).toBe(true);
    }
  });

  it('rejects names that could leave the root', () => {
    for (const n of ['', '.', '..', 'a/b', '../etc', '/etc', 'a\0b', 'a b', 'tab\tx', 'x'.repeat(65), 'a\\b']) {
      expect(isSafeName(n)).toBe(false);
    }
    expect(isSafeName(42)).toBe(false);
  });

  it('accepts only decimal port numbers', () => {
    expect(isSafePortName('1')).toBe(true);
    expect(isSafePortName('0')).toBe(true);
    expect(isSafePortName('01')).toBe(false);
    expect(isSafePortName('1a')).toBe(false);
    expect(isSafePortName('..')).toBe(false);
    expect(isSafePortNumber(2)).toBe(true);
    expect(isSafePortNumber(-1)).toBe(false);
    expect(isSafePortNumber(1.5)).toBe(false);
    expect(isSafePortNumber(Number.NaN)).toBe(false);
  });
});
