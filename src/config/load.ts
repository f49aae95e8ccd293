/**
 * Reads the YAML config; every problem in it (and in the flow files it names) is reported at
 * once. Fast path first: the config through the YAML fast path (fastyaml.ts) and its JSON flow
 * files through JSON.parse, validated as plain values; only a config with a problem (or outside
 * the fast path's YAML) is parsed again by the `yaml` library, for positions. Loading is a run
 * of steps (steps.ts): loadConfig() and parseConfig() run them at once, loadConfigAsync() reads
 * through the bounded reader and lets the event loop turn between slices.
 *
 * For code that adds to the config: read fields through Fields (f.string(), f.object(), ...,
 * f.isObject(node), f.valueOf(node)), never through the yaml library's node API: the fast path
 * hands Fields plain values. Reads of files go through steps (step(program)), not fs.
 */
import { dirname, isAbsolute, resolve, sep } from 'node:path';
import { type Layer, LAYERS, type Mtu, ProfileRegistry, type ProviderProfile, type Rational, DEFAULT_AUDIO_GRAIN_DURATION, DEFAULT_PROVIDER, IB_MTUS, grainOf, MediaError } from '../model/index.js';
import { type FlowDefinition, mediaOf, readFlow } from '../flows/definition.js';
import { Fields, type ListItem, nearMiss } from '../input/fields.js';
import { isIP } from 'node:net';
import { ipv6Text, parseIpv6 } from '../ipv6.js';
import { InputError, type Problem, SourceText } from '../input/problems.js';
import { parseYamlFast } from '../input/fastyaml.js';
import { type ReadProgram, read } from '../reads/program.js';
import { statusName } from '../reads/ops.js';
import type { BoundedReads } from '../reads/bounded.js';
import { FlowFileUnreadable, FlowFiles } from './flowfiles.js';
import { type PortLinks, checkConnectionsGap } from './connections-gap.js';
import { PAUSE, type Steps, pausing, runSteps, runStepsAsync, step } from './steps.js';
import { parseDataRate, parseDuration, durationMs, UnitError } from '../input/units.js';
import { readProviders } from './providers.js';
import { type BoundDomainConfig, CONNECTION_SERIES, type Config, type ConnectionSeries, type DomainConfig, EXPECTS, type MetricsConfig, type Expect, type FlowBinding, type PortConfig, bindingKey, portKey } from './types.js';
import type { Direction } from '../ports.js';

const TOP_KEYS = ['sampling', 'drift', 'headroom', 'metrics', 'providers', 'ports', 'flows', 'domains', 'connections'] as const;
const DOMAIN_KEYS = ['path', 'device', 'port', 'direction', 'include', 'exclude', 'provider', 'ptime', 'expect', 'peer', 'bind'] as const;
const PORT_KEYS = ['device', 'port', 'provider', 'mtu', 'ib_mtu', 'capacity', 'headroom'] as const;
const FLOW_KEYS = ['flow', 'device', 'port', 'direction', 'ptime', 'provider', 'expect', 'peer'] as const;
/** MXL's usual domain (mxl-facts: flows live in /dev/shm/mxl). */
const DEFAULT_DOMAIN = '/dev/shm/mxl';
export const DEFAULTS = { intervalMs: 1000, windowMs: 10_000, driftTolerance: 0.05, headroom: 0.9, provider: DEFAULT_PROVIDER.name } as const;

/**
 * Layers of flow_predicted_bytes_per_second kept by default: those the shipped rules and dashboard
 * read (deploy/prometheus/rules/alerts.yml: wire; deploy/grafana/dashboard.json: wire, l2, payload).
 */
export const DEFAULT_FLOW_LAYERS: readonly Layer[] = ['payload', 'l2', 'wire'];
/** metrics.connection_series: a host with 10,000 QPs adds one series set per flow's connections, not 7 per QP. */
const DEFAULT_CONNECTION_SERIES: ConnectionSeries = 'flow';
/**
 * connections.qp_queries_per_second (docs/connections.md, "What it costs"): a device of up to
 * 1,000 QPs is read every second; one with more, further apart, within its PSN limit.
 */
const DEFAULT_QP_QUERIES_PER_SECOND = 1000;

/** RDMA device names as the kernel allows them (IB_DEVICE_NAME_MAX 64) and nothing that walks paths. */
const DEVICE_NAME = /^[A-Za-z0-9_.:-]{1,63}$/;

