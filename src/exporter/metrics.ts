/**
 * The exposition, kept between scrapes: the text of the exporter's families (families.ts) made
 * from the plans (every per-flow prediction) until a plan changes, the others until the next
 * sampling tick, each gzipped once. prom-client serves the process and Node.js metrics and the
 * exporter's own few gauges.
 */
import { promisify } from 'node:util';
import { constants as zlibConstants, inflateRaw } from 'node:zlib';
import { Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { BUILD } from '../build-info.js';
import { EVENT_LOOP_STAT_NAMES, registerEventLoopDelay } from './event-loop.js';
import { type GzipPiece, gzipPiece, gzipStream, joinPieces } from './gzip.js';
import { FAMILIES } from './families.js';
import { type FamilyDoc, PREFIX } from './family.js';
import { formatText } from './format.js';
import { attrsLookup, buildView, flowMeasurements, type ExporterState, type PortView } from './view.js';

const NON_COUNTER_TOTALS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'] as const;

export interface ReloadStatus {
  ok: boolean;
  lastSuccessSeconds: number;
}

interface Cached {
  readonly key: readonly unknown[];
  /**
   * The text, built beside the event loop (formatText()) in chunks; concurrent scrapes wait for
   * the same one. The plan's is let go once gzipped (`keepText` false): see gunzipped().
   */
  text: Promise<Buffer[]> | undefined;
  /** Its chunks gzipped (one piece: joinPieces()), made by the first gzip scrape (or prewarm) and kept with the piece. */
  gzip: Promise<GzipPiece> | undefined;
  readonly keepText: boolean;
}

const inflateRawAsync = promisify(inflateRaw);

const sameKey = (a: readonly unknown[] | undefined, b: readonly unknown[]): boolean =>
  a !== undefined && a.length === b.length && a.every((v, i) => v === b[i]);

/**
 * How often nodejs_eventloop_lag_* sample the event loop (event-loop.ts). prom-client's default,
 * 10 ms, wakes the process 100 times a second, and that timer alone cost more CPU than the
 * counter reads it watches over (bench/README.md, "Figures behind code comments"). A stall of
 * 500 ms or more is always seen; a shorter one when a sample falls due during it (a 50 ms stall
 * one time in ten), so a recurring stall still shows.
 */
const EVENT_LOOP_SAMPLE_MS = 500;
/** prom-client's own monitor, whose statistics are replaced: a timer every 24.8 days (2^31 - 1 ms). */
const PARKED_MS = 2 ** 31 - 1;

/** The exporter's own families that prom-client serves (beside FAMILIES): docs/metrics.md lists both. */
export const REGISTRY_FAMILIES = [
  { name: 'exporter_build_info', help: 'Build information; always 1.', type: 'gauge', labels: ['version', 'revision', 'nodeversion'] },
  { name: 'exporter_config_last_reload_successful', help: 'Whether the last config (re)load succeeded (1) or kept the previous config (0).', type: 'gauge', labels: [] },
  { name: 'exporter_config_last_reload_success_timestamp_seconds', help: 'Unix time of the last successful config load.', type: 'gauge', labels: [] },
] as const satisfies readonly FamilyDoc[];

export class Metrics {
  readonly registry = new Registry();
  private planText: Cached | undefined;
  private tickText: Cached | undefined;
  /** prom-client's families (process, Node.js, the exporter's own), kept for the tick like the rest. */
  private registryText: Cached | undefined;
  private readonly stopEventLoopDelay: () => void;

  constructor(
    private readonly state: () => ExporterState,
    private readonly reload: () => ReloadStatus,
  ) {
    // prom-client's event-loop monitor counts its own interval as delay (event-loop.ts): its
    // statistics are replaced, and its timer parked so that only one samples the loop.
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: PARKED_MS });
    // prom-client names three gauges `_total`, which promtool's lint refuses for non-counters;
    // the per-type gauges beside them (nodejs_active_handles{type}...) carry the same numbers.
    for (const name of [...NON_COUNTER_TOTALS, ...EVENT_LOOP_STAT_NAMES]) this.registry.removeSingleMetric(name);
    this.stopEventLoopDelay = registerEventLoopDelay(this.registry, EVENT_LOOP_SAMPLE_MS);
    this.exporterGauges();
  }

  /** Stops the event-loop monitor's timer. */
  close(): void {
    this.stopEventLoopDelay();
  }

  /** The whole exposition as one string (benchmarks, tests). */
  async renderText(): Promise<string> {
    return Buffer.concat(await this.render()).toString('utf8');
  }

  /**
   * The exposition gzipped, as one gzip stream made of its pieces compressed apart (gzip.ts) on
   * libuv's threadpool, each once for as long as the piece is kept: the per-flow text of 10,000
   * flows (18 MB) once per reload, the rest once per tick. The per-flow text itself is not kept
   * once compressed (0.6 MB): scrapes without gzip inflate it again (gunzipped()).
   */
  async renderGzip(): Promise<Buffer[]> {
    const pieces = this.pieces();
    const zipped = await Promise.all(pieces.map((piece, i) => {
      if (piece.gzip === undefined) {
        const last = i === pieces.length - 1;
        // A piece's chunks compress apart; only the very last chunk of all finishes the stream.
        piece.gzip = piece.text!.then((chunks) => Promise.all(chunks.map((c, k) => gzipPiece(c, last && k === chunks.length - 1)))).then(joinPieces);
        if (!piece.keepText) void piece.gzip.then(() => (piece.text = undefined), () => undefined);
      }
      return piece.gzip;
    }));
    return gzipStream(zipped);
  }

  /** The exposition in pieces: the kept plan and tick texts, then prom-client's families. */
  async render(): Promise<Buffer[]> {
    const parts = await Promise.all(this.pieces().map((p) => p.text ?? gunzipped(p.gzip!)));
    return parts.flat();
  }

  /** The plan, tick and registry pieces for now: kept ones, or new ones (formatting started). */
  private pieces(): [plan: Cached, tick: Cached, registry: Cached] {
    const state = this.state();
    state.planner.plans(attrsLookup(state.sampler)); // first: an MTU change moves the plan version
    let views: readonly PortView[] | undefined;
    const viewsNow = (): readonly PortView[] => (views ??= buildView(state));
    const planKey = [state.planner, state.planner.version];
    const tickKey = [...planKey, state.sampler, state.sampler?.ticks, state.domains, state.domains?.ticks, state.assumptions, state.connections, state.connections?.ticks];
    const plan = sameKey(this.planText?.key, planKey)
      ? this.planText!
      : { key: planKey, text: formatText(FAMILIES, 'plan', viewsNow(), state, []), gzip: undefined, keepText: false };
    const tick = sameKey(this.tickText?.key, tickKey)
      ? this.tickText!
      : { key: tickKey, text: formatText(FAMILIES, 'tick', viewsNow(), state, flowMeasurements(state)), gzip: undefined, keepText: true };
    this.planText = plan;
    this.tickText = tick;
    // Scrapes between two ticks share one text: concurrent scrapers cost one render, and
    // process_open_fds' readdir of ~1,800 descriptors runs once a tick, not once a scrape.
    const status = this.reload();
    const registryKey = [...tickKey, status.ok, status.lastSuccessSeconds];
    const registry = sameKey(this.registryText?.key, registryKey)
      ? this.registryText!
      : { key: registryKey, text: this.registry.metrics().then((t) => [Buffer.from(t)]), gzip: undefined, keepText: true };
    this.registryText = registry;
    return [plan, tick, registry];
  }

  private exporterGauges(): void {
    const values: Record<(typeof REGISTRY_FAMILIES)[number]['name'], (g: Gauge<string>) => void> = {
      exporter_build_info: (g) => g.set({ version: BUILD.version, revision: BUILD.revision, nodeversion: BUILD.nodeVersion }, 1),
      exporter_config_last_reload_successful: (g) => g.set(this.reload().ok ? 1 : 0),
      exporter_config_last_reload_success_timestamp_seconds: (g) => g.set(this.reload().lastSuccessSeconds),
    };
    for (const f of REGISTRY_FAMILIES) {
      const collect = values[f.name];
      new Gauge({ name: PREFIX + f.name, help: f.help, labelNames: f.labels, registers: [this.registry], collect() { collect(this); } });
    }
  }
}

/** A piece's text again from its gzipped chunks (each a sync-flushed raw deflate), on libuv's threadpool. */
function gunzipped(gzip: Promise<GzipPiece>): Promise<Buffer[]> {
  return gzip.then((piece) => Promise.all(piece.deflated.map((d) => inflateRawAsync(d, { finishFlush: zlibConstants.Z_SYNC_FLUSH }))));
}
