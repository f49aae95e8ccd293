import { describe, it, expect } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync, mkdirSync, copyFileSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, parseConfig } from '../../src/config/load.js';
import { parseYamlFast } from '../../src/input/fastyaml.js';
import { InputError, formatProblem } from '../../src/input/problems.js';
import { rational } from '../../src/model/index.js';
import { configProblems } from './problems.js';
import { spawnSync } from 'node:child_process';

const example = join(__dirname, '../../config/example.yaml');
const flowsDir = join(__dirname, '../fixtures/flows');

const problems = configProblems;

function tempConfig(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'mfe-config-'));
  mkdirSync(join(dir, 'flows'));
  copyFileSync(join(flowsDir, 'data_60.json'), join(dir, 'flows/data.json'));
  copyFileSync(join(flowsDir, 'bad_many.json'), join(dir, 'flows/bad.json'));
  writeFileSync(join(dir, 'config.yaml'), text);
  return join(dir, 'config.yaml');
}

describe('config', () => {
  it('loads the shipped example: the seed flows on mlx5_0/1', () => {
    const c = loadConfig(example);
    expect(c.sampling).toEqual({ intervalMs: 1000, windowMs: 10000 });
    expect(c.driftTolerance).toBe(0.05);
    expect(c.ports).toHaveLength(1);
    expect(c.ports[0]).toMatchObject({ device: 'mlx5_0', port: 1, mtu: { kind: 'l3', bytes: 4096 }, capacityBitsPerSecond: 'auto', headroom: 0.9 });
    expect(c.flows.map((f) => [f.flow.mediaType, f.direction])).toEqual([
      ['video/v210', 'tx'], ['video/v210a', 'tx'], ['audio/float32', 'tx'], ['video/smpte291', 'rx'],
    ]);
    expect(c.flows[2]!.grainDuration).toEqual(rational(1, 100));
  });

  it('takes inline flows, ptime, ib_mtu, capacity and user providers; implies unlisted ports', () => {
    const file = tempConfig(`
providers:
  - { name: lab, base: rdma_rocev2_mxl_v1, wireOverheadBytes: 86 }
ports:
  - { device: rxe0, port: 1, provider: lab, ib_mtu: 4096, capacity: 10Gbps }
flows:
  - flow: flows/data.json
    device: rxe0
    direction: tx
  - device: rxe1
    direction: rx
    ptime: 1ms
    flow:
      id: 0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d99
      label: inline audio
      format: urn:x-nmos:format:audio
      tags: { "urn:x-nmos:tag:grouphint/v1.0": ["A:B"] }
      sample_rate: { numerator: 48000 }
      bit_depth: 32
`);
    const c = loadConfig(file);
    expect(c.ports.map((p) => [p.device, p.provider.name, p.mtu, p.capacityBitsPerSecond, p.declared])).toEqual([
      ['rxe0', 'lab', { kind: 'ib', bytes: 4096 }, 10e9, true],
      ['rxe1', 'rdma_rocev2_mxl_v1', 'auto', 'auto', false],
    ]);
    expect(c.flows[0]!.provider.wireOverheadBytes).toBe(86);
    expect(c.flows[0]!.provider.grainHeaderBytes.data).toBe(8192);
    expect(c.flows[1]!.grainDuration).toEqual(rational(1, 1000));
  });

  it('reports every problem with file, line, column and field, flow files included', () => {
    const file = tempConfig(`sampling: { interval: 1 fortnight, window: 10s }
drfit: { tolerance: 0.05 }
ports:
  - { device: "../etc", port: 1, mtu: 4096, ib_mtu: 4096 }
flows:
  - { flow: flows/bad.json, device: rxe0, direction: tx }
  - { flow: ../outside.json, device: rxe0, direction: sideways }
  - { flow: flows/data.json, device: rxe0, direction: tx, ptime: 1ms, provider: nope }
`);
    const bad = join(file, '../flows/bad.json');
    expect(problems(file, readFileSync(file, 'utf8'))).toEqual([
      `${file}:2:1: drfit: unknown field (did you mean "drift"?)`,
      `${file}:1:23: sampling.interval: "1 fortnight" is not a duration (examples: 10ms, 125us, 1s, 1.5s, 1/1000s; units: ns, us, ms, s, m, h)`,
      `${file}:4:15: ports[0].device: "../etc" is not an RDMA device name`,
      `${file}:4:53: ports[0].ib_mtu: give mtu (L3 packet budget) or ib_mtu (RDMA payload per packet), not both`,
      `${file}:6:13: flows[0].flow: flow definition flows/bad.json is invalid (5 problems below)`,
      `${bad}:2:9: id: "not-a-uuid" is not a UUID`,
      `${bad}:5:12: label: must not be empty`,
      `${bad}:3:47: tags["urn:x-nmos:tag:grouphint/v1.0"][0]: "nogroup" is not <group-name>:<role-in-group>[:device|node]`,
      `${bad}:6:17: media_type: "video/raw" is not one of "video/v210", "video/v210a"`,
      `${bad}:8:18: frame_width: 8000 is out of range 2..7680`,
      `${file}:7:13: flows[1].flow: "../outside.json" is outside the config's folder ${join(file, '..')}; flow files must live under it (symlinks included)`,
      `${file}:7:55: flows[1].direction: "sideways" is not one of "tx", "rx"`,
      `${file}:8:81: flows[2].provider: unknown provider profile "nope"; known: rdma_rocev2, rdma_rocev2_mxl_v1`,
      `${file}:8:66: flows[2].ptime: ptime (grain duration) applies to audio flows only`,
    ]);
  });

  it('reports YAML syntax errors and an audio ptime that gives fractional samples', () => {
    expect(problems('c.yaml', 'ports: [\n')[0]).toMatch(/^c\.yaml:\d+:\d+: /);
    const p = problems('c.yaml', `flows:
  - device: rxe0
    direction: tx
    ptime: 1ms
    flow: { id: 0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d99, label: a, format: "urn:x-nmos:format:audio", tags: { "urn:x-nmos:tag:grouphint/v1.0": ["A:B"] }, sample_rate: { numerator: 44100 }, bit_depth: 32 }
`);
    expect(p).toEqual([expect.stringMatching(/^c\.yaml:4:12: flows\[0\]\.ptime: grain duration 1ms at 44100 Hz is 44\.1 samples/)]);
  });

  it('reads a file whose stat size is 0 but that has content (procfs, some FUSE mounts) in full (issue 33)', () => {
    // In a process of its own: the loop this guards against never returns.
    const r = spawnSync(join(__dirname, '../../node_modules/.bin/vite-node'), [join(__dirname, 'load-child.ts'), '/proc/version'], { encoding: 'utf8', timeout: 30_000, killSignal: 'SIGKILL' });
    expect(r.error, 'the load did not finish').toBeUndefined();
    expect(r.stdout).toBe('/proc/version:1:1: expected a mapping (an object) at the top level\n');
  });

  it('refuses a flow file that is a symlink out of the config folder', () => {
    const file = tempConfig('flows:\n  - { flow: flows/link.json, device: rxe0, direction: tx }\n');
    symlinkSync(join(flowsDir, 'data_60.json'), join(file, '../flows/link.json'));
    expect(problems(file, readFileSync(file, 'utf8'))).toEqual([
      `${file}:2:13: flows[0].flow: "flows/link.json" is outside the config's folder ${join(file, '..')}; flow files must live under it (symlinks included)`,
    ]);
  });
});

