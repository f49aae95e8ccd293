/**
 * Read programs for the process side of a connection (src/reads/README.md): which process a
 * restrack pid is (name, command line, start time, container, pod) and which MXL flows it maps.
 * Each runs with runSync() or on the bounded reader; nothing here holds state between reads.
 */
import { statusName } from '../../reads/ops.js';
import { all, read, type ReadProgram } from '../../reads/program.js';
import { parseCgroup, parseCmdline, parseComm, parseMaps, parseStartTicks, parseTaskState, parseTgid, type MappedFlow } from './parse.js';
import { ERRNO } from '../../ffi/errno.js';

export const DEFAULT_PROC_ROOT = '/proc';

export interface ProcessInfo {
  /** The process (thread group) id: a restrack pid that is a thread is reported as its process. */
  readonly pid: number;
  /** /proc/PID/comm: at most 15 bytes. */
  readonly comm: string;
  readonly cmdline: string[];
  /** /proc/PID/stat field 22: with the pid, tells a process from a later one on the same pid. */
  readonly startTicks: bigint;
  readonly container: string | null;
  readonly podUid: string | null;
}

/** Why a process could not be read: it exited (or its pid was reused), access, or anything else. */
export type ReadFailureReason = 'gone' | 'denied' | 'error';

interface ReadFailure {
  readonly ok: false;
  readonly reason: ReadFailureReason;
  /** The errno and the path (`ENOENT: read '/proc/42/stat'`), or what did not parse. */
  readonly detail: string;
}

export type ProcessRead = { readonly ok: true; readonly process: ProcessInfo } | ReadFailure;
export type MappedFlowsRead = { readonly ok: true; readonly flows: MappedFlow[] } | ReadFailure;

/** Same pid and same start: the same process. A pid reused by a later process starts later. */
export function sameProcess(a: Pick<ProcessInfo, 'pid' | 'startTicks'>, b: Pick<ProcessInfo, 'pid' | 'startTicks'>): boolean {
  return a.pid === b.pid && a.startTicks === b.startTicks;
}

// Errnos (asm-generic/errno-base.h) as read statuses (-errno).
const ENOENT = -ERRNO.ENOENT;
const ESRCH = -ERRNO.ESRCH;
const EPERM = -ERRNO.EPERM;
const EACCES = -ERRNO.EACCES;

/** A failed read's reason: ENOENT/ESRCH is a task that exited, EACCES/EPERM a ptrace check. */
export function reasonOf(status: number): ReadFailureReason {
  if (status === ENOENT || status === ESRCH) return 'gone';
  if (status === EACCES || status === EPERM) return 'denied';
  return 'error';
}

// Room for each file's first read. /proc files report size 0, so a file that fills its room is
// read again with more, up to its cap.
const STAT_ROOM = 1024; // 52 numeric fields and a 15-byte comm
const STATUS_ROOM = 4096;
const COMM_ROOM = 64;
const CMDLINE_ROOM = 4096;
const CGROUP_ROOM = 4096;
const MAPS_ROOM = 64 * 1024;
/** A command line is a label: past this it is cut, not an error. */
const CMDLINE_CAP = 256 * 1024;
const CGROUP_CAP = 256 * 1024;
/** A process mapping more than this is not read (a label is not worth 16 MiB a tick). */
const MAPS_CAP = 16 * 1024 * 1024;
const GROWTH = 16;

type FileRead =
  | { readonly ok: true; readonly bytes: Buffer; readonly full: boolean; readonly rounds: number }
  | { readonly ok: false; readonly status: number; readonly detail: string };

/**
 * A /proc file whole: read with `room` bytes, and again with more while it fills them, up to
 * `cap` (`full` says the last read filled the cap: the text is cut).
 */
