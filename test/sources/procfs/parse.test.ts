/**
 * The pure /proc parsers on text in the kernel's formats: the cgroup paths each container
 * runtime and kubelet cgroup driver write, maps lines as show_map_vma prints them, stat lines
 * whose comm holds spaces and parentheses.
 */
import { describe, it, expect } from 'vitest';
import { parseCgroup, parseCmdline, parseComm, parseMaps, parseStartTicks, parseTaskState, parseTgid } from '../../../src/sources/procfs/index.js';
import { mapsLine, statLine, statusText } from './fixture.js';

const ID = '3f4b9c1e8a7d6b5c4a3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b';
const ID2 = 'a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1';
const POD = '6e0b5a3c-2f1d-4c8e-9a7b-1d2c3e4f5a6b';
const POD_SYSTEMD = POD.replaceAll('-', '_');

const v1 = (path: string): string =>
  ['12:pids', '11:memory', '10:devices', '9:cpu,cpuacct', '8:blkio', '7:freezer', '1:name=systemd'].map((h) => `${h}:${path}`).join('\n') + '\n';

describe('parseCgroup', () => {
  const cases: readonly { name: string; text: string; container: string | null; podUid: string | null }[] = [
    { name: 'docker, cgroupfs driver, cgroup v1', text: v1(`/docker/${ID}`), container: ID, podUid: null },
    { name: 'docker, systemd driver, cgroup v2', text: `0::/system.slice/docker-${ID}.scope\n`, container: ID, podUid: null },
    {
      name: 'docker, systemd driver, cgroup v1 with the unified line (hybrid)',
      text: v1(`/system.slice/docker-${ID}.scope`) + `0::/system.slice/docker-${ID}.scope\n`,
      container: ID,
      podUid: null,
    },
    {
      name: 'kubelet systemd driver, containerd, burstable, cgroup v2 (pod UID written with _)',
      text: `0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${POD_SYSTEMD}.slice/cri-containerd-${ID}.scope\n`,
      container: ID,
      podUid: POD,
    },
    {
      name: 'kubelet systemd driver, guaranteed pod (no QoS slice)',
      text: `0::/kubepods.slice/kubepods-pod${POD_SYSTEMD}.slice/cri-containerd-${ID}.scope\n`,
      container: ID,
      podUid: POD,
    },
    {
      name: 'kubelet systemd driver, cri-o, besteffort',
      text: `0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${POD_SYSTEMD}.slice/crio-${ID}.scope\n`,
      container: ID,
      podUid: POD,
    },
    {
      name: "cri-o's conmon: the pod, but conmon is not the container",
      text: `0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${POD_SYSTEMD}.slice/crio-conmon-${ID}.scope\n`,
      container: null,
      podUid: POD,
    },
    {
      name: 'kubelet systemd driver, docker (dockershim), cgroup v1',
      text: v1(`/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${POD_SYSTEMD}.slice/docker-${ID}.scope`),
      container: ID,
      podUid: POD,
    },
    {
      name: 'kubelet cgroupfs driver, burstable, cgroup v1',
      text: v1(`/kubepods/burstable/pod${POD}/${ID}`),
      container: ID,
      podUid: POD,
    },
    { name: 'kubelet cgroupfs driver, guaranteed, cgroup v2', text: `0::/kubepods/pod${POD}/${ID}\n`, container: ID, podUid: POD },
    {
      name: 'a static pod: its UID is a 32-hex hash',
      text: `0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0123456789abcdef0123456789abcdef.slice/cri-containerd-${ID}.scope\n`,
      container: ID,
      podUid: '0123456789abcdef0123456789abcdef',
    },
    {
      name: 'seen from inside a cgroup namespace (the path climbs out with /..)',
      text: `0::/../../kubepods-besteffort-pod${POD_SYSTEMD}.slice/cri-containerd-${ID}.scope\n`,
      container: ID,
      podUid: POD,
    },
    {
      name: 'podman rootless, cgroup v2',
      text: `0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-${ID}.scope\n`,
      container: ID,
      podUid: null,
    },
    { name: "podman's nested container cgroup", text: `0::/machine.slice/libpod-${ID}.scope/container\n`, container: ID, podUid: null },
    { name: 'an unknown runtime prefix is not guessed at', text: `0::/system.slice/foo-${ID}.scope\n`, container: null, podUid: null },
    { name: 'podman conmon', text: `0::/machine.slice/libpod-conmon-${ID}.scope\n`, container: null, podUid: null },
    { name: 'nerdctl (containerd, systemd driver)', text: `0::/system.slice/nerdctl-${ID}.scope\n`, container: ID, podUid: null },
    { name: 'containerd namespace, cgroupfs driver', text: `0::/default/${ID}\n`, container: ID, podUid: null },
    {
      name: 'a zombie whose cgroup was removed',
      text: `0::/system.slice/docker-${ID}.scope (deleted)\n`,
      container: ID,
      podUid: null,
    },
    { name: 'a host process, cgroup v2', text: '0::/user.slice/user-1000.slice/session-2.scope\n', container: null, podUid: null },
    {
      name: "this build machine's form: a 32-hex name is no container id",
      text: '9:name=systemd:/\n4:memory:/process_api/1eafba494c49bb6005bc4012a57066e4\n0::/\n',
      container: null,
      podUid: null,
    },
    { name: 'the root cgroup', text: '0::/\n', container: null, podUid: null },
    { name: 'empty (a kernel thread in some kernels)', text: '', container: null, podUid: null },
    { name: 'an id one character short', text: `0::/docker/${ID.slice(1)}\n`, container: null, podUid: null },
    { name: 'a pod-like name outside any pod form', text: `0::/system.slice/pod${POD}-extra.slice\n`, container: null, podUid: null },
    {
      name: 'the deepest container component wins (docker in docker)',
      text: `0::/system.slice/docker-${ID}.scope/docker/${ID2}\n`,
      container: ID2,
      podUid: null,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(parseCgroup(c.text)).toEqual({ container: c.container, podUid: c.podUid });
    });
  }
});

