/**
 * Issue 15's kernel reads (SIOCETHTOOL for the pause and discard counters, RTM_GETDCB for PFC,
 * the netdev's uevent and lower_ link) run on the daemon's one bounded reader like every other
 * read: a read that never returns costs one timeout (mxl_fabric_exporter_read_timeouts_total),
 * never the event loop, and is read again once it returns.
 *
 * No ioctl or netlink request can be made to hang on purpose, so the stand-in kernels answer
 * as the fixtures do (a driver's ethtool table, dcbnl_ieee_fill()'s answer) but, when armed,
 * first wait in read(2) on a FIFO (blocking-source.ts): the same place in the read program
 * where the real transports issue their `ioctl` and `netlinkTransact` ops. The real ops are
 * checked separately: the real ethtool transport's program is one `ioctl` op, and on a live veth
 * the native reader's threads answer exactly what `ethtool -S` prints.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { one, series, startDaemon, type Running } from '../exporter/harness.js';
import { Stall } from './blocking-source.js';
import { answersDuring, waitFor } from './event-loop.js';
import { TableKernel, loadTable } from '../fixtures/ethtool.js';
import { DatagramTransport, ieeeGetAnswer, ieeePfc } from '../health/dcb-replies.js';
import { EthtoolCounterSource } from '../../src/sources/ethtool/source.js';
import { type EthtoolReply, type EthtoolTransport, IoctlTransport } from '../../src/sources/ethtool/ioctl.js';
import { ETHTOOL_GSTATS, IFREQ_BYTES, IFREQ_DATA_AT, SIOCETHTOOL } from '../../src/sources/ethtool/constants.js';
import { drvinfoRequest } from '../../src/sources/ethtool/codec.js';
import { DcbNetlinkReader } from '../../src/sources/dcb/reader.js';
import type { NetlinkTransport } from '../../src/sources/netlink/source.js';
import type { NetlinkAnswer } from '../../src/sources/netlink/index.js';
import { SysfsInventory, SysfsCountersSource, SysfsHwCountersSource } from '../../src/sources/sysfs/index.js';
import { NetdevSource } from '../../src/sources/netdev.js';
import { defaultReadTimeoutMs } from '../../src/sampler/sampler.js';
import type { ReadProgram } from '../../src/reads/program.js';
import type { OpBatch } from '../../src/reads/ops.js';
import { need, needs } from '../deploy/tools.js';

/** A driver's ethtool table whose ETHTOOL_GSTATS waits on `stall` while it is armed. */
class StallingEthtool implements EthtoolTransport {
  constructor(private readonly kernel: TableKernel, private readonly stall: Stall) {}
  *requestReads(ifname: string, command: Uint8Array): ReadProgram<EthtoolReply> {
    if (new DataView(command.buffer, command.byteOffset).getUint32(0, true) === ETHTOOL_GSTATS) yield* this.stall.wait();
    return this.kernel.request(ifname, command);
  }
  close(): void {}
}

/** DCB netlink answering PFC on priority 3 of ens1f0np0, waiting on `stall` first while it is armed. */
class StallingDcb implements NetlinkTransport {
  private readonly kernel = new DatagramTransport((_request, seq) => ieeeGetAnswer(seq, 'ens1f0np0', ieeePfc(8, 0b1000), 0x8));
  constructor(private readonly stall: Stall) {}
  nextSeq(): number {
    return this.kernel.nextSeq();
  }
  request(): NetlinkAnswer {
    throw new Error('read on the event loop: every DCB read must be a read program');
  }
  *requestReads(what: string, bytes: Uint8Array, seq: number): ReadProgram<NetlinkAnswer> {
    yield* this.stall.wait();
    return this.kernel.request(what, bytes, seq);
  }
  close(): void {}
}

const CONFIG = `
sampling: { interval: 1s, window: 4s }
ports:
  - { device: mlx5_0, port: 1, mtu: 4096, capacity: 100Gbps }
flows:
  - { flow: flows/data_60.json, device: mlx5_0, direction: tx }
`;

let run: Running | undefined;
let stall: Stall | undefined;
afterEach(async () => {
  if (stall) stall.armed = false;
  stall?.feed(); // an abandoned read still in read(2) returns, and its thread ends
  await run?.stop();
  stall?.close();
  run = undefined;
  stall = undefined;
});

