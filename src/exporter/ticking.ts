/**
 * The daemon's clockwork: one timer on the sampling interval that reads the ports and the MXL
 * domains, then, when due, the connection tables (model/connections-schedule.ts), so that what
 * the connections read is set against the ports' and domains' counts of the same tick
 * (model/same-tick.ts); and a slower timer for the host assumptions (VLAN, PFC). A part still
 * busy from the tick before is not doubled. With a manual clock (tests) no timer runs: the
 * caller ticks with sampleNow().
 */
import type { Config } from '../config/types.js';
import type { Planner } from '../predictions/plan.js';
import type { Sampler } from '../sampler/sampler.js';
import type { BoundedReads } from '../reads/bounded.js';
import type { DomainMonitor } from '../domain/monitor.js';
import type { ConnectionMonitor } from '../sources/restrack/monitor.js';
import type { ReadLimit } from '../model/connections.js';
import { SerialQueue } from '../serial.js';
import { portTotals } from './connections.js';

/** Host assumptions (VLAN, PFC) change with configuration, not traffic: read them this often. */
const ASSUMPTIONS_REFRESH_MS = 30_000;

/** What the ticks read, asked at each tick (each follows reloads). */
export interface TickParts {
  config(): Config;
  planner(): Planner;
  sampler(): Sampler | undefined;
  domains(): DomainMonitor | undefined;
  connections(): ConnectionMonitor | undefined;
  reader(): BoundedReads;
  /** How long each port's PSNs may go unread (config/connections-gap.ts portReadLimit). */
  readLimit(): ReadLimit;
  refreshAssumptions(): Promise<void>;
  /** The monotonic clock in ns (tests: a manual one). */
  readonly clock: () => bigint;
  /** Whether the clock is manual: then no timer runs. */
  readonly manual: boolean;
}

export class Ticking {
  private tickTimer: NodeJS.Timeout | undefined;
  private assumptionsTimer: NodeJS.Timeout | undefined;
  private readonly domainTicks = new SerialQueue();
  private readonly connectionsTicks = new SerialQueue();
  constructor(private readonly parts: TickParts) {}

  /** (Re)starts the sampling timer on the config's interval. */
  startSampling(): void {
    this.stopSampling();
    if (this.parts.manual) return;
    this.tickTimer = setInterval(() => void this.tick(), this.parts.config().sampling.intervalMs);
    this.tickTimer.unref();
  }

  startAssumptions(): void {
    if (this.parts.manual || this.assumptionsTimer) return;
    this.assumptionsTimer = setInterval(() => void this.parts.refreshAssumptions(), ASSUMPTIONS_REFRESH_MS);
    this.assumptionsTimer.unref();
  }

  stop(): void {
    this.stopSampling();
    if (this.assumptionsTimer) clearInterval(this.assumptionsTimer);
    this.assumptionsTimer = undefined;
  }

  private stopSampling(): void {
    if (this.tickTimer) clearInterval(this.tickTimer);
    this.tickTimer = undefined;
  }

  /** One timer tick: ports and domains (each unless still busy), then the connections when due. */
  private async tick(): Promise<void> {
    const sampler = this.parts.sampler();
    const ports = sampler && !sampler.busy ? sampler.tick() : undefined;
    const domains = this.domainTicks.busy ? undefined : this.tickDomains();
    await Promise.all([ports, domains]);
    if (this.connectionsTicks.busy || !this.connectionsDue()) return;
    await this.tickConnections(ports !== undefined && domains !== undefined);
  }

  /**
   * model/connections-schedule.ts: on the sampling ticks, each device at least `connections.interval`
   * apart, further on a device whose QPs outrun `connections.qp_queries_per_second` (restrack/pacing.ts).
   */
  private connectionsDue(): boolean {
    return this.parts.connections()?.due(this.nowMs(), this.parts.readLimit()) ?? false;
  }

  private nowMs(): number {
    return Number(this.parts.clock() / 1_000_000n);
  }

  /** One domain tick (flows discovered join the plan); ticks asked for while one runs follow it. */
  tickDomains(): Promise<void> {
    const domains = this.parts.domains();
    if (!domains) return Promise.resolve();
    return this.domainTicks.run(async () => {
      if (this.parts.domains() !== domains) return;
      const { windowMs, intervalMs } = this.parts.config().sampling;
      const timing = { windowNs: BigInt(windowMs) * 1_000_000n, intervalNs: BigInt(intervalMs) * 1_000_000n };
      if (await domains.tick(timing, this.parts.reader())) this.parts.planner().setDiscovered(domains.bindings());
    });
  }

  /** One connections read; `afterPorts`: the ports and domains were read in this tick, their counts go with it. */
  tickConnections(afterPorts: boolean): Promise<void> {
    const monitor = this.parts.connections();
    if (!monitor) return Promise.resolve();
    return this.connectionsTicks.run(async () => {
      if (this.parts.connections() !== monitor) return;
      const nowMs = this.nowMs();
      const sampler = this.parts.sampler();
      const domains = this.parts.domains();
      const sameTick = afterPorts ? () => ({ ports: portTotals(sampler), heads: domains?.headJobs() ?? [], windowMs: this.parts.config().sampling.windowMs }) : undefined;
      await monitor.tick(this.parts.reader(), nowMs, (device, port, direction) =>
        sampler?.measurements({ device, port }, direction, 'packets')[0]?.rate, sameTick, this.parts.readLimit());
      // bind: auto: the flows go where their connections now run.
      if (domains?.rebindAuto()) this.parts.planner().setDiscovered(domains.bindings());
    });
  }

  /** One tick of everything now (tests with a manual clock). */
  async sampleNow(): Promise<void> {
    await Promise.all([this.parts.sampler()?.tick(), this.tickDomains()]);
    await this.tickConnections(true);
    await this.parts.refreshAssumptions();
  }

  /** Resolves when no tick is running or queued. */
  async settled(): Promise<void> {
    await Promise.all([this.parts.sampler()?.idle(), this.domainTicks.idle(), this.connectionsTicks.idle()]);
  }
}
