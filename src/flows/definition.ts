/**
 * MXL flow definitions: NMOS IS-04 flow JSON (or the same in YAML), validated
 * with the fields and limits MXL's own parser uses
 * (dmf-mxl/mxl lib/internal/src/FlowParser.cpp).
 */
import { readFileSync } from 'node:fs';
import {
  type AudioMedia, type DataMedia, type MediaFlow, type VideoMedia, type Rational,
  rational, equals, VIDEO_MEDIA_TYPES, DATA_MEDIA_TYPE, DEFAULT_AUDIO_GRAIN_DURATION,
} from '../model/index.js';
import { Fields } from '../input/fields.js';
import { InputError, type Problem, SourceText, type Position } from '../input/problems.js';
import { NMOS_COMPONENT_FIELDS, NMOS_DID_SDID_FIELDS, NMOS_FLOW_FIELDS, NMOS_RATE_FIELDS } from './nmos.js';

type FlowMedia = VideoMedia | DataMedia | Omit<AudioMedia, 'grainDuration'>;

export interface FlowDefinition {
  readonly id: string;
  readonly label: string;
  readonly format: 'video' | 'audio' | 'data';
  readonly mediaType: string;
  readonly groupHints: readonly string[];
  readonly media: FlowMedia;
  /** Where the definition was read from, for messages. */
  readonly file: string;
  readonly position: Position;
}

// FlowParser.cpp: MAX_WIDTH / MAX_HEIGHT ("sanity limits") and the 2x1 minimum.
const FRAME_WIDTH = { min: 2, max: 7680 } as const;
const FRAME_HEIGHT = { min: 1, max: 4320 } as const;
const INTERLACE_MODES = ['progressive', 'interlaced_tff', 'interlaced_bff'] as const;
const INTERLACED_RATES = [rational(30000, 1001), rational(25)];
const FORMAT_PREFIX = 'urn:x-nmos:format:';
const GROUP_HINT_TAG = 'urn:x-nmos:tag:grouphint/v1.0';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Reads a flow definition mapping; problems are appended, undefined when it is unusable. */
export function readFlow(f: Fields): FlowDefinition | undefined {
  const before = f.problems.length;
  rejectNearMisses(f);
  const id = f.string('id', true);
  if (id !== undefined && !UUID.test(id)) f.report('id', `"${id}" is not a UUID`);
  const label = f.string('label', true);
  if (label === '') f.report('label', 'must not be empty');
  const groupHints = readGroupHints(f);
  const format = readFormat(f);
  const media = format === undefined ? undefined : readMedia(f, format);
  if (f.problems.length > before || !id || !label || !format || !media) return undefined;
  return {
    id: id.toLowerCase(), label, format, mediaType: media.mediaType, groupHints, media,
    file: f.src.file, position: f.src.positionOf(f.node),
  };
}

const RATE_KEYS = ['grain_rate', 'sample_rate'] as const;
const LISTED_FIELDS: readonly (readonly [string, readonly string[]])[] = [['components', NMOS_COMPONENT_FIELDS], ['DID_SDID', NMOS_DID_SDID_FIELDS]];

/** A typo of an NMOS field ("channel_cont") is an error naming the field, not an extension. */
function rejectNearMisses(f: Fields): void {
  f.rejectNearMisses(NMOS_FLOW_FIELDS);
  for (const key of RATE_KEYS) {
    const n = f.at(key);
    if (f.isObject(n)) f.below(n, key).rejectNearMisses(NMOS_RATE_FIELDS);
  }
  for (const [key, fields] of LISTED_FIELDS) {
    const n = f.at(key);
    if (n === undefined || !f.src.tree.isSeq(n)) continue;
    f.src.tree.items(n).forEach((item, i) => {
      if (f.isObject(item)) f.below(item, key, i).rejectNearMisses(fields);
    });
  }
}

function readFormat(f: Fields): FlowDefinition['format'] | undefined {
  const text = f.string('format', true);
  if (text === undefined) return undefined;
  const tail = text.startsWith(FORMAT_PREFIX) ? text.slice(FORMAT_PREFIX.length) : '';
  if (tail === 'video' || tail === 'audio' || tail === 'data') return tail;
  f.report('format', `"${text}" is not supported by MXL (use ${FORMAT_PREFIX}video, audio or data; mux is not supported)`);
  return undefined;
}

function readMedia(f: Fields, format: FlowDefinition['format']): FlowMedia | undefined {
  switch (format) {
    case 'video':
      return readVideo(f);
    case 'data':
      return readData(f);
    case 'audio':
      return readAudio(f);
  }
}

