/**
 * Flow state, expectation and the port prediction that follows them, through the real daemon
 * over HTTP: rxe_6_1 fixture counters for the port, an on-disk MXL domain for the flows. Each
 * defect of issue 13 has its test here (they fail on the code before it):
 * a lost audio flow invisible on its port, -100 % drift on an idle port, the receive side keyed
 * by flow_id only, an unreadable domain that said nothing. (Audio write age: domain.test.ts.)
 */
import { describe, it, expect, afterEach } from 'vitest';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FLOWS, one, series, startDaemon, type Running } from '../exporter/harness.js';
import { loadPosix } from '../../src/ffi/posix.js';
import { addFlow, commit, makeDomain, type HeaderFields } from './mxl-domain.mjs';
import { Writer } from './writer-process.js';

const flowJson = (name: string): Record<string, unknown> & { id: string } => JSON.parse(readFileSync(join(FLOWS, name), 'utf8')) as Record<string, unknown> & { id: string };
const VIDEO = flowJson('v210_1080p2997.json'); // 30000/1001, 1365 packets per grain at IB MTU 4096
const AUDIO = flowJson('audio_2ch_48k.json'); // 100 grains of 10 ms per second
const DATA = flowJson('data_60.json'); // 60 grains/s
const tai = (): bigint => loadPosix().taiNowNs();

/** One MXL-like writer per flow: commits a second of grains per tick (headIndex, lastWriteTime). */
interface Sim {
  readonly def: Record<string, unknown> & { id: string };
  readonly header: HeaderFields;
  readonly perSecond: bigint;
  dir?: string;
  head: bigint;
}
const sims = (): Sim[] => [
  { def: VIDEO, header: { id: VIDEO.id, format: 1, rate: [30000n, 1001n], grainCount: 3 }, perSecond: 30n, head: 0n },
  { def: AUDIO, header: { id: AUDIO.id, format: 2, rate: [48000n, 1n], channelCount: 2 }, perSecond: 48_000n, head: 0n },
  { def: DATA, header: { id: DATA.id, format: 3, rate: [60n, 1n], grainCount: 3 }, perSecond: 60n, head: 0n },
];
const startFlow = (domain: string, s: Sim): void => {
  s.dir = addFlow(domain, s.def, { ...s.header, headIndex: s.head, lastWriteTime: tai() });
};
/** A writer that exits cleanly deletes its flow (MXL Instance::releaseWriter). */
const stopFlow = (s: Sim): void => {
  rmSync(s.dir!, { recursive: true });
  s.dir = undefined;
};

/** rxe0 tx counters (sent_pkts, veth0 tx_bytes) driven at given rates; fractions carry over. */
class Port {
  private pkts = 0;
  private bytes = 0;
  constructor(private readonly run: Running) {}
  async second(pktsPerSecond: number, bytesPerSecond: number, flows: readonly Sim[] = []): Promise<void> {
    this.pkts += pktsPerSecond;
    this.bytes += bytesPerSecond;
    this.run.fx.setCounter('rxe0', 1, 'hw_counters', 'sent_pkts', BigInt(Math.floor(this.pkts)));
    this.run.fx.setNetdevStat('veth0', 'tx_bytes', BigInt(Math.floor(this.bytes)));
    for (const s of flows) {
      if (!s.dir) continue;
      s.head += s.perSecond;
      commit(s.dir, s.head, s.header.format === 2 ? 0n : tai()); // MXL's audio writer leaves lastWriteTime alone
    }
    await this.run.tick(1);
  }
}

const TX = { device: 'rxe0', port: '1', direction: 'tx' };
const flowLabels = (id: string) => ({ flow_id: id, ...TX });

let run: Running | undefined;
let writer: Writer | undefined;
afterEach(async () => {
  await writer?.stop();
  writer = undefined;
  await run?.stop();
  run = undefined;
});

async function predicted(r: Running, labels: Record<string, string>): Promise<{ packets: number; l2: number }> {
  const m = await r.scrape();
  return {
    packets: one(m, labels.flow_id ? 'mxl_fabric_flow_predicted_packets_per_second' : 'mxl_fabric_port_predicted_packets_per_second', labels)!,
    l2: one(m, labels.flow_id ? 'mxl_fabric_flow_predicted_bytes_per_second' : 'mxl_fabric_port_predicted_bytes_per_second', { ...labels, layer: 'l2' })!,
  };
}

