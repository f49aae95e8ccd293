import { describe, it, expect } from 'vitest';
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
