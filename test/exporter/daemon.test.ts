import { describe, it, expect, afterEach } from 'vitest';
import { writeFileSync, rmSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { one, series, startDaemon, stopDaemons, type Running } from './harness.js';

// rxe0 on veth0 (fixture rxe_6_1): active IB MTU 4096, so each 4096-byte data grain
// is one packet: 60 packets/s and 60 x (4096 + 44 + 14) = 249,240 l2 bytes/s.
const RXE_CONFIG = `
sampling: { interval: 1s, window: 4s }
drift: { tolerance: 0.05 }
ports:
  - { device: rxe0, port: 1, provider: rdma_rocev2, mtu: auto, capacity: auto }
flows:
  - { flow: flows/data_60.json, device: rxe0, port: 1, direction: tx }
`;

let run: Running | undefined;
afterEach(stopDaemons);

/** Advances rxe0's tx counters as `seconds` of traffic at the given rates. */
async function traffic(r: Running, state: { pkts: bigint; bytes: bigint }, pktsPerSecond: number, bytesPerSecond: number, seconds = 1): Promise<void> {
  state.pkts += BigInt(pktsPerSecond * seconds);
  state.bytes += BigInt(bytesPerSecond * seconds);
  r.fx.setCounter('rxe0', 1, 'hw_counters', 'sent_pkts', state.pkts);
  r.fx.setNetdevStat('veth0', 'tx_bytes', state.bytes);
  await r.tick(seconds);
}

describe('daemon over HTTP on fixture trees', () => {
  it('measures exact rates and zero drift when traffic matches the model', async () => {
    run = await startDaemon('rxe_6_1', RXE_CONFIG);
    const c = { pkts: 200n, bytes: 13_420_822n };
    for (let i = 0; i < 3; i++) await traffic(run, c, 60, 249_240);
    const m = await run.scrape();
    const port = { device: 'rxe0', port: '1', direction: 'tx' };
    expect(one(m, 'mxl_fabric_port_predicted_packets_per_second', port)).toBe(60);
    expect(one(m, 'mxl_fabric_port_predicted_bytes_per_second', { ...port, layer: 'l2' })).toBe(249_240);
    expect(one(m, 'mxl_fabric_port_measured_packets_per_second', { ...port, source: 'sysfs_hw_counters' })).toBe(60);
    expect(one(m, 'mxl_fabric_port_measured_bytes_per_second', { ...port, source: 'netdev', layer: 'l2' })).toBe(249_240);
    expect(one(m, 'mxl_fabric_port_drift_ratio', { ...port, quantity: 'bytes' })).toBe(0);
    expect(one(m, 'mxl_fabric_port_drift_ratio', { ...port, quantity: 'packets' })).toBe(0);
    expect(one(m, 'mxl_fabric_port_active_mtu_bytes', { device: 'rxe0' })).toBe(4096);
    expect(one(m, 'mxl_fabric_port_model_mtu_bytes', { device: 'rxe0', from: 'port' })).toBe(4140);
    expect(one(m, 'mxl_fabric_port_capacity_bytes_per_second', { device: 'rxe0' })).toBe(1.25e9);
    expect(one(m, 'mxl_fabric_port_up', { device: 'rxe0' })).toBe(1);
    expect(one(m, 'mxl_fabric_port_transmitted_packets_total', { device: 'rxe0', source: 'sysfs_hw_counters' })).toBe(380);
    expect(one(m, 'mxl_fabric_port_info', { device: 'rxe0', netdev: 'veth0', link_layer: 'Ethernet', state: 'ACTIVE' })).toBe(1);
    expect(one(m, 'mxl_fabric_exporter_config_last_reload_successful')).toBe(1);
    expect(one(m, 'mxl_fabric_exporter_build_info')).toBe(1);
    expect(series(m, 'process_resident_memory_bytes').size).toBe(1);
  });

  it('reports drift when the port carries 10 % more than predicted', async () => {
    run = await startDaemon('rxe_6_1', RXE_CONFIG);
    const c = { pkts: 0n, bytes: 0n };
    for (let i = 0; i < 4; i++) await traffic(run, c, 66, 274_164);
    const m = await run.scrape();
    expect(one(m, 'mxl_fabric_port_drift_ratio', { device: 'rxe0', direction: 'tx', quantity: 'packets' })).toBeCloseTo(0.1, 12);
    expect(one(m, 'mxl_fabric_port_drift_ratio', { device: 'rxe0', direction: 'tx', quantity: 'bytes' })).toBeCloseTo(0.1, 12);
    expect(one(m, 'mxl_fabric_port_drift_ratio', { device: 'rxe0', direction: 'rx' })).toBeUndefined();
  });

  it('a counter reset (driver reload) never gives a negative or huge rate, and totals stay monotonic', async () => {
    run = await startDaemon('rxe_6_1', RXE_CONFIG);
    const c = { pkts: 200n, bytes: 13_420_822n };
    await traffic(run, c, 60, 249_240);
    await traffic(run, c, 60, 249_240);
    const before = one(await run.scrape(), 'mxl_fabric_port_transmitted_packets_total', { source: 'sysfs_hw_counters' })!;
    c.pkts = 0n;
    c.bytes = 0n;
    await traffic(run, c, 60, 249_240); // counters restart near zero
    let m = await run.scrape();
    expect(one(m, 'mxl_fabric_port_measured_packets_per_second', { direction: 'tx', source: 'sysfs_hw_counters' })).toBe(60);
    expect(one(m, 'mxl_fabric_port_transmitted_packets_total', { source: 'sysfs_hw_counters' })).toBe(before);
    await traffic(run, c, 60, 249_240);
    m = await run.scrape();
    expect(one(m, 'mxl_fabric_port_measured_packets_per_second', { direction: 'tx', source: 'sysfs_hw_counters' })).toBe(60);
    expect(one(m, 'mxl_fabric_port_transmitted_packets_total', { source: 'sysfs_hw_counters' })).toBe(before + 60);
  });

  it('a saturated 32-bit PMA counter has no rate and is flagged', async () => {
    run = await startDaemon('saturated', `ports: [{ device: mlx4_0, port: 1, mtu: 2048 }]\nflows: []\n`);
    await run.tick();
    await run.tick();
    const m = await run.scrape();
    expect(one(m, 'mxl_fabric_port_stat_saturated', { device: 'mlx4_0', counter: 'port_xmit_data' })).toBe(1);
    expect(one(m, 'mxl_fabric_port_measured_bytes_per_second', { device: 'mlx4_0', direction: 'tx', source: 'sysfs_counters' })).toBeUndefined();
  });

  it('a vanished device drops only its series; it comes back when re-added', async () => {
    run = await startDaemon('rxe_6_1', RXE_CONFIG);
    await run.tick();
    run.fx.removeDevice('rxe0');
    await run.tick();
    let m = await run.scrape();
    expect(one(m, 'mxl_fabric_port_up', { device: 'rxe0' })).toBe(0);
    expect(series(m, 'mxl_fabric_port_info').size).toBe(0);
    expect(series(m, 'mxl_fabric_port_measured_packets_per_second').size).toBe(0);
    expect(one(m, 'mxl_fabric_port_predicted_packets_per_second', { device: 'rxe0', direction: 'tx' })).toBeUndefined(); // mtu auto: unknown now
    expect(one(m, 'mxl_fabric_flow_info', { device: 'rxe0' })).toBe(1);
    run.fx.readdDevice('rxe0');
    await run.tick();
    await run.tick();
    m = await run.scrape();
    expect(one(m, 'mxl_fabric_port_up', { device: 'rxe0' })).toBe(1);
    expect(one(m, 'mxl_fabric_port_measured_packets_per_second', { direction: 'tx', source: 'sysfs_hw_counters' })).toBe(0);
    expect(run.logs.join('')).toContain('msg="port vanished" device=rxe0');
  });

  it('a port going down shows in port_up and port_info', async () => {
    run = await startDaemon('rxe_6_1', RXE_CONFIG);
    run.fx.setPortState('rxe0', 1, 'DOWN');
    await run.tick();
    const m = await run.scrape();
    expect(one(m, 'mxl_fabric_port_up', { device: 'rxe0' })).toBe(0);
    expect(one(m, 'mxl_fabric_port_info', { device: 'rxe0', state: 'DOWN' })).toBe(1);
  });

  it('unreadable files fail only their own counters', async () => {
    run = await startDaemon('einval', 'flows: []\n', (fx) => fx.applyErrorInjections());
    await run.tick();
    await run.tick();
    const res = await run.get('/metrics');
    expect(res.status).toBe(200);
    const m = await run.scrape();
    expect(one(m, 'mxl_fabric_port_stat_up', { device: 'mlx5_2', counter: 'port_rcv_data' })).toBe(0);
    expect(one(m, 'mxl_fabric_port_stat_up', { device: 'mlx5_2', counter: 'np_cnp_sent' })).toBe(0);
    expect(one(m, 'mxl_fabric_port_stat_up', { device: 'mlx5_2', counter: 'port_xmit_data' })).toBe(1);
    expect(one(m, 'mxl_fabric_port_measured_bytes_per_second', { device: 'mlx5_2', direction: 'tx', source: 'sysfs_counters' })).toBeDefined();
    expect(one(m, 'mxl_fabric_port_measured_bytes_per_second', { device: 'mlx5_2', direction: 'rx', source: 'sysfs_counters' })).toBeUndefined();
    expect(one(m, 'mxl_fabric_exporter_read_errors_total', { device: 'mlx5_2', source: 'sysfs_counters' })).toBeGreaterThan(0);
  });

  it('serves every prediction and says so plainly on a host without RDMA', async () => {
    run = await startDaemon('empty', RXE_CONFIG.replace('mtu: auto', 'mtu: 4096'));
    const m = await run.scrape();
    expect(one(m, 'mxl_fabric_port_predicted_bytes_per_second', { device: 'rxe0', direction: 'tx', layer: 'wire' })).toBe(255_600);
    expect(one(m, 'mxl_fabric_exporter_rdma_ports')).toBe(0);
    expect(series(m, 'mxl_fabric_port_measured_bytes_per_second').size).toBe(0);
    const page = await (await run.get('/')).text();
    expect(page).toContain('No RDMA port was found');
    expect(page).toContain('<a href="/metrics">Metrics</a>');
    expect(run.logs.join('')).toContain('No RDMA port was found');
  });

  it('a failing route answers 500 "internal error" and logs the reason, never echoing it', async () => {
    run = await startDaemon('empty', 'flows: []\n');
    const metrics = (run.daemon as unknown as { metrics: { render(): Promise<Buffer[]>; renderGzip(): Promise<Buffer[]> } }).metrics;
    metrics.render = metrics.renderGzip = () => Promise.reject(new Error('secret /internal/path exploded')); // plain and gzip scrapes
    const res = await run.get('/metrics');
    expect(res.status).toBe(500);
    expect(await res.text()).toBe('internal error\n');
    expect(run.logs.join('')).toMatch(/level=error msg="request failed" err="secret \/internal\/path exploded"/);
  });

  it('answers only documented routes and methods', async () => {
    run = await startDaemon('empty', 'flows: []\n');
    expect((await run.get('/-/healthy')).status).toBe(200);
    expect((await run.get('/-/ready')).status).toBe(200);
    expect((await run.get('/nope')).status).toBe(404);
    const r = await run.get('/metrics', { method: 'POST' });
    expect(r.status).toBe(405);
    expect(r.headers.get('allow')).toBe('GET');
    expect((await run.get('/-/reload')).status).toBe(405);
    expect((await run.get('/metrics')).headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  });
});

describe('without the bounded reader (native/build/libmfe-reader.so missing)', () => {
  it('/-/ready is 503 naming the reader, the landing page says it in red, reads_bounded 0', async () => {
    run = await startDaemon('empty', 'flows: []\n', undefined, () => ({ readerLibrary: '/nonexistent/libmfe-reader.so' }));
    const ready = await run.get('/-/ready');
    expect(ready.status).toBe(503);
    expect(await ready.text()).toMatch(/^Not ready: bounded reader unavailable \(.*\/nonexistent\/libmfe-reader\.so.*\): reads run on the event loop with no timeout\n$/);
    const page = await (await run.get('/')).text();
    expect(page).toMatch(/<p class="alarm" id="reader">Reads are not bounded: the native reader \(native\/build\/libmfe-reader\.so\) is unavailable/);
    expect(one(await run.scrape(), 'mxl_fabric_exporter_reads_bounded')).toBe(0);
  });

  it('with the reader: ready, no alarm, reads_bounded 1', async () => {
    run = await startDaemon('empty', 'flows: []\n');
    expect(await (await run.get('/-/ready')).text()).toBe('Ready\n');
    expect(await (await run.get('/')).text()).not.toContain('class="alarm"');
    expect(one(await run.scrape(), 'mxl_fabric_exporter_reads_bounded')).toBe(1);
  });
});

/** A raw GET (fetch would decode gzip itself): status, headers, the body as sent. */
function rawGet(base: string, path: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('gzip', () => {
  it('gives scrapers that accept gzip the same exposition, gzipped once per tick', async () => {
    run = await startDaemon('rxe_6_1', RXE_CONFIG);
    await run.tick();
    const plain = await rawGet(run.base, '/metrics', { 'Accept-Encoding': 'identity' });
    const zipped = await rawGet(run.base, '/metrics', { 'Accept-Encoding': 'gzip, deflate' });
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(zipped.headers.vary).toBe('Accept-Encoding');
    expect(Number(zipped.headers['content-length'])).toBe(zipped.body.length);
    const text = gunzipSync(zipped.body).toString('utf8');
    const withoutProcess = (t: string): string => t.split('\n').filter((l) => l.includes('mxl_fabric_')).join('\n');
    expect(withoutProcess(text)).toBe(withoutProcess(plain.body.toString('utf8')));
    expect(zipped.body.length).toBeLessThan(plain.body.length);
    const again = await rawGet(run.base, '/metrics', { 'Accept-Encoding': 'gzip' });
    expect(again.body.equals(zipped.body)).toBe(true); // the same tick: the same bytes
  });
});

describe('reload', () => {
  it('POST /-/reload answers 403 without --web.enable-lifecycle; the reload itself (SIGHUP) still works', async () => {
    run = await startDaemon('rxe_6_1', RXE_CONFIG);
    writeFileSync(run.configFile, `${RXE_CONFIG}  - { flow: flows/audio_2ch_48k.json, device: rxe0, direction: tx }\n`);
    const refused = await run.get('/-/reload', { method: 'POST' });
    expect(refused.status).toBe(403);
    expect(await refused.text()).toBe('Lifecycle API is not enabled (start with --web.enable-lifecycle, or send SIGHUP).\n');
    expect(series(await run.scrape(), 'mxl_fabric_flow_info').size).toBe(1);
    expect(await run.daemon.reload()).toEqual({ ok: true });
    expect(series(await run.scrape(), 'mxl_fabric_flow_info').size).toBe(2);
  });

  it('applies a good config, keeps the old one on bad YAML, a bad flow or a deleted file', async () => {
    run = await startDaemon('rxe_6_1', RXE_CONFIG, undefined, () => ({ enableLifecycle: true }));
    const flowsOf = async (): Promise<number> => series(await run!.scrape(), 'mxl_fabric_flow_info').size;
    const reloadOk = async (): Promise<number | undefined> => one(await run!.scrape(), 'mxl_fabric_exporter_config_last_reload_successful');
    expect(await flowsOf()).toBe(1);

    writeFileSync(run.configFile, `${RXE_CONFIG}  - { flow: flows/audio_2ch_48k.json, device: rxe0, direction: tx }\n`);
    expect((await run.get('/-/reload', { method: 'POST' })).status).toBe(200);
    expect(await flowsOf()).toBe(2);

    writeFileSync(run.configFile, 'flows: [\n');
    const bad = await run.get('/-/reload', { method: 'POST' });
    expect(bad.status).toBe(500);
    expect(await bad.text()).toMatch(new RegExp(`^failed to reload config: ${run.configFile}:\\d+:\\d+: `));
    expect(await flowsOf()).toBe(2);
    expect(await reloadOk()).toBe(0);

    const flowFile = run.configFile.replace('config.yaml', 'flows/audio_2ch_48k.json');
    const goodFlow = readFileSync(flowFile, 'utf8');
    writeFileSync(run.configFile, `${RXE_CONFIG}  - { flow: flows/audio_2ch_48k.json, device: rxe0, direction: tx }\n`);
    writeFileSync(flowFile, goodFlow.replace('"bit_depth": 32', '"bit_depth": 24'));
    const badFlow = await (await run.get('/-/reload', { method: 'POST' })).text();
    expect(badFlow).toContain(`${flowFile}:11:16: bit_depth: MXL audio is 32- or 64-bit float, got 24`);
    expect(await flowsOf()).toBe(2);

    rmSync(run.configFile);
    expect((await run.get('/-/reload', { method: 'POST' })).status).toBe(500);
    expect(await flowsOf()).toBe(2);
    expect(await reloadOk()).toBe(0);
    expect(run.logs.join('')).toContain('config reload failed; keeping the running config');

    writeFileSync(flowFile, goodFlow);
    writeFileSync(run.configFile, RXE_CONFIG);
    expect((await run.get('/-/reload', { method: 'POST' })).status).toBe(200);
    expect(await flowsOf()).toBe(1);
    expect(await reloadOk()).toBe(1);
  });

  it('loads the file as it is when each reload is asked for: three at once, then two more (issue 33)', async () => {
    run = await startDaemon('rxe_6_1', RXE_CONFIG);
    const withTolerance = (t: number): string => RXE_CONFIG.replace('tolerance: 0.05', `tolerance: ${t}`);
    const tolerance = (): number => run!.daemon.state().config.driftTolerance;
    const asked: Promise<unknown>[] = [];
    for (const t of [0.01, 0.02, 0.03]) {
      writeFileSync(run.configFile, withTolerance(t));
      asked.push(run.daemon.reload());
    }
    expect(await Promise.all(asked)).toEqual([{ ok: true }, { ok: true }, { ok: true }]);
    expect(tolerance()).toBe(0.03);
    for (const t of [0.04, 0.06]) {
      writeFileSync(run.configFile, withTolerance(t));
      expect(await run.daemon.reload()).toEqual({ ok: true });
      expect(tolerance()).toBe(t);
    }
  });
});

describe('a connections schedule a port\'s link rate outruns (issue 33)', () => {
  const start400 = async (extra: string, check: (daemon: InstanceType<typeof import('../../src/exporter/daemon.js').Daemon>, started: unknown, file: string, logged: string) => void): Promise<void> => {
    const { Daemon } = await import('../../src/exporter/daemon.js');
    const { SysfsFixture } = await import('../fixtures/sysfs.js');
    const { createLogger } = await import('../../src/log.js');
    const { writeConfig } = await import('./harness.js');
    const { Writable } = await import('node:stream');
    const fx = SysfsFixture.copy('einval');
    const file = writeConfig(`${extra}ports: [{ device: mlx5_2, port: 1, ib_mtu: 4096, capacity: auto }]\nflows: []\n`);
    let logged = '';
    const sink = new Writable({ write(chunk: Buffer, _e, done): void { logged += chunk.toString(); done(); } });
    const daemon = new Daemon({ configFile: file, listenAddress: '127.0.0.1:0', telemetryPath: '/metrics', sysfsRoot: fx.root, log: createLogger('warn', 'json', sink), manualClock: () => 1n });
    try {
      const started = await daemon.start().then(() => undefined, (err: unknown) => err);
      check(daemon, started, file, logged);
    } finally {
      await daemon.stop();
      fx.cleanup();
    }
  };

  it('is refused at start once the ports are read: capacity auto on a 400 Gb/s port, connections.interval 1s', async () => {
    const { InputError, formatProblem } = await import('../../src/input/problems.js');
    await start400('connections: { interval: 1s }\n', (_d, e, file) => {
      expect(e).toBeInstanceOf(InputError);
      expect((e as InstanceType<typeof InputError>).problems.map(formatProblem)).toEqual([
        expect.stringMatching(new RegExp(`^${file}:1:26: connections\\.interval: connections are read every 1000 ms .* port mlx5_2/1 \\(400 Gb/s, 4096-byte packets\\) .* in 687 ms`)),
      ]);
    });
  });

  it('starts with the default schedule on that port, and says once that its reads count while the port counts too few packets to wrap', async () => {
    await start400('', (daemon, e, file, logged) => {
      expect(e).toBeUndefined();
      expect(daemon.state().config.connections).toMatchObject({ enabled: true, intervalMs: 1000 });
      const warnings = logged.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { msg: string; problem?: string }).filter((l) => l.msg === 'config warning');
      expect(warnings.map((w) => w.problem)).toEqual([expect.stringMatching(new RegExp(`^${file}:1:1: connections: .* mlx5_2/1 \\(400 Gb/s, 4096-byte packets\\) .* in 687 ms at its link rate: .* fewer than 4194304 packets`))]);
    });
  });

  it('is refused on reload, keeping the running config: rxe0 at 10 Gb/s sends 2^23 packets in 27.5 s', async () => {
    run = await startDaemon('rxe_6_1', RXE_CONFIG);
    writeFileSync(run.configFile, `${RXE_CONFIG}connections: { interval: 30s }\n`);
    const r = await run.daemon.reload();
    expect(r).toMatchObject({ ok: false, error: expect.stringMatching(/connections\.interval: connections are read every 30000 ms .* rxe0\/1 \(10 Gb\/s, 4096-byte packets\) .* in 27487 ms/) });
    expect(run.daemon.state().config.connections.intervalMs).toBe(1000);
  });
});