/** What a running exporter knows beside the file. */
export interface LoadOptions {
  /** The link rate and MTU of each port it found: `auto` ports are checked against them (connections-gap.ts). */
  readonly links?: PortLinks;
}

export function loadConfig(file: string, options: LoadOptions = {}): Config {
  return runSteps(configSteps(file, options));
}

/** loadConfig() with its reads on `reader` and the event loop turning between slices of work. */
export function loadConfigAsync(file: string, reader?: BoundedReads, options: LoadOptions = {}): Promise<Config> {
  return runStepsAsync(configSteps(file, options), reader);
}

export function parseConfig(file: string, text: string, options: LoadOptions = {}): Config {
  return runSteps(parseSteps(file, text, options));
}

function* configSteps(file: string, options: LoadOptions): Steps<Config> {
  const text = yield* step(readConfigText(file));
  if (typeof text !== 'string') throw new InputError([{ file, line: 1, col: 1, field: '', reason: `cannot read config: ${text.error}` }]);
  return yield* parseSteps(file, text, options);
}

function* parseSteps(file: string, text: string, options: LoadOptions): Steps<Config> {
  const flows = new FlowFiles();
  const value = yield* pausing(parseYamlFast(text));
  if (value !== undefined) {
    const fast = yield* readConfigSteps(file, SourceText.plain(file, value), flows, options);
    if (fast.problems.length === 0) return fast.config;
  }
  // The fast path found a problem, or the text is YAML it does not read: positions.
  const src = SourceText.parse(file, text);
  const syntax = src.syntaxProblems();
  if (syntax.length) throw new InputError(syntax);
  const slow = yield* readConfigSteps(file, src, flows, options);
  const errors = slow.problems.filter((p) => !p.warning);
  if (errors.length) throw new InputError(errors);
  // A warning, too, sent the load here (the fast path has no positions to say it with).
  return slow.problems.length ? { ...slow.config, warnings: slow.problems } : slow.config;
}

/** The room of a first read when stat says less: procfs and some FUSE files say 0 and have content. */
const MIN_READ_ROOM = 4096;

/** The config's text: its size, then that many bytes (again, with twice the room, while it fills it). */
function* readConfigText(file: string): ReadProgram<string | { error: string }> {
  const st = yield* read([{ kind: 'stat', path: file }]);
  const statSize = st.stat(0)?.size;
  if (statSize === undefined) return { error: `${st.error(0, 'stat')} '${file}'` };
  let size = Math.max(statSize, MIN_READ_ROOM);
  for (;;) {
    const r = yield* read([{ kind: 'readFile', path: file, max: size + 1 }]);
    if (!r.ok(0)) return { error: `${statusName(r.status(0))}: read '${file}'` };
    if (r.status(0) <= size) return r.bytes(0).toString('utf8');
    size *= 2;
  }
}

function* readConfigSteps(file: string, src: SourceText, flowFiles: FlowFiles, options: LoadOptions): Steps<{ config: Config; problems: Problem[] }> {
  const problems: Problem[] = [];
  const root = src.root() === null ? undefined : Fields.root(src, problems);
  const config = root ? yield* readConfig(file, root, flowFiles, options) : emptyConfig(file);
  return { config, problems };
}

function emptyConfig(file: string): Config {
  return { file, sampling: { intervalMs: DEFAULTS.intervalMs, windowMs: DEFAULTS.windowMs }, connections: { enabled: true, intervalMs: DEFAULTS.intervalMs, qpQueriesPerSecond: DEFAULT_QP_QUERIES_PER_SECOND }, headroom: DEFAULTS.headroom, driftTolerance: DEFAULTS.driftTolerance, metrics: { flowLayers: DEFAULT_FLOW_LAYERS, connectionSeries: DEFAULT_CONNECTION_SERIES }, providers: new ProfileRegistry(), ports: [], flows: [], domains: [] };
}

/** Bindings between pauses. */
const BINDINGS_PER_SLICE = 50;