function* procFile(path: string, room: number, cap: number): ReadProgram<FileRead> {
  for (let max = Math.min(room, cap), rounds = 1; ; max = Math.min(max * GROWTH, cap), rounds++) {
    const r = yield* read([{ kind: 'readFile', path, max }]);
    const status = r.status(0);
    if (status < 0) return { ok: false, status, detail: `${statusName(status)}: read '${path}'` };
    if (status < max || max >= cap) return { ok: true, bytes: Buffer.from(r.bytes(0)), full: status >= cap, rounds };
  }
}

const failure = (reason: ReadFailureReason, detail: string): ReadFailure => ({ ok: false, reason, detail });

/**
 * The first failed read of `reads` as a failure: a task that exited explains any other error
 * beside it, so 'gone' wins, then 'denied'.
 */
function failureOf(reads: readonly FileRead[]): ReadFailure | undefined {
  let first: ReadFailure | undefined;
  for (const r of reads) {
    if (r.ok) continue;
    const f = failure(reasonOf(r.status), r.detail);
    if (f.reason === 'gone') return f;
    if (first === undefined || (f.reason === 'denied' && first.reason === 'error')) first = f;
  }
  return first;
}

/**
 * Who `pid` is: its name, command line, start, container and pod (/proc/PID/{stat,status,comm,
 * cmdline,cgroup}, world-readable: no capability needed). One round: `stat` is read first and
 * last, so a pid that exits and is reused by another process while it is read is seen (its
 * start differs) and answered 'gone', never as a mix of two processes. A pid that is a thread
 * (restrack records the creating thread, drivers/infiniband/core/restrack.c) is read again as
 * its process (its `Tgid`).
 */
export function processReads(procRoot: string, pid: number): ReadProgram<ProcessRead> {
  return processOf(procRoot, pid, true);
}

function* processOf(procRoot: string, pid: number, followThread: boolean): ReadProgram<ProcessRead> {
  const dir = `${procRoot}/${pid}`;
  const reads = yield* all([
    procFile(`${dir}/stat`, STAT_ROOM, STAT_ROOM * GROWTH),
    procFile(`${dir}/status`, STATUS_ROOM, STATUS_ROOM * GROWTH),
    procFile(`${dir}/comm`, COMM_ROOM, COMM_ROOM),
    procFile(`${dir}/cmdline`, CMDLINE_ROOM, CMDLINE_CAP),
    procFile(`${dir}/cgroup`, CGROUP_ROOM, CGROUP_CAP),
    procFile(`${dir}/stat`, STAT_ROOM, STAT_ROOM * GROWTH),
  ]);
  // A file read again with more room came after the closing stat: read the start once more.
  const again = reads.some((r) => r.ok && r.rounds > 1) ? yield* procFile(`${dir}/stat`, STAT_ROOM, STAT_ROOM * GROWTH) : reads[5]!;
  const [stat, status, comm, cmdline, cgroup] = reads as [FileRead, FileRead, FileRead, FileRead, FileRead];
  const failed = failureOf([stat, status, comm, cmdline, cgroup, again]);
  if (failed) return failed;
  if (!stat.ok || !status.ok || !comm.ok || !cmdline.ok || !cgroup.ok || !again.ok) throw new Error('unreachable: failures returned above');
  const startTicks = parseStartTicks(stat.bytes.toString('utf8'));
  if (startTicks === undefined) return failure('error', `no starttime (field 22) in '${dir}/stat'`);
  if (parseStartTicks(again.bytes.toString('utf8')) !== startTicks) return failure('gone', `pid ${pid} was reused by another process while '${dir}' was read`);
  const tgid = parseTgid(status.bytes.toString('utf8'));
  if (tgid === undefined) return failure('error', `no Tgid in '${dir}/status'`);
  if (tgid !== pid && followThread) return yield* processOf(procRoot, tgid, false);
  const process: ProcessInfo = {
    pid,
    comm: parseComm(comm.bytes.toString('utf8')),
    cmdline: parseCmdline(cmdline.bytes),
    startTicks,
    ...parseCgroup(cgroup.bytes.toString('utf8')),
  };
  return { ok: true, process };
}

