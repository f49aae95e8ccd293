/**
 * Property-based fuzzing of the config and flow-definition parsers: whatever the text, they
 * return or throw InputError, and every problem names a file, a line and column >= 1 and a
 * reason. Thousands of documents: random JSON/YAML values, documents shaped like the real
 * ones with wrong types, and mutations of valid files (deleted keys, swapped types, truncated
 * text, odd unicode, huge numbers, deep nesting).
 */
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { parseConfig } from '../../src/config/load.js';
import { parseFlowText } from '../../src/flows/definition.js';
import { InputError } from '../../src/input/problems.js';
import { parseWebConfig } from '../../src/exporter/web/index.js';

const ROOT = path.join(__dirname, '../..');
// The shipped config: its flow files exist, so mutations that keep a `flow:` path load real files.
const CONFIG_FILE = path.join(ROOT, 'config', 'example.yaml');
const FLOW_FILE = path.join(ROOT, 'test', 'fixtures', 'flows', 'fuzz.json');
const WEB_FILE = path.join(ROOT, 'test', 'fixtures', 'web.yml');

const CONFIG_SEEDS = [
  fs.readFileSync(CONFIG_FILE, 'utf8'),
  `sampling: { interval: 1s, window: 4s }\ndrift: { tolerance: 0.05 }\nheadroom: 0.8\nproviders:\n  - { name: vlan, base: rdma_rocev2, wireOverheadBytes: 86, l2HeaderBytes: 18 }\nports:\n  - { device: rxe0, port: 1, provider: vlan, ib_mtu: 4096, capacity: 25Gbps, headroom: 0.5 }\nflows:\n  - flow:\n      id: 0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d04\n      label: cam\n      format: urn:x-nmos:format:audio\n      tags: { "urn:x-nmos:tag:grouphint/v1.0": ["Cam:Audio"] }\n      media_type: audio/float32\n      sample_rate: { numerator: 48000 }\n      channel_count: 8\n      bit_depth: 32\n    device: rxe0\n    direction: rx\n    ptime: 1ms\n`,
  `domains:\n  - { path: /dev/shm/mxl, device: mlx5_0, direction: tx, include: ["*"] }\nflows: []\n`,
];
// Every fixture, the invalid ones included (bad_syntax.json is mutated as text only).
const FLOW_SEEDS = fs.readdirSync(path.join(ROOT, 'test', 'fixtures', 'flows'))
  .filter((f) => /\.(json|yaml)$/.test(f))
  .map((f) => fs.readFileSync(path.join(ROOT, 'test', 'fixtures', 'flows', f), 'utf8'));
const parses = (t: string): boolean => {
  try {
    parseYaml(t);
    return true;
  } catch {
    return false;
  }
};

/** Runs the parser; anything but success or InputError fails the property, as do bad problems. */
function wellBehaved(parse: (file: string, text: string) => unknown, file: string, text: string): void {
  try {
    parse(file, text);
  } catch (e) {
    if (!(e instanceof InputError)) throw new Error(`not an InputError for ${JSON.stringify(text.slice(0, 200))}: ${(e as Error)?.stack ?? String(e)}`);
    expect(e.problems.length).toBeGreaterThan(0);
    for (const p of e.problems) {
      expect(typeof p.file === 'string' && p.file.length > 0).toBe(true);
      expect(Number.isInteger(p.line) && p.line >= 1).toBe(true);
      expect(Number.isInteger(p.col) && p.col >= 1).toBe(true);
      expect(typeof p.reason === 'string' && p.reason.trim().length > 0).toBe(true);
      expect(typeof p.field).toBe('string');
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Generators

const oddStrings = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: 'binary' }),
  fc.constantFrom('', ' ', '\u0000', '\ufeff', '\u202e', '🎥', 'ẞ', 'NaN', '.inf', '-.inf', '~', 'null', 'yes', '0x1F', '1e999',
    '99999999999999999999999', '-0', '00001', '30000/1001', '1/0', '0/0', '../../etc/passwd', '/dev/zero', 'flows/../../x', '*', '&a', '!!binary x', '%YAML 1.1',
    'urn:x-nmos:format:video', 'video/v210', 'audio/float32', 'rdma_rocev2', 'mlx5_0', 'auto', '100Gbps', '10ms', 'tx', 'rx'),
);
const oddNumbers = fc.oneof(
  fc.integer(), fc.double(), fc.constantFrom(0, -1, 1e308, -1e308, Number.MAX_SAFE_INTEGER, 2 ** 64, 4096, 7681, 4321, 1e-320, 0.1 + 0.2),
);
const scalar = fc.oneof(oddStrings, oddNumbers, fc.boolean(), fc.constant(null));
const anyValue = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalar, tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 4 }),
  object: fc.dictionary(fc.oneof(oddStrings, fc.constantFrom(
    'sampling', 'interval', 'window', 'drift', 'tolerance', 'headroom', 'providers', 'ports', 'flows', 'domains', 'device', 'port', 'mtu', 'ib_mtu',
    'capacity', 'provider', 'flow', 'direction', 'ptime', 'name', 'base', 'id', 'label', 'format', 'tags', 'media_type', 'grain_rate',
    'numerator', 'denominator', 'frame_width', 'frame_height', 'interlace_mode', 'sample_rate', 'channel_count', 'bit_depth', 'path',
    'tls_server_config', 'cert_file', 'key_file', 'client_auth_type', 'basic_auth_users', 'http_server_config', 'headers', 'rate_limit')),
  tie('value'), { maxKeys: 5 }),
})).value;