describe('flow state from an MXL domain, expect: always', () => {
  const config = (domain: string): string => `
sampling: { interval: 1s, window: 4s }
drift: { tolerance: 0.05 }
ports: [{ device: rxe0, port: 1, mtu: auto }]
flows:
  - { flow: flows/v210_1080p2997.json, device: rxe0, direction: tx, expect: always }
  - { flow: flows/audio_2ch_48k.json, device: rxe0, direction: tx, expect: always }
  - { flow: flows/data_60.json, device: rxe0, direction: tx, expect: always }
domains:
  - { path: ${domain}, device: rxe0, direction: tx }
`;

  it('a lost audio flow is named by its own state while port drift stays within tolerance', async () => {
    const domain = makeDomain();
    const flows = sims();
    for (const s of flows) startFlow(domain, s);
    run = await startDaemon('rxe_6_1', config(domain));
    const all = await predicted(run, TX);
    const audio = await predicted(run, flowLabels(AUDIO.id));
    const port = new Port(run);
    for (let i = 0; i < 5; i++) await port.second(all.packets, all.l2, flows);
    let m = await run.scrape();
    for (const s of flows) {
      expect(one(m, 'mxl_fabric_flow_live', flowLabels(s.def.id)), s.def.label as string).toBe(1);
      expect(one(m, 'mxl_fabric_flow_expected', { ...flowLabels(s.def.id), expect: 'always' })).toBe(1);
    }
    expect(Math.abs(one(m, 'mxl_fabric_port_drift_ratio', { ...TX, quantity: 'bytes' })!)).toBeLessThan(1e-3);

    stopFlow(flows[1]!); // the audio sender stops: its flow leaves the domain
    for (let i = 0; i < 5; i++) await port.second(all.packets - audio.packets, all.l2 - audio.l2, flows);
    m = await run.scrape();
    expect(one(m, 'mxl_fabric_flow_live', flowLabels(AUDIO.id))).toBe(0);
    expect(one(m, 'mxl_fabric_flow_state', { ...flowLabels(AUDIO.id), state: 'absent' })).toBe(1);
    expect(one(m, 'mxl_fabric_flow_state', { ...flowLabels(AUDIO.id), state: 'live' })).toBeUndefined(); // one series: the current state
    expect(one(m, 'mxl_fabric_flow_expected', flowLabels(AUDIO.id))).toBe(1);
    // What per-port drift alone would have shown: audio is 0.14 % of the port's l2 bytes.
    const measured = one(m, 'mxl_fabric_port_measured_bytes_per_second', { ...TX, source: 'netdev', layer: 'l2' })!;
    const provisioned = one(m, 'mxl_fabric_port_provisioned_bytes_per_second', { ...TX, layer: 'l2' })!;
    expect(provisioned).toBeCloseTo(all.l2, 6);
    expect(Math.abs(measured / provisioned - 1)).toBeLessThan(0.005);
    // The prediction follows reality: the audio flow left it, drift stays at zero.
    expect(one(m, 'mxl_fabric_port_predicted_bytes_per_second', { ...TX, layer: 'l2' })).toBeCloseTo(all.l2 - audio.l2, 6);
    expect(Math.abs(one(m, 'mxl_fabric_port_drift_ratio', { ...TX, quantity: 'bytes' })!)).toBeLessThan(1e-3);
  });

  it('an idle port (every flow stopped) says idle and has no drift, not -100 %; all clears when they start again', async () => {
    const domain = makeDomain();
    const flows = sims();
    for (const s of flows) startFlow(domain, s);
    run = await startDaemon('rxe_6_1', config(domain));
    const all = await predicted(run, TX);
    const port = new Port(run);
    for (let i = 0; i < 5; i++) await port.second(all.packets, all.l2, flows);
    expect(one(await run.scrape(), 'mxl_fabric_port_idle', TX)).toBe(0);

    for (const s of flows) stopFlow(s);
    for (let i = 0; i < 5; i++) await port.second(0, 0, flows);
    let m = await run.scrape();
    expect(one(m, 'mxl_fabric_port_drift_ratio', { ...TX, quantity: 'bytes' })).toBeUndefined(); // not -1
    expect(series(m, 'mxl_fabric_port_drift_ratio', TX).size).toBe(0);
    expect(one(m, 'mxl_fabric_port_idle', TX)).toBe(1);
    expect(one(m, 'mxl_fabric_port_predicted_packets_per_second', TX)).toBe(0);
    expect(one(m, 'mxl_fabric_port_unexplained_bytes_per_second', { ...TX, layer: 'l2' })).toBe(0);
    for (const s of flows) expect(one(m, 'mxl_fabric_flow_live', flowLabels(s.def.id))).toBe(0);

    for (const s of flows) startFlow(domain, s);
    for (let i = 0; i < 5; i++) await port.second(all.packets, all.l2, flows);
    m = await run.scrape();
    expect(one(m, 'mxl_fabric_port_idle', TX)).toBe(0);
    for (const s of flows) expect(one(m, 'mxl_fabric_flow_live', flowLabels(s.def.id))).toBe(1);
    expect(Math.abs(one(m, 'mxl_fabric_port_drift_ratio', { ...TX, quantity: 'bytes' })!)).toBeLessThan(1e-3);
  });
});

