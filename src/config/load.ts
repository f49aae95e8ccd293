/** Reads the YAML config; every problem in it (and in the flow files it names) is reported at once. */
import { readFileSync, realpathSync } from 'node:fs';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import { isMap, type Node } from 'yaml';
import { type Mtu, ProfileRegistry, type ProviderProfile, type Rational, DEFAULT_AUDIO_GRAIN_DURATION, IB_MTUS, grainOf, MediaError } from '../model/index.js';
import { type FlowDefinition, loadFlowFile, mediaOf, readFlow } from '../flows/definition.js';
import { Fields } from '../input/fields.js';
import { InputError, type PathItem, type Problem, SourceText } from '../input/problems.js';
import { parseDataRate, parseDuration, durationMs, UnitError } from '../input/units.js';
import { readProviders } from './providers.js';
import { type Config, type DomainConfig, EXPECTS, type Expect, type FlowBinding, type PortConfig, bindingKey, portKey } from './types.js';
import type { Direction } from '../sources/types.js';

const TOP_KEYS = ['sampling', 'drift', 'headroom', 'providers', 'ports', 'flows', 'domains'] as const;
const DOMAIN_KEYS = ['path', 'device', 'port', 'direction', 'include', 'exclude', 'provider', 'ptime', 'expect'] as const;
const PORT_KEYS = ['device', 'port', 'provider', 'mtu', 'ib_mtu', 'capacity', 'headroom'] as const;
const FLOW_KEYS = ['flow', 'device', 'port', 'direction', 'ptime', 'provider', 'expect'] as const;
/** MXL's usual domain (mxl-facts: flows live in /dev/shm/mxl). */
export const DEFAULT_DOMAIN = '/dev/shm/mxl';
export const DEFAULTS = { intervalMs: 1000, windowMs: 10_000, driftTolerance: 0.05, headroom: 0.9, provider: 'rdma_rocev2' } as const;

/** RDMA device names as the kernel allows them (IB_DEVICE_NAME_MAX 64) and nothing that walks paths. */
export const DEVICE_NAME = /^[A-Za-z0-9_.:-]{1,63}$/;

export function loadConfig(file: string): Config {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new InputError([{ file, line: 1, col: 1, field: '', reason: `cannot read config: ${(e as Error).message}` }]);
  }
  return parseConfig(file, text);
}

export function parseConfig(file: string, text: string): Config {
  const src = SourceText.parse(file, text);
  const problems: Problem[] = src.syntaxProblems();
  if (problems.length) throw new InputError(problems);
  const root = src.root() === null ? undefined : Fields.root(src, problems);
  const config = root ? readConfig(file, root) : emptyConfig(file);
  if (problems.length) throw new InputError(problems);
  return config;
}

function emptyConfig(file: string): Config {
  return { file, sampling: { intervalMs: DEFAULTS.intervalMs, windowMs: DEFAULTS.windowMs }, driftTolerance: DEFAULTS.driftTolerance, providers: new ProfileRegistry(), ports: [], flows: [], domains: [] };
}

function readConfig(file: string, root: Fields): Config {
  root.rejectUnknown(TOP_KEYS);
  const sampling = readSampling(root);
  const drift = root.object('drift', false);
  drift?.rejectUnknown(['tolerance']);
  const driftTolerance = fraction(drift, 'tolerance') ?? DEFAULTS.driftTolerance;
  const headroom = fraction(root, 'headroom') ?? DEFAULTS.headroom;
  const providers = readProviders(root);
  const ports = (root.list('ports', false) ?? []).flatMap((i) => readPort(root, i.node, i.path, providers, headroom) ?? []);
  const flows = (root.list('flows', false) ?? []).flatMap((i) => readBinding(root, i.node, i.path, file, providers, ports) ?? []);
  const domains = (root.list('domains', false) ?? []).flatMap((i) => readDomain(root, i.node, i.path, providers, ports) ?? []);
  rejectDuplicates(root, ports, flows);
  const implied = [...flows.map((f) => f.binding), ...domains];
  return { file, sampling, driftTolerance, providers, ports: withImpliedPorts(ports, implied, headroom), flows: flows.map((f) => f.binding), domains };
}

function readSampling(root: Fields): Config['sampling'] {
  const s = root.object('sampling', false);
  s?.rejectUnknown(['interval', 'window']);
  const intervalMs = duration(s, 'interval') ?? DEFAULTS.intervalMs;
  const windowMs = duration(s, 'window') ?? DEFAULTS.windowMs;
  if (s && windowMs < 2 * intervalMs) s.report('window', `window (${windowMs} ms) must hold at least two samples of interval ${intervalMs} ms`);
  if (s && intervalMs < 100) s.report('interval', `interval ${intervalMs} ms is below the 100 ms minimum`);
  return { intervalMs, windowMs };
}