function* readConfig(file: string, root: Fields, flowFiles: FlowFiles, options: LoadOptions): Steps<Config> {
  root.rejectUnknown(TOP_KEYS);
  const sampling = readSampling(root);
  const connections = readConnections(root, sampling);
  const drift = root.object('drift', false);
  drift?.rejectUnknown(['tolerance']);
  const driftTolerance = fraction(drift, 'tolerance') ?? DEFAULTS.driftTolerance;
  const headroom = fraction(root, 'headroom') ?? DEFAULTS.headroom;
  const metrics = readMetrics(root);
  const providers = readProviders(root);
  const ports = (root.list('ports', false) ?? []).flatMap((i) => readPort(root, i, providers, headroom) ?? []);
  const items = root.list('flows', false) ?? [];
  yield PAUSE;
  const base = dirname(resolve(file));
  const targets: (string | undefined)[] = new Array<string | undefined>(items.length);
  for (let k = 0; k < items.length; k++) {
    targets[k] = flowFileOf(root, items[k]!.node, base);
    if (k % (BINDINGS_PER_SLICE * 10) === 0) yield PAUSE;
  }
  yield* flowFiles.load(targets.filter((t): t is string => t !== undefined));
  const flows: ReadBinding[] = [];
  for (let k = 0; k < items.length; k++) {
    const b = readBinding(root, items[k]!, { base, target: targets[k] }, providers, ports, flowFiles);
    if (b) flows.push(b);
    if (k % BINDINGS_PER_SLICE === BINDINGS_PER_SLICE - 1) yield PAUSE;
  }
  const domains = (root.list('domains', false) ?? []).flatMap((i) => readDomain(root, i, providers, ports) ?? []);
  yield PAUSE;
  rejectDuplicates(root, ports, flows);
  yield PAUSE;
  const implied = [...flows.map((f) => f.binding), ...domains.filter((d): d is BoundDomainConfig => d.bind !== 'auto')];
  const allPorts = withImpliedPorts(ports, implied, headroom);
  checkConnectionsGap(root, { sampling, connections, ports: allPorts }, options.links);
  return { file, sampling, connections, headroom, driftTolerance, metrics, providers, ports: allPorts, flows: flows.map((f) => f.binding), domains };
}

/** The absolute path a binding's `flow:` names, when it names a file (checked in readFlowRef). */
function flowFileOf(root: Fields, node: unknown, base: string): string | undefined {
  if (!root.isObject(node)) return undefined;
  const rel = root.src.tree.scalar(root.src.tree.get(node, 'flow'));
  return typeof rel === 'string' && !rel.includes('\0') ? below(base, rel) : undefined;
}

/** A path that needs no normalizing: no empty, `.` or `..` segment, no leading or trailing `/`. */
const PLAIN_RELATIVE = /^(?!\.\.?(?:\/|$))[^/]+(?:\/(?!\.\.?(?:\/|$))[^/]+)*$/;

/**
 * resolve(base, rel) for an absolute, normalized `base` (resolve() gives it): a plain relative
 * `rel` is only appended, which is what resolve() does with it at a tenth of the garbage.
 */
