/** `check`, the pre-show gate, on fixture sysfs trees: each named check, the JSON, exit codes 0/1/2. */
import { describe, it, expect, afterEach } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type CheckOptions, runCheck } from '../../src/cli/check.js';
import { PORT_CHECKS } from '../../src/cli/checks.js';
import { writeConfig } from '../exporter/harness.js';
import { FIXTURES_DIR, SysfsFixture } from '../fixtures/sysfs.js';
import { addFlow, makeDomain } from '../domain/mxl-domain.mjs';

function check(...argv: string[]): { code: number; out: string; err: string } {
  return checkWith({}, ...argv);
}

function checkWith(opts: CheckOptions, ...argv: string[]): { code: number; out: string; err: string } {
  let out = '';
  let err = '';
  const code = runCheck(argv, { stdout: (t) => void (out += t), stderr: (t) => void (err += t) }, opts);
  return { code, out, err };
}

interface JsonFinding {
  check: string;
  verdict: string;
  detail: string;
  values?: Record<string, number | string | null>;
}
interface JsonReport {
  ok: boolean;
  flows: number;
  ports: { device: string; port: number; findings: JsonFinding[] }[];
}
const json = (r: { out: string }): JsonReport => JSON.parse(r.out) as JsonReport;
const finding = (r: JsonReport, name: string, direction?: string): JsonFinding =>
  r.ports[0]!.findings.find((f) => f.check === name && (direction === undefined || f.values?.direction === direction))!;

const sysfs = (name: string): string => join(FIXTURES_DIR, name);
const MLX5 = (port: string, provider = 'rdma_rocev2'): string => `
ports:
  - { device: mlx5_0, port: 1, provider: ${provider}, ${port} }
flows:
  - { flow: flows/v210_1080p2997.json, device: mlx5_0, direction: tx }
  - { flow: flows/data_60.json, device: mlx5_0, direction: rx }
`;

let fixture: SysfsFixture | undefined;
afterEach(() => {
  fixture?.cleanup();
  fixture = undefined;
});

