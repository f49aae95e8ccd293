/**
 * processReads / mappedFlowsReads on fixture /proc trees (fixture.ts mirrors the kernel's
 * formats), with the faults issue #21 names: a /proc/PID that vanishes mid-read (the fixture
 * directory deleted between two reads of a round, and between rounds), an unreadable maps file
 * (EACCES/EPERM answered through the hand-driven direct executor, since root passes the ptrace
 * check; a directory in place of the file for the kernel's own EISDIR), and a pid reused by
 * another process (a different starttime), both between reads and while one is under way.
 */
import { describe, it, expect, afterEach } from 'vitest';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Op } from '../../../src/reads/ops.js';
import { runSync } from '../../../src/reads/program.js';
import { mappedFlowsReads, processExitReads, processReads, reasonOf, sameProcess, type ProcessInfo } from '../../../src/sources/procfs/index.js';
import { ProcFixture, mapsLine } from './fixture.js';
import { pathOf, runDriven } from './drive.js';

const ID = '9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c';
const POD = '0f1e2d3c-4b5a-4968-8776-655443322110';
const FLOW = '5fbec3b1-1b0f-417d-9059-8b94a47197ed';
const FLOW2 = 'c0ffee00-1234-4abc-8def-0123456789ab';
const TX = '/dev/shm/mxl-tx';

let fixtures: ProcFixture[] = [];
afterEach(() => {
  for (const f of fixtures) f.close();
  fixtures = [];
});

function fixture(): ProcFixture {
  const f = ProcFixture.create();
  fixtures.push(f);
  return f;
}

const fabricsMaps = [
  mapsLine(0x55d0c8a00000n, 2, 'r--p', { path: '/usr/bin/mxl-fabrics-demo', inode: 1835027, dev: 'fd:01' }),
  mapsLine(0x7f1c2a000000n, 1, 'rw-s', { path: `${TX}/${FLOW}.mxl-flow/data`, inode: 41 }),
  mapsLine(0x7f1c2a010000n, 4, 'r--s', { path: `${TX}/${FLOW}.mxl-flow/grains/data.0`, inode: 42 }),
  mapsLine(0x7f1c2a020000n, 4, 'r--s', { path: `${TX}/${FLOW}.mxl-flow/grains/data.1`, inode: 43 }),
  mapsLine(0x7ffd7a5c0000n, 33, 'rw-p', { path: '[stack]', inode: 0, dev: '00:00' }),
].join('\n') + '\n';

/** The sender of restrack-facts.md: pid 202, comm `mxl-fabrics-dem`, in a Kubernetes pod. */
function sender(f: ProcFixture, startTicks = 44720n): ProcFixture {
  return f.add({
    pid: 202,
    comm: 'mxl-fabrics-dem',
    cmdline: ['/opt/mxl/bin/mxl-fabrics-demo', '-d', TX, '-f', FLOW, '--node', '10.99.0.2:1312'],
    startTicks,
    cgroup: `0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${POD.replaceAll('-', '_')}.slice/cri-containerd-${ID}.scope\n`,
    maps: fabricsMaps,
  });
}

const SENDER: ProcessInfo = {
  pid: 202,
  comm: 'mxl-fabrics-dem',
  cmdline: ['/opt/mxl/bin/mxl-fabrics-demo', '-d', TX, '-f', FLOW, '--node', '10.99.0.2:1312'],
  startTicks: 44720n,
  container: ID,
  podUid: POD,
};

