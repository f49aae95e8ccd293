// An MXL-like writer process: holds a shared flock on a flow's `data` (as MXL writers do) and
// commits grains on command. stdin lines: "advance N TAI_NS" -> headIndex += N, lastWriteTime =
// TAI_NS; "exit". Answers "ready" once locked and "ok HEAD" after each commit.
import { createRequire } from 'node:module';
import { openSync, readSync, writeSync } from 'node:fs';
import { createInterface } from 'node:readline';

const koffi = createRequire(import.meta.url)('koffi');
const flock = koffi.load('libc.so.6').func('int flock(int fd, int op)');
const LOCK_SH = 1;
const fd = openSync(process.argv[2], 'r+');
if (flock(fd, LOCK_SH) !== 0) throw new Error('flock(LOCK_SH) failed');
const buf = Buffer.alloc(16);
readSync(fd, buf, 0, 16, 200);
let head = buf.readBigUInt64LE(0);
process.stdout.write('ready\n');
for await (const line of createInterface({ input: process.stdin })) {
  const [cmd, n, tai] = line.trim().split(/\s+/);
  if (cmd === 'exit') break;
  head += BigInt(n);
  buf.writeBigUInt64LE(head, 0);
  buf.writeBigUInt64LE(BigInt(tai), 8);
  writeSync(fd, buf, 0, 16, 200);
  process.stdout.write(`ok ${head}\n`);
}
process.exit(0);
