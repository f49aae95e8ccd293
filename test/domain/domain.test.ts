import { describe, it, expect, afterEach } from 'vitest';
import { readFileSync, rmSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { one, series, startDaemon, FLOWS, type Running } from '../exporter/harness.js';
import { addFlow, commit, makeDomain } from './mxl-domain.mjs';
import { Writer } from './writer-process.js';
import { loadPosix } from '../../src/ffi/posix.js';
import { decodeFlowInfo } from '../../src/domain/flowinfo.js';
import { flowHeader } from './mxl-domain.mjs';

const flowJson = (name: string): Record<string, unknown> => JSON.parse(readFileSync(join(FLOWS, name), 'utf8')) as Record<string, unknown>;
const VIDEO = flowJson('v210_1080p2997.json'); // "Camera 1 video", 30000/1001
const AUDIO = flowJson('audio_2ch_48k.json'); // "Camera 1 audio", 2 ch, 48 kHz
const DATA = flowJson('data_60.json'); // "Camera 1 ANC", 60/s
const OTHER = { ...DATA, id: '0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d42', label: 'Studio B ANC', tags: { 'urn:x-nmos:tag:grouphint/v1.0': ['Studio B:Data'] } };
const tai = (): bigint => loadPosix().taiNowNs();

let run: Running | undefined;
let writer: Writer | undefined;
afterEach(async () => {
  await writer?.stop();
  writer = undefined;
  await run?.stop();
  run = undefined;
});

describe('mxlFlowInfo', () => {
  it('decodes the documented offsets', () => {
    const info = decodeFlowInfo(flowHeader({ id: '0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d01', format: 1, rate: [30000n, 1001n], grainCount: 7, headIndex: 123456789n, lastWriteTime: 42n }));
    expect(info).toMatchObject({ version: 1, size: 2048, id: '0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d01', format: 'video', rate: { num: 30000n, den: 1001n }, grainCount: 7, headIndex: 123456789n, lastWriteTime: 42n });
    expect(() => decodeFlowInfo(Buffer.alloc(2048))).toThrow(/version 0 is not supported/);
  });
});

describe('MXL domain discovery', () => {
  it('discovers flows, measures grain rates and writer state, and follows removal', async () => {
    const domain = makeDomain();
    const t0 = tai();
    const video = addFlow(domain, VIDEO, { id: VIDEO.id as string, format: 1, rate: [30000n, 1001n], grainCount: 3, headIndex: 1000n, lastWriteTime: t0 });
    const audio = addFlow(domain, AUDIO, { id: AUDIO.id as string, format: 2, rate: [48000n, 1n], channelCount: 2, headIndex: 480_000n, lastWriteTime: t0 - 5_000_000_000n });
    addFlow(domain, OTHER, { id: OTHER.id, format: 3, rate: [60n, 1n], grainCount: 2 });
    addFlow(domain, '{ "id": "0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d43", "label": ', { id: '0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d43', format: 3, rate: [60n, 1n] });
    mkdirSync(join(domain, '.mxl-tmp-unfinished'));

    run = await startDaemon('empty', `
sampling: { interval: 1s, window: 4s }
ports: [{ device: rxe0, port: 1, provider: rdma_rocev2, mtu: 4096 }]
flows:
  - { flow: flows/data_60.json, device: rxe0, direction: tx }
domains:
  - { path: ${domain}, device: rxe0, direction: tx, include: ["Camera 1:*"] }
`);
    writer = await Writer.start(join(video, 'data'));
    let m = await run.scrape();
    const info = series(m, 'mxl_fabric_flow_info');
    expect([...info.keys()].map((k) => /label="([^"]+)".*origin="(\w+)"/.exec(k)!.slice(1).join(' ')).sort()).toEqual([
      'Camera 1 ANC config', 'Camera 1 audio domain', 'Camera 1 video domain',
    ]);
    expect(one(m, 'mxl_fabric_domain_flow_definition_valid', { flow_id: '0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d43' })).toBe(0);
    expect(run.logs.join('')).toMatch(/MXL flow definition unusable; flow skipped.*flow_id=0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d43/);

    // One second of writes: 30 video grains, 48,000 audio samples (100 grains of 10 ms).
    expect(await writer.advance(30, tai())).toBe('ok 1030');
    commit(audio, 528_000n, t0 - 5_000_000_000n);
    await run.tick(1);
    m = await run.scrape();
    expect(one(m, 'mxl_fabric_flow_measured_grains_per_second', { flow_id: VIDEO.id as string })).toBe(30);
    expect(one(m, 'mxl_fabric_flow_measured_bytes_per_second', { flow_id: VIDEO.id as string, layer: 'media' })).toBe(30 * 5_529_600);
    expect(one(m, 'mxl_fabric_flow_drift_ratio', { flow_id: VIDEO.id as string })).toBeCloseTo(0.001, 12); // 30 / (30000/1001) - 1
    expect(one(m, 'mxl_fabric_flow_measured_grains_per_second', { flow_id: AUDIO.id as string })).toBe(100);
    expect(one(m, 'mxl_fabric_flow_measured_bytes_per_second', { flow_id: AUDIO.id as string })).toBe(48_000 * 2 * 4);
    expect(one(m, 'mxl_fabric_flow_drift_ratio', { flow_id: AUDIO.id as string })).toBe(0);
    expect(one(m, 'mxl_fabric_flow_writer_active', { flow_id: VIDEO.id as string })).toBe(1);
    expect(one(m, 'mxl_fabric_flow_writer_active', { flow_id: AUDIO.id as string })).toBe(0);
    // The video writer stamped lastWriteTime just now. MXL's audio writer never stamps it (its
    // header still says 5 s ago): its age comes from headIndex, which moved in this tick.
    expect(one(m, 'mxl_fabric_flow_last_write_age_seconds', { flow_id: VIDEO.id as string })).toBeLessThan(2);
    expect(one(m, 'mxl_fabric_flow_last_write_age_seconds', { flow_id: AUDIO.id as string })).toBe(0);
    // The configured ANC flow is covered by the domain but not in it: absent, so only the two live
    // flows count now; every bound flow stays in the provisioned sum.
    expect(one(m, 'mxl_fabric_flow_state', { flow_id: DATA.id as string, state: 'absent' })).toBe(1);
    expect(one(m, 'mxl_fabric_port_predicted_packets_per_second', { device: 'rxe0', direction: 'tx' })).toBeCloseTo(
      (1365 * 30000) / 1001 + 100, 9,
    );
    expect(one(m, 'mxl_fabric_port_provisioned_packets_per_second', { device: 'rxe0', direction: 'tx' })).toBeCloseTo(
      120 + (1365 * 30000) / 1001 + 100, 9,
    );

    await writer.stop();
    writer = undefined;
    await run.tick(1);
    expect(one(await run.scrape(), 'mxl_fabric_flow_writer_active', { flow_id: VIDEO.id as string })).toBe(0);

    rmSync(video, { recursive: true });
    await run.tick(1);
    m = await run.scrape();
    expect(one(m, 'mxl_fabric_flow_info', { flow_id: VIDEO.id as string })).toBeUndefined();
    expect(one(m, 'mxl_fabric_flow_measured_grains_per_second', { flow_id: VIDEO.id as string })).toBeUndefined();
    expect(one(m, 'mxl_fabric_flow_info', { flow_id: AUDIO.id as string })).toBe(1);
    expect(run.logs.join('')).toMatch(/MXL flow removed from domain.*flow_id=0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d01/);
  });

  it('reports a bad domain entry with its position', async () => {
    const { parseConfig } = await import('../../src/config/load.js');
    expect(() => parseConfig('c.yaml', 'domains:\n  - { path: relative/dir, device: rxe0, direction: tx, include: [1] }\n')).toThrow(
      /c\.yaml:2:13: domains\[0\]\.path: domain path "relative\/dir" must be absolute\nc\.yaml:2:66: domains\[0\]\.include\[0\]: expected a non-empty string/,
    );
  });
});
