/**
 * The MXL domain's reads (the folder listing with a stat per flow folder, each new folder's
 * flow_def.json) run on the daemon's one bounded reader, in the domain's group, like its header
 * reads: a domain on a filesystem that stops answering (NFS, FUSE) costs one read timeout
 * (mxl_fabric_exporter_read_timeouts_total), is logged naming the domain, and is read again
 * once the read returns; the event loop, the other domains and the ports never wait for it.
 *
 * No directory can be made to hang on purpose without a filesystem of our own, so the domain's
 * read programs (`domainReads`) are wrapped: while armed, they first wait in read(2) on a FIFO
 * (blocking-source.ts Stall), the same place in the program where the real `readDir` and
 * `readFile` ops are issued, then read the real folder. The last case needs no stand-in: a
 * flow_def.json that is a FIFO nobody writes, where open(2) itself waits for a writer unless
 * the read is non-blocking.
 */
import { describe, it, expect, afterEach, vi } from 'vitest';
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync, mkdtempSync, mkdirSync, writeFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { one, startDaemon, FLOWS, type Running } from '../exporter/harness.js';
import { addFlow, commit, flowHeader, makeDomain } from '../domain/mxl-domain.mjs';
import { Stall, mkfifo } from './blocking-source.js';
import { answersDuring, waitFor } from './event-loop.js';
import { domainReads } from '../../src/domain/watcher.js';
import { defaultReadTimeoutMs } from '../../src/sampler/sampler.js';

const flowJson = (name: string): Record<string, unknown> => JSON.parse(readFileSync(join(FLOWS, name), 'utf8')) as Record<string, unknown>;
const VIDEO = flowJson('v210_1080p2997.json'); // 30000/1001
const DATA = flowJson('data_60.json'); // 60/s
const VIDEO_ID = VIDEO.id as string;
const DATA_ID = DATA.id as string;
const timeout = defaultReadTimeoutMs(1000);

let run: Running | undefined;
let stall: Stall | undefined;
let child: ChildProcess | undefined;
afterEach(async () => {
  if (stall) stall.armed = false;
  stall?.feed(); // an abandoned read still in read(2) returns, and its thread ends
  child?.kill('SIGKILL');
  await run?.stop();
  stall?.close();
  vi.restoreAllMocks();
  run = undefined;
  stall = undefined;
  child = undefined;
});

/** Two domains on one port: `hung` (a video flow) and `healthy` (a data flow). */
function config(hung: string, healthy: string): string {
  return `
sampling: { interval: 1s, window: 4s }
ports:
  - { device: mlx5_0, port: 1, mtu: 4096, capacity: 100Gbps }
domains:
  - { path: ${hung}, device: mlx5_0, direction: tx }
  - { path: ${healthy}, device: mlx5_0, direction: rx }
`;
}

/** While `stall` is armed, the domain program `name` waits on it for folder `under` before reading. */
function stallDomainRead(name: 'listFlowDirs' | 'definition', under: string, s: Stall): void {
  const real = domainReads[name] as (path: string) => Generator;
  vi.spyOn(domainReads, name).mockImplementation(function* (path: string) {
    if (path.startsWith(under)) yield* s.wait();
    return yield* real.call(domainReads, path);
  } as never);
}


/** One second of traffic: the healthy domain's data flow and the port move on, then a tick. */
let head = { data: 5000n, packets: 1000 };
async function second(r: Running, video?: { dir: string; head: bigint }): Promise<void> {
  head = { data: head.data + 60n, packets: head.packets + 60 };
  commit(dataDir!, head.data, 0n);
  if (video) commit(video.dir, video.head, 0n);
  r.fx.setCounter('mlx5_0', 1, 'counters', 'port_xmit_packets', head.packets);
  await r.tick();
}
let dataDir: string | undefined;

/** The healthy domain and the port kept sampling: 60 grains/s, 60 packets/s. */
function othersSampled(m: Map<string, number>, healthy: string): void {
  expect(one(m, 'mxl_fabric_domain_up', { domain: healthy })).toBe(1);
  expect(one(m, 'mxl_fabric_flow_measured_grains_per_second', { flow_id: DATA_ID, domain: healthy })).toBe(60);
  expect(one(m, 'mxl_fabric_port_measured_packets_per_second', { device: 'mlx5_0', direction: 'tx', source: 'sysfs_counters' })).toBe(60);
}

