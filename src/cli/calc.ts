/** `calc`: the model on its own, for flow files and/or flags. */
import { existsSync, readFileSync } from 'node:fs';
import {
  type Prediction, type Mtu, type ProviderProfile, type Rational, type Layer, type RingModel, LAYERS, ProfileRegistry, predict, toNumber,
  format as fmtRational, DEFAULT_AUDIO_GRAIN_DURATION, DEFAULT_PROVIDER, MediaError, MtuError, VIDEO_MEDIA_TYPES, DATA_MEDIA_TYPE, mul, rational,
} from '../model/index.js';
import { type FlowDefinition, loadFlowFile, mediaOf, parseFlowText } from '../flows/definition.js';
import { InputError, SourceText, formatProblem, type Problem } from '../input/problems.js';
import { Fields } from '../input/fields.js';
import { type RateUnits, RATE_UNIT_CHOICES, formatDataRate, frameRateLabel, parseDuration, parseFrameRate, UnitError } from '../input/units.js';
import { readProviders } from '../config/providers.js';
import { type CommandShape, type FlagSpec, type Parsed, commandFlags, str, UsageError } from './args.js';
import { csv, grouped, table } from './format.js';
import type { Io } from './io.js';

const MEDIA_TYPES = [...VIDEO_MEDIA_TYPES, 'audio/float32', DATA_MEDIA_TYPE] as const;
const INTERLACE_MODES = ['progressive', 'interlaced_tff', 'interlaced_bff'] as const;

const CALC_FLAGS: FlagSpec = {
  'media-type': { type: 'string', help: 'one flow given by flags, of this media type', choices: MEDIA_TYPES },
  width: { type: 'string', help: 'frame width in pixels (video)' },
  height: { type: 'string', help: 'frame height in lines (video)' },
  rate: { type: 'string', help: 'video frame rate or data grains/s: 30000/1001, 25, 59.94 (read as 60000/1001), 23.976...' },
  interlace: { type: 'string', help: 'video scan', choices: INTERLACE_MODES },
  channels: { type: 'string', help: 'audio channel count (default 1)' },
  'sample-rate': { type: 'string', help: 'audio sample rate in Hz (default 48000)' },
  'bit-depth': { type: 'string', help: 'audio bits per sample (default 32)', choices: ['32', '64'] },
  ptime: { type: 'string', help: 'audio grain duration (the seed\'s ptime), with its unit: 10ms, 1ms, 125us (default 10ms)' },
  label: { type: 'string', help: 'label for a flow given by flags' },
  id: { type: 'string', help: 'flow id for a flow given by flags (default 00000000-0000-0000-0000-000000000000)' },
  mtu: { type: 'string', help: 'L3 MTU: packet budget including the profile\'s mtuOverheadBytes (the seed\'s "mtu")' },
  'ib-mtu': { type: 'string', help: 'IB MTU of a RoCE port (256..4096): RDMA payload per packet; L3 = IB MTU + overhead' },
  provider: { type: 'string', help: 'provider profile (rdma_rocev2: the seed\'s worked examples)', default: DEFAULT_PROVIDER.name },
  providers: { type: 'string', help: 'YAML file with a `providers:` list of extra profiles' },
  output: { type: 'string', help: 'output format', default: 'table', choices: ['table', 'json', 'csv'] },
  units: { type: 'string', help: 'rates in the table in bytes (MB/s) or bits (Mb/s); refused with --output json or csv, whose fields are bytes/s', default: 'bytes', choices: RATE_UNIT_CHOICES },
  help: { type: 'boolean', help: 'show this help' },
};

const SHAPE: CommandShape = {
  usage: 'calc [FLOW_FILE...] [flags]',
  summary: `Computes what MXL flows cost on the wire (MXL FabricsBandwidth.md).
Give flow definition files (NMOS flow JSON or YAML), or one flow by flags.
Without --mtu or --ib-mtu the seed's mtu=4096 (L3) is used.
Exit status: 0 ok, 2 invalid input.`,
  flags: CALC_FLAGS,
  positionals: true,
};

