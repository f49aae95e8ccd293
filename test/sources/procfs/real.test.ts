/**
 * The programs on this machine's own /proc, compared with what Node knows of the same
 * processes: this test process (its pid, its title, its threads), a child whose name holds
 * spaces and parentheses (its argv exactly, its start between two reads of /proc/uptime, gone
 * once reaped), files this process maps with mmap(2) (the kernel's maps text, ' (deleted)'
 * included), another user's maps (a child as uid 65534: the kernel's own EACCES), and the
 * same answers through the bounded reader's threads.
 */
import { describe, it, expect, afterEach, beforeAll, afterAll } from 'vitest';
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';
import { runSync } from '../../../src/reads/program.js';
import { BoundedReads } from '../../../src/reads/bounded.js';
import { READER_LIBRARY } from '../../../src/reads/native.js';
import { loadKoffi } from '../../../src/ffi/libc.js';
import { mappedFlowsReads, processReads, sameProcess, type ProcessInfo } from '../../../src/sources/procfs/index.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
const FLOW_A = '7b0c6f4e-9d2a-4e51-8c3b-2a1f0e9d8c7b';
const FLOW_B = 'e4d3c2b1-a0f9-4e8d-9c7b-6a5f4e3d2c1b';

let dirs: string[] = [];
let children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  children = [];
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  dirs = [];
});

function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'mfe-procfs-real-'));
  dirs.push(d);
  return d;
}

function self(): ProcessInfo {
  const r = runSync(processReads('/proc', process.pid));
  if (!r.ok) throw new Error(`reading this process: ${r.reason} ${r.detail}`);
  return r.process;
}

/** Seconds since boot, to the centisecond (/proc/uptime, fs/proc/uptime.c: CLOCK_BOOTTIME, as starttime). */
const uptime = (): number => Number(fs.readFileSync('/proc/uptime', 'utf8').split(' ')[0]);

describe('this process', () => {
  it("pid, name and command line as Node sees them (vitest retitles its workers: the title is the name and the command line)", () => {
    const p = self();
    expect(p.pid).toBe(process.pid);
    // libuv's process.title setter writes the comm (prctl PR_SET_NAME, 15 bytes) and the argument area.
    expect(p.comm).toBe(Buffer.from(process.title).subarray(0, 15).toString());
    expect(p.cmdline).toEqual([process.title]);
  });

  it('its start, in clock ticks after boot, is when Node says it started', () => {
    const startedAt = uptime() - process.uptime(); // process.uptime() counts from Node's start, just after exec
    const p = self();
    expect(Math.abs(Number(p.startTicks) / CLK_TCK - startedAt)).toBeLessThan(1);
    expect(sameProcess(p, self())).toBe(true);
  });

  it('a thread of this process (as restrack may record it) is read as this process', () => {
    const tids = fs.readdirSync('/proc/self/task').map(Number).filter((t) => t !== process.pid);
    expect(tids.length).toBeGreaterThan(0); // libuv and V8 threads
    const main = self();
    for (const tid of tids.slice(0, 3)) expect(runSync(processReads('/proc', tid))).toEqual({ ok: true, process: main });
  });
});

