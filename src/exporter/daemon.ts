/**
 * The running exporter: config, predictions, sampler and HTTP, with atomic
 * reloads (a bad config keeps the running one) and a clean shutdown.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../log.js';
import { DEFAULTS, loadConfigAsync } from '../config/load.js';
import { type Config, portKey } from '../config/types.js';
import { InputError, formatProblem } from '../input/problems.js';
import { Planner } from '../predictions/plan.js';
import { Sampler, defaultReadTimeoutMs } from '../sampler/sampler.js';
import { BoundedReads } from '../reads/bounded.js';
import { selectSources, type Measurement } from '../sources/select.js';
import { releaseLoadGarbage } from './memory.js';
import { Metrics, type ReloadStatus } from './metrics.js';
import { buildApp, listen } from './http.js';
import { WebConfigWatcher } from './web/index.js';
import { landingPage } from './landing.js';
import { attrsLookup, buildView, flowMeasurements, type ExporterState } from './view.js';
import { DomainMonitor } from '../domain/monitor.js';
import { loadPosix, type Posix } from '../ffi/posix.js';
import { HostAssumptions } from '../health/assumptions.js';

/** Host assumptions (VLAN, PFC) change with configuration, not traffic: read them this often. */
const ASSUMPTIONS_REFRESH_MS = 30_000;

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
}

export class Daemon {
  private config!: Config;
  private planner!: Planner;
  private sampler: Sampler | undefined;
  private domains: DomainMonitor | undefined;
  private domainTimer: NodeJS.Timeout | undefined;
  private domainTick: Promise<void> | undefined;
  /** Every blocking read of the daemon goes through this one reader (src/reads). */
  private reader: BoundedReads | undefined;
  private assumptions: HostAssumptions | undefined;
  private assumptionsTimer: NodeJS.Timeout | undefined;
  private server: Server | undefined;
  private measurement!: Measurement;
  private readonly reloadStatus: ReloadStatus = { ok: false, lastSuccessSeconds: 0 };
  /** The reload running, and the one asked for while it runs (the file may have changed again). */
  private reloading: Promise<{ ok: true } | { ok: false; error: string }> | undefined;
  private reloadNext: Promise<{ ok: true } | { ok: false; error: string }> | undefined;
  /** prewarm() of the last load. */
  private warming: Promise<void> = Promise.resolve();
  private readonly metrics: Metrics;

  constructor(private readonly opts: DaemonOptions) {
    this.metrics = new Metrics(() => this.state(), () => this.reloadStatus);
  }