describe('processReads on a fixture /proc', () => {
  it('reads name, command line, start, container and pod in one round', () => {
    const f = sender(fixture());
    const { value, rounds } = runDriven(processReads(f.root, 202));
    expect(value).toEqual({ ok: true, process: SENDER });
    expect(rounds.map((r) => r.map((op) => path.basename(pathOf(op)!)))).toEqual([['stat', 'status', 'comm', 'cmdline', 'cgroup', 'stat']]);
    expect(runSync(processReads(f.root, 202))).toEqual({ ok: true, process: SENDER });
  });

  it('a comm with spaces and parentheses keeps its start (field 22 counted from the last ")")', () => {
    const f = fixture().add({ pid: 7, comm: 'a) S 1 (b', startTicks: 123456789n, cmdline: ['x'] });
    const r = runSync(processReads(f.root, 7));
    expect(r).toEqual({ ok: true, process: { pid: 7, comm: 'a) S 1 (b', cmdline: ['x'], startTicks: 123456789n, container: null, podUid: null } });
  });

  it('a restrack pid that is a thread is reported as its process (Tgid)', () => {
    const f = sender(fixture());
    f.add({ pid: 203, comm: 'fabrics-worker', startTicks: 44731n, tgid: 202, cmdline: SENDER.cmdline });
    const { value, rounds } = runDriven(processReads(f.root, 203));
    expect(value).toEqual({ ok: true, process: SENDER });
    expect(rounds.map((r) => pathOf(r[0]!))).toEqual([`${f.root}/203/stat`, `${f.root}/202/stat`]);
  });

  it('a command line longer than the first read is read again whole, and the start checked after it', () => {
    const f = fixture();
    const long = Array.from({ length: 600 }, (_, i) => `--argument-${i}`); // ~9 KB
    f.add({ pid: 300, comm: 'long', startTicks: 99n, cmdline: long });
    const { value, rounds } = runDriven(processReads(f.root, 300));
    expect(value).toEqual({ ok: true, process: { pid: 300, comm: 'long', cmdline: long, startTicks: 99n, container: null, podUid: null } });
    expect(rounds.map((r) => r.map((op) => `${path.basename(pathOf(op)!)}:${'max' in op ? op.max : ''}`))).toEqual([
      ['stat:1024', 'status:4096', 'comm:64', 'cmdline:4096', 'cgroup:4096', 'stat:1024'],
      ['cmdline:65536'],
      ['stat:1024'],
    ]);
  });

  it('a command line past its cap is cut there, not an error', () => {
    const f = fixture();
    f.add({ pid: 301, comm: 'huge', startTicks: 1n, cmdline: ['x'.repeat(300 * 1024)] });
    const r = runSync(processReads(f.root, 301));
    expect(r.ok && r.process.cmdline).toEqual(['x'.repeat(256 * 1024)]);
  });

  it('a pid with no /proc entry is gone', () => {
    const f = fixture();
    expect(runSync(processReads(f.root, 4242))).toEqual({ ok: false, reason: 'gone', detail: `ENOENT: read '${f.root}/4242/stat'` });
  });

  it('/proc/PID vanishing between two reads of the round: gone, naming the read that found it missing', () => {
    const f = sender(fixture());
    const { value } = runDriven(processReads(f.root, 202), {
      beforeOp: (op) => {
        if (pathOf(op)?.endsWith('/cmdline')) f.remove(202);
      },
    });
    expect(value).toEqual({ ok: false, reason: 'gone', detail: `ENOENT: read '${f.root}/202/cmdline'` });
  });

  it('/proc/PID vanishing between rounds (while a long command line is read again): gone', () => {
    const f = fixture().add({ pid: 302, comm: 'long', startTicks: 5n, cmdline: ['y'.repeat(8000)] });
    const { value, rounds } = runDriven(processReads(f.root, 302), {
      beforeOp: (_op, round) => {
        if (round === 1) f.remove(302);
      },
    });
    expect(rounds).toHaveLength(2);
    expect(value).toEqual({ ok: false, reason: 'gone', detail: `ENOENT: read '${f.root}/302/cmdline'` });
  });

  it('the pid reused by another process while it is read (its start differs at the closing stat): gone, never a mix', () => {
    const f = sender(fixture());
    let stats = 0;
    const { value } = runDriven(processReads(f.root, 202), {
      beforeOp: (op) => {
        if (pathOf(op)?.endsWith('/stat') && ++stats === 2) f.add({ pid: 202, comm: 'bash', startTicks: 90001n, cmdline: ['bash'] });
      },
    });
    expect(value).toEqual({ ok: false, reason: 'gone', detail: `pid 202 was reused by another process while '${f.root}/202' was read` });
  });

  it('a pid reused between two reads: sameProcess tells them apart, a re-read of the same process matches', () => {
    const f = sender(fixture());
    const first = runSync(processReads(f.root, 202));
    const again = runSync(processReads(f.root, 202));
    f.remove(202);
    f.add({ pid: 202, comm: 'mxl-fabrics-dem', startTicks: 51234n, cmdline: SENDER.cmdline, cgroup: '0::/\n' });
    const reused = runSync(processReads(f.root, 202));
    if (!first.ok || !again.ok || !reused.ok) throw new Error('fixture reads failed');
    expect(reused.process.startTicks).toBe(51234n);
    expect(sameProcess(first.process, again.process)).toBe(true);
    expect(sameProcess(first.process, reused.process)).toBe(false);
    expect(sameProcess(first.process, { pid: 203, startTicks: 44720n })).toBe(false);
  });

  it('a stat without field 22, or a status without Tgid, is an error naming the file', () => {
    const f = sender(fixture());
    f.write(202, 'stat', '202 (mxl-fabrics-dem) S 1 202\n');
    expect(runSync(processReads(f.root, 202))).toEqual({ ok: false, reason: 'error', detail: `no starttime (field 22) in '${f.root}/202/stat'` });
    sender(f);
    f.write(202, 'status', 'Name:\tmxl\n');
    expect(runSync(processReads(f.root, 202))).toEqual({ ok: false, reason: 'error', detail: `no Tgid in '${f.root}/202/status'` });
  });

  it("a file the kernel refuses (EACCES) is 'denied'; a vanished task (ESRCH) beside it wins as 'gone'", () => {
    const f = sender(fixture());
    const eacces = (suffix: string) => (op: Op) => (pathOf(op)?.endsWith(suffix) ? -13 : undefined);
    expect(runDriven(processReads(f.root, 202), { status: eacces('/cgroup') }).value).toEqual({
      ok: false,
      reason: 'denied',
      detail: `EACCES: read '${f.root}/202/cgroup'`,
    });
    const { value } = runDriven(processReads(f.root, 202), {
      status: (op) => (pathOf(op)?.endsWith('/comm') ? -13 : pathOf(op)?.endsWith('/cgroup') ? -3 : undefined),
    });
    expect(value).toEqual({ ok: false, reason: 'gone', detail: `ESRCH: read '${f.root}/202/cgroup'` });
  });
});