describe('check', () => {
  it('exit 1 on a config that names no port, flow or MXL domain: nothing checked is no pass', () => {
    for (const text of ['flows: []\n', '']) {
      const r = check('--config.file', writeConfig(text), '--path.sysfs', sysfs('mlx5_roce'));
      expect(r.code, JSON.stringify(text)).toBe(1);
      const lines = r.out.split('\n');
      expect(lines[0]).toMatch(/: valid, 0 flows on 0 ports$/);
      expect(lines[1]).toMatch(/^ {2}FAIL {4}scope +the config names no port, no flow and no MXL domain: there is nothing to check/);
      expect(r.out).toMatch(/provisioning: FAIL\n$/);
      const j = json(check('--config.file', writeConfig(text), '--path.sysfs', sysfs('mlx5_roce'), '--output', 'json')) as JsonReport & { findings: JsonFinding[] };
      expect(j.ok).toBe(false);
      expect(j.findings.map((f) => [f.check, f.verdict])).toEqual([['scope', 'fail']]);
    }
    // A port alone, or a domain alone (the packaged default), is something to check.
    expect(check('--config.file', writeConfig('ports: [{ device: mlx5_0 }]\n'), '--path.sysfs', sysfs('mlx5_roce')).out).not.toMatch(/scope/);
  });

  it('exit 1 without the bounded reader: the exporter section names it, the ports still pass', () => {
    const args = ['--config.file', writeConfig(MLX5('mtu: 4096, capacity: auto')), '--path.sysfs', sysfs('mlx5_roce')];
    const r = checkWith({ readerLibrary: '/nonexistent/libmfe-reader.so' }, ...args);
    expect(r.code).toBe(1);
    const lines = r.out.split('\n');
    expect(lines[1]).toBe('exporter');
    expect(lines[2]).toMatch(/^ {2}FAIL {4}reader +bounded reader unavailable \(.*\/nonexistent\/libmfe-reader\.so.*\): serve would read on the event loop with no timeout; build it/);
    expect(r.out).toMatch(/provisioning: FAIL\n$/);
    const j = json(checkWith({ readerLibrary: '/nonexistent/libmfe-reader.so' }, ...args, '--output', 'json')) as JsonReport & { exporter: JsonFinding[] };
    expect(j.ok).toBe(false);
    expect(j.exporter.map((f) => [f.check, f.verdict, f.values?.bounded])).toEqual([['reader', 'fail', false]]);
    expect(j.ports[0]!.findings.filter((f) => f.verdict === 'fail')).toEqual([]);
    expect(check(...args).out.split('\n')[2]).toMatch(/^ {2}OK {6}reader +bounded reader loaded: every read has a timeout$/);
  });

  it('exit 0: every check passes on a healthy mlx5 port; "1 port", not "1 ports"', () => {
    const r = check('--config.file', writeConfig(MLX5('mtu: 4096, capacity: auto')), '--path.sysfs', sysfs('mlx5_roce'));
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const lines = r.out.trimEnd().split('\n');
    expect(lines[0]).toMatch(/: valid, 2 flows on 1 port$/);
    expect(lines.slice(1).map((l) => l.trim().split(/\s+/).slice(0, 2).join(' '))).toEqual([
      'exporter', 'OK reader', 'mlx5_0/1 (provider', 'OK present', 'OK state', 'OK gid', 'OK link-rate', 'OK ib-mtu', 'OK netdev-mtu', 'OK capacity', 'OK capacity',
      'UNKNOWN pfc', 'OK ecn', 'OK vlan', 'provisioning: ok',
    ]);
  });

  it('capacity "12.5GB/s" is 12.5e9 bytes/s (it was read as 12.5 Gb/s), in JSON as numbers', () => {
    const r = check('--config.file', writeConfig(MLX5('mtu: 4096, capacity: "12.5GB/s"')), '--path.sysfs', sysfs('mlx5_roce'), '--output', 'json');
    expect(r.code).toBe(0);
    const tx = finding(json(r), 'capacity', 'tx');
    expect(tx.values).toMatchObject({ capacityBytesPerSecond: 12.5e9, headroom: 0.9, flows: 1 });
    expect(typeof tx.values!.predictedWireBytesPerSecond).toBe('number');
    expect(tx.values!.utilization).toBeCloseTo(tx.values!.predictedWireBytesPerSecond as number / 12.5e9, 15);
    expect(tx.detail).toContain('capacity 12.500 GB/s (100.000 Gb/s) x headroom');
    expect(finding(json(r), 'link-rate').values).toEqual({ linkBytesPerSecond: 12.5e9, capacityBytesPerSecond: 12.5e9 });
    expect(json(r).flows).toBe(2);
  });

  it('exit 1: capacity 100Gbps on a port that trained at 25 Gb/s fails, naming both (it passed before)', () => {
    // 100 Gb/s of 1,024-byte packets is 2^23 packets in 687 ms: connections are read every 500 ms.
    const cfg = writeConfig(`
sampling: { interval: 500ms, window: 5s }
ports: [{ device: bnxt_re0, port: 1, ib_mtu: 1024, capacity: 100Gbps }]
flows: [{ flow: flows/data_60.json, device: bnxt_re0, direction: tx }]
`);
    const r = check('--config.file', cfg, '--path.sysfs', sysfs('bnxt_re'));
    expect(r.code).toBe(1);
    expect(r.out).toContain("FAIL    link-rate  configured capacity 12.500 GB/s (100.000 Gb/s) is above the link's trained rate 3.125 GB/s (25.000 Gb/s)");
    expect(r.out).toMatch(/OK\s+netdev-mtu ens2f0np0 MTU 1500 gives IB MTU 1024, enough for 1024 B per packet/);
    expect(r.out.trimEnd().split('\n').at(-1)).toBe('provisioning: FAIL');
    const bits = check('--config.file', cfg, '--path.sysfs', sysfs('bnxt_re'), '--units', 'bits');
    expect(bits.out).toContain("configured capacity 100.000 Gb/s (12.500 GB/s) is above the link's trained rate 25.000 Gb/s (3.125 GB/s)");
  });

  it('exit 1: the netdev MTU cannot carry the packets the model assumes (it was not compared)', () => {
    const r = check('--config.file', writeConfig(`
ports: [{ device: bnxt_re0, port: 1, mtu: 4096 }]
flows: [{ flow: flows/data_60.json, device: bnxt_re0, direction: tx }]
`), '--path.sysfs', sysfs('bnxt_re'), '--output', 'json');
    expect(r.code).toBe(1);
    const f = finding(json(r), 'netdev-mtu');
    expect(f.verdict).toBe('fail');
    expect(f.detail).toBe("ens2f0np0 MTU 1500 gives IB MTU 1024, below the model's 4052 B payload per packet; set it to at least 4192 (9000 for jumbo frames)");
    expect(f.values).toEqual({ netdevMtuBytes: 1500, modelL3MtuBytes: 4096, modelPayloadBytesPerPacket: 4052, neededNetdevMtuBytes: 4192 });
  });

  it('exit 1: a missing device lists the devices there are', () => {
    const r = check('--config.file', writeConfig(MLX5('mtu: 4096')), '--path.sysfs', sysfs('rxe_6_1'));
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/FAIL +present +port not found on this host; RDMA ports here: rxe0\/1\n/);
  });

  it('exit 1: a RoCE port without a RoCE v2 GID, and a port that is DOWN', () => {
    fixture = SysfsFixture.copy('bnxt_re');
    for (const i of ['0', '1', '2', '3', '4', '5']) writeFileSync(fixture.portPath('bnxt_re0', 1, 'gid_attrs', 'types', i), 'IB/RoCE v1\n');
    fixture.setPortState('bnxt_re0', 1, 'DOWN');
    const r = check('--config.file', writeConfig('ports: [{ device: bnxt_re0, port: 1, ib_mtu: 1024 }]\nflows: []\n'), '--path.sysfs', fixture.root, '--output', 'json');
    expect(r.code).toBe(1);
    expect(finding(json(r), 'gid')).toMatchObject({ verdict: 'fail', detail: expect.stringMatching(/^no RoCE v2 GID \(types: IB\/RoCE v1\)/) });
    expect(finding(json(r), 'state')).toMatchObject({ verdict: 'fail', detail: 'state DOWN (Disabled)' });
  });

  it('exit 1: predicted wire rate above headroom, with the budget (capacity x headroom) and the excess', () => {
    const r = check('--config.file', writeConfig(MLX5('mtu: 4096, capacity: 1Gbps')), '--path.sysfs', sysfs('mlx5_roce'));
    expect(r.code).toBe(1);
    // 169.077 MB/s against a budget of 125 MB/s x 0.9 = 112.5 MB/s: over by 56.577 MB/s.
    expect(r.out).toMatch(/FAIL\s+capacity\s+tx: 169\.077 MB\/s predicted for 1 flow; budget 112\.500 MB\/s \(capacity 125\.000 MB\/s \(1\.000 Gb\/s\) x headroom 90 %\): 135\.26 % of capacity, over the budget by 56\.577 MB\/s\n/);
    const tx = finding(json(check('--config.file', writeConfig(MLX5('mtu: 4096, capacity: 1Gbps')), '--path.sysfs', sysfs('mlx5_roce'), '--output', 'json')), 'capacity', 'tx').values!;
    expect(tx.budgetBytesPerSecond).toBe(112_500_000);
    expect(tx.excessBytesPerSecond).toBeCloseTo(((5_529_600 + 1365 * 82) * 30000) / 1001 - 112_500_000, 3);
  });

  it('a direction with no flows but ACK traffic names it as the ACKs of the other direction\'s flows', () => {
    const cfg = writeConfig(`ports:\n  - { device: mlx5_0, port: 1, mtu: 4096, capacity: auto }\nflows:\n  - { flow: flows/v210_1080p2997.json, device: mlx5_0, direction: tx }\n`);
    const r = check('--config.file', cfg, '--path.sysfs', sysfs('mlx5_roce'));
    expect(r.out).toMatch(/OK\s+capacity\s+rx: \S+ [kM]B\/s predicted for no rx flow: the ACKs of 1 tx flow; budget /);
    expect(r.out).toMatch(/OK\s+capacity\s+tx: \S+ MB\/s predicted for 1 flow; budget /);
    const two = writeConfig(`ports:\n  - { device: mlx5_0, port: 1, mtu: 4096, capacity: auto }\nflows:\n  - { flow: flows/v210_1080p2997.json, device: mlx5_0, direction: tx }\n  - { flow: flows/data_60.json, device: mlx5_0, direction: rx }\n`);
    expect(check('--config.file', two, '--path.sysfs', sysfs('mlx5_roce')).out).toMatch(/capacity\s+rx: \S+ [kM]B\/s predicted for 1 rx flow and the ACKs of 1 tx flow; /);
  });

  it('without provider: the profile is rdma_rocev2_mxl_v1, and the port line says which profile', () => {
    const cfg = writeConfig(`ports:\n  - { device: mlx5_0, port: 1, mtu: 4096, capacity: auto }\nflows:\n  - { flow: flows/v210_1080p2997.json, device: mlx5_0, direction: tx }\n`);
    const r = check('--config.file', cfg, '--path.sysfs', sysfs('mlx5_roce'));
    expect(r.out).toMatch(/^mlx5_0\/1 \(provider profile rdma_rocev2_mxl_v1\)$/m);
    expect(json(check('--config.file', cfg, '--path.sysfs', sysfs('mlx5_roce'), '--output', 'json')).ports[0]).toMatchObject({ providers: ['rdma_rocev2_mxl_v1'] });
    expect(check('--config.file', writeConfig(MLX5('mtu: 4096')), '--path.sysfs', sysfs('mlx5_roce')).out).toMatch(/^mlx5_0\/1 \(provider profile rdma_rocev2\)$/m);
  });

  it('includes the flows found in MXL domains in the predictions, and says what it found', () => {
    const domain = makeDomain();
    addFlow(domain, {
      id: '0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d31', label: 'Domain cam', format: 'urn:x-nmos:format:video',
      tags: { 'urn:x-nmos:tag:grouphint/v1.0': ['Cam:Video'] }, media_type: 'video/v210', grain_rate: { numerator: 25 },
      frame_width: 1920, frame_height: 1080, interlace_mode: 'progressive',
    }, { id: '0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d31', format: 1, rate: [25n, 1n] });
    addFlow(domain, '{ "id": ', { id: '0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d32', format: 3, rate: [60n, 1n] });
    const cfg = writeConfig(`${MLX5('mtu: 4096')}domains:\n  - { path: ${domain}, device: mlx5_0, direction: tx }\n  - { path: ${domain}/nope, device: mlx5_0, direction: rx }\n`);
    const r = check('--config.file', cfg, '--path.sysfs', sysfs('mlx5_roce'), '--output', 'json');
    const report = json(r);
    expect(report.flows).toBe(3);
    // The 1080p29.97 flow of the config plus the 1080p25 flow found in the domain (141,038,250 B/s).
    const tx = finding(report, 'capacity', 'tx').values!;
    expect(tx.flows).toBe(2);
    expect(tx.predictedWireBytesPerSecond).toBeCloseTo(((5_529_600 + 1365 * 82) * 30000) / 1001 + 141_038_250, 3);
    const domains = report.ports[0]!.findings.filter((f) => f.check === 'domain');
    expect(domains.map((d) => [d.verdict, d.values?.flowsFound, d.values?.flowsSelected, d.values?.flowsUnusable])).toEqual([
      ['fail', 2, 1, 1], ['fail', 0, 0, 0],
    ]);
    expect(domains[0]!.detail).toMatch(/2 flows found, 1 selected and included.*unusable flow_def.json: 0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d32$/);
    expect(domains[1]!.detail).toMatch(/\/nope \(rx\): cannot list it: ENOENT/);
    expect(r.code).toBe(1);
    const text = check('--config.file', cfg, '--path.sysfs', sysfs('mlx5_roce'));
    expect(text.out.split('\n')[0]).toMatch(/valid, 3 flows \(2 configured, 1 found in MXL domains\) on 1 port$/);
  });

  it('pfc, ecn and vlan are one named check each, after capacity; warn is shown but exits 0', () => {
    expect(PORT_CHECKS.map((c) => c.name).slice(-4)).toEqual(['capacity', 'pfc', 'ecn', 'vlan']);
    fixture = SysfsFixture.copy('mlx5_roce');
    // Every CNP received ignored, none handled: the adapter's ECN reaction point is off.
    fixture.setCounter('mlx5_0', 1, 'hw_counters', 'rp_cnp_handled', 0);
    fixture.setCounter('mlx5_0', 1, 'hw_counters', 'rp_cnp_ignored', 7712);
    // A profile that counts an 802.1Q tag, on an untagged netdev.
    const cfg = writeConfig(`providers: [{ name: rocev2_vlan, base: rdma_rocev2, l2HeaderBytes: 18 }]${MLX5('mtu: 4096, capacity: auto', 'rocev2_vlan')}`);
    const r = check('--config.file', cfg, '--path.sysfs', fixture.root);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/\n {2}WARN {4}ecn {8}every CNP received was ignored: the adapter's ECN reaction point \(DCQCN\) is off/);
    expect(r.out).toMatch(/\n {2}WARN {4}vlan {7}ens1f0np0 is not a VLAN, but the profile counts l2HeaderBytes 18/);
    expect(r.out).toMatch(/\n {2}UNKNOWN pfc {8}PFC state unknown: DCB netlink is not read with a fake --path.sysfs/);
    expect(r.out.trimEnd().split('\n').at(-1)).toBe('provisioning: ok');
    const report = json(check('--config.file', cfg, '--path.sysfs', fixture.root, '--output', 'json'));
    expect(report.ok).toBe(true);
    expect(finding(report, 'ecn')).toMatchObject({ verdict: 'warn', values: { ecnMarkedPackets: 5123456000, cnpSent: 5123455000, cnpHandled: 0, cnpIgnored: 7712 } });
    expect(finding(report, 'vlan')).toMatchObject({ verdict: 'warn', values: { netdev: 'ens1f0np0', vlan: false, l2HeaderBytes: 18 } });
    expect(finding(report, 'pfc')).toMatchObject({ verdict: 'unknown', values: { netdev: 'ens1f0np0' } });
  });

  it('a missing port gets no host-assumption findings: present fails, as with the other checks', () => {
    const r = check('--config.file', writeConfig(MLX5('mtu: 4096')), '--path.sysfs', sysfs('rxe_6_1'), '--output', 'json');
    expect(r.code).toBe(1);
    expect(json(r).ports[0]!.findings.filter((f) => ['pfc', 'ecn', 'vlan'].includes(f.check))).toEqual([]);
  });

  it('exit 2: an invalid config, a missing default config, bad flags', () => {
    const bad = check('--config.file', writeConfig('ports: [{ device: mlx5_0, capacity: "12.5gb/s" }]\n'), '--path.sysfs', sysfs('mlx5_roce'));
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/config\.yaml:1:\d+: ports\[0\]\.capacity: "12\.5gb\/s": unit "gb\/s" is ambiguous/);
    const missing = check('--path.sysfs', sysfs('mlx5_roce'));
    expect(missing.code).toBe(2);
    expect(missing.err).toMatch(/^check: config file \/etc\/mxl-fabric-exporter\/config\.yaml \(the default --config\.file\) does not exist; give --config\.file=FILE/);
    expect(check('--units', 'nibbles').err).toMatch(/^check: --units must be one of bytes, bits; got "nibbles"/);
    expect(check('extra').code).toBe(2);
  });
});