const FLAG_FOR_FIELD: Record<string, string> = {
  media_type: '--media-type', frame_width: '--width', frame_height: '--height', grain_rate: '--rate',
  interlace_mode: '--interlace', sample_rate: '--sample-rate', bit_depth: '--bit-depth', channel_count: '--channels',
  label: '--label', id: '--id',
};

/** Flags that describe the one flow given by flags, by the formats they apply to. */
const FLOW_FLAGS: Readonly<Record<string, readonly ('video' | 'audio' | 'data')[]>> = {
  width: ['video'], height: ['video'], interlace: ['video'], rate: ['video', 'data'],
  channels: ['audio'], 'sample-rate': ['audio'], 'bit-depth': ['audio'], label: ['video', 'audio', 'data'], id: ['video', 'audio', 'data'],
};

interface CalcRow {
  readonly flow: Pick<FlowDefinition, 'id' | 'label' | 'mediaType'>;
  readonly prediction: Prediction;
  /** Audio: the batch layout MXL sends from (for native/mxl-loadgen). */
  readonly audio?: {
    readonly channels: number; readonly samplesPerBatch: number; readonly sampleBytes: number;
    readonly headerBytes: number; readonly txIovLimit: number; readonly ringLengthSamples: number;
  } | undefined;
}

export function runCalc(argv: string[], io: Io): number {
  const parsed = commandFlags(argv, io, SHAPE);
  if (typeof parsed === 'number') return parsed;
  try {
    const output = str(parsed, 'output')!;
    if (output !== 'table' && parsed.given.has('units') && str(parsed, 'units') !== 'bytes') {
      throw new UsageError(`--units applies to the table only; --output ${output} gives every rate in bytes per second (fields named ...BytesPerSecond)`);
    }
    const notes: string[] = [];
    const rows = computeRows(parsed, notes);
    for (const note of notes) io.stderr(`calc: note: ${note}\n`);
    io.stdout(render(rows, str(parsed, 'output')!, str(parsed, 'units') as RateUnits));
    return 0;
  } catch (e) {
    if (e instanceof InputError) io.stderr(`${e.problems.map(formatProblem).join('\n')}\n`);
    else if (e instanceof UsageError || e instanceof UnitError || e instanceof MediaError || e instanceof MtuError) {
      io.stderr(`calc: ${e.message}\n`);
    } else throw e;
    return 2;
  }
}

function computeRows(p: Parsed, notes: string[]): CalcRow[] {
  const profile = resolveProfile(p);
  const mtu = resolveMtu(p);
  const grainDuration = str(p, 'ptime') ? flagValue('--ptime', () => parseDuration(str(p, 'ptime')!)) : DEFAULT_AUDIO_GRAIN_DURATION;
  const flows = p.positionals.map((file) => loadFlowFile(file));
  if (str(p, 'media-type') !== undefined) flows.push(flowFromFlags(p, notes));
  else checkNoFlowFlags(p);
  if (flows.length === 0) throw new UsageError('give a flow definition file or --media-type (see --help)');
  if (p.given.has('ptime') && !flows.some((f) => f.format === 'audio')) {
    throw new UsageError('--ptime is the grain duration of audio flows, and none is given');
  }
  return flows.map((flow) => {
    const prediction = predict(mediaOf(flow, grainDuration), profile, mtu);
    return { flow, prediction, audio: audioLayout(flow, prediction, profile) };
  });
}

/** Runs a parse and names the flag in its error: "--ptime: ..." */
function flagValue<T>(flag: string, parse: () => T): T {
  try {
    return parse();
  } catch (e) {
    if (e instanceof UnitError) throw new UnitError(`${flag}: ${e.message}`);
    throw e;
  }
}

function checkNoFlowFlags(p: Parsed): void {
  const stray = Object.keys(FLOW_FLAGS).filter((k) => p.given.has(k));
  if (stray.length) {
    throw new UsageError(`${stray.map((k) => `--${k}`).join(', ')} describe${stray.length === 1 ? 's' : ''} a flow given by flags: add --media-type (flow files carry their own fields)`);
  }
}

