/**
 * Pure parsers for the /proc/PID files the process side of the connections source reads. Each
 * takes the file's text as the kernel prints it; the formats are cited where they are used.
 */

/** The container and Kubernetes pod a process runs in, from /proc/PID/cgroup. */
export interface CgroupIdentity {
  /** The runtime's 64-hex container id (docker, containerd, cri-o, podman), or null. */
  readonly container: string | null;
  /** The pod UID with dashes (kubelet's form), or null outside Kubernetes. */
  readonly podUid: string | null;
}

export interface MappedFlow {
  /** The domain path exactly as it was given (the caller's config key). */
  readonly domain: string;
  /** The flow's folder name without `.mxl-flow`: its id. */
  readonly flowId: string;
}

const HEX64 = '[0-9a-f]{64}';
/**
 * A cgroup path component naming a container: the bare id (docker's cgroupfs driver
 * `/docker/<id>`, containerd/cri-o under kubelet's cgroupfs driver `/kubepods/.../pod<uid>/<id>`)
 * or a systemd scope `<runtime>-<id>.scope` (docker-, cri-containerd-, crio-, libpod-, nerdctl-).
 * Monitor scopes (`crio-conmon-<id>`, `libpod-conmon-<id>`) do not
 * match: conmon is not the workload.
 */
const CONTAINER_COMPONENT = new RegExp(`^(?:(?:docker|cri-containerd|crio|libpod|nerdctl)-)?(${HEX64})(?:\\.scope)?$`);
/**
 * A pod's cgroup: `pod<uid>` (cgroupfs driver) or `kubepods[-<qos>]-pod<uid>.slice` (systemd
 * driver, which writes the UID's dashes as '_' because '-' separates a slice's parents). A
 * static pod's UID is a 32-hex hash of its manifest, without dashes.
 */
const POD_COMPONENT =
  /^(?:kubepods(?:-[a-z]+)?-)?pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12}|[0-9a-f]{32})(?:\.slice)?$/;
/** Appended to the cgroup path of a zombie whose cgroup was removed (cgroup-v2.rst). */
const DELETED = ' (deleted)';

/**
 * /proc/PID/cgroup: one line per hierarchy, `hierarchy-ID:controller-list:cgroup-path`; the
 * cgroup v2 line is always `0::$PATH` (Documentation/admin-guide/cgroup-v2.rst, "Processes";
 * cgroup v1: Documentation/admin-guide/cgroup-v1/cgroups.rst). Under a cgroup namespace the
 * path is relative to the reader's namespace root and may start with `/..`. The deepest path
 * component naming a container wins, in the first line that names one (v1 hierarchies all
 * show the same container); the pod likewise.
 */
export function parseCgroup(text: string): CgroupIdentity {
  let container: string | null = null;
  let podUid: string | null = null;
  for (const line of text.split('\n')) {
    const path = cgroupPathOf(line);
    if (path === undefined) continue;
    const found = identityOfPath(path);
    container ??= found.container;
    podUid ??= found.podUid;
    if (container !== null && podUid !== null) break;
  }
  return { container, podUid };
}

/** The path of a cgroup line (after the second ':'; a v1 controller list holds no ':'). */
function cgroupPathOf(line: string): string | undefined {
  const first = line.indexOf(':');
  const second = first < 0 ? -1 : line.indexOf(':', first + 1);
  if (second < 0) return undefined;
  const path = line.slice(second + 1);
  return path.endsWith(DELETED) ? path.slice(0, -DELETED.length) : path;
}

function identityOfPath(path: string): CgroupIdentity {
  let container: string | null = null;
  let podUid: string | null = null;
  for (const component of path.split('/')) {
    const c = CONTAINER_COMPONENT.exec(component);
    if (c) container = c[1]!;
    const p = POD_COMPONENT.exec(component);
    if (p) podUid = p[1]!.replaceAll('_', '-');
  }
  return { container, podUid };
}

/**
 * A flow's file as MXL names it (lib/internal/include/mxl-internal/PathUtils.hpp): the flow
 * header `data`, a continuous flow's `channels`, a discrete flow's `grains/data.N`, all in
 * `<domain>/<flow-id>.mxl-flow/`. `access` (notifications) and `flow_def.json` are not mapped.
 */
const FLOW_FILE = /^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.mxl-flow\/(?:data|channels|grains\/data\.\d+)$/;
/** A maps line: address perms offset dev inode, then (after padding) the pathname, if any. */
const MAPS_LINE = /^\S+ \S+ \S+ \S+ \d+ +(.*)$/;

