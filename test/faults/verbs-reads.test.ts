/**
 * libibverbs queries run on the bounded reader (native/reader/verbs.c): an ibv_query_port that
 * never returns costs one read timeout (mxl_fabric_exporter_read_timeouts_total +1) and its
 * port, never the event loop, and the other ports are read exactly; a device stays open until
 * the query stuck in it returns, even once the daemon has let go of it.
 *
 * libibverbs is a stand-in (native/reader/fake-libibverbs.c, SONAME libibverbs.so.1) chosen by
 * the loader in a child process (verbs-stall-child.ts); its ibv_query_port of mlx5_1/1 waits in
 * read(2) on a FIFO while armed, where a real one would wait in the uverbs ioctl.
 */
import { describe, it, expect } from 'vitest';
import { execFile, execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { defaultReadTimeoutMs } from '../../src/sampler/sampler.js';

const ROOT = path.join(__dirname, '../..');

interface PortSeen { up: number; pps: number | undefined; statUp: number[]; xmit: number }
interface Seen {
  tick: { answered: boolean; ms: number };
  timeouts: number;
  blockedThreads: number;
  bounded: number;
  mlx5_0: PortSeen;
  mlx5_1: PortSeen;
}
interface Steps {
  before: Seen; stalled: Seen; blockedLog: boolean; skipped: Seen; recovered: Seen; stuckAgain: Seen;
  callsAtStop: string[]; calls: string[];
}

describe('an ibv_query_port that never returns', () => {
  it('costs one timeout on the reader: the other port reads exactly, the stuck one is skipped, then read again; its device is closed only after the query returns', async () => {
    execFileSync('make', ['-s', '-C', path.join(ROOT, 'native'), 'reader', 'fake-verbs']);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mfe-verbs-stall-'));
    // Asynchronous, so the test worker keeps answering its runner while the child runs.
    const r = await new Promise<{ error: Error | null; stdout: string; stderr: string }>((resolve) => {
      execFile(path.join(ROOT, 'node_modules/.bin/vite-node'), [path.join(__dirname, 'verbs-stall-child.ts')], {
        env: {
          ...process.env,
          LD_LIBRARY_PATH: path.join(ROOT, 'native/build/fake-verbs'),
          FAKE_IBV_DEVICES: 'mlx5_0:1,mlx5_1:1',
          FAKE_IBV_STALL: 'mlx5_1/1',
          FAKE_IBV_STALL_FIFO: path.join(dir, 'query_port'),
          FAKE_IBV_LOG: path.join(dir, 'calls.log'),
        },
        encoding: 'utf8',
        timeout: 60_000,
        killSignal: 'SIGKILL', // a child whose event loop is stuck cannot act on SIGTERM
      }, (error, stdout, stderr) => resolve({ error, stdout, stderr }));
    });
    fs.rmSync(dir, { recursive: true, force: true });
    expect(r.error?.message ?? '', `the child failed or hung (a query blocked its event loop): ${r.stderr}`).toBe('');
    const s = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as Steps;
    const timeout = defaultReadTimeoutMs(1000);

    const good = (xmit: number): PortSeen => ({ up: 1, pps: 60, statUp: [1], xmit });
    expect(s.before).toMatchObject({ timeouts: 0, blockedThreads: 0, bounded: 1, mlx5_0: good(1060), mlx5_1: good(1060) });

    // The stuck query: one timeout, the scrape answered meanwhile, mlx5_0 exact, mlx5_1 skipped.
    expect(s.stalled.tick.answered).toBe(true);
    expect(s.stalled.tick.ms).toBeGreaterThanOrEqual(timeout);
    expect(s.stalled).toMatchObject({ timeouts: 1, blockedThreads: 1, mlx5_0: good(1120) });
    expect(s.stalled.mlx5_1).toMatchObject({ up: 1, statUp: [0], xmit: 1060 });
    expect(s.blockedLog).toBe(true);

    // Skipped while stuck: no second timeout, no wait; mlx5_0 still exact.
    expect(s.skipped.tick.ms).toBeLessThan(timeout);
    expect(s.skipped).toMatchObject({ timeouts: 1, blockedThreads: 1, mlx5_0: good(1180) });

    // The query returned: mlx5_1 is read again, its rate exact from the two reads since.
    expect(s.recovered).toMatchObject({ timeouts: 1, blockedThreads: 0, mlx5_0: good(1300), mlx5_1: { up: 1, statUp: [1], pps: 60 } });

    // Stopped while stuck again: mlx5_0 closed at stop, mlx5_1 only once its query returned, never used after.
    expect(s.stuckAgain).toMatchObject({ timeouts: 2, blockedThreads: 1 });
    expect(s.callsAtStop).toEqual(['open mlx5_0', 'open mlx5_1', 'stall mlx5_1/1', 'returned mlx5_1/1', 'stall mlx5_1/1', 'close mlx5_0']);
    expect(s.calls).toEqual([...s.callsAtStop, 'returned mlx5_1/1', 'close mlx5_1']);
  }, 90_000);
});

describe('a libibverbs whose device listing never returns', () => {
  it('costs one (longer) read timeout at start: the daemon says why and serves ports from sysfs', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mfe-verbs-list-'));
    const fifo = path.join(dir, 'list');
    execFileSync('mkfifo', [fifo]);
    fs.writeFileSync(`${fifo}.armed`, '');
    const t0 = performance.now();
    // The daemon on the real /sys (so libibverbs is tried), its stuck listing never fed.
    const r = await new Promise<{ error: Error | null; stdout: string; stderr: string }>((resolve) => {
      execFile(path.join(ROOT, 'node_modules/.bin/vite-node'), [path.join(__dirname, 'no-verbs-child.ts')], {
        env: { ...process.env, LD_LIBRARY_PATH: path.join(ROOT, 'native/build/fake-verbs'), FAKE_IBV_STALL: 'list', FAKE_IBV_STALL_FIFO: fifo },
        encoding: 'utf8', timeout: 60_000, killSignal: 'SIGKILL',
      }, (error, stdout, stderr) => resolve({ error, stdout, stderr }));
    });
    const took = performance.now() - t0;
    fs.rmSync(dir, { recursive: true, force: true });
    expect(r.error?.message ?? '', r.stderr).toBe('');
    const out = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { status: number; logs: string; up: string | undefined };
    expect(out.status).toBe(200);
    expect(out.logs).toMatch(/msg="read blocked; skipped until it returns" group="verbs devices" error=ETIMEDOUT timeout_ms=5000/);
    expect(out.logs).toContain('libibverbs unavailable (blocked): listing and opening the devices: ETIMEDOUT');
    expect(out.logs).toContain('ports and attributes from sysfs (/sys/class/infiniband)');
    expect(took).toBeGreaterThanOrEqual(5000);
  }, 90_000);
});