describe('the default provider profile', () => {
  it('is rdma_rocev2_mxl_v1 for a port, flow, domain and user profile base without one; the example names the seed\'s rdma_rocev2', () => {
    const c = parseConfig('/tmp/c.yaml', `
providers: [{ name: mine, wireOverheadBytes: 86 }]
ports: [{ device: rxe0, port: 1, mtu: 4096 }]
domains: [{ path: /dev/shm/mxl, device: rxe0, direction: tx }]
`);
    expect(c.ports[0]!.provider.name).toBe('rdma_rocev2_mxl_v1');
    expect(c.domains[0]!.provider.name).toBe('rdma_rocev2_mxl_v1');
    expect(c.providers.get('mine')!.grainHeaderBytes.video).toBe(8192);
    expect(loadConfig(example).ports[0]!.provider.name).toBe('rdma_rocev2');
  });
});

describe('YAML syntax errors: where the mistake is, and one message for one mistake', () => {
  const ELEVEN = `sampling:
  interval: 1s
  window: 10s
ports:
  - device: mlx5_0
    port: 1
    provider: "rdma_rocev2
    mtu: 4096
    capacity: auto
flows:
  - { flow: flows/data.json, device: mlx5_0, port: 1, direction: rx }
`;
  it('an unclosed quote on line 7 of an 11-line file is reported at line 7 (it was 12:1, past the end)', () => {
    const file = tempConfig(ELEVEN);
    expect(problems(file, ELEVEN)).toEqual([`${file}:7:15: the string opened by " here is never closed: it runs to the end of the file`]);
    expect(problems(file, ELEVEN.replace('"rdma_rocev2', "'rdma_rocev2"))).toEqual([`${file}:7:15: the string opened by ' here is never closed: it runs to the end of the file`]);
  });

  it('a missing colon after flows is one message naming it (it was 14), with the count of what follows', () => {
    const text = `ports:
  - { device: mlx5_0, port: 1, mtu: 4096, capacity: auto }
flows
  - { flow: flows/data.json, device: mlx5_0, port: 1, direction: tx }
  - { flow: flows/data.json, device: mlx5_0, port: 1, direction: rx }
`;
    const file = tempConfig(text);
    const found = problems(file, text);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:3:1: "flows" needs a colon to be a key \\("flows:"\\); without it the lines below are read as part of it \\(\\d+ more syntax errors after it, most likely caused by it: fix this one first\\)$`));
  });

  it('the fast YAML path leaves both to the yaml package, so loadConfig() and parseConfig() say the same', () => {
    const file = tempConfig(ELEVEN);
    let viaLoad: string[] = [];
    try {
      loadConfig(file);
    } catch (e) {
      viaLoad = (e as InputError).problems.map(formatProblem);
    }
    expect(viaLoad).toEqual(problems(file, ELEVEN));
    const fast = (text: string): unknown => {
      const g = parseYamlFast(text);
      let r = g.next();
      while (!r.done) r = g.next();
      return r.value;
    };
    expect(fast(ELEVEN)).toBeUndefined();
    expect(fast('flows\n  - { flow: a.json }\n')).toBeUndefined();
  });
});