function duration(f: Fields | undefined, key: string): number | undefined {
  const r = rawDuration(f, key);
  return r === undefined ? undefined : durationMs(r);
}

function rawDuration(f: Fields | undefined, key: string): Rational | undefined {
  const v = f?.scalar(key);
  if (!f || v === undefined) return undefined;
  try {
    if (typeof v !== 'string' && typeof v !== 'number') throw new UnitError('expected a duration such as 1s or 10ms');
    return parseDuration(v);
  } catch (e) {
    f.report(key, (e as Error).message);
    return undefined;
  }
}

function fraction(f: Fields | undefined, key: string): number | undefined {
  const v = f?.number(key, false);
  if (v !== undefined && !(v > 0 && v <= 1)) {
    f!.report(key, `expected a fraction above 0 and at most 1, got ${v}`);
    return undefined;
  }
  return v;
}

function readPortRef(f: Fields): { device?: string; port?: number } {
  const device = f.string('device', true);
  if (device !== undefined && !DEVICE_NAME.test(device)) f.report('device', `"${device}" is not an RDMA device name`);
  const port = f.integer('port', { required: false, min: 1, max: 255 }) ?? 1;
  return { device: device && DEVICE_NAME.test(device) ? device : undefined, port };
}

function readProvider(f: Fields, providers: ProfileRegistry, fallback: ProviderProfile | undefined): ProviderProfile | undefined {
  const name = f.string('provider', false);
  if (name === undefined) return fallback ?? providers.get(DEFAULTS.provider);
  const p = providers.get(name);
  if (!p) f.report('provider', `unknown provider profile "${name}"; known: ${providers.names().join(', ')}`);
  return p;
}

function readPort(root: Fields, node: Node, path: PathItem[], providers: ProfileRegistry, headroom: number): PortConfig | undefined {
  const f = root.child(node, path);
  if (!f) return undefined;
  f.rejectUnknown(PORT_KEYS);
  const { device, port } = readPortRef(f);
  const provider = readProvider(f, providers, undefined);
  const mtu = readMtu(f);
  const capacity = readCapacity(f);
  const h = fraction(f, 'headroom') ?? headroom;
  if (!device || port === undefined || !provider || !mtu || capacity === undefined) return undefined;
  return { device, port, provider, mtu, capacityBitsPerSecond: capacity, headroom: h, declared: true };
}

function readMtu(f: Fields): Mtu | 'auto' | undefined {
  const mtu = f.scalar('mtu');
  const ib = f.scalar('ib_mtu');
  if (mtu !== undefined && ib !== undefined) {
    f.report('ib_mtu', 'give mtu (L3 packet budget) or ib_mtu (RDMA payload per packet), not both');
    return undefined;
  }
  if (ib !== undefined) {
    const v = f.integer('ib_mtu', { required: true });
    if (v !== undefined && !(IB_MTUS as readonly number[]).includes(v)) f.report('ib_mtu', `IB MTU must be one of ${IB_MTUS.join(', ')}, got ${v}`);
    return v !== undefined && (IB_MTUS as readonly number[]).includes(v) ? { kind: 'ib', bytes: v } : undefined;
  }
  if (mtu === undefined || mtu === 'auto') return 'auto';
  const v = f.integer('mtu', { required: true, min: 128, max: 65535 });
  return v === undefined ? undefined : { kind: 'l3', bytes: v };
}

function readCapacity(f: Fields): number | 'auto' | undefined {
  const v = f.scalar('capacity');
  if (v === undefined || v === 'auto') return 'auto';
  try {
    if (typeof v !== 'string' && typeof v !== 'number') throw new UnitError('expected auto or a data rate such as 100Gbps or 12.5GB/s');
    return parseDataRate(v);
  } catch (e) {
    f.report('capacity', (e as Error).message);
    return undefined;
  }
}

interface ReadBinding {
  readonly binding: FlowBinding;
  readonly node: Fields;
}

function readBinding(
  root: Fields, node: Node, path: PathItem[], file: string, providers: ProfileRegistry, ports: PortConfig[],
): ReadBinding | undefined {
  const f = root.child(node, path);
  if (!f) return undefined;
  f.rejectUnknown(FLOW_KEYS);
  const flow = readFlowRef(f, file);
  const { device, port } = readPortRef(f);
  const direction = f.oneOf<Direction>('direction', ['tx', 'rx'], true);
  const portConfig = ports.find((p) => p.device === device && p.port === port);
  const provider = readProvider(f, providers, portConfig?.provider);
  const grainDuration = rawDuration(f, 'ptime') ?? DEFAULT_AUDIO_GRAIN_DURATION;
  if (flow && f.has('ptime') && flow.format !== 'audio') f.report('ptime', 'ptime (grain duration) applies to audio flows only');
  if (flow) checkGrain(f, flow, grainDuration);
  const expect = f.oneOf<Expect>('expect', EXPECTS, false);
  if (!flow || !device || port === undefined || !direction || !provider) return undefined;
  return { binding: { flow, device, port, direction, provider, grainDuration, origin: 'config', expect }, node: f };
}