describe('a libibverbs device deleted and added again (issue 32, rxe-deleted)', () => {
  it('is let go of within one tick of its uverbs node going (port_present 0), and found again when it is back (port_present 1), without a restart', async () => {
    execFileSync('make', ['-s', '-C', path.join(ROOT, 'native'), 'reader', 'fake-verbs']);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mfe-verbs-rescan-'));
    const r = await new Promise<{ error: Error | null; stdout: string; stderr: string }>((resolve) => {
      execFile(path.join(ROOT, 'node_modules/.bin/vite-node'), [path.join(__dirname, 'verbs-rescan-child.ts')], {
        env: {
          ...process.env,
          LD_LIBRARY_PATH: path.join(ROOT, 'native/build/fake-verbs'),
          FAKE_IBV_DEVICES_FILE: path.join(dir, 'devices'),
          FAKE_IBV_LOG: path.join(dir, 'calls.log'),
        },
        encoding: 'utf8', timeout: 60_000, killSignal: 'SIGKILL',
      }, (error, stdout, stderr) => resolve({ error, stdout, stderr }));
    });
    fs.rmSync(dir, { recursive: true, force: true });
    expect(r.error?.message ?? '', r.stderr).toBe('');
    type Port = { present: number; pps: number | null };
    type Step = { mlx5_0: Port; mlx5_1: Port; calls: string[]; foundLog?: number; vanishedLog?: number };
    const s = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { before: Step; deleted: Step; added: Step; counting: Step; calls: string[] };
    const counting: Port = { present: 1, pps: 60 };
    const opened = ['open mlx5_0', 'open mlx5_1'];
    expect(s.before).toEqual({ mlx5_0: counting, mlx5_1: counting, calls: opened, foundLog: 1 });

    // The tick that saw mlx5_1's node gone closed its context (rxe's `rdma link delete` can end)
    // and dropped its port: the configured port is absent; mlx5_0 reads on.
    expect(s.deleted).toEqual({
      mlx5_0: counting, mlx5_1: { present: 0, pps: null }, calls: [...opened, 'open mlx5_0', 'close mlx5_0', 'close mlx5_1'], vanishedLog: 1,
    });

    // Back in the next tick, and measured again from the one after.
    expect(s.added).toMatchObject({ mlx5_0: counting, mlx5_1: { present: 1 }, calls: [...s.deleted.calls, ...opened, 'close mlx5_0'], foundLog: 2 });
    expect(s.counting).toMatchObject({ mlx5_0: counting, mlx5_1: counting });
    expect(s.calls).toEqual([...s.added.calls, 'close mlx5_0', 'close mlx5_1']);
  }, 90_000);
});