  /** Loads the config (throws InputError when it is invalid), samples once, listens. */
  async start(): Promise<void> {
    const web = this.opts.webConfigFile ? new WebConfigWatcher(this.opts.webConfigFile, this.opts.log) : undefined;
    this.apply(await loadConfigAsync(this.opts.configFile, this.readerFor(DEFAULTS.intervalMs)));
    this.reader!.readTimeoutMs = defaultReadTimeoutMs(this.config.sampling.intervalMs);
    this.measurement = this.opts.measurement ?? selectSources({ sysfsRoot: this.opts.sysfsRoot });
    for (const note of this.measurement.notes) this.opts.log.info(note);
    await this.startSampler();
    await this.startDomains();
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
        const units = query.get('units') === 'bits' ? 'bits' : 'bytes';
        return landingPage(state, buildView(state), flowMeasurements(state), { telemetryPath: this.opts.telemetryPath, units });
      },
      ready: () => this.sampler !== undefined,
      reload: () => this.reload(),
      lifecycle: this.opts.enableLifecycle ?? false,
      internalError: (err) => this.opts.log.error({ err: err instanceof Error ? err.message : String(err) }, 'request failed'),
    });
    this.server = await listen(app, this.opts.listenAddress, { web, log: this.opts.log });
    this.opts.log.info({ address: this.opts.listenAddress, telemetry_path: this.opts.telemetryPath, tls: web?.current.tls !== undefined, basic_auth: (web?.current.users.size ?? 0) > 0 }, 'listening');
  }

  address(): AddressInfo {
    return this.server!.address() as AddressInfo;
  }

  /**
   * Loads the config again beside the event loop (scrapes and /-/healthy keep answering); a bad
   * config keeps the running one. Asked for while one runs: one more runs after it.
   */
  reload(): Promise<{ ok: true } | { ok: false; error: string }> {
    if (this.reloading === undefined) {
      const run = this.reloadOnce().finally(() => {
        this.reloading = this.reloadNext;
        this.reloadNext = undefined;
      });
      this.reloading = run;
      return run;
    }
    this.reloadNext ??= this.reloading.then(() => this.reloadOnce());
    return this.reloadNext;
  }

  private async reloadOnce(): Promise<{ ok: true } | { ok: false; error: string }> {
    let next: Config;
    try {
      next = await loadConfigAsync(this.opts.configFile, this.reader);
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
    }
    await this.startDomains();
    this.prewarm();
    this.opts.log.info({ file: this.opts.configFile, flows: next.flows.length, ports: next.ports.length }, 'config reloaded');
    return { ok: true };
  }

  async stop(): Promise<void> {
    this.sampler?.stop();
    this.stopDomains();
    if (this.assumptionsTimer) clearInterval(this.assumptionsTimer);
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
    return { config: this.config, planner: this.planner, sampler: this.sampler, domains: this.domains, rdmaNote, assumptions: this.assumptions?.byPort };
  }

  private apply(config: Config, planner = new Planner(config)): void {
    this.config = config;
    this.planner = planner;
    this.reloadStatus.ok = true;
    this.reloadStatus.lastSuccessSeconds = Date.now() / 1000;
  }

  /** The daemon's one reader; its timeout follows the sampling interval of the first config. */
  private readerFor(intervalMs: number): BoundedReads {
    if (this.reader) return this.reader;
    const log = this.opts.log;
    this.reader = new BoundedReads({ readTimeoutMs: defaultReadTimeoutMs(intervalMs) });
    if (this.reader.mode !== 'native') {
      log.warn({ err: this.reader.unavailable }, 'native reader library unavailable: reads run on the event loop with no timeout; build it with `npm run build` (make -C native reader)');
    }
    this.reader.subscribe({
      blocked: (group, i) => {
        if (!this.sampler?.ports.has(group)) log.error({ group, error: 'ETIMEDOUT', timeout_ms: i.timeoutMs, blocked_threads: i.blockedThreads }, 'read blocked; skipped until it returns');
      },
      threadLost: (i) => log.error({ running: i.running }, 'a reader thread died; replaced (no port blamed)'),
      paused: (i) => log.error({ blocked_threads: i.blockedThreads, err: i.error }, 'reads paused: every reader thread is blocked in the kernel'),
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
        readError: (r, source, counter, error) => {
          const k = `${r.device}/${r.port}/${source}/${counter}/${error}`;
          if (warned.has(k)) return;
          warned.add(k);
          log.warn({ device: r.device, port: r.port, source, counter, error }, 'counter unreadable (logged once)');
        },
        readBlocked: (r, i) => log.error({ device: r.device, port: r.port, error: 'ETIMEDOUT', timeout_ms: i.timeoutMs, blocked_threads: i.blockedThreads }, 'counter read blocked; port skipped until the read returns'),
        readRecovered: (r) => log.info({ device: r.device, port: r.port }, 'counter reads answer again'),
      },
    });
    await this.sampler.start(this.opts.manualClock !== undefined);
  }

  /**
   * The exposition of a new config is formatted and gzipped now, in slices, rather than by the
   * first scrape; then the load's garbage is collected and the C heap it freed goes back to the
   * kernel (memory.ts).
   */
  private prewarm(): void {
    this.warming = this.metrics.renderGzip()
      .then(() => new Promise((resolve) => setImmediate(resolve)))
      .then(() => releaseLoadGarbage())
      .then(() => undefined, () => undefined);
  }

  /** Resolves when the last load's exposition is formatted and gzipped and its garbage released. */
  warmed(): Promise<void> {
    return this.warming;
  }

  /** One sampling tick now (tests with a manual clock). */
  async sampleNow(): Promise<void> {
    await Promise.all([this.sampler?.tick(), this.tickDomains()]);
    await this.refreshAssumptions();
  }

  /** Resolves when no sampling tick is running or queued (tests scrape after their ticks). */
  async settled(): Promise<void> {
    await Promise.all([this.sampler?.idle(), this.domainTick]);
  }

  private async startAssumptions(): Promise<void> {
    this.assumptions = new HostAssumptions(this.opts.sysfsRoot, this.measurement.dcb);
    await this.refreshAssumptions();
    if (this.opts.manualClock) return;
    this.assumptionsTimer = setInterval(() => void this.refreshAssumptions(), ASSUMPTIONS_REFRESH_MS);
    this.assumptionsTimer.unref();
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
    const manual = this.opts.manualClock;
    const posix = this.posix();
    this.domains = new DomainMonitor(this.config.domains, {
      clock: { monotonicNs: manual ?? process.hrtime.bigint, taiNs: () => (posix ? posix.taiNowNs() : BigInt(Date.now()) * 1_000_000n) },
      probe: posix,
      log: this.opts.log,
    });
    await this.tickDomains();
    if (manual) return;
    this.domainTimer = setInterval(() => {
      if (!this.domainTick) void this.tickDomains();
    }, this.config.sampling.intervalMs);
    this.domainTimer.unref();
  }

  /** One domain tick; ticks asked for while one runs follow it. */
  private tickDomains(): Promise<void> {
    const domains = this.domains;
    if (!domains) return Promise.resolve();
    const run = (this.domainTick ?? Promise.resolve()).then(async () => {
      if (this.domains !== domains) return;
      const { windowMs, intervalMs } = this.config.sampling;
      const timing = { windowNs: BigInt(windowMs) * 1_000_000n, intervalNs: BigInt(intervalMs) * 1_000_000n };
      if (await domains.tick(timing, this.readerFor(intervalMs))) this.planner.setDiscovered(domains.bindings());
    });
    const tracked: Promise<void> = run.finally(() => {
      if (this.domainTick === tracked) this.domainTick = undefined;
    });
    this.domainTick = tracked;
    return tracked;
  }

  private stopDomains(): void {
    if (this.domainTimer) clearInterval(this.domainTimer);
    this.domainTimer = undefined;
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