function readDomain(root: Fields, node: Node, path: PathItem[], providers: ProfileRegistry, ports: PortConfig[]): DomainConfig | undefined {
  const f = root.child(node, path);
  if (!f) return undefined;
  f.rejectUnknown(DOMAIN_KEYS);
  const dir = f.string('path', false) ?? DEFAULT_DOMAIN;
  if (!isAbsolute(dir) || dir.includes('\0')) f.report('path', `domain path "${dir}" must be absolute`);
  const { device, port } = readPortRef(f);
  const direction = f.oneOf<Direction>('direction', ['tx', 'rx'], true);
  const portConfig = ports.find((p) => p.device === device && p.port === port);
  const provider = readProvider(f, providers, portConfig?.provider);
  const grainDuration = rawDuration(f, 'ptime') ?? DEFAULT_AUDIO_GRAIN_DURATION;
  const include = patterns(f, 'include');
  const exclude = patterns(f, 'exclude');
  const expect = f.oneOf<Expect>('expect', EXPECTS, false);
  if (!device || port === undefined || !direction || !provider || !isAbsolute(dir)) return undefined;
  return { path: dir, device, port, direction, include, exclude, provider, grainDuration, expect };
}

function patterns(f: Fields, key: string): string[] {
  const items = f.list(key, false) ?? [];
  return items.flatMap((item) => {
    const v = item.node.toJSON() as unknown;
    if (typeof v === 'string' && v !== '') return [v];
    f.problems.push(f.src.problem(item.node, item.path, 'expected a non-empty string (a glob on label, id or group hint)'));
    return [];
  });
}

function checkGrain(f: Fields, flow: FlowDefinition, grainDuration: Rational): void {
  try {
    grainOf(mediaOf(flow, grainDuration));
  } catch (e) {
    if (!(e instanceof MediaError)) throw e;
    f.report(f.has(e.field) ? e.field : 'flow', e.message);
  }
}

/** `flow:` is a path (relative to the config's folder, never outside it) or an inline flow. */
function readFlowRef(f: Fields, configFile: string): FlowDefinition | undefined {
  const n = f.at('flow');
  if (n === undefined) return f.missing('flow', 'flow definition (a file path or an inline NMOS flow)');
  if (isMap(n)) return readFlow(new Fields(f.src, n, [...f.path, 'flow'], f.problems));
  const rel = f.string('flow', true);
  if (rel === undefined) return undefined;
  const base = dirname(resolve(configFile));
  const target = resolve(base, rel);
  if (rel.includes('\0') || !isInside(base, target) || !isInside(realOr(base), realOr(target))) {
    f.report('flow', `"${rel}" is outside the config's folder ${base}; flow files must live under it (symlinks included)`);
    return undefined;
  }
  try {
    return loadFlowFile(target);
  } catch (e) {
    if (!(e instanceof InputError)) throw e;
    f.report('flow', `flow definition ${rel} is invalid (${e.problems.length} problem${e.problems.length > 1 ? 's' : ''} below)`);
    f.problems.push(...e.problems);
    return undefined;
  }
}

function isInside(dir: string, file: string): boolean {
  const inside = relative(dir, file);
  return !inside.startsWith('..') && !isAbsolute(inside);
}

/** The path with symlinks resolved; the path itself when it does not exist (reported later). */
function realOr(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

function rejectDuplicates(root: Fields, ports: PortConfig[], flows: ReadBinding[]): void {
  const seenPorts = new Set<string>();
  for (const p of ports) {
    if (seenPorts.has(portKey(p))) root.report('ports', `port ${portKey(p)} is listed twice`);
    seenPorts.add(portKey(p));
  }
  const seen = new Set<string>();
  for (const { binding: b, node } of flows) {
    const key = bindingKey(b);
    if (seen.has(key)) node.report('flow', `flow ${b.flow.id} is bound to ${portKey(b)} ${b.direction} twice`);
    seen.add(key);
  }
}

function withImpliedPorts(ports: PortConfig[], bound: readonly { device: string; port: number; provider: ProviderProfile }[], headroom: number): PortConfig[] {
  const out = [...ports];
  for (const b of bound) {
    if (out.some((p) => p.device === b.device && p.port === b.port)) continue;
    out.push({ device: b.device, port: b.port, provider: b.provider, mtu: 'auto', capacityBitsPerSecond: 'auto', headroom, declared: false });
  }
  return out;
}
