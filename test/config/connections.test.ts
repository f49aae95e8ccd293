import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { configProblems } from './problems.js';
import { formatProblem } from '../../src/input/problems.js';

const problems = (text: string): string[] => configProblems('c.yaml', text);

describe('connections config', () => {
  it('is on by default, read on the sampling interval', () => {
    expect(parseConfig('c.yaml', 'ports: []\n').connections).toEqual({ enabled: true, intervalMs: 1000, qpQueriesPerSecond: 1000 });
    expect(parseConfig('c.yaml', 'sampling: { interval: 2s, window: 10s }\n').connections).toEqual({ enabled: true, intervalMs: 2000, qpQueriesPerSecond: 1000 });
  });

  it('takes enabled and its own interval', () => {
    expect(parseConfig('c.yaml', 'connections: { enabled: false, interval: 5s }\n').connections).toEqual({ enabled: false, intervalMs: 5000, qpQueriesPerSecond: 1000 });
  });

  it('refuses unknown keys, intervals below 100 ms and non-booleans', () => {
    const p = problems('connections: { enabled: maybe, interval: 50ms, every: 1s }\n').join('\n');
    expect(p).toMatch(/connections\.every/);
    expect(p).toMatch(/interval 50 ms is below the 100 ms minimum/);
    expect(p).toMatch(/connections\.enabled/);
  });
});

describe('connections.interval against the PSN wrap (issue 33)', () => {
  // 2^23 packets of 4,096 bytes at 400 Gb/s: 8,388,608 * 4096 * 8 / 400e9 = 0.687 s.
  const port = (capacity: string, mtu = 'ib_mtu: 4096') => `ports:\n  - { device: mlx5_0, port: 1, ${mtu}, capacity: ${capacity} }\n`;

  it('refuses a schedule that reads connections further apart than a port can send 2^23 packets', () => {
    expect(problems(`sampling: { interval: 500ms, window: 5s }\nconnections: { interval: 1s }\n${port('400Gbps')}`).join('\n'))
      .toMatch(/^c\.yaml:2:26: connections\.interval: connections are read every 1000 ms .*mlx5_0\/1 \(400 Gb\/s, 4096-byte packets\) can send 2\^23 packets.* in 687 ms/);
    // A sampling.interval set, the connections read on it.
    expect(problems(`sampling: { interval: 1s, window: 10s }\n${port('400Gbps')}`).join('\n')).toMatch(/^c\.yaml:1:23: sampling\.interval: connections are read every 1000 ms/);
    // 100 Gb/s: 2.748 s (2,748.78 ms).
    expect(problems(`connections: { interval: 3s }\n${port('100Gbps')}`).join('\n')).toMatch(/connections\.interval: .* in 2748 ms/);
  });

  it('warns, and starts, when only the default schedule is too slow: reads count while the port counted too few packets to wrap', () => {
    // The shipped defaults (1 s) on a 400 Gb/s port, or 100 Gb/s at 1,024-byte packets (Ethernet MTU 1500).
    for (const [text, at] of [[port('400Gbps'), '400 Gb/s, 4096-byte packets'], [port('100Gbps', 'ib_mtu: 1024'), '100 Gb/s, 1024-byte packets']] as const) {
      const c = parseConfig('c.yaml', text);
      expect(c.connections).toMatchObject({ enabled: true, intervalMs: 1000 });
      expect(c.warnings?.map(formatProblem)).toEqual([
        `c.yaml:1:1: connections: connections are read every 1000 ms (on the sampling ticks, at least connections.interval apart); port mlx5_0/1 (${at}) can send 2^23 packets, the most a 24-bit PSN tells apart, in 687 ms at its link rate: ` +
          'with the default intervals its connections\' reads count only while its counters show fewer than 4194304 packets each way between two reads (the others count in mxl_fabric_connections_late_reads_total); ' +
          'set sampling.interval and connections.interval below 687 ms to count at any rate',
      ]);
    }
  });

  it('takes a schedule that reads in time, or connections off', () => {
    expect(parseConfig('c.yaml', `sampling: { interval: 500ms, window: 5s }\n${port('400Gbps')}`).connections.intervalMs).toBe(500);
    expect(parseConfig('c.yaml', `connections: { interval: 2s }\n${port('100Gbps')}`).connections.intervalMs).toBe(2000);
    expect(parseConfig('c.yaml', `connections: { enabled: false }\n${port('400Gbps')}`).connections.enabled).toBe(false);
    expect(parseConfig('c.yaml', port('auto', 'mtu: auto')).connections.intervalMs).toBe(1000);
  });

  it('checks `auto` ports at the link rate and MTU the running exporter found', () => {
    const links = () => ({ rateBitsPerSecond: 400e9, activeIbMtu: 4096 });
    const set = 'connections: { interval: 1s }\n';
    expect(() => parseConfig('c.yaml', set + port('auto', 'mtu: auto'), { links })).toThrow(/mlx5_0\/1 \(400 Gb\/s, 4096-byte packets\)/);
    // The link rate, not a smaller capacity budget, is what the QP can send at.
    expect(() => parseConfig('c.yaml', set + port('100Gbps'), { links })).toThrow(/in 687 ms/);
    expect(parseConfig('c.yaml', port('auto', 'mtu: auto'), { links }).warnings?.map(formatProblem).join('\n')).toMatch(/^c\.yaml:1:1: connections: .*in 687 ms at its link rate/);
  });
});