/**
 * A process read before, read again: its `stat` alone while it is the same process (same pid,
 * same start: its Tgid, command line and cgroup do not change for its life, nor its name as
 * MXL's processes set it), so that a host's hundreds of processes cost one read each a tick; a
 * pid that is another process now is read in full (processReads).
 */
export function* processAgainReads(procRoot: string, last: ProcessInfo): ReadProgram<ProcessRead> {
  const stat = yield* procFile(`${procRoot}/${last.pid}/stat`, STAT_ROOM, STAT_ROOM * GROWTH);
  if (!stat.ok) return failure(reasonOf(stat.status), stat.detail);
  if (parseStartTicks(stat.bytes.toString('utf8')) === last.startTicks) return { ok: true, process: last };
  return yield* processReads(procRoot, last.pid);
}

/**
 * Whether a process found before (`last`: its pid and start) has exited: `exited` with why, or
 * running. A failed read that is not the process's absence is no answer (`denied`, `error`),
 * never an exit: a process the exporter may not see is not taken for one that is gone.
 */
export type ExitRead =
  | { readonly ok: true; readonly exited: false }
  | { readonly ok: true; readonly exited: true; readonly detail: string }
  | { readonly ok: false; readonly reason: Exclude<ReadFailureReason, 'gone'>; readonly detail: string };

/**
 * Has `last` exited? One read of `/proc/PID/stat` (world-readable), the cheapest that tells: no
 * such pid (ENOENT, ESRCH), or another start time (the pid was reused: the name alone would not
 * tell a restarted `mxl-fabrics-dem` from the one that exited), or a zombie whose threads are all
 * gone (state Z with one thread: exited, not reaped yet; a leader that ended while its other
 * threads run is Z with more, and runs).
 */
export function* processExitReads(procRoot: string, last: Pick<ProcessInfo, 'pid' | 'startTicks'>): ReadProgram<ExitRead> {
  const path = `${procRoot}/${last.pid}/stat`;
  const stat = yield* procFile(path, STAT_ROOM, STAT_ROOM * GROWTH);
  if (!stat.ok) {
    const reason = reasonOf(stat.status);
    return reason === 'gone' ? { ok: true, exited: true, detail: stat.detail } : { ok: false, reason, detail: stat.detail };
  }
  const text = stat.bytes.toString('utf8');
  const start = parseStartTicks(text);
  const task = parseTaskState(text);
  if (start === undefined || task === undefined) return { ok: false, reason: 'error', detail: `no state, num_threads or starttime in '${path}'` };
  if (start !== last.startTicks) return { ok: true, exited: true, detail: `pid ${last.pid} is another process now (started at ${start}, not ${last.startTicks})` };
  if ((task.state === 'Z' || task.state === 'X') && task.threads <= 1) return { ok: true, exited: true, detail: `pid ${last.pid} exited (state ${task.state}: not reaped yet)` };
  return { ok: true, exited: false };
}

/**
 * The MXL flows `pid` maps under each domain path (/proc/PID/maps, parseMaps). Reading another
 * user's maps needs ptrace read access (PTRACE_MODE_READ_FSCREDS: same uid, or CAP_SYS_PTRACE;
 * fs/proc/base.c proc_mem_open): without it the answer is 'denied', never an empty list. A
 * process that exits while it is read answers 'gone', or, once only its zombie is left, no flows.
 */
export function* mappedFlowsReads(procRoot: string, pid: number, domainPaths: readonly string[]): ReadProgram<MappedFlowsRead> {
  const path = `${procRoot}/${pid}/maps`;
  const maps = yield* procFile(path, MAPS_ROOM, MAPS_CAP);
  if (!maps.ok) return failure(reasonOf(maps.status), maps.detail);
  if (maps.full) return failure('error', `'${path}' is larger than ${MAPS_CAP} bytes: not read`);
  return { ok: true, flows: parseMaps(maps.bytes.toString('utf8'), domainPaths) };
}