const FLOW_A = '5fbec3b1-1b0f-417d-9059-8b94a47197ed';
const FLOW_B = 'c0ffee00-1234-4abc-8def-0123456789ab';
const FLOW_C = '00000000-0000-4000-8000-00000000000c';

/** A fabrics process's maps: its binary, libraries, anonymous memory and the MXL files it maps. */
function mapsOf(paths: readonly string[]): string {
  const lines = [
    mapsLine(0x55d0c8a00000n, 2, 'r--p', { path: '/usr/bin/mxl-fabrics-demo', inode: 1835027, dev: 'fd:01' }),
    mapsLine(0x55d0c8a02000n, 30, 'r-xp', { path: '/usr/bin/mxl-fabrics-demo', inode: 1835027, dev: 'fd:01' }),
    mapsLine(0x55d0c9000000n, 33, 'rw-p', { path: '[heap]', inode: 0, dev: '00:00' }),
    mapsLine(0x7f1c29000000n, 256, 'rw-p'),
  ];
  let at = 0x7f1c2a000000n;
  paths.forEach((p, i) => {
    lines.push(mapsLine(at, 4, 'rw-s', { path: p, inode: 4000 + i }));
    at += 0x10000n;
  });
  lines.push(mapsLine(0x7ffd7a5c0000n, 33, 'rw-p', { path: '[stack]', inode: 0, dev: '00:00' }));
  return lines.join('\n') + '\n';
}

describe('parseMaps', () => {
  const tx = '/dev/shm/mxl-tx';
  const files = [
    `${tx}/${FLOW_A}.mxl-flow/data`,
    `${tx}/${FLOW_A}.mxl-flow/grains/data.0`,
    `${tx}/${FLOW_A}.mxl-flow/grains/data.1`,
    `${tx}/${FLOW_A}.mxl-flow/grains/data.15`,
    `/dev/shm/mxl-rx/${FLOW_B}.mxl-flow/data`,
    `/dev/shm/mxl-rx/${FLOW_B}.mxl-flow/grains/data.0`,
    `${tx}/${FLOW_C}.mxl-flow/channels`,
  ];
  const maps = mapsOf(files);

  it('lists each flow once per domain, in address order, under the domain as given', () => {
    expect(parseMaps(maps, [tx, '/dev/shm/mxl-rx/'])).toEqual([
      { domain: tx, flowId: FLOW_A },
      { domain: '/dev/shm/mxl-rx/', flowId: FLOW_B },
      { domain: tx, flowId: FLOW_C },
    ]);
  });

  it('a trailing slash (or several) on the domain path changes nothing but its spelling', () => {
    expect(parseMaps(maps, [`${tx}/`])).toEqual([
      { domain: `${tx}/`, flowId: FLOW_A },
      { domain: `${tx}/`, flowId: FLOW_C },
    ]);
    expect(parseMaps(maps, [`${tx}//`]).map((f) => f.flowId)).toEqual([FLOW_A, FLOW_C]);
  });

  it('a domain given twice counts once, under its first spelling', () => {
    expect(parseMaps(maps, [`${tx}/`, tx])).toEqual([
      { domain: `${tx}/`, flowId: FLOW_A },
      { domain: `${tx}/`, flowId: FLOW_C },
    ]);
  });

  it('a domain that merely shares a prefix with another matches none of its flows', () => {
    expect(parseMaps(maps, ['/dev/shm/mxl'])).toEqual([]);
    expect(parseMaps(maps, ['/dev/shm/mxl-t'])).toEqual([]);
    expect(parseMaps(maps, ['/dev/shm'])).toEqual([]); // flow folders are direct children of their domain
  });

  it('no domains, no flows', () => {
    expect(parseMaps(maps, [])).toEqual([]);
  });

  it("leaves out a mapping whose file was unlinked (' (deleted)'), and keeps a live one of the same flow", () => {
    const text = mapsOf([`${tx}/${FLOW_A}.mxl-flow/grains/data.0 (deleted)`, `${tx}/${FLOW_B}.mxl-flow/data (deleted)`, `${tx}/${FLOW_A}.mxl-flow/data`]);
    expect(parseMaps(text, [tx])).toEqual([{ domain: tx, flowId: FLOW_A }]);
  });

  it('files of a flow folder MXL does not map, and names that only look like flows, do not count', () => {
    const text = mapsOf([
      `${tx}/${FLOW_A}.mxl-flow/access`,
      `${tx}/${FLOW_A}.mxl-flow/flow_def.json`,
      `${tx}/${FLOW_A}.mxl-flow/grains/data.x`,
      `${tx}/${FLOW_A}.mxl-flow/grains/data.0/more`,
      `${tx}/${FLOW_A}.mxl-flow`,
      `${tx}/not-a-uuid.mxl-flow/data`,
      `${tx}/${FLOW_A}.mxl-flows/data`,
      `${tx}/nested/${FLOW_B}.mxl-flow/data`,
    ]);
    expect(parseMaps(text, [tx])).toEqual([]);
  });

  it('a domain path with spaces (maps prints pathnames unescaped)', () => {
    const dom = '/srv/media domain (studio 1)';
    expect(parseMaps(mapsOf([`${dom}/${FLOW_A}.mxl-flow/data`]), [dom])).toEqual([{ domain: dom, flowId: FLOW_A }]);
  });

  it('a mapping with a 32-bit-style address and an anonymous line without padding', () => {
    const text = `08048000-08049000 r--s 00000000 00:1a 77 ${`${tx}/${FLOW_B}.mxl-flow/data`}\n7f00-8f00 rw-p 00000000 00:00 0\n`;
    expect(parseMaps(text, [tx])).toEqual([{ domain: tx, flowId: FLOW_B }]);
  });
});

