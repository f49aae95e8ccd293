/**
 * Fixture /proc trees: a temporary directory with /proc/PID/{stat,status,comm,cmdline,cgroup,maps}
 * written the way the kernel prints them, so the read programs run on them unchanged:
 * - stat: fs/proc/array.c do_task_stat, 52 fields, comm in parentheses (Documentation/
 *   filesystems/proc.rst Table 1-4);
 * - status: fs/proc/array.c proc_pid_status (Name/Umask/State/Tgid/Ngid/Pid/PPid..., Table 1-2);
 * - comm: the task name and '\n' (fs/proc/base.c comm_show);
 * - cmdline: each argument NUL-terminated (fs/proc/base.c get_mm_cmdline);
 * - cgroup: `hierarchy-ID:controllers:path` lines (kernel/cgroup/cgroup.c proc_cgroup_show);
 * - maps: fs/proc/task_mmu.c show_map_vma, the pathname padded to column 73 (seq_pad, width
 *   25 + 6 * sizeof(void *) - 1 on 64-bit) as on this machine's own /proc/self/maps.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export interface FixtureProcess {
  readonly pid: number;
  readonly comm: string;
  readonly cmdline?: readonly string[];
  readonly startTicks: bigint;
  /** The thread group; the pid itself when omitted. */
  readonly tgid?: number;
  readonly cgroup?: string;
  readonly maps?: string;
  /** stat's state letter (field 3): `R` when omitted; `Z` a zombie. */
  readonly state?: string;
  /** stat's num_threads (field 20): 1 when omitted. */
  readonly threads?: number;
}

/**
 * A stat line as do_task_stat prints it: fields after starttime copied from a real
 * /proc/self/stat (this machine's `cat`), so only pid, comm, ppid and starttime are ours.
 */
export function statLine(pid: number, comm: string, startTicks: bigint, ppid = 1, task: { readonly state?: string; readonly threads?: number } = {}): string {
  const before = `${task.state ?? 'R'} ${ppid} ${pid} ${pid} 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 ${task.threads ?? 1} 0`; // fields 3..21
  const after =
    '3133440 414 18446744073709551615 94612721340416 94612721360297 140723645914784 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 ' +
    '94612721376304 94612721377920 94613018226688 140723645917921 140723645917941 140723645917941 140723645919211 0'; // 23..52
  return `${pid} (${comm}) ${before} ${startTicks} ${after}\n`;
}

export function statusText(pid: number, comm: string, tgid = pid): string {
  return `Name:\t${comm}\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t${tgid}\nNgid:\t0\nPid:\t${pid}\nPPid:\t1\nTracerPid:\t0\n`;
}

/** One maps line; `file` undefined for an anonymous mapping (no pathname, no padding). */
export function mapsLine(start: bigint, pages: number, perms: string, file?: { readonly path: string; readonly inode: number; readonly dev?: string }): string {
  const end = start + BigInt(pages * 4096);
  const head = `${start.toString(16)}-${end.toString(16)} ${perms} 00000000 ${file?.dev ?? (file ? '00:1a' : '00:00')} ${file?.inode ?? 0} `;
  return file ? `${head.padEnd(73, ' ')}${file.path}` : head;
}

export const PROC_PID_FILES = ['stat', 'status', 'comm', 'cmdline', 'cgroup', 'maps'] as const;

export class ProcFixture {
  private constructor(readonly root: string) {}

  static create(): ProcFixture {
    return new ProcFixture(fs.mkdtempSync(path.join(os.tmpdir(), 'mfe-procfs-')));
  }

  dir(pid: number): string {
    return path.join(this.root, String(pid));
  }

  /** Writes (or rewrites: a pid reused) /proc/PID. */
  add(p: FixtureProcess): this {
    const d = this.dir(p.pid);
    fs.rmSync(d, { recursive: true, force: true });
    fs.mkdirSync(d);
    fs.writeFileSync(path.join(d, 'stat'), statLine(p.pid, p.comm, p.startTicks, 1, { ...(p.state ? { state: p.state } : {}), ...(p.threads ? { threads: p.threads } : {}) }));
    fs.writeFileSync(path.join(d, 'status'), statusText(p.pid, p.comm, p.tgid));
    fs.writeFileSync(path.join(d, 'comm'), `${p.comm}\n`);
    fs.writeFileSync(path.join(d, 'cmdline'), (p.cmdline ?? []).map((a) => `${a}\0`).join(''));
    fs.writeFileSync(path.join(d, 'cgroup'), p.cgroup ?? '0::/user.slice/user-1000.slice/session-2.scope\n');
    fs.writeFileSync(path.join(d, 'maps'), p.maps ?? '');
    return this;
  }

  /** The process exits: /proc/PID goes. */
  remove(pid: number): void {
    fs.rmSync(this.dir(pid), { recursive: true, force: true });
  }

  write(pid: number, file: (typeof PROC_PID_FILES)[number], text: string): void {
    fs.writeFileSync(path.join(this.dir(pid), file), text);
  }

  close(): void {
    fs.rmSync(this.root, { recursive: true, force: true });
  }
}
