/**
 * The running exporter: config, predictions, sampler and HTTP, with atomic
 * reloads (a bad config keeps the running one) and a clean shutdown.
 */
import { CoalescingRun } from '../serial.js';
import { Ticking } from './ticking.js';
import { loopTurn } from '../event-loop.js';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../log.js';
import { DEFAULTS, loadConfigAsync } from '../config/load.js';
import { type Config, portKey } from '../config/types.js';
import { InputError, formatProblem } from '../input/problems.js';
import { Planner } from '../predictions/plan.js';
import { Sampler, defaultReadTimeoutMs } from '../sampler/sampler.js';
import { BoundedReads } from '../reads/bounded.js';
import { selectSourcesOn, type Measurement } from '../sources/select.js';
import { fixAllocatorThresholds, releaseLoadGarbage } from './memory.js';
import { Metrics, type ReloadStatus } from './metrics.js';
import { buildApp, listen } from './http.js';
import { WebConfigWatcher } from './web/index.js';
import { landingPage } from './landing.js';
import { attrsLookup, buildView, flowMeasurements, type ExporterState } from './view.js';
import { DomainMonitor } from '../domain/monitor.js';
import { loadPosix, type Posix } from '../ffi/posix.js';
import { HostAssumptions } from '../health/assumptions.js';
import { readErrorText } from '../reads/errors.js';
import { ConnectionMonitor } from '../sources/restrack/monitor.js';
import { type Pin, pinsOf } from '../sources/restrack/assign.js';
import { RestrackSource, type TransportOpen, openRestrackSocket } from '../sources/restrack/source.js';
import { connectionsGapProblem, portReadLimit } from '../config/connections-gap.js';
import type { ReadLimit } from '../model/connections.js';
import type { ReadPacing } from '../sources/restrack/pacing.js';

export interface DaemonOptions {
  readonly configFile: string;
  readonly listenAddress: string;
  readonly telemetryPath: string;
  readonly sysfsRoot: string;
  readonly log: Logger;
  /** Injected by tests; chosen from the host otherwise. */
  readonly measurement?: Measurement;
  /** Tests drive sampling themselves with `sampleNow()` on this clock. */
  readonly manualClock?: () => bigint;
  /** exporter-toolkit web config (TLS, basic auth, headers); empty or absent: plain HTTP. */
  readonly webConfigFile?: string;
  /** `--web.enable-lifecycle`: POST /-/reload reloads (otherwise 403). SIGHUP always does. */
  readonly enableLifecycle?: boolean;
  /** Another build of libmfe-reader (tests: a missing one). */
  readonly readerLibrary?: string;
  /** Opens the restrack socket (tests: a stand-in kernel); a NETLINK_RDMA socket otherwise. */
  readonly restrack?: () => TransportOpen;
  /** /proc (tests: a fixture tree) for the processes behind connections. */
  readonly procRoot?: string;
}

type ReloadResult = { ok: true } | { ok: false; error: string };

export class Daemon {
  private config!: Config;
  private planner!: Planner;
  private sampler: Sampler | undefined;
  private domains: DomainMonitor | undefined;
  /** Every blocking read of the daemon goes through this one reader (src/reads). */
  private reader: BoundedReads | undefined;
  private assumptions: HostAssumptions | undefined;
  private connections: ConnectionMonitor | undefined;
  /** The sampling timer and what it ticks (ticking.ts). */
  private readonly ticking: Ticking;
  private server: Server | undefined;
  private measurement!: Measurement;
  private readonly reloadStatus: ReloadStatus = { ok: false, lastSuccessSeconds: 0 };
  /** The reload running, and the one asked for while it runs (the file may have changed again). */
  private readonly reloads = new CoalescingRun<ReloadResult>(() => this.reloadOnce());
  /** prewarm() of the last load. */
  private warming: Promise<void> = Promise.resolve();
  private readonly metrics: Metrics;

  constructor(private readonly opts: DaemonOptions) {
    this.metrics = new Metrics(() => this.state(), () => this.reloadStatus);
    this.ticking = new Ticking({
      config: () => this.config,
      planner: () => this.planner,
      sampler: () => this.sampler,
      domains: () => this.domains,
      connections: () => this.connections,
      reader: () => this.readerFor(this.config.sampling.intervalMs),
      readLimit: () => this.readLimit(),
      refreshAssumptions: () => this.refreshAssumptions(),
      clock: opts.manualClock ?? (() => process.hrtime.bigint()),
      manual: opts.manualClock !== undefined,
    });
  }

