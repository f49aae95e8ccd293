/** Flow files as the loader reads them: a file longer than the first read, and where a file may live. */
import { describe, it, expect, afterAll } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync, mkdirSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isInside, loadConfig, loadConfigAsync } from '../../src/config/load.js';
import { InputError } from '../../src/input/problems.js';
import { BoundedReads } from '../../src/reads/bounded.js';

const flowsDir = join(__dirname, '../fixtures/flows');
const reader = new BoundedReads({ readTimeoutMs: 2000 });
afterAll(() => reader.close());

function configDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'mfe-flowfiles-'));
  mkdirSync(join(dir, 'flows'));
  return dir;
}

/** Both loaders, the async one on the native reader threads (as the daemon loads). */
async function loadBoth(file: string): Promise<Awaited<ReturnType<typeof loadConfigAsync>>[]> {
  return [loadConfig(file), await loadConfigAsync(file, reader)];
}

describe('flow files', () => {
  it('the native reader is what runs these reads', () => {
    expect(reader.mode).toBe('native');
  });

  it('reads a flow file longer than the first read whole', async () => {
    const dir = configDir();
    const def = JSON.parse(readFileSync(join(flowsDir, 'data_60.json'), 'utf8')) as Record<string, unknown>;
    const shortLabel = def.label;
    def.description = 'x'.repeat(64 * 1024); // longer than any first read (8 KB before)
    def.label = 'the long one';
    writeFileSync(join(dir, 'flows/long.json'), JSON.stringify(def, null, 2));
    copyFileSync(join(flowsDir, 'data_60.json'), join(dir, 'flows/short.json'));
    writeFileSync(join(dir, 'config.yaml'), 'flows:\n  - { flow: flows/long.json, device: rxe0, direction: tx }\n  - { flow: flows/short.json, device: rxe0, direction: rx }\n');
    for (const c of await loadBoth(join(dir, 'config.yaml'))) {
      expect(c.flows.map((f) => f.flow.label)).toEqual(['the long one', shortLabel]);
    }
  });

  it('accepts a file whose name starts with two dots inside the folder', async () => {
    const dir = configDir();
    copyFileSync(join(flowsDir, 'data_60.json'), join(dir, 'flows/..data.json'));
    writeFileSync(join(dir, 'config.yaml'), 'flows:\n  - { flow: flows/..data.json, device: rxe0, direction: tx }\n');
    for (const c of await loadBoth(join(dir, 'config.yaml'))) expect(c.flows).toHaveLength(1);
  });

  it('refuses a sibling folder whose name starts with the config folder\'s name', async () => {
    const dir = configDir();
    mkdirSync(`${dir}-other`);
    copyFileSync(join(flowsDir, 'data_60.json'), `${dir}-other/data.json`);
    const name = dir.slice(dir.lastIndexOf('/') + 1);
    writeFileSync(join(dir, 'config.yaml'), `flows:\n  - { flow: ../${name}-other/data.json, device: rxe0, direction: tx }\n`);
    const file = join(dir, 'config.yaml');
    expect(() => loadConfig(file)).toThrow(InputError);
    await expect(loadConfigAsync(file, reader)).rejects.toThrow(/is outside the config's folder/);
  });

  it('reads three batches of files as loadConfig() reads them, and reports a bad file in the last', async () => {
    const dir = configDir();
    const def = JSON.parse(readFileSync(join(flowsDir, 'data_60.json'), 'utf8')) as Record<string, unknown>;
    const n = 1234; // three batches of flow files, the last one short
    const lines = ['flows:'];
    for (let i = 0; i < n; i++) {
      const id = `0a3e1c52-4f0e-4d8b-9d0c-${String(i).padStart(12, '0')}`;
      writeFileSync(join(dir, `flows/f${i}.json`), JSON.stringify({ ...def, id, label: `flow ${i}` }));
      lines.push(`  - { flow: flows/f${i}.json, device: rxe0, direction: ${i % 2 ? 'rx' : 'tx'} }`);
    }
    writeFileSync(join(dir, 'config.yaml'), `${lines.join('\n')}\n`);
    const [sync, async] = await loadBoth(join(dir, 'config.yaml'));
    expect(async!.flows.map((f) => f.flow.label)).toEqual(sync!.flows.map((f) => f.flow.label));
    expect(async!.flows).toHaveLength(n);
    expect(async!.flows[n - 1]!.flow.label).toBe(`flow ${n - 1}`);
    // A bad file in the last batch is reported by both, with its name.
    writeFileSync(join(dir, `flows/f${n - 2}.json`), '{ "id": 7 }');
    const file = join(dir, 'config.yaml');
    expect(() => loadConfig(file)).toThrow(new RegExp(`f${n - 2}\\.json`));
    await expect(loadConfigAsync(file, reader)).rejects.toThrow(new RegExp(`f${n - 2}\\.json`));
  });

  it('a flow: path with ./, ../ or doubled slashes names the file path.resolve() names', async () => {
    const dir = configDir();
    mkdirSync(join(dir, 'flows/sub'));
    copyFileSync(join(flowsDir, 'data_60.json'), join(dir, 'flows/sub/a.json'));
    const spellings = ['flows/sub/a.json', './flows/sub/a.json', 'flows/./sub/a.json', 'flows//sub/a.json', 'flows/sub/../sub/a.json', `${dir}/flows/sub/a.json`];
    writeFileSync(join(dir, 'config.yaml'), `flows:\n${spellings.map((s, i) => `  - { flow: "${s}", device: rxe0, direction: ${i % 2 ? 'rx' : 'tx'}, port: ${i + 1} }\n`).join('')}`);
    for (const c of await loadBoth(join(dir, 'config.yaml'))) expect(c.flows.map((f) => f.flow.file)).toEqual(spellings.map(() => join(dir, 'flows/sub/a.json')));
    writeFileSync(join(dir, 'config.yaml'), 'flows:\n  - { flow: flows/../../a.json, device: rxe0, direction: tx }\n');
    expect(() => loadConfig(join(dir, 'config.yaml'))).toThrow(/"flows\/\.\.\/\.\.\/a\.json" is outside the config's folder/);
  });

  it('isInside: the folder itself and below it, nothing else', () => {
    expect(isInside('/etc/mfe', '/etc/mfe')).toBe(true);
    expect(isInside('/etc/mfe', '/etc/mfe/flows/a.json')).toBe(true);
    expect(isInside('/etc/mfe', '/etc/mfe/..a.json')).toBe(true);
    expect(isInside('/etc/mfe', '/etc/mfe-other/a.json')).toBe(false);
    expect(isInside('/etc/mfe', '/etc/a.json')).toBe(false);
    expect(isInside('/', '/etc/a.json')).toBe(true);
  });
});
