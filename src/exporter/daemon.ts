/**
 * The running exporter: config, predictions, sampler and HTTP, with atomic
 * reloads (a bad config keeps the running one) and a clean shutdown.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../log.js';
import { loadConfig } from '../config/load.js';
import { type Config, portKey } from '../config/types.js';
import { InputError, formatProblem } from '../input/problems.js';
import { Planner } from '../predictions/plan.js';
import { Sampler } from '../sampler/sampler.js';
import { selectSources, type Measurement } from '../sources/select.js';
import { Metrics, type ReloadStatus } from './metrics.js';
import { buildApp, listen } from './http.js';
import { WebConfigWatcher } from './web/index.js';
import { landingPage } from './landing.js';
import { buildView, flowMeasurements, type ExporterState } from './view.js';
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
  private assumptions: HostAssumptions | undefined;
  private assumptionsTimer: NodeJS.Timeout | undefined;
  private server: Server | undefined;
  private measurement!: Measurement;
  private readonly reloadStatus: ReloadStatus = { ok: false, lastSuccessSeconds: 0 };
  private readonly metrics: Metrics;

  constructor(private readonly opts: DaemonOptions) {
    this.metrics = new Metrics(() => this.state(), () => this.reloadStatus);
  }

  /** Loads the config (throws InputError when it is invalid), samples once, listens. */
  async start(): Promise<void> {
    const web = this.opts.webConfigFile ? new WebConfigWatcher(this.opts.webConfigFile, this.opts.log) : undefined;
    this.apply(loadConfig(this.opts.configFile));
    this.measurement = this.opts.measurement ?? selectSources({ sysfsRoot: this.opts.sysfsRoot });
    for (const note of this.measurement.notes) this.opts.log.info(note);
    this.startSampler();
    this.startDomains();
    this.startAssumptions();
    this.logPorts();
    const app = buildApp({
      telemetryPath: this.opts.telemetryPath,
      metrics: () => this.metrics.render(),
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

  reload(): { ok: true } | { ok: false; error: string } {
    let next: Config;
    try {
      next = loadConfig(this.opts.configFile);
    } catch (e) {
      this.reloadStatus.ok = false;
      const error = e instanceof InputError ? e.problems.map(formatProblem).join('; ') : (e as Error).message;
      this.opts.log.error({ err: error, file: this.opts.configFile }, 'config reload failed; keeping the running config');
      return { ok: false, error };
    }
    const samplingChanged = JSON.stringify(next.sampling) !== JSON.stringify(this.config.sampling);
    this.apply(next);
    if (samplingChanged) {
      this.sampler?.stop();
      this.startSampler();
    }
    this.startDomains();
    this.opts.log.info({ file: this.opts.configFile, flows: next.flows.length, ports: next.ports.length }, 'config reloaded');
    return { ok: true };
  }

  async stop(): Promise<void> {
    this.sampler?.stop();
    this.stopDomains();
    if (this.assumptionsTimer) clearInterval(this.assumptionsTimer);
    this.measurement?.dcb?.close();
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

  private apply(config: Config): void {
    this.config = config;
    this.planner = new Planner(config);
    this.reloadStatus.ok = true;
    this.reloadStatus.lastSuccessSeconds = Date.now() / 1000;
  }

  private startSampler(): void {
    const log = this.opts.log;
    const warned = new Set<string>();
    this.sampler = new Sampler({
      inventory: this.measurement.inventory,
      sources: this.measurement.sources,
      intervalMs: this.config.sampling.intervalMs,
      windowMs: this.config.sampling.windowMs,
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
        readBlocked: (r, i) => log.error({ device: r.device, port: r.port, error: 'ETIMEDOUT', timeout_ms: i.timeoutMs, stuck_reads: i.stuckWorkers }, 'counter read blocked; port skipped, retried with backoff'),
        readRecovered: (r) => log.info({ device: r.device, port: r.port }, 'counter reads answer again'),
      },
    });
    this.sampler.start(this.opts.manualClock !== undefined);
  }

  /** One sampling tick now (tests with a manual clock). */
  sampleNow(): void {
    this.sampler?.tick();
    this.tickDomains();
    this.refreshAssumptions();
  }

  private startAssumptions(): void {
    this.assumptions = new HostAssumptions(this.opts.sysfsRoot, this.measurement.dcb);
    this.refreshAssumptions();
    if (this.opts.manualClock) return;
    this.assumptionsTimer = setInterval(() => this.refreshAssumptions(), ASSUMPTIONS_REFRESH_MS);
    this.assumptionsTimer.unref();
  }

  private refreshAssumptions(): void {
    this.assumptions?.refresh([...(this.sampler?.ports.values() ?? [])].map((p) => p.attrs));
  }

  /** MXL domains are followed on the sampling interval; discovered flows join the plan. */
  private startDomains(): void {
    this.stopDomains();
    if (this.config.domains.length === 0) return;
    const manual = this.opts.manualClock;
    const posix = this.posix();
    this.domains = new DomainMonitor(this.config.domains, {
      clock: { monotonicNs: manual ?? process.hrtime.bigint, taiNs: () => (posix ? posix.taiNowNs() : BigInt(Date.now()) * 1_000_000n) },
      probe: posix,
      log: this.opts.log,
    });
    this.tickDomains();
    if (manual) return;
    this.domainTimer = setInterval(() => this.tickDomains(), this.config.sampling.intervalMs);
    this.domainTimer.unref();
  }

  private tickDomains(): void {
    const { windowMs, intervalMs } = this.config.sampling;
    if (this.domains?.tick({ windowNs: BigInt(windowMs) * 1_000_000n, intervalNs: BigInt(intervalMs) * 1_000_000n })) {
      this.planner.setDiscovered(this.domains.bindings());
    }
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