/**
 * The MXL flows a process maps under each domain path, from /proc/PID/maps (fs/proc/task_mmu.c
 * show_map_vma; format in Documentation/filesystems/proc.rst, "/proc/PID/maps"): `address perms
 * offset dev inode pathname`, the pathname after space padding, unescaped except '\n' (as
 * `\012`). A mapping of a file since unlinked ends in ` (deleted)`, so it names no flow file:
 * that file is no longer the domain's flow (a flow re-created under the same id is found
 * through its live mapping). Flows come once each, in address order; a domain given twice (with and without
 * a trailing slash) counts once, under its first spelling.
 */
export function parseMaps(text: string, domainPaths: readonly string[]): MappedFlow[] {
  const domains = normalisedDomains(domainPaths);
  const flows: MappedFlow[] = [];
  const seen = new Set<string>();
  for (const line of text.split('\n')) {
    const path = MAPS_LINE.exec(line)?.[1];
    if (path === undefined) continue;
    const flow = flowOfPath(path, domains);
    if (flow === undefined) continue;
    const key = `${flow.domain}\0${flow.flowId}`;
    if (seen.has(key)) continue;
    seen.add(key);
    flows.push(flow);
  }
  return flows;
}

interface Domain {
  readonly given: string;
  /** The path with one '/' at its end: a flow folder is a direct child. */
  readonly prefix: string;
}

function normalisedDomains(domainPaths: readonly string[]): Domain[] {
  const out: Domain[] = [];
  for (const given of domainPaths) {
    const prefix = `${given.replace(/\/+$/, '')}/`;
    if (!out.some((d) => d.prefix === prefix)) out.push({ given, prefix });
  }
  return out;
}

function flowOfPath(path: string, domains: readonly Domain[]): MappedFlow | undefined {
  for (const d of domains) {
    if (!path.startsWith(d.prefix)) continue;
    const m = FLOW_FILE.exec(path.slice(d.prefix.length));
    if (m) return { domain: d.given, flowId: m[1]! };
  }
  return undefined;
}

/**
 * Field 22 of /proc/PID/stat, `starttime`: clock ticks after boot the process started
 * (Documentation/filesystems/proc.rst, Table 1-4; fs/proc/array.c do_task_stat). Field 2 is the
 * comm in parentheses and may itself hold spaces and ')' (`prctl(PR_SET_NAME)` takes any bytes),
 * so fields are counted from the last ')': `state` (field 3) is the first after it.
 */
export function parseStartTicks(stat: string): bigint | undefined {
  const starttime = statFieldsAfterComm(stat)?.[22 - 3];
  return starttime !== undefined && /^\d+$/.test(starttime) ? BigInt(starttime) : undefined;
}

/** The fields of a stat line after the comm (field 3 on), or undefined without its ')'. */
function statFieldsAfterComm(stat: string): string[] | undefined {
  const close = stat.lastIndexOf(')');
  return close < 0 ? undefined : stat.slice(close + 1).trim().split(/\s+/);
}

/**
 * Fields 3 and 20 of /proc/PID/stat: the task's state letter (`R`, `S`, `D`, `Z` zombie, `X`
 * dead...; fs/proc/array.c task_state_array) and `num_threads`, the thread group's count
 * (signal->nr_threads, which counts the zombie leader itself until it is reaped).
 */
export function parseTaskState(stat: string): { readonly state: string; readonly threads: number } | undefined {
  const fields = statFieldsAfterComm(stat);
  const state = fields?.[0];
  const threads = fields?.[20 - 3];
  if (state === undefined || !/^[A-Za-z]$/.test(state) || threads === undefined || !/^\d+$/.test(threads)) return undefined;
  return { state, threads: Number(threads) };
}

/** /proc/PID/comm: the task's name (at most 15 bytes, TASK_COMM_LEN 16) and a newline. */
export function parseComm(text: string): string {
  return text.endsWith('\n') ? text.slice(0, -1) : text;
}

/**
 * /proc/PID/cmdline: the arguments, each ended by a NUL (fs/proc/base.c get_mm_cmdline). Empty
 * for a kernel thread or a zombie. A process that retitled itself (setproctitle; libuv's
 * process.title) wrote its title over the argument area and zeroed the rest, which reads as
 * empty arguments at the end: they are dropped (a real trailing '' cannot be told from that).
 * Without a NUL at the end (a title that ran into the environment) the text is one argument.
 */
export function parseCmdline(bytes: Buffer): string[] {
  const args = bytes.toString('utf8').split('\0');
  while (args.length > 0 && args[args.length - 1] === '') args.pop();
  return args;
}

/**
 * `Tgid:` of /proc/PID/status (Documentation/filesystems/proc.rst, Table 1-2): the thread
 * group (process) a task belongs to. It differs from the pid asked for when that is a thread.
 */
export function parseTgid(status: string): number | undefined {
  const m = /^Tgid:\s*(\d+)$/m.exec(status);
  return m ? Number(m[1]) : undefined;
}
