import { describe, expect, it } from 'vitest';
import { datagramEndsAnswer } from '../../src/reads/netlink-answer.js';
import { ReplyCollector, decodeMessages, encodeMessage } from '../../src/sources/netlink/index.js';

const msg = (type: number, seq: number, body = new Uint8Array(4)): Uint8Array => encodeMessage({ type, flags: 2, seq, pid: 1 }, [body]);
const concat = (...parts: Uint8Array[]): Uint8Array => new Uint8Array(Buffer.concat(parts));

describe('the end of a netlink answer (one rule: reads/netlink-answer.ts)', () => {
  const cases: [string, Uint8Array, boolean][] = [
    ['data of the request', concat(msg(0x1401, 7), msg(0x1401, 7)), false],
    ['NLMSG_DONE of the request after its data', concat(msg(0x1401, 7), msg(3, 7)), true],
    ['NLMSG_ERROR (an ACK) of the request', msg(2, 7, new Uint8Array(20)), true],
    ['the end of another request (a late answer)', concat(msg(3, 6), msg(0x1401, 7)), false],
  ];
  for (const [what, dg, ends] of cases) {
    it(`${what}: ${ends ? 'ends' : 'does not end'} it, in the datagram and in the collector alike`, () => {
      expect(datagramEndsAnswer(dg, 7)).toBe(ends);
      const c = new ReplyCollector(7);
      c.feed(decodeMessages(dg));
      expect(c.done).toBe(ends);
    });
  }

  it('stops at a header whose length is below a header', () => {
    const bad = new Uint8Array(msg(3, 7));
    bad.fill(0, 0, 4);
    expect(datagramEndsAnswer(bad, 7)).toBe(false);
  });
});