describe('a child process', () => {
  it('a name with spaces and parentheses, its argv exactly, its start between two reads of the clock; gone once it exits', async () => {
    const d = tmp();
    const name = 'mxl) S 1 (fab ric';
    fs.symlinkSync(process.execPath, path.join(d, name)); // comm is the basename execve was given
    const script = 'process.stdout.write(JSON.stringify({ pid: process.pid, argv0: process.argv0, execArgv: process.execArgv, argv: process.argv }) + "\\n"); setInterval(() => {}, 1000);';
    const before = uptime();
    const child = spawn(path.join(d, name), ['-e', script, 'an argument', '', 'ünïcode'], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(child);
    const seen = JSON.parse(await firstLine(child)) as { pid: number; argv0: string; execArgv: string[]; argv: string[] };
    const after = uptime();
    const r = runSync(processReads('/proc', child.pid!));
    if (!r.ok) throw new Error(`${r.reason} ${r.detail}`);
    expect(r.process).toEqual({
      pid: seen.pid,
      comm: name.slice(0, 15),
      cmdline: [seen.argv0, ...seen.execArgv, ...seen.argv.slice(1)],
      startTicks: r.process.startTicks,
      container: null,
      podUid: null,
    });
    expect(r.process.cmdline).toEqual([path.join(d, name), '-e', script, 'an argument', '', 'ünïcode']);
    expect(Number(r.process.startTicks)).toBeGreaterThanOrEqual(Math.floor(before * CLK_TCK));
    expect(Number(r.process.startTicks)).toBeLessThanOrEqual(Math.ceil(after * CLK_TCK));
    child.kill('SIGKILL');
    await new Promise((done) => child.once('exit', done)); // reaped: /proc/PID is gone
    expect(runSync(processReads('/proc', child.pid!))).toEqual({ ok: false, reason: 'gone', detail: `ENOENT: read '/proc/${child.pid}/stat'` });
    expect(runSync(mappedFlowsReads('/proc', child.pid!, ['/dev/shm/mxl']))).toEqual({
      ok: false,
      reason: 'gone',
      detail: `ENOENT: read '/proc/${child.pid}/maps'`,
    });
  });
});

async function firstLine(child: ChildProcess): Promise<string> {
  let text = '';
  for await (const chunk of child.stdout!) {
    text += String(chunk);
    const nl = text.indexOf('\n');
    if (nl >= 0) return text.slice(0, nl);
  }
  throw new Error(`child exited before a line: ${text}`);
}

/** mmap(2) through koffi: the kernel then lists the file in this process's maps. */
class Mapper {
  private readonly libc = loadKoffi().load('libc.so.6');
  private readonly mmap = this.libc.func('void *mmap(void *addr, size_t length, int prot, int flags, int fd, long offset)');
  private readonly munmap = this.libc.func('int munmap(void *addr, size_t length)');
  private readonly maps: bigint[] = [];

  map(file: string): void {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, Buffer.alloc(4096));
    const fd = fs.openSync(file, 'r');
    try {
      const at = this.mmap(null, 4096, 1 /* PROT_READ */, 1 /* MAP_SHARED */, fd, 0) as bigint;
      if (at === -1n || at === 0n) throw new Error(`mmap ${file} failed`);
      this.maps.push(at);
    } finally {
      fs.closeSync(fd); // the mapping keeps the file, as MXL's does
    }
  }

  unmapAll(): void {
    for (const at of this.maps.splice(0)) this.munmap(at, 4096);
  }
}

describe("this process's own mappings", () => {
  let mapper: Mapper;
  beforeAll(() => {
    mapper = new Mapper();
  });
  afterAll(() => mapper.unmapAll());

  it('the flows it maps under each domain, once each; a sibling domain sharing the prefix, a domain with spaces, an unlinked file', () => {
    const root = tmp();
    const mxl = path.join(root, 'mxl');
    const tx = path.join(root, 'mxl-tx');
    const spaced = path.join(root, 'studio (1) domain');
    mapper.map(`${mxl}/${FLOW_A}.mxl-flow/data`);
    mapper.map(`${mxl}/${FLOW_A}.mxl-flow/grains/data.0`);
    mapper.map(`${mxl}/${FLOW_A}.mxl-flow/grains/data.1`);
    mapper.map(`${tx}/${FLOW_B}.mxl-flow/data`);
    mapper.map(`${spaced}/${FLOW_B}.mxl-flow/grains/data.7`);
    mapper.map(`${mxl}/${FLOW_B}.mxl-flow/grains/data.0`);
    fs.rmSync(`${mxl}/${FLOW_B}.mxl-flow`, { recursive: true }); // still mapped: maps says ' (deleted)'
    const maps = fs.readFileSync(`/proc/${process.pid}/maps`, 'utf8');
    expect(maps).toContain(`${mxl}/${FLOW_B}.mxl-flow/grains/data.0 (deleted)`);

    expect(runSync(mappedFlowsReads('/proc', process.pid, [`${mxl}/`]))).toEqual({ ok: true, flows: [{ domain: `${mxl}/`, flowId: FLOW_A }] });
    const all = runSync(mappedFlowsReads('/proc', process.pid, [mxl, tx, spaced]));
    expect(all.ok && [...all.flows].sort((a, b) => a.domain.localeCompare(b.domain))).toEqual([
      { domain: mxl, flowId: FLOW_A },
      { domain: tx, flowId: FLOW_B },
      { domain: spaced, flowId: FLOW_B },
    ]);
    expect(runSync(mappedFlowsReads('/proc', process.pid, [path.join(root, 'mx')]))).toEqual({ ok: true, flows: [] });
    mapper.unmapAll();
    expect(runSync(mappedFlowsReads('/proc', process.pid, [mxl, tx, spaced]))).toEqual({ ok: true, flows: [] });
  });
});

