/** DCB netlink: the request the kernel accepted, the captured EOPNOTSUPP, and dcbnl_ieee_fill() answers. */
import { describe, expect, it } from 'vitest';
import { buildIeeeGetRequest, decodeIeeeGetReply } from '../../src/sources/dcb/codec.js';
import { decodeMessages } from '../../src/sources/netlink/codec.js';
import { DcbNetlinkReader } from '../../src/sources/dcb/reader.js';
import { CAPTURED_SEQ, capturedEopnotsupp, dcbReader, ieeeGetAnswer, ieeePfc } from '../health/dcb-replies.js';
import { runSync } from '../../src/reads/program.js';

describe('DCB netlink (RTM_GETDCB, DCB_CMD_IEEE_GET)', () => {
  it('builds byte for byte the request a 6.18 kernel answered', () => {
    const cap = capturedEopnotsupp();
    expect(Buffer.from(buildIeeeGetRequest(CAPTURED_SEQ, cap.ifname)).toString('hex')).toBe(cap.request);
  });

  it('a netdev without DCB (captured virtio_net answer) is unknown, never an error', () => {
    expect(runSync(dcbReader({}).pfcReads('eth0'))).toEqual({ known: false, netdev: 'eth0', reason: 'eth0 has no DCB support (the kernel answered EOPNOTSUPP)' });
  });

  it('decodes pfc_en, pfc_cap, the per-priority PFC counts and DCBX modes', () => {
    const [reply] = ieeeGetAnswer(7, 'ens1f0np0', ieeePfc(8, 0b0000_1000, [0, 0, 0, 310], [0, 0, 0, 52441]), 0x1 | 0x8);
    const r = decodeIeeeGetReply(decodeMessages(reply!)[0]!);
    expect(r.ifname).toBe('ens1f0np0');
    expect(r.pfc).toEqual({ pfcCap: 8, pfcEn: 8, requests: [0n, 0n, 0n, 310n, 0n, 0n, 0n, 0n], indications: [0n, 0n, 0n, 52441n, 0n, 0n, 0n, 0n] });
    expect(r.dcbx).toEqual(['host', 'ieee']);
  });

  it('PFC per priority through the reader', () => {
    const reader = dcbReader({ ens1f0np0: { pfcEn: 0b1000_1000, dcbx: 0x8 } });
    expect(runSync(reader.pfcReads('ens1f0np0'))).toEqual({
      known: true, netdev: 'ens1f0np0', pfcCap: 8, dcbx: ['ieee'], enabled: [false, false, false, true, false, false, false, true],
    });
  });

  it('DCB without an IEEE PFC attribute is unknown', () => {
    const t = { nextSeq: () => 1, request: () => ({ messages: decodeMessages(ieeeGetAnswer(1, 'x0', undefined, undefined)[0]!), raw: [] }), close: () => {} };
    expect(runSync(new DcbNetlinkReader(t).pfcReads('x0'))).toMatchObject({ known: false, reason: 'x0 has DCB but reports no IEEE PFC configuration' });
  });
});
