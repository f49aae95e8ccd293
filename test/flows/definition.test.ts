import { describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadFlowFile, mediaOf, parseFlowText } from '../../src/flows/definition.js';
import { InputError, formatProblem } from '../../src/input/problems.js';
import { predict, rational, RDMA_ROCEV2 } from '../../src/model/index.js';

const fixture = (name: string): string => join(__dirname, '../fixtures/flows', name);
const problemsOf = (fn: () => unknown): string[] => {
  try {
    fn();
  } catch (e) {
    if (e instanceof InputError) return e.problems.map(formatProblem);
    throw e;
  }
  throw new Error('expected an InputError');
};

describe('flow definitions', () => {
  it('reads a 30000/1001 v210 flow exactly', () => {
    const def = loadFlowFile(fixture('v210_1080p2997.json'));
    expect(def).toMatchObject({
      id: '0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d01', label: 'Camera 1 video', format: 'video', mediaType: 'video/v210',
      groupHints: ['Camera 1:Video'], position: { line: 1, col: 1 },
    });
    expect(def.media).toEqual({
      format: 'video', mediaType: 'video/v210', width: 1920, height: 1080, interlaced: false, frameRate: rational(30000, 1001),
    });
  });

  it('reads interlaced video as fields at twice the frame rate', () => {
    const p = predict(mediaOf(loadFlowFile(fixture('v210_1080i2997.json'))), RDMA_ROCEV2, { kind: 'l3', bytes: 4096 });
    expect(p.eventRate).toEqual(rational(60000, 1001));
    expect(p.payloadBytesPerEvent).toBe(2_764_800n);
  });

  it('reads v210a, audio, data and YAML flows', () => {
    expect(loadFlowFile(fixture('v210a_1080p25.json')).mediaType).toBe('video/v210a');
    const audio = loadFlowFile(fixture('audio_2ch_48k.json'));
    expect(audio.media).toEqual({ format: 'audio', mediaType: 'audio/float32', channels: 2, sampleRate: rational(48000), bitDepth: 32 });
    expect(predict(mediaOf(audio), RDMA_ROCEV2, { kind: 'l3', bytes: 4096 }).bytesPerSecond.wire).toEqual(rational(392_200));
    expect(predict(mediaOf(loadFlowFile(fixture('data_60.json'))), RDMA_ROCEV2, { kind: 'l3', bytes: 4096 }).bytesPerSecond.wire).toEqual(
      rational(255_600),
    );
    expect(loadFlowFile(fixture('v210_720p50.yaml')).media).toMatchObject({ width: 1280, height: 720, frameRate: rational(50) });
  });

  it('lists every problem in a file with line, column and field', () => {
    const f = fixture('bad_many.json');
    expect(problemsOf(() => loadFlowFile(f))).toEqual([
      `${f}:2:9: id: "not-a-uuid" is not a UUID`,
      `${f}:5:12: label: must not be empty`,
      `${f}:3:47: tags["urn:x-nmos:tag:grouphint/v1.0"][0]: "nogroup" is not <group-name>:<role-in-group>[:device|node]`,
      `${f}:6:17: media_type: "video/raw" is not one of "video/v210", "video/v210a"`,
      `${f}:8:18: frame_width: 8000 is out of range 2..7680`,
    ]);
  });

  it('explains interlace constraints at the field that breaks them', () => {
    const f = fixture('bad_interlaced.yaml');
    expect(problemsOf(() => loadFlowFile(f))).toEqual([
      `${f}:6:13: grain_rate: interlaced video needs a grain_rate of 30000/1001 or 25/1, got 50/1`,
    ]);
  });

  it('reports syntax errors with their position', () => {
    const f = fixture('bad_syntax.json');
    const problems = problemsOf(() => loadFlowFile(f));
    expect(problems.length).toBeGreaterThan(0);
    expect(problems[0]).toMatch(new RegExp(`^${f}:4:\\d+: `));
  });

  it('names missing required fields at the object that lacks them', () => {
    expect(problemsOf(() => parseFlowText('x.yaml', 'format: urn:x-nmos:format:audio\n'))).toEqual([
      'x.yaml:1:1: id: required string is missing',
      'x.yaml:1:1: label: required string is missing',
      'x.yaml:1:1: tags: required object is missing',
      'x.yaml:1:1: sample_rate: required object is missing',
      'x.yaml:1:1: bit_depth: required number is missing',
    ]);
    expect(problemsOf(() => parseFlowText('y.json', '[1,2]'))).toEqual(['y.json:1:1: expected a mapping (an object) at the top level']);
    expect(problemsOf(() => loadFlowFile('/nonexistent/flow.json'))[0]).toMatch(/^\/nonexistent\/flow.json:1:1: cannot read flow definition: ENOENT/);
  });
});

