/**
 * The landing page, `check` and `calc` agree on every number they show, for the shipped example
 * (config/example.yaml) on the mlx5_roce fixture, all in bits per second (the landing page's
 * default; `--units bits` for the CLI): each flow's wire rate and packets, each direction's
 * predicted wire rate, the capacity and the share of it.
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { join } from 'node:path';
import { runCalc } from '../../src/cli/calc.js';
import { runCheck } from '../../src/cli/check.js';
import { formatDataRate } from '../../src/input/units.js';
import { startDaemon, type Running } from '../exporter/harness.js';
import { ROOT } from '../deploy/tools.js';
import { FIXTURES_DIR } from '../fixtures/sysfs.js';

const EXAMPLE = join(ROOT, 'config', 'example.yaml');
const FLOWS = ['seed-v210-1080p25.json', 'seed-v210a-1080p25.json', 'seed-audio-2ch-48k.json', 'seed-data-60.json'].map((f) => join(ROOT, 'config', 'flows', f));
const TX = FLOWS.slice(0, 3);

function cli(run: typeof runCalc, ...argv: string[]): string {
  let out = '';
  expect(run(argv, { stdout: (t) => void (out += t), stderr: () => undefined })).toBeLessThanOrEqual(1);
  return out;
}

/** A table of the landing page as rows of cell texts (<br> as a newline, tags dropped). */
function rowsOf(html: string, id: string): { header: string[]; rows: string[][] } {
  const table = new RegExp(`<table id="${id}">([\\s\\S]*?)</table>`).exec(html)![1]!;
  const text = (cell: string): string => cell.replace(/<br>/g, '\n').replace(/<[^>]+>/g, '').replace(/&#39;/g, "'").replace(/&amp;/g, '&').trim();
  const header = [...table.matchAll(/<th[^>]*>([\s\S]*?)<\/th>/g)].map((m) => text(m[1]!));
  const body = table.slice(table.indexOf('<tbody>'));
  const rows = [...body.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((r) => [...r[1]!.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((c) => text(c[1]!)));
  return { header, rows };
}

let run: Running;
let page = '';
beforeAll(async () => {
  run = await startDaemon('mlx5_roce', '', undefined, () => ({ configFile: EXAMPLE }));
  await run.tick(1);
  page = await (await run.get('/')).text();
});
afterAll(async () => {
  await run?.stop();
});

describe('landing page, check and calc on the shipped example', () => {
  it('each flow: the landing page\'s wire rate and packets are calc\'s, with the same profile', () => {
    const calc = JSON.parse(cli(runCalc, ...FLOWS, '--provider', 'rdma_rocev2', '--output', 'json')) as { label: string; provider: string; wireBytesPerSecond: number; packetsPerSecond: number }[];
    const table = cli(runCalc, ...FLOWS, '--provider', 'rdma_rocev2', '--units', 'bits');
    const { header, rows } = rowsOf(page, 'flows');
    const col = (name: string): number => header.indexOf(name);
    expect(rows).toHaveLength(4);
    for (const c of calc) {
      const row = rows.find((r) => r[col('flow')]!.startsWith(c.label))!;
      const [wire, packets] = row[col('predicted')]!.split('\n');
      const shown = formatDataRate(c.wireBytesPerSecond, 'bits');
      expect(wire).toBe(`${shown} wire`);
      expect(table).toContain(shown); // calc's table shows the same string
      const pps = /^([\d.]+) (k?)pkt\/s$/.exec(packets!)!;
      expect(Number(pps[1]) * (pps[2] ? 1000 : 1)).toBeCloseTo(c.packetsPerSecond, pps[2] ? -1 : 0);
      expect(row[col('bound to')]).toContain(c.provider);
    }
  });

  it('each direction: check\'s predicted wire rate, capacity and share of it are the landing page\'s, and the sum of calc\'s flows', () => {
    const check = cli(runCheck as typeof runCalc, '--config.file', EXAMPLE, '--path.sysfs', join(FIXTURES_DIR, 'mlx5_roce'), '--units', 'bits');
    const calc = JSON.parse(cli(runCalc, ...TX, '--provider', 'rdma_rocev2', '--output', 'json')) as { wireBytesPerSecond: number }[];
    const { header, rows } = rowsOf(page, 'ports');
    const col = (name: string): number => header.indexOf(name);
    for (const direction of ['tx', 'rx']) {
      const line = new RegExp(`capacity +${direction}: (\\S+ \\S+) predicted .*\\(capacity (\\S+ \\S+) \\(.*\\): ([\\d.]+ %) of capacity`).exec(check)!;
      const row = rows.find((r) => r[col('dir')] === direction)!;
      expect(row[col('predicted')]!.split('\n').at(-1)).toBe(`wire ${line[1]}`);
      expect(row[col('capacity')]!.split('\n')[0]).toBe(line[2]);
      expect(row[col('utilisation')]!.split('\n')[0]).toBe(line[3]);
    }
    const txLine = /capacity +tx: (\S+ \S+) predicted/.exec(check)!;
    expect(formatDataRate(calc.reduce((n, c) => n + c.wireBytesPerSecond, 0), 'bits')).toBe(txLine[1]);
  });
});
