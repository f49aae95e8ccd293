/**
 * One gzip stream from pieces compressed apart, so a piece that does not change (the per-flow
 * text of 10,000 flows, 10 MB) is compressed once and not with every tick's small text.
 * Each piece is raw deflate ended with a sync flush (byte-aligned, no final block), the last one
 * finished; a fresh compressor never refers back, so the concatenation is one valid deflate
 * stream (RFC 1951). The gzip header and trailer go around it (RFC 1952): the trailer's CRC-32 of
 * the whole is combined from the pieces' CRCs (zlib's crc32_combine(), ported); each piece's CRC
 * is zlib.crc32() (Node 20.15 and later; 0.07 ms per 256 KB) or, before that, the trailer of a
 * stored gzip of the piece (a copy of it: 18 MB of garbage per reload at 10,000 flows). Clients
 * that read only the first member of a multi-member gzip (curl) read this whole.
 */
import { promisify } from 'node:util';
import * as zlib from 'node:zlib';

const { constants, deflateRaw, gzip } = zlib;
const deflateRawAsync = promisify(deflateRaw);
const gzipAsync = promisify(gzip);
const crc32 = (zlib as { crc32?: (data: Uint8Array) => number }).crc32;

/** Compression level 3: ~20x smaller exposition text for a fraction of level 6's CPU. */
const LEVEL = 3;

export interface GzipPiece {
  /** Raw deflate of the piece, in one or more parts, each sync-flushed (the stream's last: finished). */
  readonly deflated: readonly Buffer[];
  /** CRC-32 and length of the piece's text. */
  readonly crc: number;
  readonly length: number;
}

/** A piece compressed on libuv's threadpool; `last` finishes the deflate stream. */
export async function gzipPiece(text: Buffer, last: boolean): Promise<GzipPiece> {
  const deflating = deflateRawAsync(text, { level: LEVEL, finishFlush: last ? constants.Z_FINISH : constants.Z_SYNC_FLUSH });
  const crc = crc32 ? crc32(text) : await storedCrc(text);
  return { deflated: [await deflating], crc, length: text.length };
}

/**
 * Pieces in order as one piece: their CRCs combined once. Combining costs ~0.1 ms per piece
 * (matrix powers, below): a piece kept for many scrapes is joined when it is made, so a
 * scrape combines three pieces, not the ~75 chunks of 10,000 flows' text (5-7 ms a scrape).
 */
export function joinPieces(pieces: readonly GzipPiece[]): GzipPiece {
  let crc = 0;
  let length = 0;
  for (const p of pieces) {
    crc = crc32Combine(crc, p.crc, p.length);
    length += p.length;
  }
  return { deflated: pieces.flatMap((p) => p.deflated), crc, length };
}

/** The CRC-32 from the trailer of a stored (not compressed) gzip of `text`. */
export async function storedCrc(text: Buffer): Promise<number> {
  const whole = await gzipAsync(text, { level: 0 });
  return whole.readUInt32LE(whole.length - 8);
}

// gzip header: magic, deflate, no flags, no mtime, no extra flags, OS 255 (unknown).
const HEADER = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);

/** The gzip stream of the pieces in order (the last one compressed with `last`). */
export function gzipStream(pieces: readonly GzipPiece[]): Buffer[] {
  const whole = joinPieces(pieces);
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(whole.crc >>> 0, 0);
  trailer.writeUInt32LE(whole.length % 2 ** 32, 4);
  return [HEADER, ...whole.deflated, trailer];
}

// zlib crc32.c crc32_combine(): CRC-32 of A followed by B from crc(A), crc(B) and len(B), by
// applying len(B) zero bytes to crc(A) as powers of the CRC's GF(2) operator matrix.
function gf2Times(mat: Uint32Array, vec: number): number {
  let sum = 0;
  for (let i = 0; vec !== 0; i++, vec >>>= 1) if (vec & 1) sum ^= mat[i]!;
  return sum >>> 0;
}

function gf2Square(square: Uint32Array, mat: Uint32Array): void {
  for (let n = 0; n < 32; n++) square[n] = gf2Times(mat, mat[n]!);
}

export function crc32Combine(crc1: number, crc2: number, len2: number): number {
  if (len2 <= 0) return crc1 >>> 0;
  const even = new Uint32Array(32);
  const odd = new Uint32Array(32);
  odd[0] = 0xedb88320; // the CRC-32 polynomial: the operator for one zero bit
  for (let n = 1, row = 1; n < 32; n++, row <<= 1) odd[n] = row;
  gf2Square(even, odd); // two zero bits
  gf2Square(odd, even); // four
  let c = crc1 >>> 0;
  let len = len2;
  do {
    gf2Square(even, odd);
    if (len & 1) c = gf2Times(even, c);
    len = Math.floor(len / 2);
    if (len === 0) break;
    gf2Square(odd, even);
    if (len & 1) c = gf2Times(odd, c);
    len = Math.floor(len / 2);
  } while (len !== 0);
  return (c ^ crc2) >>> 0;
}