describe('group hints (NMOS parameter register: <group-name>:<role-in-group>[:device|node])', () => {
  const TAG = 'urn:x-nmos:tag:grouphint/v1.0';
  const base = JSON.parse(readFileSync(fixture('data_60.json'), 'utf8')) as Record<string, unknown>;
  const hintProblems = (hint: string): string[] => {
    try {
      parseFlowText('hint.json', JSON.stringify({ ...base, tags: { [TAG]: [hint] } }));
      return [];
    } catch (e) {
      if (!(e instanceof InputError)) throw e;
      return e.problems.map((p) => p.reason);
    }
  };

  it('each malformed hint gets its own message, a well-formed one none', () => {
    const shape = (h: string) => `"${h}" is not <group-name>:<role-in-group>[:device|node]`;
    const empty = (h: string) => `"${h}": group name and role must not be empty`;
    const scope = (h: string) => `"${h}": scope must be device or node`;
    const cases: [string, string[]][] = [
      ['Camera 1:Video', []], ['Camera 1:Video:device', []], ['Camera 1:Video:node', []],
      ['nogroup', [shape('nogroup')]], ['a:b:c:d', [shape('a:b:c:d')]], ['a:b:node:', [shape('a:b:node:')]],
      [':Video', [empty(':Video')]], ['Camera:', [empty('Camera:')]], [':', [empty(':')]], ['a::node', [empty('a::node')]],
      ['a:b:', [scope('a:b:')]], ['a:b:nodes', [scope('a:b:nodes')]], ['a:b:xdevice', [scope('a:b:xdevice')]], ['a:b:Device', [scope('a:b:Device')]],
    ];
    for (const [hint, reasons] of cases) expect([hint, hintProblems(hint)]).toEqual([hint, reasons]);
  });
});

describe('flow files: a near miss of an NMOS IS-04 field is an error naming it (src/flows/nmos.ts)', () => {
  const base = {
    id: '5fbec3b1-1b0f-417d-9059-8b94a47197ed', label: 'Mic 1', format: 'urn:x-nmos:format:audio',
    tags: { 'urn:x-nmos:tag:grouphint/v1.0': ['Mic 1:Audio'] }, media_type: 'audio/float32', sample_rate: { numerator: 48000 }, bit_depth: 32,
  };
  const video = {
    id: '0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d01', label: 'Cam', format: 'urn:x-nmos:format:video', tags: { 'urn:x-nmos:tag:grouphint/v1.0': ['Cam:Video'] },
    media_type: 'video/v210', grain_rate: { numerator: 25, denominator: 1 }, frame_width: 1920, frame_height: 1080,
  };
  /** The same document as JSON (the fast path) and as YAML (the yaml package): one answer. */
  const both = (doc: Record<string, unknown>): string[][] => {
    const json = problemsOf(() => parseFlowText('f.json', JSON.stringify(doc, null, 1))).map((p) => p.replace(/^f\.json:\d+:\d+: /, ''));
    const yaml = problemsOf(() => parseFlowText('f.yaml', JSON.stringify(doc))).map((p) => p.replace(/^f\.yaml:\d+:\d+: /, ''));
    return [json, yaml];
  };

  it('"channel_cont": 16 is refused, not read as 1 channel (16x under)', () => {
    const [json, yaml] = both({ ...base, channel_cont: 16 });
    expect(json).toEqual(['channel_cont: unknown field (did you mean "channel_count"?)']);
    expect(yaml).toEqual(json);
    expect(problemsOf(() => parseFlowText('f.json', `{\n"id": "${base.id}",\n  "channel_cont": 16, "label": "x"}`))[0]).toMatch(/^f\.json:3:3: channel_cont: /);
  });

  it('interlace_mod, a case change, and a typo inside grain_rate and components are refused the same way', () => {
    expect(both({ ...video, interlace_mod: 'interlaced_tff' })[0]).toEqual(['interlace_mod: unknown field (did you mean "interlace_mode"?)']);
    expect(both({ ...video, Frame_Width: 1280 })[0]).toEqual(['Frame_Width: unknown field (did you mean "frame_width"?)']);
    expect(both({ ...video, grain_rate: { numerator: 30000, denominater: 1001 } })[0]).toEqual(['grain_rate.denominater: unknown field (did you mean "denominator"?)']);
    expect(both({ ...video, components: [{ name: 'Y', width: 1920, height: 1080, bitdepth: 10 }] })[0])
      .toEqual(['components[0].bitdepth: unknown field (did you mean "bit_depth"?)']);
    const [json, yaml] = both({ ...video, interlace_mod: 'interlaced_tff' });
    expect(yaml).toEqual(json);
  });

  it('every IS-04 flow field, and keys far from all of them (extensions), stay accepted', () => {
    const full = {
      ...video, description: 'd', version: '1441704616:890020555', source_id: base.id, device_id: base.id, parents: [],
      interlace_mode: 'progressive', colorspace: 'BT709', transfer_characteristic: 'SDR',
      components: [{ name: 'Y', width: 1920, height: 1080, bit_depth: 10 }], event_type: 'boolean', DID_SDID: [{ DID: '0x41', SDID: '0x01' }],
      'urn:x-vendor:extra': 1, my_extension: true, ts: 2, xyz: 3,
    };
    expect(parseFlowText('f.json', JSON.stringify(full)).label).toBe('Cam');
    expect(parseFlowText('f.yaml', JSON.stringify(full)).label).toBe('Cam');
    expect(parseFlowText('f.json', JSON.stringify({ ...base, channel_count: 16 })).media).toMatchObject({ channels: 16 });
  });
});