describe('peer: pins', () => {
  const flow = 'flow: { id: 0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d04, label: d, format: "urn:x-nmos:format:data", tags: { "urn:x-nmos:tag:grouphint/v1.0": ["A:B"] }, media_type: video/smpte291, grain_rate: { numerator: 60 } }';
  it('takes an IPv4 or bracketed IPv6 address:port on flows and domains, IPv6 as the labels print it', () => {
    const c = parseConfig('c.yaml', `flows:\n  - { ${flow}, device: rxe0, direction: tx, peer: "10.99.0.2:1312" }\ndomains:\n  - { path: /dev/shm/mxl, device: rxe0, direction: rx, peer: "[FD00:0:0::2]:1313" }\n`);
    expect(c.flows[0]!.peer).toBe('10.99.0.2:1312');
    expect(c.domains[0]!.peer).toBe('[fd00::2]:1313');
    expect(parseConfig('c.yaml', `flows:\n  - { ${flow}, device: rxe0, direction: tx }\n`).flows[0]!.peer).toBeUndefined();
  });

  it('refuses what is not an address:port', () => {
    for (const bad of ['10.99.0.2', '10.99.0.256:1312', 'host:1312', '[fd00::2]:0', 'fd00::2:1312', '10.99.0.2:65536']) {
      expect(problems(`domains:\n  - { path: /dev/shm/mxl, device: rxe0, direction: rx, peer: "${bad}" }\n`).join('\n')).toContain(`"${bad}" is not an address:port`);
    }
  });
});

describe('bind: auto on domains', () => {
  it('needs no device, port or direction; given, they narrow where connections may bind its flows', () => {
    const c = parseConfig('c.yaml', 'domains:\n  - { path: /dev/shm/mxl, bind: auto }\n  - { path: /dev/shm/mxl-rx, bind: auto, device: rxe1, direction: rx }\n');
    expect(c.domains.map((d) => [d.path, d.bind, d.device, d.port, d.direction])).toEqual([
      ['/dev/shm/mxl', 'auto', undefined, undefined, undefined],
      ['/dev/shm/mxl-rx', 'auto', 'rxe1', 1, 'rx'],
    ]);
    expect(c.ports).toEqual([]); // no port implied: the connections say where
  });

  it('still needs device and direction without it, and refuses other bind values and a port without its device', () => {
    expect(problems('domains:\n  - { path: /dev/shm/mxl }\n').join('\n')).toMatch(/device.*required|required.*device/);
    expect(problems('domains:\n  - { path: /dev/shm/mxl, bind: manual }\n').join('\n')).toMatch(/bind/);
    expect(problems('domains:\n  - { path: /dev/shm/mxl, bind: auto, port: 2 }\n').join('\n')).toContain('a port narrows bind: auto only with its device');
  });
});

describe('the packaged default config (config/default.yaml)', () => {
  it('names no port and no flow: every flow of /dev/shm/mxl is bound by its connection', async () => {
    const { loadConfig } = await import('../../src/config/load.js');
    const c = loadConfig(new URL('../../config/default.yaml', import.meta.url).pathname);
    expect(c.ports).toEqual([]);
    expect(c.flows).toEqual([]);
    expect(c.domains.map((d) => [d.path, d.bind, d.device, d.direction])).toEqual([['/dev/shm/mxl', 'auto', undefined, undefined]]);
    expect(c.connections.enabled).toBe(true);
  });
});

describe('connections.qp_queries_per_second and metrics.connection_series (issue 35)', () => {
  it('default to 1,000 QP queries a second per device and one series set per flow\'s connections', () => {
    const c = parseConfig('c.yaml', 'ports: []\n');
    expect(c.connections.qpQueriesPerSecond).toBe(1000);
    expect(c.metrics.connectionSeries).toBe('flow');
  });

  it('take a whole number of queries from 1 and qp, flow or process', () => {
    const c = parseConfig('c.yaml', 'connections: { qp_queries_per_second: 5000 }\nmetrics: { connection_series: qp }\n');
    expect(c.connections.qpQueriesPerSecond).toBe(5000);
    expect(c.metrics.connectionSeries).toBe('qp');
    expect(parseConfig('c.yaml', 'metrics: { connection_series: process, flow_layers: [wire] }\n').metrics).toEqual({ flowLayers: ['wire'], connectionSeries: 'process' });
    expect(problems('connections: { qp_queries_per_second: 0 }\n').join('\n')).toMatch(/c\.yaml:1:39: connections\.qp_queries_per_second: 0 is out of range 1\.\.inf/);
    expect(problems('connections: { qp_queries_per_second: 2.5 }\n').join('\n')).toMatch(/connections\.qp_queries_per_second: expected a whole number/);
    expect(problems('metrics: { connection_series: qps }\n').join('\n')).toMatch(/c\.yaml:1:31: metrics\.connection_series: "qps" is not one of "qp", "flow", "process"/);
  });
});