describe('parseStartTicks', () => {
  it('field 22 of a plain stat line', () => {
    expect(parseStartTicks(statLine(202, 'mxl-fabrics-dem', 44720n))).toBe(44720n);
  });

  it('a comm holding spaces and parentheses: fields counted from the last ")"', () => {
    expect(parseStartTicks(statLine(202, 'a) R 1 2 (b', 987654321n))).toBe(987654321n);
    expect(parseStartTicks(statLine(202, ') ) )', 5n))).toBe(5n);
    expect(parseStartTicks(statLine(202, '', 7n))).toBe(7n);
  });

  it('a start beyond 2^53 stays exact (a u64 in the kernel)', () => {
    expect(parseStartTicks(statLine(1, 'x', 18446744073709551615n))).toBe(18446744073709551615n);
  });

  it('a cut or foreign line gives nothing rather than another field', () => {
    expect(parseStartTicks('202 (mxl) S 1 202 202 0 -1')).toBeUndefined();
    expect(parseStartTicks('no parenthesis here')).toBeUndefined();
    expect(parseStartTicks('')).toBeUndefined();
  });
});

describe('parseTaskState', () => {
  it('fields 3 and 20: the state letter and num_threads, counted from the last ")"', () => {
    expect(parseTaskState(statLine(202, 'mxl-fabrics-dem', 44720n))).toEqual({ state: 'R', threads: 1 });
    expect(parseTaskState(statLine(202, 'a) R 1 (b', 1n, 1, { state: 'Z', threads: 1 }))).toEqual({ state: 'Z', threads: 1 });
    expect(parseTaskState(statLine(202, 'mxl', 1n, 1, { state: 'Z', threads: 4 }))).toEqual({ state: 'Z', threads: 4 });
  });

  it('a cut or foreign line gives nothing', () => {
    expect(parseTaskState('202 (mxl) S 1 202 202 0 -1')).toBeUndefined();
    expect(parseTaskState('no parenthesis here')).toBeUndefined();
    expect(parseTaskState('202 (mxl) 7 1 202 202 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 5')).toBeUndefined();
  });
});

describe('parseComm, parseCmdline, parseTgid', () => {
  it('comm loses its newline only', () => {
    expect(parseComm('mxl-fabrics-dem\n')).toBe('mxl-fabrics-dem');
    expect(parseComm('two words \n')).toBe('two words ');
  });

  it('cmdline splits on NUL, keeps empty arguments inside, drops the zeroed tail of a retitled process', () => {
    expect(parseCmdline(Buffer.from('/usr/bin/mxl-fabrics-demo\0-d\0/dev/shm/mxl-tx\0\0--flag\0'))).toEqual([
      '/usr/bin/mxl-fabrics-demo',
      '-d',
      '/dev/shm/mxl-tx',
      '',
      '--flag',
    ]);
    expect(parseCmdline(Buffer.alloc(0))).toEqual([]);
    expect(parseCmdline(Buffer.from('nginx: worker process'))).toEqual(['nginx: worker process']); // setproctitle
    // libuv's process.title: the title, then the rest of the argument area zeroed
    expect(parseCmdline(Buffer.from(`node (vitest 1)${'\0'.repeat(120)}`))).toEqual(['node (vitest 1)']);
    expect(parseCmdline(Buffer.from('\0\0'))).toEqual([]);
  });

  it('Tgid from status', () => {
    expect(parseTgid(statusText(4243, 'worker', 4242))).toBe(4242);
    expect(parseTgid('Name:\tx\nPid:\t3\n')).toBeUndefined();
  });
});