/** A value rendered as JSON or YAML text. */
const valueText = fc.tuple(anyValue, fc.boolean()).map(([v, json]) => {
  try {
    return json ? JSON.stringify(v) ?? 'null' : toYaml(v);
  } catch {
    return String(v);
  }
});

/** Object-level mutations of a parsed seed: delete a key, swap a value's type, nest deeper. */
function mutateValue(seed: unknown, picks: number[], replacement: unknown): unknown {
  const clone = structuredClone(seed) as unknown;
  let node = clone as Record<string, unknown> | unknown[];
  for (let i = 0; i < picks.length; i++) {
    if (node === null || typeof node !== 'object') break;
    const keys = Object.keys(node);
    if (keys.length === 0) break;
    const k = keys[picks[i]! % keys.length]!;
    const child = (node as Record<string, unknown>)[k];
    const last = i === picks.length - 1 || child === null || typeof child !== 'object';
    if (last) {
      const op = picks[i]! % 3;
      if (op === 0) delete (node as Record<string, unknown>)[k];
      else if (op === 1) (node as Record<string, unknown>)[k] = replacement;
      else (node as Record<string, unknown>)[k] = [[{ [k]: child }]];
      break;
    }
    node = child as Record<string, unknown>;
  }
  return clone;
}

/** Text-level mutations: cut, insert, replace a range, duplicate or drop a line, deep nesting. */
const textMutation = fc.oneof(
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), len: fc.integer({ min: 1, max: 40 }) }),
  fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), text: oddStrings }),
  fc.record({ kind: fc.constant('number' as const), at: fc.nat(), text: fc.constantFrom('1e999', '-1', '99999999999999999999999999', '0.0000001', '.nan', '0x10', '1_000') }),
  fc.record({ kind: fc.constant('line' as const), at: fc.nat(), dup: fc.boolean() }),
  fc.record({ kind: fc.constant('nest' as const), at: fc.nat(), depth: fc.integer({ min: 10, max: 200 }), open: fc.constantFrom('[', '{', '- ', '  ') }),
);
type TextMutation = typeof textMutation extends fc.Arbitrary<infer T> ? T : never;

function applyText(text: string, m: TextMutation): string {
  const at = text.length === 0 ? 0 : m.at % (text.length + 1);
  switch (m.kind) {
    case 'truncate': return text.slice(0, at);
    case 'delete': return text.slice(0, at) + text.slice(at + m.len);
    case 'insert': return text.slice(0, at) + m.text + text.slice(at);
    case 'number': {
      const re = /-?\d+(\.\d+)?/g;
      const matches = [...text.matchAll(re)];
      if (matches.length === 0) return text;
      const hit = matches[m.at % matches.length]!;
      return text.slice(0, hit.index) + m.text + text.slice(hit.index! + hit[0].length);
    }
    case 'line': {
      const lines = text.split('\n');
      const i = m.at % lines.length;
      if (m.dup) lines.splice(i, 0, lines[i]!);
      else lines.splice(i, 1);
      return lines.join('\n');
    }
    case 'nest': return text.slice(0, at) + m.open.repeat(m.depth) + text.slice(at);
  }
}

