/** metrics.flow_layers: the layers of flow_predicted_bytes_per_second kept (docs/configuration.md, "Series budget"). */
import { describe, it, expect } from 'vitest';
import { DEFAULT_FLOW_LAYERS, parseConfig } from '../../src/config/load.js';
import { configProblems } from './problems.js';

const problems = (text: string): string[] => configProblems('c.yaml', text);

describe('metrics.flow_layers', () => {
  it('defaults to the layers the shipped rules and dashboard read: payload, l2, wire', () => {
    expect(DEFAULT_FLOW_LAYERS).toEqual(['payload', 'l2', 'wire']);
    expect(parseConfig('c.yaml', 'drift: { tolerance: 0.1 }\n').metrics.flowLayers).toEqual(['payload', 'l2', 'wire']);
    expect(parseConfig('c.yaml', 'metrics: {}\n').metrics.flowLayers).toEqual(['payload', 'l2', 'wire']);
  });

  it('keeps the listed layers in the model order, and none with []', () => {
    expect(parseConfig('c.yaml', 'metrics:\n  flow_layers: [wire, media]\n').metrics.flowLayers).toEqual(['media', 'wire']);
    expect(parseConfig('c.yaml', 'metrics:\n  flow_layers: [media, payload, l3, l2, wire]\n').metrics.flowLayers).toEqual(['media', 'payload', 'l3', 'l2', 'wire']);
    expect(parseConfig('c.yaml', 'metrics:\n  flow_layers: []\n').metrics.flowLayers).toEqual([]);
  });

  it('refuses unknown layers, duplicates, a non-list and unknown keys, naming file, line and field', () => {
    expect(problems('metrics:\n  flow_layers: [wire, wir, 3]\n')).toEqual([
      'c.yaml:2:23: metrics.flow_layers[1]: "wir" is not a layer; layers: media, payload, l3, l2, wire',
      'c.yaml:2:28: metrics.flow_layers[2]: 3 is not a layer; layers: media, payload, l3, l2, wire',
    ]);
    expect(problems('metrics:\n  flow_layers:\n    - l2\n    - l2\n')).toEqual(['c.yaml:4:7: metrics.flow_layers[1]: layer "l2" is listed twice']);
    expect(problems('metrics:\n  flow_layers: wire\n')).toEqual(['c.yaml:2:16: metrics.flow_layers: expected a list']);
    expect(problems('metrics:\n  flow_layer: [wire]\n')[0]).toMatch(/^c\.yaml:2:3: metrics\.flow_layer: unknown field \(did you mean "flow_layers"\?\)$/);
  });
});
