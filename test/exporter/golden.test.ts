/**
 * The exposition is a contract: for each scenario (a fixture sysfs tree, a config, counter
 * steps on a manual clock) the exact text of the exporter's own families (`mxl_fabric_*`) is
 * compared with a checked-in file under test/exporter/golden/, as node_exporter does with its
 * e2e-output.txt. The whole live scrape (prom-client's process and Node.js families included)
 * must also pass `promtool check metrics` with no complaint.
 *
 * After adding or changing a family, regenerate the files and review the diff:
 *   UPDATE_GOLDEN=1 npx vitest run test/exporter/golden.test.ts
 */
import { describe, it, expect, afterEach } from 'vitest';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { startDaemon, type Running } from './harness.js';
import { needs, tool } from '../deploy/tools.js';
import { addFlow, commit, makeDomain } from '../domain/mxl-domain.mjs';
import type { FixtureName, SysfsFixture } from '../fixtures/sysfs.js';
import type { DaemonOptions } from '../../src/exporter/daemon.js';
import { mlx5EthtoolAndDcb } from './fabric-measurement.js';
import { FakeRestrackKernel } from '../sources/restrack/fake-kernel.js';
import { ProcFixture, mapsLine } from '../sources/procfs/fixture.js';

let restrack: FakeRestrackKernel | undefined;
let proc: ProcFixture | undefined;
let connectionsDomain = '';
/** The model's packets per second for VIDEO_FLOW on rxe0 (flow_predicted_packets_per_second in rxe_connections.prom). */
const VIDEO_PACKETS_PER_SECOND = 33_750;
/** Of the port's first second of video packets, those the flow's second sender sends (the restrack case). */
const SECOND_SENDER_PACKETS = 1000;

const GOLDEN_DIR = join(__dirname, 'golden');
const UPDATE = process.env.UPDATE_GOLDEN === '1';
const promtool = tool('promtool', 'prometheus');

/**
 * Values that depend on the wall clock, the build or a temporary path, and nothing else: each is
 * replaced by a fixed word so the rest of the text can be compared byte for byte.
 */
