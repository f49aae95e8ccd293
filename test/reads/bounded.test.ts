/**
 * The bounded read primitive on its own: every op kind through the native reader threads gives
 * what the direct executor gives; a read that never returns costs one timeout and one thread;
 * the thread cap holds however many files hang; a thread that dies is replaced and blamed on
 * nobody.
 */
import { describe, it, expect, afterEach } from 'vitest';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { BoundedReads, type Job } from '../../src/reads/bounded.js';
import { type Op, OpBatch, isDirectoryMode } from '../../src/reads/ops.js';
import { all, read, readText, runSync, type ReadProgram } from '../../src/reads/program.js';
import { runDirect } from '../../src/reads/direct.js';
import { readErrorText } from '../../src/reads/errors.js';
import { READER_LIBRARY } from '../../src/reads/native.js';
import { parseCounterBytes } from '../../src/reads/counter-bytes.js';
import { mkfifo, threadsInPipeRead } from '../faults/blocking-source.js';

const TIMEOUT = 150;
let readers: BoundedReads[] = [];
let fifos: { fd: number; file: string }[] = [];
let dirs: string[] = [];

afterEach(() => {
  // Let every abandoned read return so its thread can go.
  for (const f of fifos) feed(f.file, '1\n');
  for (const r of readers) r.close();
  for (const f of fifos) fs.closeSync(f.fd);
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  readers = [];
  fifos = [];
  dirs = [];
});

function reader(opts: Partial<ConstructorParameters<typeof BoundedReads>[0]> = {}): BoundedReads {
  const r = new BoundedReads({ readTimeoutMs: TIMEOUT, ...opts });
  readers.push(r);
  if (process.env.CI && r.mode !== 'native') throw new Error(`native reader unavailable in CI: ${r.unavailable}`);
  return r;
}

function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'mfe-reads-'));
  dirs.push(d);
  return d;
}

/** A FIFO whose read(2) blocks until fed: this process holds both ends (O_RDWR), so no EOF. */
function hungFile(dir: string, name: string): number {
  const file = path.join(dir, name);
  mkfifo(file);
  const fd = fs.openSync(file, fs.constants.O_RDWR);
  fifos.push({ fd, file });
  return fd;
}

function feed(file: string, text: string): void {
  try {
    const fd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK);
    fs.writeSync(fd, text);
    fs.closeSync(fd);
  } catch {
    // nobody reads it any more
  }
}

function* textOf(op: Op): ReadProgram<string | undefined> {
  const r = yield* read([op]);
  return r.ok(0) ? r.text(0) : r.error(0, op.kind);
}