const mutatedText = (seeds: readonly string[]): fc.Arbitrary<string> =>
  fc.tuple(fc.constantFrom(...seeds), fc.array(textMutation, { minLength: 1, maxLength: 4 }))
    .map(([seed, ms]) => ms.reduce(applyText, seed));

const mutatedValue = (seeds: readonly string[]): fc.Arbitrary<string> =>
  fc.tuple(fc.constantFrom(...seeds.filter(parses).map((s) => parseYaml(s) as unknown)), fc.array(fc.nat(), { minLength: 1, maxLength: 5 }), anyValue, fc.boolean())
    .map(([seed, picks, replacement, json]) => {
      const v = mutateValue(seed, picks, replacement);
      return json ? JSON.stringify(v) : toYaml(v);
    });

// ---------------------------------------------------------------------------------------------

// 3,500 generated documents plus the nesting cases, about ten seconds; FUZZ_RUNS=20000 (and a FUZZ_SEED) for a longer hunt.
const RUNS = Number(process.env.FUZZ_RUNS ?? 500);
const params = { numRuns: RUNS, seed: Number(process.env.FUZZ_SEED ?? 20240607), endOnFailure: true } as const;

describe('parseConfig never throws anything but a positioned InputError', () => {
  it('random JSON/YAML values', () => {
    fc.assert(fc.property(valueText, (t) => wellBehaved(parseConfig, CONFIG_FILE, t)), params);
  });
  it('valid configs with keys deleted, values swapped for other types, nesting added', () => {
    fc.assert(fc.property(mutatedValue(CONFIG_SEEDS), (t) => wellBehaved(parseConfig, CONFIG_FILE, t)), params);
  });
  it('valid configs truncated, cut, spliced with odd unicode, huge numbers and deep nesting', () => {
    fc.assert(fc.property(mutatedText(CONFIG_SEEDS), (t) => wellBehaved(parseConfig, CONFIG_FILE, t)), params);
  });
});

describe('parseFlowText never throws anything but a positioned InputError', () => {
  it('random JSON/YAML values', () => {
    fc.assert(fc.property(valueText, (t) => wellBehaved(parseFlowText, FLOW_FILE, t)), params);
  });
  it('valid flow definitions with keys deleted and values swapped', () => {
    fc.assert(fc.property(mutatedValue(FLOW_SEEDS), (t) => wellBehaved(parseFlowText, FLOW_FILE, t)), params);
  });
  it('valid flow definitions truncated and spliced', () => {
    fc.assert(fc.property(mutatedText(FLOW_SEEDS), (t) => wellBehaved(parseFlowText, FLOW_FILE, t)), params);
  });
});

describe('parseWebConfig never throws anything but a positioned InputError', () => {
  const seeds = [
    'tls_server_config:\n  cert_file: missing.crt\n  key_file: missing.key\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n  min_version: TLS13\n  cipher_suites: [TLS_AES_128_GCM_SHA256]\n',
    'basic_auth_users:\n  prometheus: $2y$10$X0h1gDsPszWURQaxFh.zoubFi6DXncSjhoQNJgRrnGs7EsimhC7zG\nhttp_server_config:\n  headers:\n    X-Frame-Options: deny\nrate_limit: { interval: 1s, burst: 5 }\n',
  ];
  it('random values and mutated web configs', () => {
    fc.assert(fc.property(fc.oneof(valueText, mutatedText(seeds), mutatedValue(seeds)), (t) => wellBehaved(parseWebConfig, WEB_FILE, t)), params);
  });
});

describe('deep nesting', () => {
  it.each([100, 1000, 5000])('%i levels of "- ", "[", "{" and indentation are refused with a position, never a crash', (n) => {
    const docs = ['- '.repeat(n), '['.repeat(n), '{"a":'.repeat(n), Array.from({ length: Math.min(n, 300) }, (_, i) => `${' '.repeat(i)}a:`).join('\n')];
    for (const d of docs) {
      wellBehaved(parseConfig, CONFIG_FILE, `flows:\n  ${d}\n`);
      wellBehaved(parseFlowText, FLOW_FILE, d);
      wellBehaved(parseWebConfig, WEB_FILE, `basic_auth_users:\n  ${d}\n`);
    }
  });
});