  /** Loads the config (throws InputError when it is invalid), samples once, listens. */
  async start(): Promise<void> {
    fixAllocatorThresholds();
    const web = this.opts.webConfigFile ? new WebConfigWatcher(this.opts.webConfigFile, this.opts.log) : undefined;
    this.apply(await loadConfigAsync(this.opts.configFile, this.readerFor(DEFAULTS.intervalMs)));
    this.reader!.readTimeoutMs = defaultReadTimeoutMs(this.config.sampling.intervalMs);
    this.measurement = this.opts.measurement ?? await selectSourcesOn(this.reader!, { sysfsRoot: this.opts.sysfsRoot });
    for (const note of this.measurement.notes) this.opts.log.info(note);
    await this.startSampler();
    // The ports' link rates are known now: a connections schedule they outrun is refused (or,
    // the default one, warned about) with its place in the file; the load before could only
    // check ports with a configured capacity.
    if (connectionsGapProblem(this.config, attrsLookup(this.sampler)) !== undefined) {
      const checked = await loadConfigAsync(this.opts.configFile, this.reader, { links: attrsLookup(this.sampler) });
      for (const w of checked.warnings ?? []) if (!this.config.warnings?.some((x) => formatProblem(x) === formatProblem(w))) this.opts.log.warn({ problem: formatProblem(w) }, 'config warning');
    }
    await this.startDomains();
    await this.startConnections(true);
    this.ticking.startSampling();
    await this.startAssumptions();
    await this.planner.prepare(attrsLookup(this.sampler));
    this.prewarm();
    this.logPorts();
    const app = buildApp({
      telemetryPath: this.opts.telemetryPath,
      metrics: () => this.metrics.render(),
      metricsGzip: () => this.metrics.renderGzip(),
      landing: (query) => {
        const state = this.state();
        const units = query.get('units') === 'bytes' ? 'bytes' : 'bits';
        return landingPage(state, buildView(state), flowMeasurements(state), { telemetryPath: this.opts.telemetryPath, units });
      },
      ready: () => this.notReady(),
      reload: () => this.reload(),
      lifecycle: this.opts.enableLifecycle ?? false,
      internalError: (err) => this.opts.log.error({ err: err instanceof Error ? err.message : String(err) }, 'request failed'),
    });
    this.server = await listen(app, this.opts.listenAddress, { web, log: this.opts.log });
    this.opts.log.info({ address: this.opts.listenAddress, telemetry_path: this.opts.telemetryPath, tls: web?.current.tls !== undefined, basic_auth: (web?.current.users.size ?? 0) > 0 }, 'listening');
  }

  /**
   * Why /-/ready says 503, or undefined when ready. Reads without the bounded reader have no
   * timeout (one hung sysfs or MXL domain read stops the exporter): such an exporter is not ready.
   */
  private notReady(): string | undefined {
    if (this.sampler === undefined) return 'not sampled yet';
    if (this.reader?.mode !== 'native') return `bounded reader unavailable (${this.reader?.unavailable ?? 'unknown'}): reads run on the event loop with no timeout`;
    return undefined;
  }

  address(): AddressInfo {
    return this.server!.address() as AddressInfo;
  }

  /**
   * Loads the config again beside the event loop (scrapes and /-/healthy keep answering); a bad
   * config keeps the running one. Asked for while one runs: one more runs after it.
   */
  reload(): Promise<ReloadResult> {
    return this.reloads.request();
  }

  private async reloadOnce(): Promise<ReloadResult> {
    let next: Config;
    try {
      next = await loadConfigAsync(this.opts.configFile, this.reader, { links: attrsLookup(this.sampler) });
    } catch (e) {
      this.reloadStatus.ok = false;
      const error = e instanceof InputError ? e.problems.map(formatProblem).join('; ') : (e as Error).message;
      this.opts.log.error({ err: error, file: this.opts.configFile }, 'config reload failed; keeping the running config');
      return { ok: false, error };
    }
    const samplingChanged = JSON.stringify(next.sampling) !== JSON.stringify(this.config.sampling);
    const planner = new Planner(next);
    await planner.prepare(attrsLookup(this.sampler));
    this.apply(next, planner);
    if (samplingChanged) {
      if (this.reader) this.reader.readTimeoutMs = defaultReadTimeoutMs(next.sampling.intervalMs);
      this.sampler?.stop();
      await this.startSampler();
      this.ticking.startSampling();
    }
    await this.startDomains();
    if (JSON.stringify(next.connections) !== JSON.stringify(this.connectionsConfig)) await this.startConnections(false);
    this.prewarm();
    this.opts.log.info({ file: this.opts.configFile, flows: next.flows.length, ports: next.ports.length }, 'config reloaded');
    return { ok: true };
  }