function resolveProfile(p: Parsed): ProviderProfile {
  const file = str(p, 'providers');
  const registry = file ? loadProviders(file) : new ProfileRegistry();
  const name = str(p, 'provider') ?? DEFAULT_PROVIDER.name;
  const profile = registry.get(name);
  if (!profile) throw new UsageError(`unknown --provider "${name}"; known: ${registry.names().join(', ')}`);
  return profile;
}

function loadProviders(file: string): ProfileRegistry {
  if (!existsSync(file)) throw new UsageError(`--providers: no such file ${file}`);
  const src = SourceText.parse(file, readFileSync(file, 'utf8'));
  const problems: Problem[] = src.syntaxProblems();
  const root = problems.length ? undefined : Fields.root(src, problems);
  const registry = root ? readProviders(root) : new ProfileRegistry();
  if (problems.length) throw new InputError(problems);
  return registry;
}

function resolveMtu(p: Parsed): Mtu {
  const l3 = str(p, 'mtu');
  const ib = str(p, 'ib-mtu');
  if (l3 !== undefined && ib !== undefined) throw new UsageError('give --mtu (L3 budget) or --ib-mtu (RDMA payload per packet), not both');
  const value = (flag: string, text: string): number => {
    if (!/^\d+$/.test(text)) throw new UsageError(`${flag} must be a whole number of bytes, got "${text}"`);
    return Number(text);
  };
  if (ib !== undefined) return { kind: 'ib', bytes: value('--ib-mtu', ib) };
  return { kind: 'l3', bytes: l3 === undefined ? 4096 : value('--mtu', l3) };
}

type FlowFormat = 'video' | 'audio' | 'data';
const formatOf = (mediaType: string): FlowFormat => (mediaType.startsWith('audio/') ? 'audio' : mediaType === DATA_MEDIA_TYPE ? 'data' : 'video');

/** Builds an NMOS flow from flags and validates it like a file, naming flags in errors. */
function flowFromFlags(p: Parsed, notes: string[]): FlowDefinition {
  const mediaType = str(p, 'media-type')!;
  const format = formatOf(mediaType);
  const inapplicable = Object.entries(FLOW_FLAGS).filter(([k, formats]) => p.given.has(k) && !formats.includes(format)).map(([k]) => `--${k}`);
  if (inapplicable.length) {
    const applies = Object.entries(FLOW_FLAGS).filter(([k, formats]) => formats.includes(format) && k !== 'label' && k !== 'id').map(([k]) => `--${k}`);
    throw new UsageError(`${inapplicable.join(', ')} do${inapplicable.length === 1 ? 'es' : ''} not apply to ${mediaType} (${format} flows take ${applies.join(', ')})`);
  }
  const num = (flag: string): number | string | undefined => {
    const v = str(p, flag);
    return v !== undefined && /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v;
  };
  const grainRate = str(p, 'rate') === undefined ? undefined : flagValue('--rate', () => parseFrameRate(str(p, 'rate')!));
  if (grainRate?.note) notes.push(`--rate ${grainRate.note}`);
  const sampleRate = str(p, 'sample-rate') ?? '48000';
  if (!/^[1-9]\d*$/.test(sampleRate)) throw new UsageError(`--sample-rate is a whole number of Hz (48000, 96000), got "${sampleRate}"`);
  const flow: Record<string, unknown> = {
    id: str(p, 'id') ?? '00000000-0000-0000-0000-000000000000', label: str(p, 'label') ?? defaultLabel(p, mediaType, grainRate?.rate),
    format: `urn:x-nmos:format:${format}`, tags: { 'urn:x-nmos:tag:grouphint/v1.0': ['calc:flags'] }, media_type: mediaType,
  };
  if (format === 'audio') {
    Object.assign(flow, { sample_rate: { numerator: Number(sampleRate) }, channel_count: num('channels') ?? 1, bit_depth: num('bit-depth') ?? 32 });
  } else if (grainRate) {
    Object.assign(flow, { grain_rate: { numerator: Number(grainRate.rate.num), denominator: Number(grainRate.rate.den) } });
  }
  if (format === 'video') {
    Object.assign(flow, { frame_width: num('width'), frame_height: num('height'), interlace_mode: str(p, 'interlace') });
  }
  for (const k of Object.keys(flow)) if (flow[k] === undefined) delete flow[k];
  try {
    return parseFlowText('flags', JSON.stringify(flow));
  } catch (e) {
    if (!(e instanceof InputError)) throw e;
    throw new UsageError(e.problems.map((pr) => `${flagName(pr.field)}: ${pr.reason}`).join('\ncalc: '));
  }
}