function start(transports: { ethtool?: EthtoolTransport; dcb?: NetlinkTransport }): Promise<Running> {
  return startDaemon('mlx5_roce', CONFIG, undefined, (fx) => {
    const sysfs = { sysfsRoot: fx.root };
    const sources = [new SysfsCountersSource(sysfs), new SysfsHwCountersSource(sysfs), new NetdevSource(sysfs)];
    return {
      measurement: {
        inventory: new SysfsInventory(sysfs),
        sources: transports.ethtool ? [...sources, new EthtoolCounterSource(transports.ethtool, { ...sysfs, minPeriodMs: 0 })] : sources,
        notes: [],
        ...(transports.dcb ? { dcb: new DcbNetlinkReader(transports.dcb) } : {}),
      },
    };
  });
}

const tmp = (): string => fs.mkdtempSync(path.join(os.tmpdir(), 'mfe-stall-'));
const timeout = defaultReadTimeoutMs(1000);


describe('an ethtool statistics read (SIOCETHTOOL) that never returns', () => {
  it('costs one read timeout on the reader, not the event loop; the port reads again once it returns', async () => {
    stall = new Stall(path.join(tmp(), 'gstats'));
    run = await start({ ethtool: new StallingEthtool(new TableKernel(loadTable('mlx5_core')), stall) });
    await run.tick();
    let m = await run.scrape();
    expect(one(m, 'mxl_fabric_port_stat_total', { source: 'ethtool', counter: 'rx_prio3_pause' })).toBe(52441);
    expect(one(m, 'mxl_fabric_exporter_read_timeouts_total')).toBe(0);

    stall.armed = true;
    const t0 = performance.now();
    const tick = run.tick();
    expect(await answersDuring(run, tick)).toBe(true);
    await tick;
    const took = performance.now() - t0;
    expect(took).toBeGreaterThanOrEqual(timeout);
    expect(took).toBeLessThan(timeout + 5000);
    m = await run.scrape();
    expect(one(m, 'mxl_fabric_exporter_read_timeouts_total')).toBe(1);
    expect(one(m, 'mxl_fabric_exporter_blocked_reader_threads')).toBe(1);
    // The stuck read names the port: its sets are blocked together, and the port stays listed.
    expect([...series(m, 'mxl_fabric_port_stat_up', { device: 'mlx5_0', source: 'ethtool' }).values()].every((v) => v === 0)).toBe(true);
    expect(one(m, 'mxl_fabric_port_up', { device: 'mlx5_0' })).toBe(1);
    expect(run.logs.join('')).toMatch(/msg="counter read blocked; port skipped until the read returns" device=mlx5_0 port=1 error=ETIMEDOUT/);

    // Skipped while it is stuck: no second timeout, no wait.
    const t1 = performance.now();
    await run.tick();
    expect(performance.now() - t1).toBeLessThan(timeout);
    expect(run.daemon.state().sampler!.reader.timeouts).toBe(1);

    stall.armed = false;
    stall.feed();
    await waitFor(() => run!.daemon.state().sampler!.reader.blockedThreads === 0);
    await run.tick();
    m = await run.scrape();
    expect(one(m, 'mxl_fabric_port_stat_up', { source: 'ethtool', counter: 'rx_prio3_pause' })).toBe(1);
    expect(one(m, 'mxl_fabric_port_stat_total', { source: 'ethtool', counter: 'rx_prio3_pause' })).toBe(52441);
    expect(one(m, 'mxl_fabric_exporter_read_timeouts_total')).toBe(1);
  });
});

