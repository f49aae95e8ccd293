// An MXL-like writer process: holds a shared flock on a flow's `data` (as MXL writers do) and
// commits grains.
//
//   node writer.mjs DATA_FILE
//     driven on stdin (unit tests): "advance N TAI_NS" -> headIndex += N, lastWriteTime = TAI_NS;
//     "exit". Answers "ready" once locked and "ok HEAD" after each commit.
//   node writer.mjs --paced DOMAIN FLOW_JSON [PTIME_MS]
//     creates the flow in DOMAIN the way MXL does (mxl-domain.mjs), then commits on its own at the
//     flow's rate, every 100 ms the grains due (headIndex, lastWriteTime in TAI) for video and
//     data, the batches of PTIME_MS (default 10) due for audio (headIndex only: MXL's continuous
//     writer never stamps lastWriteTime). On SIGTERM/SIGINT it deletes its flow and exits, as MXL's writers do
//     on a clean exit (Instance::releaseWriter). Prints "ready DIR" once the flow is in place.
import { createRequire } from 'node:module';
import { openSync, readFileSync, readSync, rmSync, writeSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { addFlow } from './mxl-domain.mjs';

const koffi = createRequire(import.meta.url)('koffi');
const libc = koffi.load('libc.so.6');
const flock = libc.func('int flock(int fd, int op)');
const LOCK_SH = 1;

function lock(dataFile) {
  const fd = openSync(dataFile, 'r+');
  if (flock(fd, LOCK_SH) !== 0) throw new Error('flock(LOCK_SH) failed');
  return fd;
}

function commitAt(fd, head, lastWriteTime) {
  const buf = Buffer.alloc(lastWriteTime === undefined ? 8 : 16);
  buf.writeBigUInt64LE(head, 0);
  if (lastWriteTime !== undefined) buf.writeBigUInt64LE(lastWriteTime, 8);
  writeSync(fd, buf, 0, buf.length, 200);
}

async function driven(dataFile) {
  const fd = lock(dataFile);
  const buf = Buffer.alloc(8);
  readSync(fd, buf, 0, 8, 200);
  let head = buf.readBigUInt64LE(0);
  process.stdout.write('ready\n');
  for await (const line of createInterface({ input: process.stdin })) {
    const [cmd, n, tai] = line.trim().split(/\s+/);
    if (cmd === 'exit') break;
    head += BigInt(n);
    commitAt(fd, head, BigInt(tai));
    process.stdout.write(`ok ${head}\n`);
  }
  process.exit(0);
}

async function paced(domain, flowFile, ptimeMs) {
  // CLOCK_TAI as MXL stamps it; the built exporter has the binding (npm run build first).
  const { loadPosix } = await import('../../dist/ffi/posix.js');
  const tai = () => loadPosix().taiNowNs();
  const text = readFileSync(flowFile, 'utf8');
  const def = JSON.parse(text);
  const format = { 'urn:x-nmos:format:video': 1, 'urn:x-nmos:format:audio': 2, 'urn:x-nmos:format:data': 3 }[def.format];
  if (!format) throw new Error(`${flowFile}: format ${def.format} is not video, audio or data`);
  const audio = format === 2;
  const r = audio ? def.sample_rate : def.grain_rate;
  const rate = [BigInt(r.numerator), BigInt(r.denominator ?? 1)];
  const dir = addFlow(domain, text, { id: def.id, format, rate, grainCount: 3, channelCount: def.channel_count ?? 1, headIndex: 0n, lastWriteTime: tai() });
  const fd = lock(`${dir}/data`);
  // Commit units: a grain (video, data) or a batch of ptime's samples (audio).
  const perUnitNs = audio ? BigInt(ptimeMs) * 1_000_000n : (rate[1] * 1_000_000_000n) / rate[0];
  const samplesPerBatch = audio ? (rate[0] * BigInt(ptimeMs)) / (1000n * rate[1]) : 1n;
  const t0 = process.hrtime.bigint();
  let units = 0n;
  const timer = setInterval(() => {
    const due = (process.hrtime.bigint() - t0) / perUnitNs;
    if (due === units) return;
    units = due;
    commitAt(fd, units * samplesPerBatch, audio ? undefined : tai());
  }, 100); // several grains per commit at most: cheap under emulation, and far inside the exporter's stall limit
  const stop = () => {
    clearInterval(timer);
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  process.stdout.write(`ready ${dir}\n`);
}

const args = process.argv.slice(2);
if (args[0] === '--paced') await paced(args[1], args[2], Number(args[3] ?? 10));
else await driven(args[0]);