describe('the receive side: the fabrics target re-creates the flow in its own domain', () => {
  it("the sender's and the receiver's copy are two series; a target that receives nothing is stalled", async () => {
    const tx = makeDomain();
    const rx = makeDomain();
    const video = sims()[0]!;
    startFlow(tx, video);
    // The target holds its copy open as a writer (mxlCreateFlowWriter); its last grain came a minute ago.
    const target = addFlow(rx, VIDEO, { ...video.header, headIndex: 1000n, lastWriteTime: tai() - 60_000_000_000n });
    writer = await Writer.start(join(target, 'data'));
    run = await startDaemon('rxe_6_1', `
sampling: { interval: 1s, window: 4s }
domains:
  - { path: ${tx}, device: rxe0, direction: tx }
  - { path: ${rx}, device: rxe1, direction: rx }
`);
    const port = new Port(run);
    for (let i = 0; i < 3; i++) await port.second(0, 0, [video]);
    const m = await run.scrape();
    expect(one(m, 'mxl_fabric_flow_measured_grains_per_second', { flow_id: VIDEO.id, domain: tx })).toBe(30);
    expect(one(m, 'mxl_fabric_flow_measured_grains_per_second', { flow_id: VIDEO.id, domain: rx })).toBe(0);
    expect(one(m, 'mxl_fabric_flow_writer_active', { flow_id: VIDEO.id, domain: rx })).toBe(1);
    expect(one(m, 'mxl_fabric_flow_last_write_age_seconds', { flow_id: VIDEO.id, domain: rx })).toBeGreaterThanOrEqual(60);
    expect(one(m, 'mxl_fabric_flow_live', { flow_id: VIDEO.id, device: 'rxe0', direction: 'tx' })).toBe(1);
    expect(one(m, 'mxl_fabric_flow_live', { flow_id: VIDEO.id, device: 'rxe1', direction: 'rx' })).toBe(0);
    expect(one(m, 'mxl_fabric_flow_state', { flow_id: VIDEO.id, device: 'rxe1', direction: 'rx', state: 'stalled' })).toBe(1);
    // found in a domain and not configured: expected while live (when_live)
    expect(one(m, 'mxl_fabric_flow_expected', { flow_id: VIDEO.id, device: 'rxe1', expect: 'when_live' })).toBe(0);
  });
});

describe('an MXL domain that cannot be read', () => {
  it('is exported as domain_up 0 and logged once with the reason; its flows are unknown until it can be read', async () => {
    const parent = makeDomain();
    const missing = join(parent, 'not-yet');
    run = await startDaemon('rxe_6_1', `
sampling: { interval: 1s, window: 4s }
ports: [{ device: rxe0, port: 1, provider: rdma_rocev2, mtu: auto }]
flows:
  - { flow: flows/data_60.json, device: rxe0, direction: tx, expect: always }
domains:
  - { path: ${missing}, device: rxe0, direction: tx }
`);
    for (let i = 0; i < 3; i++) await run.tick(1);
    let m = await run.scrape();
    expect(one(m, 'mxl_fabric_domain_up', { domain: missing })).toBe(0);
    const warned = run.logs.filter((l) => l.includes('MXL domain cannot be read'));
    expect(warned).toHaveLength(1);
    expect(warned[0]).toContain(missing);
    expect(warned[0]).toMatch(/ENOENT/);
    // no evidence: state unknown, no flow_live, and an `always` flow still counts
    expect(one(m, 'mxl_fabric_flow_state', { flow_id: DATA.id, state: 'unknown' })).toBe(1);
    expect(one(m, 'mxl_fabric_flow_live', { flow_id: DATA.id })).toBeUndefined();
    expect(one(m, 'mxl_fabric_port_predicted_packets_per_second', TX)).toBe(60);

    mkdirSync(missing);
    await run.tick(1);
    m = await run.scrape();
    expect(one(m, 'mxl_fabric_domain_up', { domain: missing })).toBe(1);
    expect(run.logs.join('')).toMatch(/MXL domain readable again/);
    expect(one(m, 'mxl_fabric_flow_state', { flow_id: DATA.id, state: 'absent' })).toBe(1);

    rmSync(missing, { recursive: true });
    writeFileSync(missing, 'not a folder');
    await run.tick(1);
    expect(one(await run.scrape(), 'mxl_fabric_domain_up', { domain: missing })).toBe(0);
    expect(run.logs.filter((l) => l.includes('MXL domain cannot be read')).at(-1)).toMatch(/ENOTDIR/);
  });
});