const root = process.getuid?.() === 0;

describe('another user', () => {
  it.runIf(root)("reads this root process's name and start but not its maps: 'denied', from the kernel's ptrace check", () => {
    const d = tmp();
    fs.chmodSync(d, 0o755);
    const bundle = path.join(d, 'as-user.mjs');
    buildSync({ entryPoints: [path.join(HERE, 'as-user.ts')], bundle: true, platform: 'node', format: 'esm', outfile: bundle, logLevel: 'error' });
    const mxl = path.join(d, 'mxl');
    const mapper = new Mapper();
    mapper.map(`${mxl}/${FLOW_A}.mxl-flow/data`);
    try {
      const run = spawnSync(process.execPath, [bundle, '/proc', mxl, String(process.pid), 'self'], { uid: 65534, gid: 65534, encoding: 'utf8' });
      expect(run.stderr).toBe('');
      const got = JSON.parse(run.stdout) as { uid: number; self: number; out: { pid: number; process: unknown; maps: unknown }[] };
      expect(got.uid).toBe(65534);
      const me = self();
      expect(got.out[0]).toEqual({
        pid: process.pid,
        process: { ok: true, process: { ...me, startTicks: String(me.startTicks), cmdline: me.cmdline } },
        maps: { ok: false, reason: 'denied', detail: `EACCES: read '/proc/${process.pid}/maps'` },
      });
      // its own maps it may read (same uid)
      expect(got.out[1]).toMatchObject({ pid: got.self, process: { ok: true, process: { pid: got.self } }, maps: { ok: true, flows: [] } });
      expect(runSync(mappedFlowsReads('/proc', process.pid, [mxl]))).toEqual({ ok: true, flows: [{ domain: mxl, flowId: FLOW_A }] });
    } finally {
      mapper.unmapAll();
    }
  });
});

const native = fs.existsSync(READER_LIBRARY) || process.env.CI !== undefined;

describe('on the bounded reader', () => {
  it.runIf(native)('the same answers through the reader threads as with runSync', async () => {
    const reader = new BoundedReads({ readTimeoutMs: 2000 });
    try {
      if (process.env.CI && reader.mode !== 'native') throw new Error(`native reader unavailable in CI: ${reader.unavailable}`);
      const domain = tmp();
      const mapper = new Mapper();
      mapper.map(`${domain}/${FLOW_B}.mxl-flow/grains/data.3`);
      try {
        const outcomes = await reader.run([
          { group: 'process', program: processReads('/proc', process.pid) },
          { group: 'process', program: mappedFlowsReads('/proc', process.pid, [domain]) },
          { group: 'process', program: processReads('/proc', 999_999_999) },
        ]);
        expect(outcomes).toEqual([
          { kind: 'done', value: { ok: true, process: self() } },
          { kind: 'done', value: { ok: true, flows: [{ domain, flowId: FLOW_B }] } },
          { kind: 'done', value: { ok: false, reason: 'gone', detail: "ENOENT: read '/proc/999999999/stat'" } },
        ]);
      } finally {
        mapper.unmapAll();
      }
    } finally {
      reader.close();
    }
  });
});
