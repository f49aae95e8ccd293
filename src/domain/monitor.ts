/** The configured MXL domains: discovery (flows to bind) and per-flow measurement, one tick at a time. */
import type { DomainConfig, FlowBinding } from '../config/types.js';
import type { Logger } from '../log.js';
import { DomainWatcher, type DomainClock, type DomainFlow, type WriterProbe } from './watcher.js';
import type { FlowInfo } from './flowinfo.js';
import type { TransferOptions } from '../model/index.js';

export interface DomainMonitorOptions {
  readonly clock: DomainClock;
  readonly probe: WriterProbe | undefined;
  readonly log: Logger;
}

/** `*` any run, `?` one character; everything else literal. */
export function globToRegExp(glob: string): RegExp {
  const body = glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${body}$`);
}

export function selects(domain: DomainConfig, flow: DomainFlow): boolean {
  const def = flow.def;
  if (!def) return false;
  const names = [def.label, def.id, ...def.groupHints];
  const hit = (globs: readonly string[]): boolean => globs.some((g) => names.some((n) => globToRegExp(g).test(n)));
  return (domain.include.length === 0 || hit(domain.include)) && !hit(domain.exclude);
}

export class DomainMonitor {
  private readonly watchers: { readonly domain: DomainConfig; readonly watcher: DomainWatcher }[];
  private bound: FlowBinding[] = [];
  ticks = 0;

  constructor(
    domains: readonly DomainConfig[],
    private readonly opts: DomainMonitorOptions,
  ) {
    this.watchers = domains.map((domain) => ({ domain, watcher: new DomainWatcher(domain.path, opts.clock, opts.probe) }));
  }

  /** Scans and samples every domain; true when the discovered bindings changed. */
  tick(windowMs: number): boolean {
    this.ticks++;
    let changed = false;
    for (const { domain, watcher } of this.watchers) {
      const { added, removed } = watcher.scan();
      for (const f of added) this.logAdded(domain, f);
      for (const f of removed) this.opts.log.info({ domain: domain.path, flow_id: f.id }, 'MXL flow removed from domain');
      changed ||= added.length > 0 || removed.length > 0;
      watcher.sample(BigInt(windowMs) * 1_000_000n);
    }
    if (changed) this.bound = this.watchers.flatMap(({ domain, watcher }) => watcher.all().filter((f) => selects(domain, f)).map((f) => bind(domain, f)));
    return changed;
  }

  bindings(): readonly FlowBinding[] {
    return this.bound;
  }

  /** Every flow found in any domain, first domain first when one id is in two. */
  flows(): DomainFlow[] {
    const seen = new Map<string, DomainFlow>();
    for (const { watcher } of this.watchers) for (const f of watcher.all()) if (!seen.has(f.id)) seen.set(f.id, f);
    return [...seen.values()];
  }

  /** Domains that cannot be listed right now, with the reason. */
  errors(): { path: string; error: string }[] {
    return this.watchers.flatMap(({ watcher }) => (watcher.error ? [{ path: watcher.path, error: watcher.error }] : []));
  }

  close(): void {
    for (const { watcher } of this.watchers) watcher.close();
  }

  private logAdded(domain: DomainConfig, f: DomainFlow): void {
    if (f.defError) this.opts.log.warn({ domain: domain.path, flow_id: f.id, err: f.defError }, 'MXL flow definition unusable; flow skipped');
    else this.opts.log.info({ domain: domain.path, flow_id: f.id, label: f.def?.label, selected: selects(domain, f) }, 'MXL flow found in domain');
  }
}

function bind(domain: DomainConfig, f: DomainFlow): FlowBinding {
  return {
    flow: f.def!, device: domain.device, port: domain.port, direction: domain.direction, provider: domain.provider,
    grainDuration: domain.grainDuration, origin: 'domain',
    ...(f.info ? { transfer: transferOf(f.info) } : {}),
  };
}

/**
 * What the flow's header says about its writes: the ring length of an audio flow; for video and
 * data, the sync batch mxl-fabrics-demo sends per write (demo.cpp:405-418; whole grains unless
 * the writer set a smaller maxSyncBatchSizeHint).
 */
function transferOf(info: FlowInfo): TransferOptions {
  if (info.format === 'audio') return info.bufferLength ? { ringLengthSamples: BigInt(info.bufferLength) } : {};
  return info.syncBatchSize > 0 ? { slicesPerBatch: info.syncBatchSize } : {};
}