async function startTwoDomains(withVideo: boolean): Promise<{ hung: string; healthy: string; video: string | undefined }> {
  const hung = makeDomain();
  const healthy = makeDomain();
  head = { data: 5000n, packets: 1000 };
  dataDir = addFlow(healthy, DATA, { id: DATA_ID, format: 3, rate: [60n, 1n], grainCount: 2, headIndex: head.data });
  const video = withVideo ? addFlow(hung, VIDEO, { id: VIDEO_ID, format: 1, rate: [30000n, 1001n], grainCount: 3, headIndex: 1000n }) : undefined;
  run = await startDaemon('mlx5_roce', config(hung, healthy), (fx) => fx.setCounter('mlx5_0', 1, 'counters', 'port_xmit_packets', head.packets));
  return { hung, healthy, video };
}

describe('an MXL domain listing that never returns', () => {
  it('costs one read timeout on the reader, not the event loop; the other domain and the port keep sampling; the domain comes back once the read returns', async () => {
    const { hung, healthy, video } = await startTwoDomains(true);
    stall = new Stall(join(mkdtempSync(join(tmpdir(), 'mfe-stall-')), 'readdir'));
    stallDomainRead('listFlowDirs', hung, stall);
    await second(run!, { dir: video!, head: 1030n });
    let m = await run!.scrape();
    expect(one(m, 'mxl_fabric_flow_measured_grains_per_second', { flow_id: VIDEO_ID, domain: hung })).toBe(30);
    othersSampled(m, healthy);
    expect(one(m, 'mxl_fabric_exporter_read_timeouts_total')).toBe(0);

    stall.armed = true;
    const t0 = performance.now();
    const tick = second(run!, { dir: video!, head: 1060n });
    expect(await answersDuring(run!, tick)).toBe(true);
    await tick;
    const took = performance.now() - t0;
    expect(took).toBeGreaterThanOrEqual(timeout);
    expect(took).toBeLessThan(timeout + 5000);
    m = await run!.scrape();
    expect(one(m, 'mxl_fabric_exporter_read_timeouts_total')).toBe(1);
    expect(one(m, 'mxl_fabric_exporter_blocked_reader_threads')).toBe(1);
    expect(one(m, 'mxl_fabric_domain_up', { domain: hung })).toBe(0);
    expect(one(m, 'mxl_fabric_flow_measured_grains_per_second', { flow_id: VIDEO_ID, domain: hung })).toBeUndefined();
    othersSampled(m, healthy);
    const logs = run!.logs.join('');
    expect(logs).toContain(`msg="read blocked; skipped until it returns" group="domain ${hung}" error=ETIMEDOUT`);
    expect(logs).toMatch(new RegExp(`msg="MXL domain cannot be read; the flows it covers are unknown \\(logged once\\)" domain=${hung} err="ETIMEDOUT`));

    // Skipped while the read is stuck: no second timeout, no wait; the rest still samples.
    const t1 = performance.now();
    await second(run!);
    expect(performance.now() - t1).toBeLessThan(timeout);
    m = await run!.scrape();
    expect(one(m, 'mxl_fabric_exporter_read_timeouts_total')).toBe(1);
    othersSampled(m, healthy);

    stall.armed = false;
    stall.feed();
    await waitFor(() => run!.daemon.state().sampler!.reader.blockedThreads === 0);
    await second(run!, { dir: video!, head: 1090n });
    await second(run!, { dir: video!, head: 1120n });
    m = await run!.scrape();
    expect(one(m, 'mxl_fabric_domain_up', { domain: hung })).toBe(1);
    expect(one(m, 'mxl_fabric_domain_flow_definition_valid', { domain: hung, flow_id: VIDEO_ID })).toBe(1);
    expect(one(m, 'mxl_fabric_flow_measured_grains_per_second', { flow_id: VIDEO_ID, domain: hung })).toBe(30);
    expect(one(m, 'mxl_fabric_exporter_read_timeouts_total')).toBe(1);
    othersSampled(m, healthy);
    expect(run!.logs.join('')).toContain(`msg="MXL domain readable again" domain=${hung}`);
  });
});