function flagName(field: string): string {
  const top = field.split(/[.[]/)[0] ?? field;
  return FLAG_FOR_FIELD[top] ?? field;
}

/** "video/v210 1920x1080p25", "video/v210 1920x1080i59.94" (interlaced: the field rate), "video/smpte291 @60". */
function defaultLabel(p: Parsed, mediaType: string, rate: Rational | undefined): string {
  if (mediaType.startsWith('audio/')) return `${mediaType} ${str(p, 'channels') ?? 1}ch ${str(p, 'sample-rate') ?? 48000}Hz`;
  if (mediaType === DATA_MEDIA_TYPE) return `${mediaType} @${rate ? frameRateLabel(rate) : '?'}`;
  const interlaced = (str(p, 'interlace') ?? 'progressive') !== 'progressive';
  const shown = rate ? frameRateLabel(interlaced ? mul(rate, rational(2)) : rate) : '?';
  return `${mediaType} ${str(p, 'width') ?? '?'}x${str(p, 'height') ?? '?'}${interlaced ? 'i' : 'p'}${shown}`;
}

function calcJson(row: CalcRow): Record<string, unknown> {
  const p = row.prediction;
  const n = (r: Parameters<typeof toNumber>[0]): number => toNumber(r);
  const layers = (b: Record<Layer, Rational>, only: readonly Layer[] = LAYERS): Record<string, number> =>
    Object.fromEntries(only.map((l) => [l, n(b[l])]));
  return {
    flowId: row.flow.id,
    label: row.flow.label,
    mediaType: row.flow.mediaType,
    provider: p.provider,
    mtu: p.mtu,
    payloadPerPacket: p.payloadPerPacket,
    payloadBytesPerEvent: Number(p.payloadBytesPerEvent),
    writeBytesPerEvent: Number(p.writeBytesPerEvent),
    eventsPerSecond: n(p.eventRate),
    eventRate: fmtRational(p.eventRate),
    packetsPerEvent: Number(p.packetsPerEvent),
    packetsPerSecond: n(p.packetsPerSecond),
    mediaBytesPerSecond: n(p.mediaBytesPerSecond),
    overheadBytesPerSecond: n(p.overheadBytesPerSecond),
    wireBytesPerSecond: n(p.bytesPerSecond.wire),
    bytesPerSecond: layers(p.bytesPerSecond),
    writesPerEvent: n(p.writesPerEvent),
    expectedPacketsPerEvent: n(p.expectedPacketsPerEvent),
    writes: p.writes.map((w) => ({ bytes: Number(w.bytes), immediate: w.immediate, entries: w.entries })),
    ...(p.ring ? { ring: ringJson(p.ring) } : {}),
    ...(row.audio ? { audio: row.audio } : {}),
    ack: {
      acksPerEvent: n(p.reverse.acksPerEvent),
      packetsPerSecond: n(p.reverse.packetsPerSecond),
      bytesPerSecond: layers(p.reverse.bytesPerSecond, ['l3', 'l2', 'wire']),
    },
  };
}

function ringJson(r: RingModel): Record<string, unknown> {
  return {
    lengthSamples: Number(r.lengthSamples), from: r.from, phase: r.phase,
    wrapsPerBatch: fmtRational(r.wrapsPerBatch), wrapsPerBatchValue: toNumber(r.wrapsPerBatch),
    wrappingWrites: r.wrappingWrites.map((w) => ({ bytes: Number(w.bytes), immediate: w.immediate, entries: w.entries })),
  };
}

/** What a load generator needs to send an audio flow's batches as MXL does (native/mxl-loadgen). */
function audioLayout(flow: FlowDefinition, p: Prediction, profile: ProviderProfile): CalcRow['audio'] {
  if (flow.media.format !== 'audio' || !p.ring) return undefined;
  return {
    channels: flow.media.channels, samplesPerBatch: Number(p.grain.linesOrSamples), sampleBytes: flow.media.bitDepth / 8,
    headerBytes: profile.grainHeaderBytes.audio, txIovLimit: profile.txIovLimit, ringLengthSamples: Number(p.ring.lengthSamples),
  };
}

/**
 * The CSV columns: the JSON fields (calcJson) by their dotted paths, every scalar of them, in the
 * JSON's order; the write lists (arrays) have none. A field an input does not have (ring, audio
 * for video) is an empty cell. test/cli/calc.test.ts holds the two to each other, both ways.
 */
const CSV_COLUMNS = [
  'flowId', 'label', 'mediaType', 'provider', 'mtu', 'payloadPerPacket', 'payloadBytesPerEvent', 'writeBytesPerEvent',
  'eventsPerSecond', 'eventRate', 'packetsPerEvent', 'packetsPerSecond', 'mediaBytesPerSecond', 'overheadBytesPerSecond',
  'wireBytesPerSecond', ...LAYERS.map((l) => `bytesPerSecond.${l}`), 'writesPerEvent', 'expectedPacketsPerEvent',
  'ring.lengthSamples', 'ring.from', 'ring.phase', 'ring.wrapsPerBatch', 'ring.wrapsPerBatchValue',
  'audio.channels', 'audio.samplesPerBatch', 'audio.sampleBytes', 'audio.headerBytes', 'audio.txIovLimit', 'audio.ringLengthSamples',
  'ack.acksPerEvent', 'ack.packetsPerSecond', 'ack.bytesPerSecond.l3', 'ack.bytesPerSecond.l2', 'ack.bytesPerSecond.wire',
] as const;

/** The value at a dotted path of a JSON object, or '' when it has none. */
function fieldAt(o: unknown, path: string): string | number {
  const v = path.split('.').reduce<unknown>((at, k) => (at !== null && typeof at === 'object' ? (at as Record<string, unknown>)[k] : undefined), o);
  return typeof v === 'number' || typeof v === 'string' ? v : typeof v === 'boolean' ? String(v) : '';
}

function render(rows: CalcRow[], output: string, units: RateUnits = 'bytes'): string {
  const objects = rows.map(calcJson);
  if (output === 'json') return `${JSON.stringify(objects, null, 2)}\n`;
  if (output === 'csv') return `${csv([[...CSV_COLUMNS], ...objects.map((o) => CSV_COLUMNS.map((c) => fieldAt(o, c)))])}\n`;
  return `${renderTable(rows, units)}\n`;
}

function renderTable(rows: CalcRow[], units: RateUnits): string {
  const header = ['flow', 'media type', 'provider', 'mtu', 'bytes/grain', 'grains/s', 'writes/grain', 'pkts/grain', 'pkts/s', 'media', 'overhead', 'wire', 'acks/s'];
  const body = rows.map(({ flow, prediction: p }) => [
    flow.label, flow.mediaType, p.provider, String(p.mtu), grouped(Number(p.writeBytesPerEvent)),
    p.eventRate.den === 1n ? String(p.eventRate.num) : `${fmtRational(p.eventRate)} (${grouped(toNumber(p.eventRate))})`,
    grouped(toNumber(p.writesPerEvent)), grouped(toNumber(p.expectedPacketsPerEvent)), grouped(toNumber(p.packetsPerSecond)),
    formatDataRate(toNumber(p.mediaBytesPerSecond), units), formatDataRate(toNumber(p.overheadBytesPerSecond), units),
    formatDataRate(toNumber(p.bytesPerSecond.wire), units), grouped(toNumber(p.reverse.packetsPerSecond)),
  ]);
  return table([header, ...body]);
}