describe('mappedFlowsReads on a fixture /proc', () => {
  it('the flows the process maps under the domains', () => {
    const f = sender(fixture());
    expect(runSync(mappedFlowsReads(f.root, 202, [TX]))).toEqual({ ok: true, flows: [{ domain: TX, flowId: FLOW }] });
    expect(runSync(mappedFlowsReads(f.root, 202, ['/dev/shm/mxl']))).toEqual({ ok: true, flows: [] });
  });

  it('maps unreadable for another user (EACCES, EPERM): denied, never an empty list', () => {
    const f = sender(fixture());
    for (const [errno, name] of [
      [-13, 'EACCES'],
      [-1, 'EPERM'],
    ] as const) {
      const { value } = runDriven(mappedFlowsReads(f.root, 202, [TX]), { status: (op) => (pathOf(op)?.endsWith('/maps') ? errno : undefined) });
      expect(value).toEqual({ ok: false, reason: 'denied', detail: `${name}: read '${f.root}/202/maps'` });
    }
  });

  it('maps that cannot be read as a file (a directory in its place: EISDIR): error with the path', () => {
    const f = sender(fixture());
    fs.rmSync(path.join(f.dir(202), 'maps'));
    fs.mkdirSync(path.join(f.dir(202), 'maps'));
    expect(runSync(mappedFlowsReads(f.root, 202, [TX]))).toEqual({ ok: false, reason: 'error', detail: `EISDIR: read '${f.root}/202/maps'` });
  });

  it('a pid that vanished: gone (ENOENT, and ESRCH as the kernel answers a task that exited under an open file)', () => {
    const f = fixture();
    expect(runSync(mappedFlowsReads(f.root, 202, [TX]))).toEqual({ ok: false, reason: 'gone', detail: `ENOENT: read '${f.root}/202/maps'` });
    sender(f);
    const { value } = runDriven(mappedFlowsReads(f.root, 202, [TX]), { status: () => -3 });
    expect(value).toEqual({ ok: false, reason: 'gone', detail: `ESRCH: read '${f.root}/202/maps'` });
  });

  it('maps larger than the first read: read again whole; the pid vanishing between those rounds is gone', () => {
    const f = sender(fixture());
    const lines: string[] = [];
    for (let i = 0; i < 1200; i++) lines.push(mapsLine(0x7f0000000000n + BigInt(i) * 0x1000n, 1, 'r--p', { path: `/usr/lib/x86_64-linux-gnu/libfiller-${i}.so`, inode: 100 + i }));
    lines.push(mapsLine(0x7f1c2a000000n, 1, 'rw-s', { path: `${TX}/${FLOW2}.mxl-flow/grains/data.3`, inode: 7 }));
    f.write(202, 'maps', fabricsMaps + lines.join('\n') + '\n');
    const whole = runDriven(mappedFlowsReads(f.root, 202, [`${TX}/`]));
    expect(whole.rounds.map((r) => r.map((op) => ('max' in op ? op.max : 0)))).toEqual([[65536], [1048576]]);
    expect(whole.value).toEqual({
      ok: true,
      flows: [
        { domain: `${TX}/`, flowId: FLOW },
        { domain: `${TX}/`, flowId: FLOW2 },
      ],
    });
    const vanished = runDriven(mappedFlowsReads(f.root, 202, [TX]), {
      beforeOp: (_op, round) => {
        if (round === 1) f.remove(202);
      },
    });
    expect(vanished.value).toEqual({ ok: false, reason: 'gone', detail: `ENOENT: read '${f.root}/202/maps'` });
  });

  it('an empty maps (a zombie: its memory is gone): no flows', () => {
    const f = sender(fixture());
    f.write(202, 'maps', '');
    expect(runSync(mappedFlowsReads(f.root, 202, [TX]))).toEqual({ ok: true, flows: [] });
  });
});

