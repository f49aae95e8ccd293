/** A config replaced half-written while it is reloaded, and a host without a usable libibverbs. */
import { describe, it, expect, afterEach } from 'vitest';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { series, one, startDaemon, stopDaemons, type Running } from '../exporter/harness.js';

const FULL = `# three flows on rxe0
sampling: { interval: 1s, window: 4s }
ports:
  - { device: rxe0, port: 1, mtu: 4096, capacity: 10Gbps }
flows:
  - { flow: flows/data_60.json, device: rxe0, port: 1, direction: tx }
  - { flow: flows/audio_2ch_48k.json, device: rxe0, port: 1, direction: tx }
  - flow:
      id: 0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d04
      label: inline audio
      format: urn:x-nmos:format:audio
      tags: { "urn:x-nmos:tag:grouphint/v1.0": ["Camera 1:Audio"] }
      media_type: audio/float32
      sample_rate: { numerator: 48000 }
      channel_count: 8
      bit_depth: 32
    device: rxe0
    direction: rx
`;

/** Items begun under `flows:` in a config text (its `  - ` lines). */
const itemsBegun = (text: string): number => {
  const at = text.indexOf('\nflows:');
  return at < 0 ? 0 : (text.slice(at).match(/^ {2}- /gm) ?? []).length;
};

let run: Running | undefined;
afterEach(stopDaemons);

describe('config replaced half-written during reload', () => {
  it('every prefix of the file either loads as what it says or is refused whole; the scrape never fails', async () => {
    run = await startDaemon('rxe_6_1', FULL, undefined, () => ({ enableLifecycle: true }));
    const flows = async (): Promise<number> => {
      const res = await run!.get('/metrics');
      expect(res.status).toBe(200);
      return series(await run!.scrape(), 'mxl_fabric_flow_info').size;
    };
    expect(await flows()).toBe(3);
    let running = 3;
    let refused = 0;
    // Each cut is one reload; its outcome is checked against the text, never against the loader.
    const reloadAt = async (cut: number): Promise<'taken' | 'refused'> => {
      fs.writeFileSync(run!.configFile, FULL.slice(0, cut));
      const res = await run!.get('/-/reload', { method: 'POST' });
      if (res.status === 200) {
        // Taken whole: every flow item the prefix has begun is one of the running flows.
        running = itemsBegun(FULL.slice(0, cut));
      } else {
        refused++;
        expect(res.status).toBe(500);
        expect(await res.text()).toMatch(new RegExp(`^failed to reload config: ${run!.configFile}:\\d+:\\d+: `));
        expect(one(await run!.scrape(), 'mxl_fabric_exporter_config_last_reload_successful')).toBe(0);
      }
      expect(await flows()).toBe(running);
      return res.status === 200 ? 'taken' : 'refused';
    };
    for (let cut = 1; cut < FULL.length; cut += 4) await reloadAt(cut);
    // Whole lines, by hand: `ports:` and `flows:` with no list yet are refused (expected a
    // list); complete items are taken; the inline flow is refused until its direction is written
    // (before that, its flow, device or direction is missing).
    const lineEnds = [...FULL.matchAll(/\n/g)].map((m) => m.index! + 1);
    const outcomes: string[] = [];
    for (const end of lineEnds) outcomes.push(`${await reloadAt(end)} ${running}`);
    expect(outcomes).toEqual([
      'taken 0', 'taken 0', 'refused 0', 'taken 0', 'refused 0', 'taken 1', 'taken 2',
      ...Array<string>(10).fill('refused 2'), 'taken 3',
    ]);
    expect(refused).toBeGreaterThan(15);
    // The writer finishes (or renames the complete file into place): the next reload takes it.
    const tmp = `${run.configFile}.tmp`;
    fs.writeFileSync(tmp, FULL);
    fs.renameSync(tmp, run.configFile);
    expect((await run.get('/-/reload', { method: 'POST' })).status).toBe(200);
    expect(await flows()).toBe(3);
    expect(one(await run.scrape(), 'mxl_fabric_exporter_config_last_reload_successful')).toBe(1);
  }, 90_000); // ~170 reloads, each one load and one scrape: about 11 s on an idle 2-core machine
});

describe('libibverbs missing', () => {
  it('the daemon starts on sysfs, says why, and serves the scrape', () => {
    const libdir = fs.mkdtempSync(path.join(os.tmpdir(), 'mfe-nolib-'));
    // dlopen() finds this one first (LD_LIBRARY_PATH) and fails on it: as good as no library.
    fs.writeFileSync(path.join(libdir, 'libibverbs.so.1'), 'not a shared object\n');
    try {
      const out = execFileSync(path.join(__dirname, '../../node_modules/.bin/vite-node'), [path.join(__dirname, 'no-verbs-child.ts')], {
        env: { ...process.env, LD_LIBRARY_PATH: libdir }, encoding: 'utf8', timeout: 60_000,
      });
      const r = JSON.parse(out.trim().split('\n').at(-1)!) as { status: number; logs: string; up: string | undefined };
      expect(r.status).toBe(200);
      expect(r.logs).toContain('libibverbs unavailable (library-missing)');
      expect(r.logs).toContain('ports and attributes from sysfs (/sys/class/infiniband)');
      // A configured port is reported whether or not the host has it.
      expect(r.up).toMatch(/^[01]$/);
    } finally {
      fs.rmSync(libdir, { recursive: true, force: true });
    }
  }, 60_000);
});
