/** `check` and the connections: a flow bound to one port whose connection runs on another fails. */
import { afterEach, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { runCheck } from '../../src/cli/check.js';
import { writeConfig } from '../exporter/harness.js';
import { FIXTURES_DIR } from '../fixtures/sysfs.js';
import { FakeRestrackKernel } from '../sources/restrack/fake-kernel.js';
import { ProcFixture, mapsLine } from '../sources/procfs/fixture.js';
import { addFlow, makeDomain } from '../domain/mxl-domain.mjs';

const DATA = '0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d05'; // flows/data_60.json
let proc: ProcFixture | undefined;
afterEach(() => {
  proc?.close();
  proc = undefined;
});

function check(connectionOn: { device: string; index: number }): { code: number; out: string; findings: { check: string; verdict: string; detail: string }[] } {
  const config = writeConfig(`
ports: [{ device: rxe0, port: 1, mtu: 4096 }]
flows:
  - { flow: flows/data_60.json, device: rxe0, direction: tx }
domains:
  - { path: /dev/shm/mxl-tx, device: rxe0, direction: tx }
`);
  proc = ProcFixture.create();
  proc.add({ pid: 202, comm: 'mxl-fabrics-dem', startTicks: 1n, maps: `${mapsLine(0x7f0000000000n, 1, 'rw-s', { path: `/dev/shm/mxl-tx/${DATA}.mxl-flow/data`, inode: 3 })}\n` });
  const kernel = new FakeRestrackKernel();
  kernel.device(connectionOn.index, connectionOn.device, [{ lqpn: 33, sqPsn: 100, rqPsn: 7, rqpn: 33, pid: 202 }],
    [{ lqpn: 33, src: ['10.99.0.1', 48130], dst: ['10.99.0.2', 1312], pid: 202 }]);
  let out = '';
  const code = runCheck(['--config.file', config, '--path.sysfs', join(FIXTURES_DIR, 'rxe_6_1'), '--path.proc', proc.root, '--output', 'json'],
    { stdout: (t) => void (out += t), stderr: () => undefined },
    { open: () => ({ ok: true, transport: kernel.transport() }), sleep: () => void (kernel.qps.get(connectionOn.device)![0]!.sqPsn += 120) });
  const r = JSON.parse(out) as { ports: { findings: { check: string; verdict: string; detail: string }[] }[] };
  return { code, out, findings: r.ports[0]!.findings.filter((f) => f.check === 'connection') };
}

describe('check: a configured binding against its connection', () => {
  it('fails a flow bound to rxe0 tx whose connection runs on rxe1', () => {
    const r = check({ device: 'rxe1', index: 4 });
    expect(r.findings).toEqual([{
      check: 'connection', verdict: 'fail',
      detail: `flow "Camera 1 ANC" (${DATA}) is bound to rxe0/1 tx, but its connection 10.99.0.1:48130 -> 10.99.0.2:1312 (pid 202) runs on rxe1/1 tx`,
      values: { connectionDevice: 'rxe1', connectionPort: 1, connectionDirection: 'tx' },
    }]);
    expect(r.code).toBe(1);
  });

  it('is ok when the connection runs where the flow is bound', () => {
    const r = check({ device: 'rxe0', index: 3 });
    expect(r.findings).toEqual([{ check: 'connection', verdict: 'ok', detail: 'flow "Camera 1 ANC" runs where it is bound: connection 10.99.0.1:48130 -> 10.99.0.2:1312 (pid 202) on rxe0/1 tx' }]);
  });
});

describe('check: bind: auto says what is bound and what waits for a connection', () => {
  const CAM = '0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d31';
  function autoCheck(flows: number, qps: boolean): string {
    const domain = makeDomain();
    if (flows > 0) {
      addFlow(domain, {
        id: CAM, label: 'Domain cam', format: 'urn:x-nmos:format:video', tags: { 'urn:x-nmos:tag:grouphint/v1.0': ['Cam:Video'] },
        media_type: 'video/v210', grain_rate: { numerator: 25 },
        frame_width: 1920, frame_height: 1080, interlace_mode: 'progressive',
      }, { id: CAM, format: 1, rate: [25n, 1n] });
    }
    const config = writeConfig(`domains:\n  - { path: ${domain}, bind: auto }\n`);
    proc = ProcFixture.create();
    proc.add({ pid: 202, comm: 'mxl-fabrics-dem', startTicks: 1n, maps: `${mapsLine(0x7f0000000000n, 1, 'rw-s', { path: `${domain}/${CAM}.mxl-flow/data`, inode: 3 })}\n` });
    const kernel = new FakeRestrackKernel();
    kernel.device(3, 'rxe0', qps ? [{ lqpn: 33, sqPsn: 100, rqPsn: 7, rqpn: 33, pid: 202 }] : [],
      qps ? [{ lqpn: 33, src: ['10.99.0.1', 48130], dst: ['10.99.0.2', 1312], pid: 202 }] : []);
    let out = '';
    runCheck(['--config.file', config, '--path.sysfs', join(FIXTURES_DIR, 'rxe_6_1'), '--path.proc', proc.root],
      { stdout: (t) => void (out += t), stderr: () => undefined },
      { open: () => ({ ok: true, transport: kernel.transport() }), sleep: () => void (qps && (kernel.qps.get('rxe0')![0]!.sqPsn += 120)) });
    rmSync(domain, { recursive: true, force: true });
    return out.split('\n')[0]!;
  }

  it('an empty domain: no flow yet, and flows are bound once connections carry them', () => {
    expect(autoCheck(0, false)).toMatch(/valid, 0 flows \(0 configured, 0 found in MXL domains; bind: auto binds each flow found once a connection carries it\) on 0 ports$/);
  });

  it('a flow found that no connection carries: counted as found, not bound yet', () => {
    expect(autoCheck(1, false)).toMatch(/valid, 0 flows \(0 configured, 0 found in MXL domains; 1 more found, not bound yet: no connection carries it \(bind: auto\)\) on 0 ports$/);
  });

  it('a flow its connection carries: bound where the connection runs (rxe0 tx)', () => {
    expect(autoCheck(1, true)).toMatch(/valid, 1 flow \(0 configured, 1 found in MXL domains\) on 1 port$/);
  });
});
