/** `calc`: the model on its own, for flow files and/or flags. */
import { existsSync, readFileSync } from 'node:fs';
import { type Prediction, type Mtu, type ProviderProfile, ProfileRegistry, predict, toNumber, format as fmtRational, DEFAULT_AUDIO_GRAIN_DURATION, MediaError, MtuError } from '../model/index.js';
import { type FlowDefinition, loadFlowFile, mediaOf, parseFlowText } from '../flows/definition.js';
import { InputError, SourceText, formatProblem, type Problem } from '../input/problems.js';
import { Fields } from '../input/fields.js';
import { parseDuration, UnitError } from '../input/units.js';
import { readProviders } from '../config/providers.js';
import { type FlagSpec, type Parsed, commandFlags, str, UsageError } from './args.js';
import { csv, decimal, grouped, table } from './format.js';
import type { Io } from './io.js';

export const CALC_FLAGS: FlagSpec = {
  'media-type': { type: 'string', help: 'video/v210, video/v210a, audio/float32 (or audio/*), video/smpte291' },
  width: { type: 'string', help: 'frame width in pixels (video)' },
  height: { type: 'string', help: 'frame height in lines (video)' },
  rate: { type: 'string', help: 'grain rate: frame rate for video (30000/1001, 25), grains/s for data' },
  interlace: { type: 'string', help: 'progressive, interlaced_tff or interlaced_bff (video)' },
  channels: { type: 'string', help: 'audio channel count', default: '1' },
  'sample-rate': { type: 'string', help: 'audio sample rate in Hz', default: '48000' },
  'bit-depth': { type: 'string', help: 'audio bits per sample: 32 or 64', default: '32' },
  ptime: { type: 'string', help: 'audio grain duration (the seed\'s ptime): 10ms, 1ms, 125us', default: '10ms' },
  label: { type: 'string', help: 'label for a flow given by flags' },
  id: { type: 'string', help: 'flow id for a flow given by flags', default: '00000000-0000-0000-0000-000000000000' },
  mtu: { type: 'string', help: 'L3 MTU: packet budget including the profile\'s mtuOverheadBytes (the seed\'s "mtu")' },
  'ib-mtu': { type: 'string', help: 'IB MTU of a RoCE port (256..4096): RDMA payload per packet; L3 = IB MTU + overhead' },
  provider: { type: 'string', help: 'provider profile', default: 'rdma_rocev2' },
  providers: { type: 'string', help: 'YAML file with a `providers:` list of extra profiles' },
  output: { type: 'string', help: 'table, json or csv', default: 'table' },
  help: { type: 'boolean', help: 'show this help' },
};

const SUMMARY = `Computes what MXL flows cost on the wire (MXL FabricsBandwidth.md).
Give flow definition files (NMOS flow JSON or YAML), or one flow by flags.
Without --mtu or --ib-mtu the seed's mtu=4096 (L3) is used.
Exit status: 0 ok, 2 invalid input.`;

const FLAG_FOR_FIELD: Record<string, string> = {
  media_type: '--media-type', frame_width: '--width', frame_height: '--height', grain_rate: '--rate',
  interlace_mode: '--interlace', sample_rate: '--sample-rate', bit_depth: '--bit-depth', channel_count: '--channels',
  label: '--label', id: '--id',
};

export interface CalcRow {
  readonly flow: Pick<FlowDefinition, 'id' | 'label' | 'mediaType'>;
  readonly prediction: Prediction;
}

export function runCalc(argv: string[], io: Io): number {
  const parsed = commandFlags(argv, io, 'calc [FLOW_FILE...] [flags]', SUMMARY, CALC_FLAGS);
  if (typeof parsed === 'number') return parsed;
  try {
    const rows = computeRows(parsed);
    io.stdout(render(rows, str(parsed, 'output') ?? 'table'));
    return 0;
  } catch (e) {
    if (e instanceof InputError) io.stderr(`${e.problems.map(formatProblem).join('\n')}\n`);
    else if (e instanceof UsageError || e instanceof UnitError || e instanceof MediaError || e instanceof MtuError) {
      io.stderr(`calc: ${e.message}\n`);
    } else throw e;
    return 2;
  }
}

function computeRows(p: Parsed): CalcRow[] {
  const output = str(p, 'output') ?? 'table';
  if (!['table', 'json', 'csv'].includes(output)) throw new UsageError(`--output must be table, json or csv, got "${output}"`);
  const profile = resolveProfile(p);
  const mtu = resolveMtu(p);
  const grainDuration = str(p, 'ptime') ? parseDuration(str(p, 'ptime')!) : DEFAULT_AUDIO_GRAIN_DURATION;
  const flows = p.positionals.map((file) => loadFlowFile(file));
  if (str(p, 'media-type') !== undefined) flows.push(flowFromFlags(p));
  if (flows.length === 0) throw new UsageError('give a flow definition file or --media-type (see --help)');
  return flows.map((flow) => ({ flow, prediction: predict(mediaOf(flow, grainDuration), profile, mtu) }));
}