describe('a DCB netlink read (RTM_GETDCB) that never returns', () => {
  it('costs one read timeout in its own group: PFC is unknown, the port\'s counters keep being read; PFC is read again once it returns', async () => {
    stall = new Stall(path.join(tmp(), 'dcb'));
    stall.armed = true;
    const t0 = performance.now();
    run = await start({ dcb: new StallingDcb(stall) }); // start() refreshes the assumptions once
    expect(performance.now() - t0).toBeGreaterThanOrEqual(timeout);
    expect(run.logs.join('')).toMatch(/msg="read blocked; skipped until it returns" group="assumptions mlx5_0\/1" error=ETIMEDOUT/);

    run.fx.setCounter('mlx5_0', 1, 'counters', 'port_xmit_packets', 1000);
    await run.tick();
    run.fx.setCounter('mlx5_0', 1, 'counters', 'port_xmit_packets', 1060);
    await run.tick();
    let m = await run.scrape();
    expect(one(m, 'mxl_fabric_exporter_read_timeouts_total')).toBe(1);
    expect(series(m, 'mxl_fabric_port_pfc_enabled').size).toBe(0); // unknown: absent, not 0
    expect(one(m, 'mxl_fabric_port_measured_packets_per_second', { device: 'mlx5_0', direction: 'tx', source: 'sysfs_counters' })).toBe(60);
    expect(run.daemon.state().assumptions?.get('mlx5_0/1')?.pfc).toMatchObject({ known: false, reason: expect.stringMatching(/^the host's DCB and VLAN state was not read: ETIMEDOUT/) });

    stall.armed = false;
    stall.feed();
    await waitFor(() => run!.daemon.state().sampler!.reader.blockedThreads === 0);
    await run.tick(); // refreshes the assumptions after the tick
    m = await run.scrape();
    expect([...series(m, 'mxl_fabric_port_pfc_enabled').entries()].filter(([, v]) => v === 1).map(([k]) => k))
      .toEqual(['mxl_fabric_port_pfc_enabled{device="mlx5_0",port="1",priority="3"}']);
    expect(one(m, 'mxl_fabric_exporter_read_timeouts_total')).toBe(1);
  });
});

describe('the real ethtool transport', () => {
  it('asks for each command as one ioctl op: SIOCETHTOOL on struct ifreq, ifr_data pointing at the command after it', () => {
    const opened = IoctlTransport.open();
    expect(opened.ok).toBe(true);
    if (!opened.ok) return;
    try {
      const command = drvinfoRequest();
      const batch = opened.transport.requestReads('eth0', command).next().value as OpBatch;
      expect(batch.ops).toHaveLength(1);
      const op = batch.ops[0]!;
      expect(op).toMatchObject({ kind: 'ioctl', request: SIOCETHTOOL, pointer: { at: IFREQ_DATA_AT, to: IFREQ_BYTES } });
      if (op.kind !== 'ioctl') return;
      expect(Buffer.from(op.arg.subarray(0, 5)).toString()).toBe('eth0\0');
      expect(Buffer.from(op.arg.subarray(IFREQ_BYTES)).equals(Buffer.from(command))).toBe(true);
      expect(op.max).toBe(IFREQ_BYTES + command.length * 2 + 4096);
    } finally {
      opened.transport.close();
    }
  });

  const canNetns = process.getuid?.() === 0 && ['unshare', 'ip', 'ethtool'].every((t) => spawnSync('sh', ['-c', `command -v ${t}`]).status === 0);
  needs(need(!canNetns && !process.env.CI, 'root with unshare, ip and ethtool (a private network namespace)')).it('on the native reader threads reads a live veth exactly as ethtool -S does', () => {
    const dist = path.resolve('dist');
    expect(fs.existsSync(path.join(dist, 'reads/bounded.js')), 'npm run build first').toBe(true);
    // In a private network namespace: the string set and values through BoundedReads (native).
    const script = `
      import { BoundedReads } from '${dist}/reads/bounded.js';
      import { IoctlTransport } from '${dist}/sources/ethtool/ioctl.js';
      import { stringSetReads, valuesReads } from '${dist}/sources/ethtool/read.js';
      const reader = new BoundedReads({ readTimeoutMs: 1000 });
      const t = IoctlTransport.open().transport;
      function* stats() {
        const set = yield* stringSetReads(t, 'vt0');
        if (!set.ok) return set;
        const values = yield* valuesReads(t, set.value);
        return values.ok ? { ok: true, driver: set.value.driver, stats: Object.fromEntries(set.value.names.map((n, i) => [n, String(values.value[i])])) } : values;
      }
      const [o] = await reader.run([{ group: 'vt0', program: stats() }]);
      process.stdout.write(JSON.stringify({ mode: reader.mode, timeouts: reader.timeouts, outcome: o }));
      reader.close();
      t.close();`;
    const dir = tmp();
    fs.writeFileSync(path.join(dir, 'bounded.mjs'), script);
    const sh = `set -e; ip link add vt0 type veth peer name vt1; ip link set vt0 up; ip link set vt1 up;
      ethtool -S vt0 > "$1/ethtool.txt"; node "$1/bounded.mjs" > "$1/bounded.json"`;
    const r = spawnSync('unshare', ['--net', 'sh', '-c', sh, 'sh', dir], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const got = JSON.parse(fs.readFileSync(path.join(dir, 'bounded.json'), 'utf8')) as {
      mode: string; timeouts: number; outcome: { kind: string; value: { ok: boolean; driver: string; stats: Record<string, string> } };
    };
    expect(got.mode).toBe('native');
    expect(got.timeouts).toBe(0);
    expect(got.outcome.kind).toBe('done');
    expect(got.outcome.value.driver).toBe('veth');
    const expected: Record<string, string> = {};
    for (const line of fs.readFileSync(path.join(dir, 'ethtool.txt'), 'utf8').split('\n').slice(1)) {
      const m = /^\s+(.+): (\d+)$/.exec(line);
      if (m) expected[m[1]!] = m[2]!;
    }
    expect(Object.keys(expected).length).toBeGreaterThan(0);
    expect(got.outcome.value.stats).toEqual(expected);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
