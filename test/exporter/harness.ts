/** Starts the real daemon on a fixture sysfs tree with a manual clock, and scrapes it over HTTP. */
import { mkdtempSync, mkdirSync, copyFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Daemon, type DaemonOptions } from '../../src/exporter/daemon.js';
import { createLogger } from '../../src/log.js';
import { SysfsFixture, type FixtureName } from '../fixtures/sysfs.js';
import { labelProblems } from '../contract/family-labels.js';

export const FLOWS = join(__dirname, '../fixtures/flows');

export interface Running {
  readonly daemon: Daemon;
  readonly fx: SysfsFixture;
  readonly configFile: string;
  readonly base: string;
  readonly logs: string[];
  /**
   * Advance the monotonic clock by `seconds` and take one sample (reads run on the bounded
   * reader, so this is a promise; scrape() and get() wait for every tick asked for first).
   */
  tick(seconds?: number): Promise<void>;
  scrape(): Promise<Map<string, number>>;
  get(path: string, init?: RequestInit): Promise<Response>;
  stop(): Promise<void>;
}

export function writeConfig(text: string, flows: string[] = ['data_60.json', 'audio_2ch_48k.json', 'v210_1080p2997.json']): string {
  const dir = mkdtempSync(join(tmpdir(), 'mfe-daemon-'));
  mkdirSync(join(dir, 'flows'));
  for (const f of flows) copyFileSync(join(FLOWS, f), join(dir, 'flows', f));
  writeFileSync(join(dir, 'config.yaml'), text);
  return join(dir, 'config.yaml');
}

/** Daemons started and not yet stopped. */
const running = new Set<Running>();

/** Stops every daemon started and left running: a test file's `afterEach(stopDaemons)`. */
export async function stopDaemons(): Promise<void> {
  for (const r of [...running]) await r.stop();
}

export async function startDaemon(
  fixture: FixtureName | 'empty', configText: string, prepare?: (fx: SysfsFixture) => void,
  options?: (fx: SysfsFixture) => Partial<DaemonOptions>,
): Promise<Running> {
  const fx = fixture === 'empty' ? SysfsFixture.empty() : SysfsFixture.copy(fixture);
  prepare?.(fx);
  const configFile = writeConfig(configText);
  let now = 1_000_000_000_000n;
  const logs: string[] = [];
  const sink = new Writable({ write: (chunk, _enc, cb) => { logs.push(String(chunk)); cb(); } });
  const daemon = new Daemon({
    configFile, listenAddress: '127.0.0.1:0', telemetryPath: '/metrics', sysfsRoot: fx.root,
    log: createLogger('debug', 'logfmt', sink), manualClock: () => now, ...options?.(fx),
  });
  await daemon.start();
  const base = `http://127.0.0.1:${daemon.address().port}`;
  const run: Running = {
    daemon, fx, configFile, base, logs,
    tick: (seconds = 1) => {
      now += BigInt(Math.round(seconds * 1e9));
      return daemon.sampleNow();
    },
    scrape: async () => {
      await daemon.settled();
      const m = parseMetrics(await (await fetch(`${base}/metrics`)).text());
      const wrong = labelProblems(m.keys());
      if (wrong.length > 0) throw new Error(`series with labels their family does not declare:\n${wrong.join('\n')}`);
      return m;
    },
    get: async (path, init) => {
      await daemon.settled();
      return fetch(`${base}${path}`, init);
    },
    stop: async () => {
      running.delete(run);
      await daemon.stop();
      fx.cleanup();
    },
  };
  running.add(run);
  return run;
}

/** `name{labels} value` lines into a map keyed by the series text as printed. */
export function parseMetrics(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

/** The series of one family whose labels include every given label. */
export function series(m: Map<string, number>, name: string, labels: Record<string, string> = {}): Map<string, number> {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  return new Map([...m].filter(([k]) => (k === name || k.startsWith(`${name}{`)) && want.every((w) => k.includes(w))));
}

export function one(m: Map<string, number>, name: string, labels: Record<string, string> = {}): number | undefined {
  const s = series(m, name, labels);
  if (s.size > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${s.size} series: ${[...s.keys()].join(', ')}`);
  return [...s.values()][0];
}