function readVideo(f: Fields): VideoMedia | undefined {
  const mediaType = f.oneOf('media_type', VIDEO_MEDIA_TYPES, true);
  const frameRate = readRate(f, 'grain_rate');
  const width = f.integer('frame_width', { required: true, ...FRAME_WIDTH });
  const height = f.integer('frame_height', { required: true, ...FRAME_HEIGHT });
  const mode = f.oneOf('interlace_mode', INTERLACE_MODES, false) ?? 'progressive';
  const interlaced = mode !== 'progressive';
  if (interlaced && frameRate && !INTERLACED_RATES.some((r) => equals(r, frameRate))) {
    f.report('grain_rate', `interlaced video needs a grain_rate of 30000/1001 or 25/1, got ${frameRate.num}/${frameRate.den}`);
    return undefined;
  }
  if (interlaced && height !== undefined && height % 2 !== 0) {
    f.report('frame_height', `interlaced video needs an even frame_height (one grain per field), got ${height}`);
    return undefined;
  }
  if (!mediaType || !frameRate || width === undefined || height === undefined) return undefined;
  return { format: 'video', mediaType, width, height, interlaced, frameRate };
}

function readData(f: Fields): DataMedia | undefined {
  const mediaType = f.oneOf('media_type', [DATA_MEDIA_TYPE] as const, true);
  const grainRate = readRate(f, 'grain_rate');
  if (!mediaType || !grainRate) return undefined;
  return { format: 'data', mediaType, grainRate };
}

function readAudio(f: Fields): Omit<AudioMedia, 'grainDuration'> | undefined {
  const sampleRate = readRate(f, 'sample_rate');
  const bitDepth = f.number('bit_depth', true);
  if (bitDepth !== undefined && bitDepth !== 32 && bitDepth !== 64) {
    f.report('bit_depth', `MXL audio is 32- or 64-bit float, got ${bitDepth}`);
    return undefined;
  }
  const channels = f.integer('channel_count', { required: false, min: 1, max: 65535 }) ?? 1;
  // FlowParser.cpp does not check an audio media_type; keep what the flow says.
  const mediaType = f.string('media_type', false) ?? `audio/float${bitDepth ?? 32}`;
  if (!sampleRate || bitDepth === undefined) return undefined;
  return { format: 'audio', mediaType, channels, sampleRate, bitDepth };
}

function readRate(f: Fields, key: string): Rational | undefined {
  const o = f.object(key, true);
  if (!o) return undefined;
  const num = o.integer('numerator', { required: true, min: 1 });
  const den = o.integer('denominator', { required: false, min: 1 }) ?? 1;
  return num === undefined ? undefined : rational(num, den);
}

function readGroupHints(f: Fields): string[] {
  const tags = f.object('tags', true);
  const items = tags?.list(GROUP_HINT_TAG, true);
  if (!tags || !items) return [];
  if (items.length === 0) tags.report(GROUP_HINT_TAG, 'needs at least one group hint');
  const hints: string[] = [];
  for (const item of items) {
    const value = f.valueOf(item.node);
    const reason = typeof value === 'string' ? groupHintProblem(value) : 'must be a string';
    if (reason) f.problems.push(f.src.problem(item.node, item.path, reason));
    else hints.push(value as string);
  }
  return hints;
}

/** NMOS parameter register: "<group-name>:<role-in-group>[:<group-scope>]", scope device or node. */
function groupHintProblem(s: string): string | undefined {
  // Found by the colons, not split(): one of these per flow file, 10,000 at a load.
  const a = s.indexOf(':');
  const b = a < 0 ? -1 : s.indexOf(':', a + 1);
  if (a < 0 || (b >= 0 && s.indexOf(':', b + 1) >= 0)) return `"${s}" is not <group-name>:<role-in-group>[:device|node]`;
  const roleEnd = b < 0 ? s.length : b;
  if (a === 0 || roleEnd === a + 1) return `"${s}": group name and role must not be empty`;
  if (b >= 0 && !(s.length === b + 7 && s.endsWith('device')) && !(s.length === b + 5 && s.endsWith('node'))) return `"${s}": scope must be device or node`;
  return undefined;
}

/** The model's view of a flow; audio needs its grain duration (the seed's ptime). */
export function mediaOf(def: FlowDefinition, grainDuration: Rational = DEFAULT_AUDIO_GRAIN_DURATION): MediaFlow {
  return def.media.format === 'audio' ? { ...def.media, grainDuration } : def.media;
}

/** Parses a flow definition text (.json or .yaml); throws InputError with every problem. */
export function parseFlowText(file: string, text: string): FlowDefinition {
  const fast = SourceText.parseJsonFast(file, text);
  if (fast) {
    const problems: Problem[] = [];
    const root = Fields.root(fast, problems);
    const def = root ? readFlow(root) : undefined;
    if (def && problems.length === 0) return def;
  }
  const src = SourceText.parse(file, text);
  const problems: Problem[] = src.syntaxProblems();
  if (problems.length) throw new InputError(problems);
  const root = Fields.root(src, problems);
  const def = root ? readFlow(root) : undefined;
  if (!def || problems.length) throw new InputError(problems);
  return def;
}

export function loadFlowFile(file: string): FlowDefinition {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    const reason = e instanceof Error ? e.message : String(e);
    throw new InputError([{ file, line: 1, col: 1, field: '', reason: `cannot read flow definition: ${reason}` }]);
  }
  return parseFlowText(file, text);
}
