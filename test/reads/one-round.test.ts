/**
 * OneRound: the reusable one-round program a counter set restarts every tick behaves as the
 * generator it replaces, under every runner (runSync, all(), yield*, the bounded reader).
 */
import { describe, it, expect, afterEach } from 'vitest';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { BoundedReads } from '../../src/reads/bounded.js';
import { OpBatch, type Results } from '../../src/reads/ops.js';
import { OneRound, type ReadProgram, all, read, runSync } from '../../src/reads/program.js';

let dir: string | undefined;
let reader: BoundedReads | undefined;
afterEach(() => {
  reader?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  reader = undefined;
  dir = undefined;
});

function fileWith(text: string): string {
  dir ??= fs.mkdtempSync(path.join(os.tmpdir(), 'one-round-'));
  const f = path.join(dir, `f${fs.readdirSync(dir).length}`);
  fs.writeFileSync(f, text);
  return f;
}

const textOf = (r: Results): string | undefined => r.text(0);

describe('OneRound', () => {
  it('reads its batch once per start, as often as it is restarted', () => {
    const batch = new OpBatch([{ kind: 'readFile', path: fileWith('one\n'), max: 64 }]);
    let decoded = 0;
    const p = new OneRound((r) => (decoded++, textOf(r)));
    expect(runSync(p.start(batch))).toBe('one\n');
    expect(runSync(p.start(batch))).toBe('one\n');
    expect(decoded).toBe(2);
    expect(p.next()).toEqual({ done: true, value: undefined }); // ended: nothing more to read
  });

  it('runs beside generators in all() and under yield*, each with its own results', () => {
    const a = new OpBatch([{ kind: 'readFile', path: fileWith('a'), max: 8 }]);
    const b = fileWith('b');
    const p = new OneRound(textOf);
    function* wrapped(): ReadProgram<string> {
      const v = yield* p.start(a);
      return `<${v}>`;
    }
    function* gen(): ReadProgram<string | undefined> {
      return (yield* read([{ kind: 'readFile', path: b, max: 8 }])).text(0);
    }
    expect(runSync(all<string | undefined>([gen(), wrapped(), gen()]))).toEqual(['b', '<a>', 'b']);
  });

  it('return() ends it before it ran, with the value given, and it can start again', () => {
    const batch = new OpBatch([{ kind: 'readFile', path: fileWith('x'), max: 8 }]);
    const p = new OneRound(textOf);
    p.start(batch);
    expect(p.return('gave up')).toEqual({ done: true, value: 'gave up' });
    expect(p.next()).toEqual({ done: true, value: undefined });
    expect(runSync(p.start(batch))).toBe('x');
    expect(() => p.start(batch).throw(new Error('no'))).toThrow('no');
  });

  it('runs on the bounded reader, every tick the same object', async () => {
    reader = new BoundedReads({ readTimeoutMs: 1000 });
    const batch = new OpBatch([{ kind: 'readFile', path: fileWith('tick'), max: 8 }]);
    const p = new OneRound(textOf);
    for (let i = 0; i < 3; i++) {
      const [o] = await reader.run([{ group: 'g', program: p.start(batch) }]);
      expect(o).toEqual({ kind: 'done', value: 'tick' });
    }
  });
});