  async stop(): Promise<void> {
    this.ticking.stop();
    this.sampler?.stop();
    this.stopDomains();
    this.stopConnections();
    this.metrics.close();
    this.measurement?.dcb?.close();
    this.reader?.close();
    this.measurement?.inventory.close();
    for (const s of this.measurement?.sources ?? []) s.close();
    const server = this.server;
    this.server = undefined;
    if (server) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  state(): ExporterState {
    const rdmaNote = this.sampler && this.sampler.ports.size === 0
      ? `No RDMA port was found (${this.opts.sysfsRoot}/class/infiniband is empty or missing): serving predictions only; no measured rates.`
      : undefined;
    return {
      config: this.config, planner: this.planner, sampler: this.sampler, domains: this.domains, rdmaNote, assumptions: this.assumptions?.byPort,
      ...(this.connections ? { connections: this.connections } : {}),
    };
  }

  private apply(config: Config, planner = new Planner(config)): void {
    for (const w of config.warnings ?? []) this.opts.log.warn({ problem: formatProblem(w) }, 'config warning');
    this.config = config;
    this.planner = planner;
    this.reloadStatus.ok = true;
    this.reloadStatus.lastSuccessSeconds = Date.now() / 1000;
  }

  /** The daemon's one reader; its timeout follows the sampling interval of the first config. */
  private readerFor(intervalMs: number): BoundedReads {
    if (this.reader) return this.reader;
    const log = this.opts.log;
    const library = this.opts.readerLibrary;
    this.reader = new BoundedReads({ readTimeoutMs: defaultReadTimeoutMs(intervalMs), ...(library !== undefined ? { library } : {}) });
    if (this.reader.mode !== 'native') {
      log.warn({ err: this.reader.unavailable }, 'native reader library unavailable: reads run on the event loop with no timeout; build it with `npm run build` (make -C native reader)');
    }
    this.reader.subscribe({
      blocked: (group, i) => {
        if (!this.sampler?.ports.has(group)) log.error({ group, error: 'ETIMEDOUT', timeout_ms: i.timeoutMs, blocked_threads: i.blockedThreads }, 'read blocked; skipped until it returns');
      },
      threadLost: (i) => log.error({ running: i.running }, 'a reader thread died; replaced (no port blamed)'),
      paused: (i) => log.error({ blocked_threads: i.blockedThreads, err: readErrorText(i.error) }, 'reads paused: every reader thread is blocked in the kernel'),
    });
    return this.reader;
  }

  private async startSampler(): Promise<void> {
    const log = this.opts.log;
    const warned = new Set<string>();
    this.sampler = new Sampler({
      inventory: this.measurement.inventory,
      sources: this.measurement.sources,
      intervalMs: this.config.sampling.intervalMs,
      windowMs: this.config.sampling.windowMs,
      reader: this.readerFor(this.config.sampling.intervalMs),
      ...(this.opts.manualClock ? { clock: this.opts.manualClock } : {}),
      events: {
        portAdded: (p) => log.info({ device: p.ref.device, port: p.ref.port, state: p.attrs.state, netdev: p.attrs.netdev,
          sources: [...new Set(p.sets.map((s) => s.kind))].join(',') }, 'port found'),
        portRemoved: (r) => log.warn({ device: r.device, port: r.port }, 'port vanished'),
        readError: (r, source, counter, e) => {
          const error = readErrorText(e);
          const k = `${r.device}/${r.port}/${source}/${counter}/${error}`;
          if (warned.has(k)) return;
          warned.add(k);
          log.warn({ device: r.device, port: r.port, source, counter, error }, 'counter unreadable (logged once)');
        },
        readBlocked: (r, i) => log.error({ device: r.device, port: r.port, error: 'ETIMEDOUT', timeout_ms: i.timeoutMs, blocked_threads: i.blockedThreads }, 'counter read blocked; port skipped until the read returns'),
        readRecovered: (r) => log.info({ device: r.device, port: r.port }, 'counter reads answer again'),
      },
    });
    // The daemon's one timer ticks it (ticking.ts), so that the connections follow its reads.
    await this.sampler.start(true);
  }

  /**
   * The exposition of a new config is formatted and gzipped now, in slices, rather than by the
   * first scrape; then the load's garbage is collected and the C heap it freed goes back to the
   * kernel (memory.ts).
   */
  private prewarm(): void {
    this.warming = this.metrics.renderGzip()
      .then(loopTurn)
      .then(() => releaseLoadGarbage())
      .then(() => undefined, () => undefined);
  }

  /** Resolves when the last load's exposition is formatted and gzipped and its garbage released. */
  warmed(): Promise<void> {
    return this.warming;
  }

  /** One sampling tick now (tests with a manual clock). */
  sampleNow(): Promise<void> {
    return this.ticking.sampleNow();
  }

  /** Resolves when no sampling tick is running or queued (tests scrape after their ticks). */
  settled(): Promise<void> {
    return this.ticking.settled();
  }

  private async startAssumptions(): Promise<void> {
    this.assumptions = new HostAssumptions(this.opts.sysfsRoot, this.measurement.dcb);
    await this.refreshAssumptions();
    this.ticking.startAssumptions();
  }

  /** On the daemon's one reader: a DCB or sysfs read that hangs costs a timeout, not the event loop. */
  private async refreshAssumptions(): Promise<void> {
    if (!this.assumptions || !this.reader) return;
    await this.assumptions.refresh([...(this.sampler?.ports.values() ?? [])].map((p) => p.attrs), this.reader);
  }

  /** MXL domains are followed on the sampling interval; discovered flows join the plan. */
  private async startDomains(): Promise<void> {
    this.stopDomains();
    if (this.config.domains.length === 0) return;
    const posix = this.posix();
    this.domains = new DomainMonitor(this.config.domains, {
      clock: { monotonicNs: this.opts.manualClock ?? (() => process.hrtime.bigint()), taiNs: () => (posix ? posix.taiNowNs() : BigInt(Date.now()) * 1_000_000n) },
      probe: posix,
      log: this.opts.log,
      placements: (path, flowId) => this.connections?.placements(path, flowId) ?? [],
    });
    await this.ticking.tickDomains();
  }

  /** The config the running connection monitor was started with. */
  private connectionsConfig: Config['connections'] | undefined;

  /**
   * RDMA connections (restrack) on `connections.interval`, on the daemon's one reader, after the
   * ports and domains of a sampling tick (ticking.ts). `afterPorts`: the ports and domains were
   * just read, so the first read's counts go with theirs.
   */
  private async startConnections(afterPorts: boolean): Promise<void> {
    this.stopConnections();
    this.connectionsConfig = this.config.connections;
    if (!this.config.connections.enabled) return;
    const timeoutMs = defaultReadTimeoutMs(this.config.sampling.intervalMs);
    const open = this.opts.restrack ?? ((): TransportOpen => openRestrackSocket(timeoutMs));
    // The pins change only with the config: made once per config, not every tick over every flow.
    let pinned: { readonly config: Config; readonly pins: Pin[] } | undefined;
    const pins = (): Pin[] => {
      if (pinned?.config !== this.config) pinned = { config: this.config, pins: pinsOf(this.config) };
      return pinned.pins;
    };
    const pacing = (): ReadPacing => ({
      samplingIntervalMs: this.config.sampling.intervalMs, connectionsIntervalMs: this.config.connections.intervalMs, qpQueriesPerSecond: this.config.connections.qpQueriesPerSecond,
    });
    this.connections = new ConnectionMonitor(new RestrackSource(open, undefined, this.opts.sysfsRoot), this.opts.log, undefined, {
      domainPaths: () => this.config.domains.map((d) => d.path),
      pins,
      series: () => this.config.metrics.connectionSeries,
      ...(this.opts.procRoot ? { procRoot: this.opts.procRoot } : {}),
    }, pacing);
    await this.ticking.tickConnections(afterPorts);
  }

  /** How long each port's PSNs may go unread, at its link rate and MTU (config/connections-gap.ts). */
  private readLimit(): ReadLimit {
    const attrs = attrsLookup(this.sampler);
    const configured = new Map(this.config.ports.map((p) => [portKey(p), p]));
    return (device, port) => portReadLimit({ device, port }, configured.get(portKey({ device, port })), attrs(device, port))?.limitMs;
  }

  private stopConnections(): void {
    this.connections?.close();
    this.connections = undefined;
  }

  private stopDomains(): void {
    this.domains?.close();
    this.domains = undefined;
  }

  private posix(): Posix | undefined {
    try {
      return loadPosix();
    } catch (e) {
      this.opts.log.warn({ err: (e as Error).message }, 'flock/CLOCK_TAI unavailable: writer state unknown, write age from the realtime clock');
      return undefined;
    }
  }

  private logPorts(): void {
    const note = this.state().rdmaNote;
    if (note) this.opts.log.warn(note);
    for (const p of this.config.ports) {
      if (!this.sampler?.ports.has(portKey(p))) {
        this.opts.log.warn({ device: p.device, port: p.port }, 'configured port not found on this host; its measured rates are absent');
      }
    }
  }
}