const VOLATILE: readonly [RegExp, string][] = [
  [/^(mxl_fabric_exporter_build_info\{.*revision=")[^"]*(".*nodeversion=")[^"]*(".*)$/m, '$1REVISION$2NODE$3'],
  [/^(mxl_fabric_exporter_config_last_reload_success_timestamp_seconds) .*$/m, '$1 TIMESTAMP'],
  [/^(mxl_fabric_exporter_sample_duration_seconds) .*$/gm, '$1 DURATION'],
  [/^(mxl_fabric_connections_last_read_timestamp_seconds\{.*\}) .*$/gm, '$1 TIMESTAMP'],
  [/^(mxl_fabric_flow_last_write_age_seconds\{.*\}) .*$/gm, '$1 AGE'],
  [/domain="[^"]*"/g, 'domain="DOMAIN"'],
];

/** The exporter's own families, volatile values masked. */
export function ownFamilies(scrape: string): string {
  const own = scrape.split('\n').filter((l) => /^(# (HELP|TYPE) )?mxl_fabric_/.test(l)).join('\n');
  return `${VOLATILE.reduce((text, [re, by]) => text.replace(re, by), own)}\n`;
}

interface Scenario {
  readonly name: string;
  readonly fixture: FixtureName | 'empty';
  readonly config: (ctx: { domain: string }) => string;
  readonly prepare?: (fx: Running['fx']) => void;
  /** Daemon options, e.g. a measurement with sources a fake sysfs cannot give (ethtool, DCB). */
  readonly options?: (fx: SysfsFixture) => Partial<DaemonOptions>;
  /** Counter steps on the manual clock; each `await run.tick()` is one sample. */
  readonly drive: (run: Running, ctx: { videoFlowDir: string }) => Promise<void>;
}

const VIDEO_FLOW = {
  id: '0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d21', label: 'Camera 2 video', format: 'urn:x-nmos:format:video',
  tags: { 'urn:x-nmos:tag:grouphint/v1.0': ['Camera 2:Video'] }, media_type: 'video/v210',
  grain_rate: { numerator: 25 }, frame_width: 1920, frame_height: 1080, interlace_mode: 'progressive',
};

/** The mlx5_roce scenarios' config, `extra` lines after `sampling`. */
const mlx5RoceConfig = (extra: string): string => `
sampling: { interval: 1s, window: 4s }
${extra}ports:
  - { device: mlx5_0, port: 1, provider: rdma_rocev2_mxl_v1, mtu: 4096, capacity: 100Gbps, headroom: 0.8 }
flows:
  - { flow: flows/v210_1080p2997.json, device: mlx5_0, direction: tx }
  - { flow: flows/data_60.json, device: mlx5_0, direction: rx }
`;

/** mlx5_0's PMA counters (octets / 4) over three samples. */
async function driveMlx5Roce(run: Running): Promise<void> {
  for (let i = 1; i <= 3; i++) {
    run.fx.setCounter('mlx5_0', 1, 'counters', 'port_xmit_data', 1_000_000 + i * 42_000_000);
    run.fx.setCounter('mlx5_0', 1, 'counters', 'port_xmit_packets', 500 + i * 41_000);
    await run.tick(1);
  }
}

const SCENARIOS: readonly Scenario[] = [
  {
    // rxe on Linux 6.1: hw_counters packets and netdev bytes, traffic exactly as the model says.
    name: 'rxe_6_1',
    fixture: 'rxe_6_1',
    config: () => `
sampling: { interval: 1s, window: 4s }
drift: { tolerance: 0.05 }
ports:
  - { device: rxe0, port: 1, provider: rdma_rocev2, mtu: auto, capacity: auto }
flows:
  - { flow: flows/data_60.json, device: rxe0, port: 1, direction: tx }
  - { flow: flows/audio_2ch_48k.json, device: rxe0, port: 1, direction: rx }
`,
    drive: async (run) => {
      let pkts = 200n;
      let bytes = 13_420_822n;
      for (let i = 0; i < 3; i++) {
        pkts += 60n;
        bytes += 249_240n;
        run.fx.setCounter('rxe0', 1, 'hw_counters', 'sent_pkts', pkts);
        run.fx.setNetdevStat('veth0', 'tx_bytes', bytes);
        await run.tick(1);
      }
    },
  },
  {
    // mlx5 RoCE: PMA counters (octets / 4) and hw_counters, configured MTU and capacity.
    name: 'mlx5_roce',
    fixture: 'mlx5_roce',
    config: () => mlx5RoceConfig(''),
    drive: driveMlx5Roce,
  },
  {
    // The mlx5_roce scenario at the smallest series budget: no flow_predicted_bytes_per_second.
    name: 'mlx5_roce_flow_layers_min',
    fixture: 'mlx5_roce',
    config: () => mlx5RoceConfig('metrics: { flow_layers: [] }\n'),
    drive: driveMlx5Roce,
  },
  {
    // mlx5 with what only the real /sys gives: the netdev's ethtool statistics (mlx5_core's
    // captured table: PFC pause frames and durations per priority, discards) and DCB netlink
    // (PFC on priority 3), so every fabric-health family has samples.
    name: 'mlx5_fabric_health',
    fixture: 'mlx5_roce',
    config: () => `
ports:
  - { device: mlx5_0, port: 1, provider: rdma_rocev2, mtu: 4096, capacity: 100Gbps }
flows:
  - { flow: flows/data_60.json, device: mlx5_0, direction: tx }
`,
    options: mlx5EthtoolAndDcb,
    drive: async (run) => {
      await run.tick(1);
      await run.tick(1);
    },
  },
  {
    // A 32-bit PMA counter stuck at all ones.
    name: 'saturated',
    fixture: 'saturated',
    config: () => 'ports: [{ device: mlx4_0, port: 1, mtu: 2048 }]\nflows: []\n',
    drive: async (run) => {
      await run.tick(1);
      await run.tick(1);
    },
  },
  {
    // Counter files that answer EINVAL, and a configured port the host does not have.
    name: 'einval',
    fixture: 'einval',
    prepare: (fx) => fx.applyErrorInjections(),
    config: () => 'ports: [{ device: mlx5_9, port: 1, mtu: 4096 }]\nflows: []\n',
    drive: async (run) => {
      await run.tick(1);
      await run.tick(1);
    },
  },
  // RDMA connections from restrack (an in-memory kernel): an MXL-like sender with a cm_id whose
  // sq_psn moves as sent_pkts does (coverage 1), a QP without cm_id receiving, one in ERR, one in RTR,
  // and one whose process is killed before the last tick (connection_process_exited at qp).
  // A second sender of the video flow (its only connection, to another receiver) sends the first
  // tick's first packets and is closed before the last tick while it runs: superseded
  // (connection_superseded at qp), the flow's connection on its port and direction being up.
  // The sender's process (a /proc fixture) maps the domain's video flow: the connection carries
  // it, measured at exactly its predicted packets per second (drift 0). One series set per QP
  // (metrics.connection_series: qp), and per group at the default (flow; issue 35).
  connectionsCase('rxe_connections', 'metrics: { connection_series: qp }\n'),
  connectionsCase('rxe_connection_groups', ''),
  {
    // No RDMA at all: predictions only; plus a flow found in an MXL domain.
    name: 'no_rdma_domain',
    fixture: 'empty',
    config: ({ domain }) => `
sampling: { interval: 1s, window: 4s }
ports: [{ device: rxe0, port: 1, provider: rdma_rocev2, mtu: 4096, capacity: 10Gb/s }]
flows:
  - { flow: flows/data_60.json, device: rxe0, direction: tx }
domains:
  - { path: ${domain}, device: rxe0, direction: tx }
`,
    drive: async (run, { videoFlowDir }) => {
      // The writer commits 25 grains a second, as the flow's grain rate says.
      for (let i = 1; i <= 3; i++) {
        commit(videoFlowDir, 5000n + 25n * BigInt(i), 1n);
        await run.tick(1);
      }
    },
  },
];

/** Each scenario's whole scrape, for its promtool test. */
const scrapes = new Map<string, string>();

let run: Running | undefined;
afterEach(async () => {
  await run?.stop();
  run = undefined;
  proc?.close();
  proc = undefined;
});

describe('golden exposition', () => {
  for (const s of SCENARIOS) {
    it(`${s.name}: the exporter's own families are exactly as checked in`, async () => {
      const domain = makeDomain();
      const videoFlowDir = addFlow(domain, VIDEO_FLOW, { id: VIDEO_FLOW.id, format: 1, rate: [25n, 1n], grainCount: 2, headIndex: 5000n, lastWriteTime: 1n });
      run = await startDaemon(s.fixture, s.config({ domain }), s.prepare, s.options);
      await s.drive(run, { videoFlowDir });
      const scrape = await (await run.get('/metrics')).text();
      const file = join(GOLDEN_DIR, `${s.name}.prom`);
      const own = ownFamilies(scrape);
      if (UPDATE) {
        mkdirSync(GOLDEN_DIR, { recursive: true });
        writeFileSync(file, own);
      }
      expect(existsSync(file), `${file} is missing: UPDATE_GOLDEN=1 npx vitest run test/exporter/golden.test.ts`).toBe(true);
      expect(own).toBe(readFileSync(file, 'utf8'));
      scrapes.set(s.name, scrape);
    });

    // The whole scrape (prom-client's families too) of the test above.
    needs(promtool).it(`${s.name}: promtool check metrics finds nothing in the whole scrape`, () => {
      const scrape = scrapes.get(s.name);
      expect(scrape, 'the golden test of this scenario did not scrape').toBeDefined();
      const lint = spawnSync(promtool.require(), ['check', 'metrics'], { input: scrape, encoding: 'utf8' });
      expect(`${lint.stdout}${lint.stderr}`).toBe('');
      expect(lint.status).toBe(0);
    });
  }
});

/** The restrack golden case (see its uses) with `metrics` at the top of its config. */
function connectionsCase(name: string, metrics: string): Scenario {
  return {
    name,
    fixture: 'rxe_6_1',
    config: ({ domain }) => {
      connectionsDomain = domain;
      return `${metrics}sampling: { interval: 1s, window: 4s }
ports:
  - { device: rxe0, port: 1, provider: rdma_rocev2, mtu: auto, capacity: auto }
flows: []
domains:
  - { path: ${domain}, device: rxe0, direction: tx }
`;
    },
    options: () => {
      proc = ProcFixture.create();
      proc.add({
        pid: 202, comm: 'mxl-fabrics-dem', startTicks: 4242n, cgroup: `0::/system.slice/docker-${'c'.repeat(64)}.scope\n`,
        maps: `${mapsLine(0x7f0000000000n, 1, 'rw-s', { path: `${connectionsDomain}/${VIDEO_FLOW.id}.mxl-flow/grains/data.0`, inode: 12 })}\n`,
      });
      proc.add({ pid: 309, comm: 'mxl-fabrics-dem', startTicks: 5000n });
      proc.add({
        pid: 203, comm: 'mxl-fabrics-dem', startTicks: 4343n,
        maps: `${mapsLine(0x7f0000000000n, 1, 'rw-s', { path: `${connectionsDomain}/${VIDEO_FLOW.id}.mxl-flow/grains/data.0`, inode: 12 })}\n`,
      });
      restrack = new FakeRestrackKernel();
      restrack.device(3, 'rxe0', [
        { lqpn: 1, sqPsn: 2, type: 1 },
        { lqpn: 33, sqPsn: 16_777_200, rqPsn: 500, rqpn: 33, pid: 202 },
        { lqpn: 40, sqPsn: 7, rqPsn: 1000, rqpn: 41, pid: 300 },
        { lqpn: 50, sqPsn: 9, rqPsn: 9, rqpn: 51, pid: 301, state: 6 },
        // a responder in RTR (perftest's server without -R never moves to RTS): it receives, it is up
        { lqpn: 60, sqPsn: 3, rqPsn: 70, rqpn: 61, pid: 300, state: 2 },
        // an initiator killed before the last tick (issue 32): its QP and its process go together
        { lqpn: 70, sqPsn: 11, rqPsn: 11, rqpn: 71, pid: 309 },
        // the video flow's second sender, closed before the last tick (its process runs on)
        { lqpn: 32, sqPsn: 900, rqPsn: 1, rqpn: 32, pid: 203 },
      ], [
        { lqpn: 33, src: ['10.99.0.1', 48130], dst: ['10.99.0.2', 1312], pid: 202 },
        { lqpn: 70, src: ['10.99.0.1', 44056], dst: ['10.99.0.2', 1312], pid: 309 },
        { lqpn: 32, src: ['10.99.0.1', 48120], dst: ['10.99.0.3', 1312], pid: 203 },
      ]);
      const k = restrack;
      return { restrack: () => ({ ok: true, transport: k.transport() }), procRoot: proc.root };
    },
    drive: async (run) => {
      let pkts = 200n;
      for (let i = 0; i < 3; i++) {
        pkts += BigInt(VIDEO_PACKETS_PER_SECOND);
        run.fx.setCounter('rxe0', 1, 'hw_counters', 'sent_pkts', pkts);
        run.fx.setCounter('rxe0', 1, 'hw_counters', 'rcvd_pkts', 100n + 30n * BigInt(i + 1));
        const qps = restrack!.qps.get('rxe0')!;
        // The port counts both senders: the second sends some of the first tick's packets.
        const second = i === 0 ? SECOND_SENDER_PACKETS : 0;
        qps[1]!.sqPsn = (qps[1]!.sqPsn + VIDEO_PACKETS_PER_SECOND - second) % 2 ** 24; // wraps past 2^24 on the first tick
        qps[6]!.sqPsn += second;
        qps[2]!.rqPsn = qps[2]!.rqPsn! + 30;
        qps[4]!.rqPsn = qps[4]!.rqPsn! + 5;
        if (i === 2) {
          proc!.remove(309);
          restrack!.qps.set('rxe0', qps.filter((q) => q.pid !== 309 && q.pid !== 203));
          restrack!.cmIds.set('rxe0', restrack!.cmIds.get('rxe0')!.filter((c) => c.pid !== 309 && c.pid !== 203));
        }
        await run.tick(1);
      }
    },
  };
}
