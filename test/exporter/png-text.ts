/**
 * A PNG's tEXt chunks (PNG spec, 11.3.4.3: keyword, NUL, Latin-1 text), read and added, so that
 * a screenshot can carry what it shows. Chunks are length (4 bytes, big-endian), type, data, and
 * the CRC-32 of type and data.
 */
import { crc32 } from 'node:zlib';

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

function chunks(png: Buffer): { type: string; data: Buffer; end: number }[] {
  if (!png.subarray(0, 8).equals(SIGNATURE)) throw new Error('not a PNG');
  const out: { type: string; data: Buffer; end: number }[] = [];
  for (let at = 8; at < png.length;) {
    const length = png.readUInt32BE(at);
    const type = png.toString('latin1', at + 4, at + 8);
    const end = at + 12 + length;
    out.push({ type, data: png.subarray(at + 8, at + 8 + length), end });
    at = end;
  }
  return out;
}

/** The text of the tEXt chunk `keyword`, if the PNG has one. */
export function pngText(png: Buffer, keyword: string): string | undefined {
  for (const c of chunks(png)) {
    if (c.type !== 'tEXt') continue;
    const nul = c.data.indexOf(0);
    if (c.data.toString('latin1', 0, nul) === keyword) return c.data.toString('latin1', nul + 1);
  }
  return undefined;
}

/** The PNG with a tEXt chunk `keyword: text` right after its header (IHDR). */
export function withPngText(png: Buffer, keyword: string, text: string): Buffer {
  const ihdr = chunks(png)[0]!;
  const body = Buffer.concat([Buffer.from('tEXt', 'latin1'), Buffer.from(`${keyword}\0${text}`, 'latin1')]);
  const chunk = Buffer.alloc(body.length + 8);
  chunk.writeUInt32BE(body.length - 4, 0);
  body.copy(chunk, 4);
  chunk.writeUInt32BE(crc32(body), body.length + 4);
  return Buffer.concat([png.subarray(0, ihdr.end), chunk, png.subarray(ihdr.end)]);
}