function below(base: string, rel: string): string {
  if (!PLAIN_RELATIVE.test(rel)) return resolve(base, rel);
  return base.endsWith(sep) ? base + rel : base + sep + rel;
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

function readMetrics(root: Fields): MetricsConfig {
  const m = root.object('metrics', false);
  m?.rejectUnknown(['flow_layers', 'connection_series']);
  const connectionSeries = m?.oneOf('connection_series', CONNECTION_SERIES, false) ?? DEFAULT_CONNECTION_SERIES;
  const items = m?.list('flow_layers', false);
  if (!m || !items) return { flowLayers: DEFAULT_FLOW_LAYERS, connectionSeries };
  const kept = new Set<Layer>();
  for (const item of items) {
    const v = m.valueOf(item.node);
    const problem = (reason: string) => m.problems.push(m.src.problem(item.node, item.path, reason));
    if (typeof v !== 'string' || !(LAYERS as readonly string[]).includes(v)) problem(`${JSON.stringify(v)} is not a layer; layers: ${LAYERS.join(', ')}`);
    else if (kept.has(v as Layer)) problem(`layer "${v}" is listed twice`);
    else kept.add(v as Layer);
  }
  return { flowLayers: LAYERS.filter((l) => kept.has(l)), connectionSeries };
}

function readConnections(root: Fields, sampling: Config['sampling']): Config['connections'] {
  const c = root.object('connections', false);
  c?.rejectUnknown(['enabled', 'interval', 'qp_queries_per_second']);
  const intervalMs = duration(c, 'interval') ?? sampling.intervalMs;
  if (c && intervalMs < 100) c.report('interval', `interval ${intervalMs} ms is below the 100 ms minimum`);
  const qpQueriesPerSecond = c?.integer('qp_queries_per_second', { required: false, min: 1 }) ?? DEFAULT_QP_QUERIES_PER_SECOND;
  return { enabled: c?.boolean('enabled') ?? true, intervalMs, qpQueriesPerSecond };
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

function readPort(root: Fields, item: ListItem, providers: ProfileRegistry, headroom: number): PortConfig | undefined {
  const f = root.item(item);
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

/** The config's folder, and where a binding's `flow:` path leads (flowFileOf(), resolved once). */
interface FlowPlace {
  readonly base: string;
  readonly target: string | undefined;
}

function readBinding(
  root: Fields, item: ListItem, place: FlowPlace, providers: ProfileRegistry, ports: PortConfig[], flowFiles: FlowFiles,
): ReadBinding | undefined {
  const f = root.item(item);
  if (!f) return undefined;
  f.rejectUnknown(FLOW_KEYS);
  const flow = readFlowRef(f, place, flowFiles);
  const { device, port } = readPortRef(f);
  warnNearMissDevice(f, device, ports);
  const direction = f.oneOf<Direction>('direction', ['tx', 'rx'], true);
  const portConfig = ports.find((p) => p.device === device && p.port === port);
  const provider = readProvider(f, providers, portConfig?.provider);
  const grainDuration = rawDuration(f, 'ptime') ?? DEFAULT_AUDIO_GRAIN_DURATION;
  if (flow && f.has('ptime') && flow.format !== 'audio') f.report('ptime', 'ptime (grain duration) applies to audio flows only');
  if (flow) checkGrain(f, flow, grainDuration);
  const expect = f.oneOf<Expect>('expect', EXPECTS, false);
  const peer = readPeer(f);
  if (!flow || !device || port === undefined || !direction || !provider) return undefined;
  return { binding: { flow, device, port, direction, provider, grainDuration, origin: 'config', expect, ...(peer ? { peer } : {}) }, node: f };
}

/**
 * A binding's device that no `ports:` entry names gets a port with the defaults. When it is a
 * near miss of a device `ports:` names (nearMiss: `mlx5_77` beside `mlx5_0`), that is said where
 * it is written, as a warning: it may be a typo whose port measures nothing, or a sibling device
 * (rxe1 beside rxe0, mlx5_1 beside mlx5_0), which the name alone cannot tell. Listing the port
 * under `ports:` says which.
 */
function warnNearMissDevice(f: Fields, device: string | undefined, ports: readonly PortConfig[]): void {
  if (device === undefined || ports.some((p) => p.device === device)) return;
  const close = nearMiss(device, [...new Set(ports.map((p) => p.device))]);
  if (close) f.warn('device', `"${device}" is no device of ports: and gets a port with the defaults (did you mean "${close}"? if it is another device, list its port under ports:)`);
}

function readDomain(root: Fields, item: ListItem, providers: ProfileRegistry, ports: PortConfig[]): DomainConfig | undefined {
  const f = root.item(item);
  if (!f) return undefined;
  f.rejectUnknown(DOMAIN_KEYS);
  const dir = f.string('path', false) ?? DEFAULT_DOMAIN;
  if (!isAbsolute(dir) || dir.includes('\0')) f.report('path', `domain path "${dir}" must be absolute`);
  const auto = f.oneOf<'auto'>('bind', ['auto'], false) === 'auto';
  // bind: auto: the connections say where each flow runs; a device, port or direction only narrows that.
  const { device, port } = auto && !f.has('device') ? { device: undefined, port: undefined } : readPortRef(f);
  warnNearMissDevice(f, device, ports);
  const direction = f.oneOf<Direction>('direction', ['tx', 'rx'], !auto);
  if (auto && !f.has('device') && f.has('port')) f.report('port', 'a port narrows bind: auto only with its device');
  const portConfig = ports.find((p) => p.device === device && p.port === port);
  const provider = readProvider(f, providers, portConfig?.provider);
  const grainDuration = rawDuration(f, 'ptime') ?? DEFAULT_AUDIO_GRAIN_DURATION;
  const include = patterns(f, 'include');
  const exclude = patterns(f, 'exclude');
  const expect = f.oneOf<Expect>('expect', EXPECTS, false);
  const peer = readPeer(f);
  if (!provider || !isAbsolute(dir)) return undefined;
  const common = { path: dir, include, exclude, provider, grainDuration, expect, ...(peer ? { peer } : {}) };
  if (auto) {
    if (f.has('device') && !device) return undefined;
    return { ...common, bind: 'auto', ...(device ? { device, port: port ?? 1 } : {}), ...(direction ? { direction } : {}) };
  }
  if (!device || port === undefined || !direction) return undefined;
  return { ...common, device, port, direction };
}

/**
 * `peer:` the target's address and port as `rdma res show cm_id` and the connection metrics
 * write it: `10.99.0.2:1312`, `[fd00::2]:1312`. Returned in that spelling (IPv6 as Node
 * normalises it), so it compares as a string with a connection's `local`/`peer`.
 */
function readPeer(f: Fields): string | undefined {
  const v = f.string('peer', false);
  if (v === undefined) return undefined;
  const m = /^(?:(\d{1,3}(?:\.\d{1,3}){3})|\[([0-9A-Fa-f:.]+)\]):(\d{1,5})$/.exec(v);
  const port = m ? Number(m[3]) : NaN;
  const v4 = m?.[1];
  const v6 = m?.[2];
  const addr = v4 !== undefined ? (isIP(v4) === 4 ? v4 : undefined) : v6 !== undefined && isIP(v6) === 6 ? canonicalIpv6(v6) : undefined;
  if (addr === undefined || !(port >= 1 && port <= 65535)) {
    f.report('peer', `"${v}" is not an address:port (10.99.0.2:1312, [fd00::2]:1312)`);
    return undefined;
  }
  return v4 !== undefined ? `${addr}:${port}` : `[${addr}]:${port}`;
}

/** RFC 5952 text of an IPv6 address, as the connection labels print it (ipv6.ts ipv6Text, as restrack.ts prints it). */
function canonicalIpv6(a: string): string | undefined {
  const b = parseIpv6(a);
  return b === undefined ? undefined : ipv6Text(b);
}

function patterns(f: Fields, key: string): string[] {
  const items = f.list(key, false) ?? [];
  return items.flatMap((item) => {
    const v = f.valueOf(item.node);
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
function readFlowRef(f: Fields, { base, target: resolved }: FlowPlace, flowFiles: FlowFiles): FlowDefinition | undefined {
  const n = f.at('flow');
  if (n === undefined) return f.missing('flow', 'flow definition (a file path or an inline NMOS flow)');
  if (f.isObject(n)) return readFlow(f.below(n, 'flow'));
  const rel = f.string('flow', true);
  if (rel === undefined) return undefined;
  const target = resolved ?? below(base, rel);
  if (rel.includes('\0') || !isInside(base, target) || !isInside(flowFiles.realDir(base), flowFiles.realPath(target))) {
    f.report('flow', `"${rel}" is outside the config's folder ${base}; flow files must live under it (symlinks included)`);
    return undefined;
  }
  try {
    return flowFiles.get(target);
  } catch (e) {
    if (e instanceof FlowFileUnreadable) {
      f.report('flow', `flow definition ${rel} cannot be read: ${e.message}`);
      return undefined;
    }
    if (!(e instanceof InputError)) throw e;
    f.report('flow', `flow definition ${rel} is invalid (${e.problems.length} problem${e.problems.length > 1 ? 's' : ''} below)`);
    f.problems.push(...e.problems);
    return undefined;
  }
}

/**
 * Whether `file` is `dir` or below it; both absolute and normalized (resolve() and realpath()
 * give them so). A prefix test: path.relative() cost a third of a 10,000-flow binding pass, and
 * its '..' test refused a file named like `..flow.json` inside the folder.
 */
export function isInside(dir: string, file: string): boolean {
  if (file === dir) return true;
  if (dir.endsWith(sep)) return file.startsWith(dir);
  return file.length > dir.length && file.charCodeAt(dir.length) === SEP && file.startsWith(dir);
}

const SEP = sep.charCodeAt(0);

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
  const listed = new Set(ports.map(portKey));
  for (const b of bound) {
    if (listed.has(portKey(b))) continue;
    listed.add(portKey(b));
    out.push({ device: b.device, port: b.port, provider: b.provider, mtu: 'auto', capacityBitsPerSecond: 'auto', headroom, declared: false });
  }
  return out;
}