function resolveProfile(p: Parsed): ProviderProfile {
  const file = str(p, 'providers');
  const registry = file ? loadProviders(file) : new ProfileRegistry();
  const name = str(p, 'provider') ?? 'rdma_rocev2';
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

/** Builds an NMOS flow from flags and validates it like a file, naming flags in errors. */
function flowFromFlags(p: Parsed): FlowDefinition {
  const mediaType = str(p, 'media-type')!;
  const num = (flag: string): number | string | undefined => {
    const v = str(p, flag);
    return v !== undefined && /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v;
  };
  const rate = (flag: string): { numerator: number | string; denominator: number | string } | string | undefined => {
    const v = str(p, flag);
    if (v === undefined) return undefined;
    const m = /^(\d+)(?:\/(\d+))?$/.exec(v);
    return m ? { numerator: Number(m[1]), denominator: Number(m[2] ?? 1) } : v;
  };
  const format = mediaType.startsWith('audio/') ? 'audio' : mediaType === 'video/smpte291' ? 'data' : 'video';
  const flow: Record<string, unknown> = {
    id: str(p, 'id'), label: str(p, 'label') ?? defaultLabel(p, mediaType), format: `urn:x-nmos:format:${format}`,
    tags: { 'urn:x-nmos:tag:grouphint/v1.0': ['calc:flags'] }, media_type: mediaType,
  };
  if (format === 'audio') {
    Object.assign(flow, { sample_rate: rate('sample-rate'), channel_count: num('channels'), bit_depth: num('bit-depth') });
  } else {
    Object.assign(flow, { grain_rate: rate('rate') });
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

function defaultLabel(p: Parsed, mediaType: string): string {
  if (mediaType.startsWith('audio/')) return `${mediaType} ${str(p, 'channels')}ch ${str(p, 'sample-rate')}Hz`;
  if (mediaType === 'video/smpte291') return `${mediaType} @${str(p, 'rate') ?? '?'}`;
  return `${mediaType} ${str(p, 'width') ?? '?'}x${str(p, 'height') ?? '?'}@${str(p, 'rate') ?? '?'}`;
}

export function calcJson(row: CalcRow): Record<string, unknown> {
  const p = row.prediction;
  const n = (r: Parameters<typeof toNumber>[0]): number => toNumber(r);
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
    bytesPerSecond: {
      payload: n(p.bytesPerSecond.payload), l3: n(p.bytesPerSecond.l3), l2: n(p.bytesPerSecond.l2), wire: n(p.bytesPerSecond.wire),
    },
  };
}

const CSV_COLUMNS = [
  'flowId', 'label', 'mediaType', 'provider', 'mtu', 'payloadBytesPerEvent', 'writeBytesPerEvent', 'eventRate',
  'eventsPerSecond', 'packetsPerEvent', 'packetsPerSecond', 'mediaBytesPerSecond', 'overheadBytesPerSecond',
  'wireBytesPerSecond', 'payload', 'l3', 'l2', 'wire',
] as const;

export function render(rows: CalcRow[], output: string): string {
  const objects = rows.map(calcJson);
  if (output === 'json') return `${JSON.stringify(objects, null, 2)}\n`;
  if (output === 'csv') {
    const flat = objects.map((o) => ({ ...o, ...(o.bytesPerSecond as Record<string, number>) }) as Record<string, string | number>);
    return `${csv([[...CSV_COLUMNS], ...flat.map((o) => CSV_COLUMNS.map((c) => o[c] ?? ''))])}\n`;
  }
  return `${renderTable(rows)}\n`;
}

function renderTable(rows: CalcRow[]): string {
  const header = ['flow', 'media type', 'provider', 'mtu', 'bytes/grain', 'grains/s', 'pkts/grain', 'pkts/s', 'media', 'overhead', 'wire'];
  const body = rows.map(({ flow, prediction: p }) => [
    flow.label, flow.mediaType, p.provider, String(p.mtu), grouped(Number(p.writeBytesPerEvent)),
    p.eventRate.den === 1n ? String(p.eventRate.num) : `${fmtRational(p.eventRate)} (${grouped(toNumber(p.eventRate))})`,
    grouped(Number(p.packetsPerEvent)), grouped(toNumber(p.packetsPerSecond)),
    decimal(toNumber(p.mediaBytesPerSecond), 'B/s'), decimal(toNumber(p.overheadBytesPerSecond), 'B/s'),
    decimal(toNumber(p.bytesPerSecond.wire), 'B/s'),
  ]);
  return table([header, ...body]);
}