async function waitFor(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

const native = fs.existsSync(READER_LIBRARY) || process.env.CI !== undefined;

describe('ops', () => {
  it.runIf(native)('every op kind reads the same through the reader threads as directly', async () => {
    const d = tmp();
    fs.writeFileSync(path.join(d, 'counter'), '12345678901234567890\n');
    fs.mkdirSync(path.join(d, 'sub'));
    fs.writeFileSync(path.join(d, 'sub', 'a'), 'x');
    fs.symlinkSync('sub/a', path.join(d, 'link'));
    const fd = fs.openSync(path.join(d, 'counter'), 'r');
    try {
      const ops: Op[] = [
        { kind: 'pread', fd, offset: 0, max: 32 },
        { kind: 'pread', fd, offset: 15, max: 32 },
        { kind: 'readFile', path: path.join(d, 'counter'), max: 8 },
        { kind: 'readFile', path: path.join(d, 'missing'), max: 8 },
        { kind: 'readDir', path: d, max: 4096 },
        { kind: 'readDir', path: d, max: 3 },
        { kind: 'readLink', path: path.join(d, 'link') },
        { kind: 'stat', path: path.join(d, 'sub') },
        { kind: 'stat', path: path.join(d, 'nope') },
        { kind: 'pread', fd: 1_000_000, offset: 0, max: 8 },
      ];
      const program = function* (): ReadProgram<unknown[]> {
        const r = yield* read(ops);
        return ops.map((op, i) => ({
          status: r.status(i),
          text: op.kind === 'readDir' ? r.names(i)?.sort() : op.kind === 'stat' ? r.stat(i) && isDirectoryMode(r.stat(i)!.mode) : r.text(i),
          error: r.ok(i) ? undefined : r.error(i, op.kind),
        }));
      };
      const direct = runSync(program());
      const [outcome] = await reader().run([{ group: 'g', program: program() }]);
      expect(outcome).toEqual({ kind: 'done', value: direct });
      expect(direct).toEqual([
        { status: 21, text: '12345678901234567890\n', error: undefined },
        { status: 6, text: '67890\n', error: undefined },
        { status: 8, text: '12345678', error: undefined },
        { status: -2, text: undefined, error: 'ENOENT: readFile' },
        { status: 3, text: ['counter', 'link', 'sub'], error: undefined },
        { status: -105, text: undefined, error: 'ENOBUFS: readDir' },
        { status: 5, text: 'sub/a', error: undefined },
        { status: 0, text: true, error: undefined },
        { status: -2, text: undefined, error: 'ENOENT: stat' },
        { status: -9, text: undefined, error: 'EBADF: pread' },
      ]);
    } finally {
      fs.closeSync(fd);
    }
  });

  it.runIf(native)('preadCounter parses a counter\'s text the same on the reader threads as directly, and as parseCounterBytes does', async () => {
    const d = tmp();
    // What sysfs prints ("%llu\n"), the edges of a u64, and texts that are not counters.
    const texts = ['0\n', '4294967295\n', '4294967296\n', '9007199254740993\n', '18446744073709551615\n', '  42 \n',
      '18446744073709551616\n', '123456789012345678901\n', 'N/A (no PMA)\n', '', '-1\n', '12a\n'];
    const fds = texts.map((t, i) => {
      fs.writeFileSync(path.join(d, `c${i}`), t);
      return fs.openSync(path.join(d, `c${i}`), 'r');
    });
    try {
      const ops: Op[] = [...fds.map((fd): Op => ({ kind: 'preadCounter', fd, max: 32 })), { kind: 'preadCounter', fd: 1_000_000, max: 32 }];
      const program = function* (): ReadProgram<unknown[]> {
        const r = yield* read(ops);
        return ops.map((_, i) => r.ok(i)
          ? { status: r.status(i), value: (BigInt(r.counterHigh(i)) << 32n) | BigInt(r.counterLow(i)) }
          : { status: r.status(i), text: r.bytes(i).toString('utf8') });
      };
      const direct = runSync(program());
      const [outcome] = await reader().run([{ group: 'g', program: program() }]);
      expect(outcome).toEqual({ kind: 'done', value: direct });
      expect(direct).toEqual([
        { status: 2, value: 0n },
        { status: 11, value: 4294967295n },
        { status: 11, value: 4294967296n },
        { status: 17, value: 9007199254740993n },
        { status: 21, value: 18446744073709551615n },
        { status: 6, value: 42n },
        { status: -84, text: '18446744073709551616\n' },
        { status: -84, text: '123456789012345678901\n' },
        { status: -84, text: 'N/A (no PMA)\n' },
        { status: -84, text: '' },
        { status: -84, text: '-1\n' },
        { status: -84, text: '12a\n' },
        { status: -9, text: '' },
      ]);
      // The one parse rule in TypeScript agrees on every text it accepts.
      texts.forEach((t, i) => {
        const v = parseCounterBytes(Buffer.from(t));
        const got = direct[i] as { value?: bigint };
        expect(got.value === undefined ? undefined : got.value).toEqual(v === undefined || BigInt(v) > 2n ** 64n - 1n ? undefined : BigInt(v));
      });
    } finally {
      for (const fd of fds) fs.closeSync(fd);
    }
  });

  it('opens through an op hand the descriptor to the caller', () => {
    const d = tmp();
    fs.writeFileSync(path.join(d, 'f'), 'hello');
    const r = runDirect(new OpBatch([{ kind: 'open', path: path.join(d, 'f'), flags: fs.constants.O_RDONLY }]));
    const fd = r.status(0);
    expect(fd).toBeGreaterThan(2);
    expect(fs.readFileSync(fd, 'utf8')).toBe('hello');
    fs.closeSync(fd);
  });
});

describe.runIf(native)('request encodings', () => {
  it('keeps the steady request encoded while one-off requests come and go between its runs', async () => {
    const d = tmp();
    fs.writeFileSync(path.join(d, 'counter'), '7\n');
    const fd = fs.openSync(path.join(d, 'counter'), 'r');
    try {
      const r = reader();
      // A counter set's kept batch, read every tick.
      const steady = new OpBatch([{ kind: 'pread', fd, offset: 0, max: 32 }]);
      function* tick(): ReadProgram<string | undefined> {
        return (yield steady).text(0);
      }
      const oneOff = (): Job<string | undefined> => ({ group: 'g', program: textOf({ kind: 'readFile', path: path.join(d, 'counter'), max: 8 }) });
      await r.run([{ group: 'g', program: tick() }]);
      await r.run([{ group: 'g', program: tick() }]);
      expect(r.encoded).toBe(2); // the first time its batch is new: not kept; the second, kept
      for (let i = 0; i < 6; i++) expect(await r.run([oneOff()])).toEqual([{ kind: 'done', value: '7\n' }]);
      expect(r.encoded).toBe(8);
      expect(await r.run([{ group: 'g', program: tick() }])).toEqual([{ kind: 'done', value: '7\n' }]);
      expect(r.encoded).toBe(8);
    } finally {
      fs.closeSync(fd);
    }
  });
});

describe('program combinators', () => {
  it('all() runs several programs as one batch per round and answers in program order', () => {
    const d = tmp();
    fs.writeFileSync(path.join(d, 'a'), 'A');
    fs.writeFileSync(path.join(d, 'b'), 'B');
    function* twoRounds(): ReadProgram<string> {
      const names = (yield* read([{ kind: 'readDir', path: d, max: 4096 }])).names(0)!.sort();
      const r = yield* read(names.map((n): Op => ({ kind: 'readFile', path: path.join(d, n), max: 8 })));
      return names.map((_, i) => r.text(i)).join('');
    }
    const rounds: number[] = [];
    const program = all([textOf({ kind: 'readFile', path: path.join(d, 'b'), max: 8 }), twoRounds(), textOf({ kind: 'stat', path: path.join(d, 'nope') })]);
    let step = program.next();
    while (!step.done) {
      rounds.push(step.value.length);
      step = program.next(runDirect(step.value));
    }
    expect(rounds).toEqual([3, 2]);
    expect(step.value).toEqual(['B', 'AB', 'ENOENT: stat']);
  });

  it('readText() reads a file longer than its first read whole, and refuses one over the cap', () => {
    const d = tmp();
    const text = 'x'.repeat(100);
    fs.writeFileSync(path.join(d, 'f'), text);
    expect(runSync(readText(path.join(d, 'f'), 16, 1000))).toEqual({ ok: true, text });
    expect(runSync(readText(path.join(d, 'f'), 200, 1000))).toEqual({ ok: true, text });
    const big = runSync(readText(path.join(d, 'f'), 16, 50));
    expect(big).toEqual({ ok: false, error: { code: 'TOOLARGE', op: 'stat', path: path.join(d, 'f'), detail: `'${path.join(d, 'f')}' is larger than 50 bytes` } });
    expect(!big.ok && readErrorText(big.error)).toBe(`'${path.join(d, 'f')}' is larger than 50 bytes`);
    const none = runSync(readText(path.join(d, 'nope'), 16, 50));
    expect(none).toEqual({ ok: false, error: { code: 'ENOENT', op: 'read', path: path.join(d, 'nope') } });
    expect(!none.ok && readErrorText(none.error)).toBe(`ENOENT: read '${path.join(d, 'nope')}'`);
  });
});

describe.runIf(native)('a read that never returns', () => {
  it('costs one timeout: its group is blocked, the other groups are read, and it is retried once it returns', async () => {
    const d = tmp();
    fs.writeFileSync(path.join(d, 'ok'), '7\n');
    const hung = hungFile(d, 'hung');
    const r = reader();
    const jobs = (): Job<string | undefined>[] => [
      { group: 'a', program: textOf({ kind: 'readFile', path: path.join(d, 'ok'), max: 8 }) },
      { group: 'b', program: textOf({ kind: 'read', fd: hung, max: 8 }) },
      { group: 'c', program: textOf({ kind: 'readFile', path: path.join(d, 'ok'), max: 8 }) },
    ];
    let loop = 0;
    const tick = setInterval(() => loop++, 5);
    const t0 = performance.now();
    const first = await r.run(jobs());
    const took = performance.now() - t0;
    clearInterval(tick);
    expect(first).toEqual([
      { kind: 'done', value: '7\n' },
      { kind: 'blocked', fresh: true, error: { code: 'ETIMEDOUT', op: 'read', detail: `read blocked for more than ${TIMEOUT} ms` } },
      { kind: 'done', value: '7\n' },
    ]);
    expect(first[1]!.kind === 'blocked' && readErrorText(first[1]!.error)).toBe(`ETIMEDOUT: read blocked for more than ${TIMEOUT} ms`);
    expect(took).toBeGreaterThanOrEqual(TIMEOUT);
    expect(took).toBeLessThan(TIMEOUT + 1000);
    expect(loop).toBeGreaterThan(TIMEOUT / 5 / 3); // the event loop kept turning while it waited
    expect(r.timeouts).toBe(1);
    expect(r.blockedThreads).toBe(1);
    expect(r.blockedGroups()).toEqual(['b']);

    const t1 = performance.now();
    const second = await r.run(jobs());
    expect(performance.now() - t1).toBeLessThan(TIMEOUT);
    expect(second[1]).toMatchObject({ kind: 'blocked', fresh: false });
    expect(r.threadStats()).toMatchObject({ blocked: 1, started: 2 });

    feed(fifos[0]!.file, '41\n'); // the abandoned read returns; its thread goes
    await waitFor(() => r.blockedThreads === 0);
    feed(fifos[0]!.file, '42\n');
    const third = await r.run(jobs());
    expect(third[1]).toEqual({ kind: 'done', value: '42\n' });
    expect(r.blockedGroups()).toEqual([]);
  });

  it('holds the thread cap with eight hung files: at most four threads ever block, then reads pause', async () => {
    const d = tmp();
    const before = threadsInPipeRead();
    const hung = Array.from({ length: 8 }, (_, i) => hungFile(d, `hung${i}`));
    fs.writeFileSync(path.join(d, 'ok'), '1\n');
    const r = reader({ maxThreads: 4 });
    let most = 0;
    const outcomes: string[][] = [];
    for (let run = 0; run < 6; run++) {
      const jobs: Job<string | undefined>[] = [
        ...hung.map((fd, i) => ({ group: `port${i}`, program: textOf({ kind: 'read', fd, max: 8 }) })),
        { group: 'healthy', program: textOf({ kind: 'readFile', path: path.join(d, 'ok'), max: 8 }) },
      ];
      outcomes.push((await r.run(jobs)).map((o) => o.kind));
      most = Math.max(most, threadsInPipeRead() - before);
    }
    expect(most).toBe(4);
    expect(r.blockedThreads).toBe(4);
    expect(r.threadStats()!.started).toBe(4);
    expect(r.timeouts).toBe(4);
    // Once four threads are stuck nothing more is read, the healthy group included, until one returns.
    expect(outcomes.at(-1)).toEqual([...Array(4).fill('blocked'), ...Array(4).fill('paused'), 'paused']);
    feed(fifos[0]!.file, '5\n');
    await waitFor(() => r.blockedThreads === 3);
    const after = await r.run([{ group: 'healthy', program: textOf({ kind: 'readFile', path: path.join(d, 'ok'), max: 8 }) }]);
    expect(after).toEqual([{ kind: 'done', value: '1\n' }]);
  });
});

describe.runIf(native)('a reader thread that dies', () => {
  it('between runs: the next run reads everything, blames nobody, and a new thread takes over', async () => {
    const d = tmp();
    fs.writeFileSync(path.join(d, 'ok'), '3\n');
    const lost: boolean[] = [];
    const blocked: string[] = [];
    const r = reader({ onThreadLost: (i) => lost.push(i.running), onBlocked: (g) => blocked.push(g) });
    const job = (): Job<string | undefined>[] => [{ group: 'p', program: textOf({ kind: 'readFile', path: path.join(d, 'ok'), max: 8 }) }];
    expect(await r.run(job())).toEqual([{ kind: 'done', value: '3\n' }]);
    expect(r.killIdleThreadForTest()).toBe(true);
    await waitFor(() => r.threadsLost === 1);
    expect(await r.run(job())).toEqual([{ kind: 'done', value: '3\n' }]);
    expect(lost).toEqual([false]);
    expect(blocked).toEqual([]);
    expect(r.timeouts).toBe(0);
    expect(r.threadStats()).toMatchObject({ started: 2, lost: 1, blocked: 0 });
  });
});

describe.runIf(native)('closing the reader', () => {
  // A reader closed while a batch ran collected it as crashed from a library that may already have
  // freed it (node segfaulted on SIGINT in the soft-RoCE guest); nothing reaches the library after close.
  it('ends a batch still on a thread paused, without collecting it', async () => {
    const d = tmp();
    const hung = hungFile(d, 'hung');
    const r = reader({ readTimeoutMs: 60_000 });
    const running = r.run([{ group: 'h', program: textOf({ kind: 'read', fd: hung, max: 8 }) }]);
    await waitFor(() => r.threadStats().live === 1 && r.threadStats().idle === 0);
    r.close();
    expect(await running).toEqual([{ kind: 'paused', error: { code: 'EAGAIN', op: 'submit', detail: 'the reader is closed' } }]);
    expect(r.threadsLost).toBe(0);
  });

  it('answers for its threads without asking the library once closed', async () => {
    const d = tmp();
    fs.writeFileSync(path.join(d, 'ok'), '5\n');
    const r = reader({ maxThreads: 3 });
    expect(await r.run([{ group: 'p', program: textOf({ kind: 'readFile', path: path.join(d, 'ok'), max: 8 }) }])).toEqual([{ kind: 'done', value: '5\n' }]);
    r.close();
    await new Promise((resolve) => setTimeout(resolve, 50)); // the idle thread stops; the library frees the reader
    expect(r.threadStats()).toEqual({ live: 0, idle: 0, blocked: 0, started: 0, lost: 0, maxThreads: 0 });
    expect(r.killIdleThreadForTest()).toBe(false);
    expect(await r.run([{ group: 'p', program: textOf({ kind: 'readFile', path: path.join(d, 'ok'), max: 8 }) }])).toEqual([
      { kind: 'paused', error: { code: 'EAGAIN', op: 'submit', detail: 'the reader is closed' } },
    ]);
  });
});

describe('without the native library', () => {
  it('runs the same programs directly and says why', async () => {
    const d = tmp();
    fs.writeFileSync(path.join(d, 'ok'), '9\n');
    const r = new BoundedReads({ readTimeoutMs: TIMEOUT, library: path.join(d, 'libmissing.so') });
    readers.push(r);
    expect(r.mode).toBe('direct');
    expect(r.unavailable).toMatch(/libmissing\.so/);
    expect(await r.run([{ group: 'p', program: textOf({ kind: 'readFile', path: path.join(d, 'ok'), max: 8 }) }])).toEqual([{ kind: 'done', value: '9\n' }]);
  });
});

describe('Results decoding', () => {
  it('stat gives what fstatat gives (dev, ino, mode, size as numbers), sameBytes compares without decoding', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'results-'));
    dirs.push(dir);
    const file = path.join(dir, 'state');
    fs.writeFileSync(file, '4: ACTIVE\n');
    const fd = fs.openSync(file, 'r');
    try {
      const r = runDirect(new OpBatch([{ kind: 'stat', path: file }, { kind: 'pread', fd, offset: 0, max: 64 }]));
      const st = fs.statSync(file, { bigint: true });
      expect(r.stat(0)).toEqual({ dev: Number(st.dev), ino: Number(st.ino), mode: Number(st.mode), size: 10 });
      expect(r.sameBytes(1, Buffer.from('4: ACTIVE\n'))).toBe(true);
      expect(r.sameBytes(1, Buffer.from('1: DOWN\n'))).toBe(false);
      expect(r.sameBytes(1, Buffer.from('4: ACTIVE'))).toBe(false);
      expect(r.sameBytes(0, Buffer.alloc(0))).toBe(false); // not a read of bytes this long
    } finally {
      fs.closeSync(fd);
    }
  });
});