describe('expect: defaults, never, domains that keep their flows, likely culprits', () => {
  it('a flow a domain found is when_live and leaves with its folder; an always domain keeps it as absent', async () => {
    const loose = makeDomain();
    const strict = makeDomain();
    const video = sims()[0]!;
    const data = sims()[2]!;
    startFlow(loose, video);
    startFlow(strict, data);
    run = await startDaemon('rxe_6_1', `
sampling: { interval: 1s, window: 4s }
domains:
  - { path: ${loose}, device: rxe0, direction: tx }
  - { path: ${strict}, device: rxe0, direction: tx, expect: always }
`);
    const port = new Port(run);
    await port.second(0, 0, [video, data]);
    let m = await run.scrape();
    expect(one(m, 'mxl_fabric_flow_expected', { flow_id: VIDEO.id, expect: 'when_live' })).toBe(0);
    expect(one(m, 'mxl_fabric_flow_expected', { flow_id: DATA.id, expect: 'always' })).toBe(1);
    stopFlow(video);
    stopFlow(data);
    await port.second(0, 0);
    m = await run.scrape();
    expect(one(m, 'mxl_fabric_flow_info', { flow_id: VIDEO.id })).toBeUndefined();
    expect(one(m, 'mxl_fabric_flow_live', { flow_id: VIDEO.id })).toBeUndefined();
    expect(one(m, 'mxl_fabric_flow_info', { flow_id: DATA.id, origin: 'domain' })).toBe(1);
    expect(one(m, 'mxl_fabric_flow_live', { flow_id: DATA.id })).toBe(0);
    expect(one(m, 'mxl_fabric_flow_state', { flow_id: DATA.id, state: 'absent' })).toBe(1);
    expect(one(m, 'mxl_fabric_port_idle', TX)).toBe(1);
  });

  it('names the likely culprit of a drift on both sides: a flow missing, a never flow on the wire', async () => {
    run = await startDaemon('rxe_6_1', `
sampling: { interval: 1s, window: 4s }
drift: { tolerance: 0.05 }
ports: [{ device: rxe0, port: 1, mtu: auto }]
flows:
  - { flow: flows/v210_1080p2997.json, device: rxe0, direction: tx }
  - { flow: flows/audio_2ch_48k.json, device: rxe0, direction: tx }
  - { flow: flows/data_60.json, device: rxe0, direction: tx, expect: never }
`);
    const video = await predicted(run, flowLabels(VIDEO.id));
    const audio = await predicted(run, flowLabels(AUDIO.id));
    const data = await predicted(run, flowLabels(DATA.id));
    let m = await run.scrape();
    // no domain: video and audio are `always` with unknown state and count; data is `never`
    expect(one(m, 'mxl_fabric_port_predicted_bytes_per_second', { ...TX, layer: 'l2' })).toBeCloseTo(video.l2 + audio.l2, 6);
    expect(one(m, 'mxl_fabric_port_provisioned_bytes_per_second', { ...TX, layer: 'l2' })).toBeCloseTo(video.l2 + audio.l2 + data.l2, 6);
    const port = new Port(run);
    for (let i = 0; i < 5; i++) await port.second(audio.packets + data.packets, audio.l2 + data.l2); // the video is not sent
    m = await run.scrape();
    expect(one(m, 'mxl_fabric_port_unexplained_bytes_per_second', { ...TX, layer: 'l2' })).toBeCloseTo(data.l2 - video.l2, 0);
    const culprits = series(m, 'mxl_fabric_port_drift_culprit_bytes_per_second', TX);
    // traffic missing: only the counted flows can be missing (the never flow cannot)
    expect([...culprits.keys()].map((k) => /rank="(\d)",flow_id="([^"]+)"/.exec(k)!.slice(1).join(' '))).toEqual([
      `1 ${VIDEO.id}`, `2 ${AUDIO.id}`,
    ]);
    expect(one(m, 'mxl_fabric_port_drift_culprit_bytes_per_second', { ...TX, rank: '1' })).toBeCloseTo(video.l2, 6);
    expect(one(m, 'mxl_fabric_port_drift_culprit_bytes_per_second', { ...TX, rank: '1', label: 'Camera 1 video' })).toBeDefined();

    for (let i = 0; i < 5; i++) await port.second(video.packets + audio.packets + data.packets, video.l2 + audio.l2 + data.l2);
    m = await run.scrape();
    // +data on a 145 MB/s port is within the tolerance: no culprit is named
    expect(series(m, 'mxl_fabric_port_drift_culprit_bytes_per_second', TX).size).toBe(0);
  });

  it('refuses an unknown expect with its position', async () => {
    const { parseConfig } = await import('../../src/config/load.js');
    expect(() => parseConfig('c.yaml', 'domains:\n  - { path: /dev/shm/mxl, device: rxe0, direction: tx, expect: sometimes }\n')).toThrow(
      /c\.yaml:2:64: domains\[0\]\.expect: "sometimes" is not one of "always", "when_live", "never"/,
    );
  });
});
