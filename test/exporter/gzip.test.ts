/** Pieces compressed apart make one gzip member: readers that stop after the first member read it all. */
import { describe, it, expect } from 'vitest';
import { gunzipSync, gzipSync, inflateRawSync } from 'node:zlib';
import fc from 'fast-check';
import { crc32Combine, gzipPiece, gzipStream, joinPieces, storedCrc } from '../../src/exporter/gzip.js';

const crcOf = (b: Buffer): number => gzipSync(b).readUInt32LE(gzipSync(b).length - 8);

describe('gzip of pieces', () => {
  it('combines CRC-32s as zlib does', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 300 }), fc.uint8Array({ maxLength: 300 }), (a, b) => {
      const A = Buffer.from(a);
      const B = Buffer.from(b);
      expect(crc32Combine(crcOf(A), crcOf(B), B.length)).toBe(crcOf(Buffer.concat([A, B])));
    }), { numRuns: 300 });
  });

  it('takes a CRC from a stored gzip where zlib has no crc32() (Node before 20.15)', async () => {
    const text = Buffer.from('mxl_fabric_flow_info{flow_id="x"} 1\n'.repeat(1000));
    expect(await storedCrc(text)).toBe(crcOf(text));
  });

  it('is one member with one header and a trailer for the whole text', async () => {
    const texts = [Buffer.from('# HELP a x\n'.repeat(5000)), Buffer.from('b{x="1"} 2\n'.repeat(300)), Buffer.from(''), Buffer.from('c 3\n')];
    const pieces = await Promise.all(texts.map((t, i) => gzipPiece(t, i === texts.length - 1)));
    const stream = Buffer.concat(gzipStream(pieces));
    const whole = Buffer.concat(texts);
    expect(gunzipSync(stream).equals(whole)).toBe(true);
    // One deflate stream between one 10-byte header and one 8-byte trailer: a reader of the first
    // member only (curl --compressed) gets everything.
    expect(inflateRawSync(stream.subarray(10, stream.length - 8)).equals(whole)).toBe(true);
    expect(stream.readUInt32LE(stream.length - 8)).toBe(crcOf(whole));
    expect(stream.readUInt32LE(stream.length - 4)).toBe(whole.length);
    expect(stream.length).toBeLessThan(whole.length / 10);
    // Pieces joined first (as the exporter keeps them) make the same stream.
    const joined = Buffer.concat(gzipStream([joinPieces(pieces.slice(0, 2)), joinPieces(pieces.slice(2))]));
    expect(joined.equals(stream)).toBe(true);
  });
});