describe('processExitReads: has a process found before exited? (issue 32)', () => {
  it('running: the same pid with the same start, one read of its stat', () => {
    const f = sender(fixture());
    const { value, rounds } = runDriven(processExitReads(f.root, SENDER));
    expect(value).toEqual({ ok: true, exited: false });
    expect(rounds.map((r) => r.map((op) => pathOf(op)))).toEqual([[`${f.root}/202/stat`]]);
  });

  it('exited: no /proc/PID (ENOENT), or ESRCH as the kernel answers a task that exited under an open file', () => {
    const f = fixture();
    expect(runSync(processExitReads(f.root, SENDER))).toEqual({ ok: true, exited: true, detail: `ENOENT: read '${f.root}/202/stat'` });
    sender(f);
    expect(runDriven(processExitReads(f.root, SENDER), { status: () => -3 }).value).toEqual({ ok: true, exited: true, detail: `ESRCH: read '${f.root}/202/stat'` });
  });

  it('exited: the pid is another process now (another start), whatever its name', () => {
    const f = sender(fixture(), 51234n);
    expect(runSync(processExitReads(f.root, SENDER))).toEqual({ ok: true, exited: true, detail: 'pid 202 is another process now (started at 51234, not 44720)' });
  });

  it('exited: a zombie (state Z, its one thread gone); a leader that ended while its threads run is running', () => {
    const f = fixture();
    f.add({ pid: 202, comm: 'mxl-fabrics-dem', startTicks: 44720n, state: 'Z' });
    expect(runSync(processExitReads(f.root, SENDER))).toEqual({ ok: true, exited: true, detail: 'pid 202 exited (state Z: not reaped yet)' });
    f.add({ pid: 202, comm: 'mxl-fabrics-dem', startTicks: 44720n, state: 'Z', threads: 3 });
    expect(runSync(processExitReads(f.root, SENDER))).toEqual({ ok: true, exited: false });
  });

  it("a stat the kernel refuses (EACCES, EPERM) is 'denied', never an exit; a stat that does not parse is an error", () => {
    const f = sender(fixture());
    for (const [errno, name] of [[-13, 'EACCES'], [-1, 'EPERM']] as const) {
      expect(runDriven(processExitReads(f.root, SENDER), { status: () => errno }).value).toEqual({ ok: false, reason: 'denied', detail: `${name}: read '${f.root}/202/stat'` });
    }
    f.write(202, 'stat', '202 (mxl-fabrics-dem) S 1 202\n');
    expect(runSync(processExitReads(f.root, SENDER))).toEqual({ ok: false, reason: 'error', detail: `no state, num_threads or starttime in '${f.root}/202/stat'` });
  });
});

describe('reasonOf', () => {
  it('ENOENT/ESRCH gone, EACCES/EPERM denied, the rest error', () => {
    expect([-2, -3, -13, -1, -5, -21, -125].map(reasonOf)).toEqual(['gone', 'gone', 'denied', 'denied', 'error', 'error', 'error']);
  });
});
