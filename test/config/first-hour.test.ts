/**
 * Config mistakes a first hour made (issue 34), each said where it is: a flow bound to a device
 * that is a near miss of one `ports:` names (it quietly added a port with defaults: now a warning,
 * since rxe1 beside rxe0 is as near and is a real device), and a flow file that does not exist
 * (reported as an invalid definition at 1:1 of a file that is not there).
 */
import { describe, it, expect } from 'vitest';
import { mkdtempSync, writeFileSync, mkdirSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.js';
import { InputError, formatProblem } from '../../src/input/problems.js';
import { runCheck } from '../../src/cli/check.js';
import { FIXTURES_DIR } from '../fixtures/sysfs.js';
import { startDaemon } from '../exporter/harness.js';

const FLOWS = join(__dirname, '../fixtures/flows');

function configFile(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'mfe-config-'));
  mkdirSync(join(dir, 'flows'));
  copyFileSync(join(FLOWS, 'data_60.json'), join(dir, 'flows/data.json'));
  writeFileSync(join(dir, 'config.yaml'), text);
  return join(dir, 'config.yaml');
}

function problems(file: string): string[] {
  try {
    loadConfig(file);
  } catch (e) {
    if (e instanceof InputError) return e.problems.map(formatProblem);
    throw e;
  }
  return [];
}

describe('a flow on a device no port names', () => {
  const text = (device: string): string => `ports:
  - { device: mlx5_0, port: 1 }
flows:
  - { flow: flows/data.json, device: ${device}, direction: tx }
domains:
  - { path: /dev/shm/mxl-none, device: ${device}, direction: rx }
`;

  it('is said, where it is written, when it is a near miss of one (flows and domains); the port is still taken', () => {
    const file = configFile(text('mlx5_77'));
    const c = loadConfig(file);
    const why = '"mlx5_77" is no device of ports: and gets a port with the defaults (did you mean "mlx5_0"? if it is another device, list its port under ports:)';
    expect((c.warnings ?? []).map(formatProblem)).toEqual([`${file}:4:38: flows[0].device: ${why}`, `${file}:6:40: domains[0].device: ${why}`]);
    expect(c.ports.map((p) => [p.device, p.declared])).toEqual([['mlx5_0', true], ['mlx5_77', false]]);
    // check says it (WARN: a sibling device is not a failure), serve logs it.
    let out = '';
    const code = runCheck(['--config.file', file, '--path.sysfs', join(FIXTURES_DIR, 'mlx5_roce')], { stdout: (t) => void (out += t), stderr: () => undefined });
    expect(out.split('\n')[1]).toBe(`  WARN    config     ${file}:4:38: flows[0].device: ${why}`);
    expect(code).toBe(1); // mlx5_77 is not on the host: its present check fails
  });

  it('is logged by serve at start', async () => {
    const run = await startDaemon('mlx5_roce', 'ports:\n  - { device: mlx5_0 }\nflows:\n  - { flow: flows/data_60.json, device: mlx5_77, direction: tx }\n');
    try {
      expect(run.logs.join('')).toMatch(/level=warn msg="config warning" problem=".*flows\[0\]\.device: \\"mlx5_77\\" is no device of ports:/);
    } finally {
      await run.stop();
    }
  });

  it('gets a port with the defaults, unsaid, when it is not, as documented (rxe0 beside mlx5_0)', () => {
    const c = loadConfig(configFile(text('rxe0')));
    expect(c.ports.map((p) => [p.device, p.declared])).toEqual([['mlx5_0', true], ['rxe0', false]]);
    expect(c.warnings).toBeUndefined();
  });

  it('is taken as it is when no ports: are listed', () => {
    const c = loadConfig(configFile('flows:\n  - { flow: flows/data.json, device: mlx5_77, direction: tx }\n'));
    expect(c.ports.map((p) => p.device)).toEqual(['mlx5_77']);
  });
});

describe('a flow file that does not exist', () => {
  it('cannot be read: said where the config names it, with the path, once', () => {
    const file = configFile('flows:\n  - { flow: flows/missing.json, device: mlx5_0, direction: tx }\n');
    const missing = join(file, '..', 'flows', 'missing.json');
    expect(problems(file)).toEqual([
      `${file}:2:13: flows[0].flow: flow definition flows/missing.json cannot be read: ${missing}: no such file or directory (ENOENT)`,
    ]);
  });
});