describe('a flow_def.json read that never returns', () => {
  it('costs one read timeout in the domain\'s group; the flow is found once the read returns', async () => {
    const { hung, healthy } = await startTwoDomains(false);
    stall = new Stall(join(mkdtempSync(join(tmpdir(), 'mfe-stall-')), 'flow_def'));
    stallDomainRead('definition', hung, stall);
    await second(run!);
    othersSampled(await run!.scrape(), healthy);

    stall.armed = true;
    const video = addFlow(hung, VIDEO, { id: VIDEO_ID, format: 1, rate: [30000n, 1001n], grainCount: 3, headIndex: 2000n });
    const t0 = performance.now();
    const tick = second(run!);
    expect(await answersDuring(run!, tick)).toBe(true);
    await tick;
    expect(performance.now() - t0).toBeGreaterThanOrEqual(timeout);
    let m = await run!.scrape();
    expect(one(m, 'mxl_fabric_exporter_read_timeouts_total')).toBe(1);
    expect(one(m, 'mxl_fabric_domain_up', { domain: hung })).toBe(0);
    othersSampled(m, healthy);
    expect(run!.logs.join('')).toContain(`msg="read blocked; skipped until it returns" group="domain ${hung}" error=ETIMEDOUT`);

    stall.armed = false;
    stall.feed();
    await waitFor(() => run!.daemon.state().sampler!.reader.blockedThreads === 0);
    await second(run!, { dir: video, head: 2030n });
    await second(run!, { dir: video, head: 2060n });
    m = await run!.scrape();
    expect(one(m, 'mxl_fabric_domain_up', { domain: hung })).toBe(1);
    expect(one(m, 'mxl_fabric_domain_flow_definition_valid', { domain: hung, flow_id: VIDEO_ID })).toBe(1);
    expect(one(m, 'mxl_fabric_flow_measured_grains_per_second', { flow_id: VIDEO_ID, domain: hung })).toBe(30);
    expect(one(m, 'mxl_fabric_exporter_read_timeouts_total')).toBe(1);
    othersSampled(m, healthy);
  });
});

describe('a flow_def.json that is a FIFO nobody writes yet', () => {
  it('is read without waiting for a writer: the event loop never stalls, the definition is unusable', async () => {
    const { hung, healthy } = await startTwoDomains(false);
    // Built as MXL builds a flow (under .mxl-tmp-, then renamed), with flow_def.json a FIFO.
    const tmp = mkdtempSync(join(hung, '.mxl-tmp-'));
    mkdirSync(join(tmp, 'grains'));
    mkfifo(join(tmp, 'flow_def.json'));
    writeFileSync(join(tmp, 'data'), flowHeader({ id: VIDEO_ID, format: 1, rate: [30000n, 1001n], grainCount: 3, headIndex: 0n }));
    renameSync(tmp, join(hung, `${VIDEO_ID}.mxl-flow`));
    // A writer that shows up after a while: a read that waits for one waits that long.
    const fifo = join(hung, `${VIDEO_ID}.mxl-flow`, 'flow_def.json');
    child = spawn('sh', ['-c', 'sleep 3; cat "$1" > "$2"', 'sh', join(FLOWS, 'v210_1080p2997.json'), fifo], { stdio: 'ignore' });

    let beat = performance.now();
    let gap = 0;
    const heart = setInterval(() => {
      const now = performance.now();
      gap = Math.max(gap, now - beat);
      beat = now;
    }, 10);
    try {
      await second(run!);
      await second(run!);
    } finally {
      clearInterval(heart);
    }
    expect(gap).toBeLessThan(1000);
    const m = await run!.scrape();
    expect(one(m, 'mxl_fabric_domain_up', { domain: hung })).toBe(1);
    expect(one(m, 'mxl_fabric_domain_flow_definition_valid', { domain: hung, flow_id: VIDEO_ID })).toBe(0);
    expect(one(m, 'mxl_fabric_exporter_read_timeouts_total')).toBe(0);
    othersSampled(m, healthy);
  });
});
