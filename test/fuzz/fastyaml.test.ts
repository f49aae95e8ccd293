/**
 * The YAML fast path never means something else than the `yaml` library: on every document it
 * either gives exactly what yaml's toJSON() gives, or declines (undefined) and the library
 * parses it. Checked on every YAML file in the repository, on documents generated the way
 * configs are written (block and flow style, quoting, comments, numbers that look like words),
 * and on those documents mutated character by character.
 */
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseDocument, stringify } from 'yaml';
import { parseYamlFast } from '../../src/input/fastyaml.js';

const ROOT = path.join(__dirname, '../..');

function fast(text: string): unknown {
  const g = parseYamlFast(text);
  let s = g.next();
  while (!s.done) s = g.next();
  return s.value;
}

/** yaml's reading, or undefined when yaml reports an error (the fast path must then decline). */
function reference(text: string): { value: unknown } | undefined {
  const doc = parseDocument(text, { uniqueKeys: true });
  return doc.errors.length > 0 ? undefined : { value: doc.toJSON() };
}

/** Checks one document; true when the fast path read it (rather than declining). */
function agrees(text: string): boolean {
  const f = fast(text);
  if (f === undefined) return false;
  const ref = reference(text);
  expect(ref, `fast path read a document yaml refuses:\n${text}`).toBeDefined();
  expect(f, text).toEqual(ref!.value);
  return true;
}

function yamlFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' || e.name.startsWith('.') || e.name === 'out' ? [] : yamlFiles(p);
    return /\.ya?ml$/.test(e.name) ? [p] : [];
  });
}

describe('YAML fast path', () => {
  it('reads every YAML file in the repository as yaml does, or declines', () => {
    const files = [...yamlFiles(path.join(ROOT, 'config')), ...yamlFiles(path.join(ROOT, 'test')), ...yamlFiles(path.join(ROOT, 'deploy'))];
    expect(files.length).toBeGreaterThan(10);
    let read = 0;
    for (const f of files) {
      const text = fs.readFileSync(f, 'utf8');
      agrees(text);
      if (fast(text) !== undefined) read++;
    }
    expect(read).toBeGreaterThan(files.length / 2); // the fast path is worth having on real files
  });

  it('reads the shapes configs use', () => {
    const cases: [string, unknown][] = [
      ['a: 1\nb: x # comment\n# full line\nc:\n  - { d: "q#x", e: [1, 2.5, -3e2] }\n  - f\n', { a: 1, b: 'x', c: [{ d: 'q#x', e: [1, 2.5, -300] }, 'f'] }],
      ['flows:\n- flow: a.json\n  device: mlx5_0\n- { flow: b.json }\n', { flows: [{ flow: 'a.json', device: 'mlx5_0' }, { flow: 'b.json' }] }],
      ["k: 'it''s'\nn: ~\nt: True\nu: 1s\nv: 30000/1001\nw: 10Gbps\n", { k: "it's", n: null, t: true, u: '1s', v: '30000/1001', w: '10Gbps' }],
      ['- - a\n  - b\n- c\n', [['a', 'b'], 'c']],
      ['', null],
    ];
    for (const [text, value] of cases) {
      expect(fast(text), text).toEqual(value);
      agrees(text);
    }
  });

  it('declines what is not in its subset', () => {
    for (const text of ['a: &x 1\nb: *x\n', 'a: !!str 1\n', 'a: |\n  x\n', 'a: b\n  c\n', '---\na: 1\n', 'a: {b: 1,\n c: 2}\n', 'a: 0x1F\n', 'a: .inf\n', 'a: 1\na: 2\n', '\ta: 1\n', '? a\n: b\n', 'a: "\\x41"\n']) {
      expect(fast(text), text).toBeUndefined();
    }
  });

  it('takes a tab after a colon as a separator, never as part of a key or a plain scalar', () => {
    // Found by the mutation property below (seed -1005318752): `drift:<tab>  tolerance: 0.05` was
    // read as the key "drift:\t  tolerance"; yaml refuses the line.
    for (const text of ['drift:\t  tolerance: 0.05\n', 'a: b:\tc\n']) {
      expect(fast(text), text).toBeUndefined();
    }
    for (const text of ['a:\t1\n', '"a":\tb\n', 'a: [x,\ty]\n', 'a: b\t# c\n']) agrees(text);
  });

  const scalar = fc.oneof(
    fc.constantFrom('1', '-2', '+3', '0.5', '1e3', '.5', '007', 'true', 'False', 'null', '~', 'yes', 'no', 'on', '0x10', '0o7', '.inf', '.NaN', '1s', '10Gbps', 'a:b', 'a #b', 'a# b', "it's", '"q"', "'q'", '"a\\nb"', '-', '- x', '?', ':', '[x]', '{x}', 'a,b', '', ' ', '@x', '`x', '%x', '!x', '&x', '*x', '|', '>'),
    fc.string({ maxLength: 8 }),
    fc.integer().map(String),
    fc.double({ noNaN: true }).map(String),
  );
  const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
    v: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalar, fc.array(tie('v'), { maxLength: 4 }), fc.dictionary(fc.oneof(fc.constantFrom('a', 'flow', 'device', 'port'), fc.string({ maxLength: 5 })), tie('v'), { maxKeys: 4 })),
  })).v;

  it('agrees with yaml on generated documents in block and flow style', () => {
    let read = 0;
    fc.assert(
      fc.property(value, fc.boolean(), fc.integer({ min: 0, max: 3 }), (v, flowLevel, level) => {
        const text = stringify(v, flowLevel ? { flowCollectionPadding: true, collectionStyle: level % 2 ? 'flow' : 'any' } : undefined);
        if (agrees(text)) read++;
      }),
      { numRuns: Number(process.env.FASTYAML_RUNS ?? 1500) },
    );
    expect(read).toBeGreaterThan(300); // not a test of declining everything
  });

  it('agrees with yaml on mutated config text', () => {
    let read = 0;
    const seed = fs.readFileSync(path.join(ROOT, 'config', 'example.yaml'), 'utf8');
    const chars = [' ', '\n', '#', ':', '-', '{', '}', '[', ']', ',', '"', "'", '\t', 'a', '1', '&', '*', '!'];
    fc.assert(
      fc.property(fc.nat(seed.length), fc.constantFrom(...chars), fc.constantFrom('insert', 'replace', 'delete'), (at, c, how) => {
        const text = how === 'insert' ? seed.slice(0, at) + c + seed.slice(at) : how === 'replace' ? seed.slice(0, at) + c + seed.slice(at + 1) : seed.slice(0, at) + seed.slice(at + 1);
        if (agrees(text)) read++;
      }),
      { numRuns: Number(process.env.FASTYAML_RUNS ?? 1500) },
    );
    expect(read).toBeGreaterThan(300);
  });
});
