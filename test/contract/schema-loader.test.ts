/**
 * config/config.schema.json (what editors check against) and src/config/load.ts (what the
 * exporter accepts) name the same keys at every level. The loader refuses unknown keys with
 * Fields.rejectUnknown(known); a spy records each call's path and known keys while one config
 * that uses every object of the schema is loaded, and each is compared with the schema there.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Fields } from '../../src/input/fields.js';
import { parseConfig } from '../../src/config/load.js';
import type { PathItem } from '../../src/input/problems.js';

interface SchemaNode {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, SchemaNode>;
  additionalProperties?: boolean | SchemaNode;
  items?: SchemaNode;
  oneOf?: SchemaNode[];
  anyOf?: SchemaNode[];
}
type Schema = SchemaNode & { $defs: Record<string, SchemaNode> };

const SCHEMA = JSON.parse(readFileSync(join(__dirname, '../../config/config.schema.json'), 'utf8')) as Schema;
/** Flow definitions are NMOS resources: other NMOS fields are accepted there (not a config level). */
const OPEN_DEFS = new Set(['#/$defs/nmosFlow']);

/** A config that reaches every object level of the schema. */
const EVERY_LEVEL = `
sampling: { interval: 1s, window: 10s }
drift: { tolerance: 0.05 }
headroom: 0.9
metrics: { flow_layers: [payload, l2, wire] }
connections: { enabled: true, interval: 1s }
providers:
  - { name: p1, base: rdma_rocev2, grainHeaderBytes: { video: 8192, audio: 16, data: 8192 } }
ports:
  - { device: mlx5_0, port: 1, provider: p1, mtu: 4096, capacity: 100Gbps, headroom: 0.8 }
flows:
  - flow:
      id: 0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d04
      label: audio
      format: urn:x-nmos:format:audio
      tags: { "urn:x-nmos:tag:grouphint/v1.0": ["Camera 1:Audio"] }
      media_type: audio/float32
      sample_rate: { numerator: 48000 }
      channel_count: 2
      bit_depth: 32
    device: mlx5_0
    port: 1
    direction: tx
domains:
  - { path: /dev/shm/mxl, device: mlx5_0, port: 1, direction: rx, peer: "10.0.0.2:1312" }
  - { path: /dev/shm/mxl-rx, bind: auto }
`;

const level = (path: readonly PathItem[]): string => path.map((p) => (typeof p === 'number' ? '[]' : p)).join('.').replace(/\.\[\]/g, '[]');

function deref(node: SchemaNode): SchemaNode {
  let n = node;
  while (n.$ref !== undefined) n = SCHEMA.$defs[n.$ref.replace('#/$defs/', '')]!;
  return n;
}

/** The object schemas (with properties) at every config level, keyed by level(). */
function schemaLevels(): Map<string, SchemaNode> {
  const levels = new Map<string, SchemaNode>();
  const walk = (node: SchemaNode, at: string): void => {
    if (node.$ref !== undefined && OPEN_DEFS.has(node.$ref)) return;
    const n = deref(node);
    for (const alt of [...(n.oneOf ?? []), ...(n.anyOf ?? [])]) walk(alt, at);
    if (n.items) walk(n.items, `${at}[]`);
    if (!n.properties) return;
    levels.set(at, n);
    for (const [k, child] of Object.entries(n.properties)) walk(child, at === '' ? k : `${at}.${k}`);
  };
  walk(SCHEMA, '');
  return levels;
}

afterEach(() => vi.restoreAllMocks());

describe('config schema and loader', () => {
  it('accept the same keys at every level', () => {
    const seen = new Map<string, string[]>();
    const real = Fields.prototype.rejectUnknown;
    vi.spyOn(Fields.prototype, 'rejectUnknown').mockImplementation(function (this: Fields, known: readonly string[]) {
      seen.set(level(this.path), [...known].sort());
      real.call(this, known);
    });
    const config = parseConfig('/etc/mxl-fabric-exporter/config.yaml', EVERY_LEVEL);
    expect(config.flows).toHaveLength(1);

    const levels = schemaLevels();
    for (const [at, known] of seen) {
      const node = levels.get(at);
      expect(node, `the loader checks keys at "${at}", the schema has no object there`).toBeDefined();
      expect(Object.keys(node!.properties!).sort(), `keys at "${at || '(top)'}": schema vs loader`).toEqual(known);
      expect(node!.additionalProperties, `the schema allows other keys at "${at}", the loader refuses them`).toBe(false);
    }
    const unvisited = [...levels.keys()].filter((at) => !seen.has(at));
    expect(unvisited, 'schema levels the loader never checked (add them to EVERY_LEVEL, or check them in load.ts)').toEqual([]);
  });
});
