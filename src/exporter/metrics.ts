/**
 * Prometheus metrics (names are a contract: README "Metrics"). Every family is a view over the
 * exporter's state; nothing is stored in label maps, so a vanished port or flow simply stops
 * being reported. The text is kept between scrapes: families made from the plans (every
 * per-flow prediction) until a plan changes, the others until the next sampling tick.
 * prom-client serves the process and Node.js metrics and the exporter's own few gauges.
 */
import { promisify } from 'node:util';
import { constants as zlibConstants, inflateRaw } from 'node:zlib';
import { Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { LAYERS, toNumber } from '../model/index.js';
import { BUILD } from '../build-info.js';
import { familyHeader, formatLabels, formatSamples, type Labels, type Sample } from './exposition.js';
import { type GzipPiece, gzipPiece, gzipStream, joinPieces } from './gzip.js';
import type { SampledCounter } from '../sampler/sampler.js';
import { attrsLookup, buildView, flowMeasurements, type ExporterState, type FlowMeasurementView, type PortView } from './view.js';
import { FLOW_TRUTH_FAMILIES } from './flow-truth.js';
import { FABRIC_HEALTH_FAMILIES } from './fabric-health.js';

export const PREFIX = 'mxl_fabric_';
const NON_COUNTER_TOTALS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'] as const;


export type Read = (views: readonly PortView[], state: ExporterState, flows: readonly FlowMeasurementView[]) => Sample[];
/** `plan`: reads only the plans and the config; `tick`: also what the sampler and domains saw. */
type Changes = 'plan' | 'tick';
export type Family = [name: string, help: string, type: 'gauge' | 'counter', changes: Changes, read: Read];

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

/** Longest stretch of formatting between two turns of the event loop. */
const FORMAT_SLICE_MS = 10;
/** Samples formatted between two looks at the clock. */
const FORMAT_CHUNK = 1000;
/**
 * Bytes of exposition text per kept chunk. The text is never joined into one buffer: copying
 * 10 MB (10,000 flows) into a fresh allocation took 80-140 ms in one go on this VM, most of it
 * the kernel faulting the new pages in, and stalled the event loop for all of it.
 */
const TEXT_CHUNK_BYTES = 256 * 1024;

const inflateRawAsync = promisify(inflateRaw);

const sameKey = (a: readonly unknown[] | undefined, b: readonly unknown[]): boolean =>
  a !== undefined && a.length === b.length && a.every((v, i) => v === b[i]);

export class Metrics {
  readonly registry = new Registry();
  private planText: Cached | undefined;
  private tickText: Cached | undefined;
  /** prom-client's families (process, Node.js, the exporter's own), kept for the tick like the rest. */
  private registryText: Cached | undefined;

  constructor(
    private readonly state: () => ExporterState,
    private readonly reload: () => ReloadStatus,
  ) {
    collectDefaultMetrics({ register: this.registry });
    // prom-client names three gauges `_total`, which promtool's lint refuses for non-counters;
    // the per-type gauges beside them (nodejs_active_handles{type}...) carry the same numbers.
    for (const name of NON_COUNTER_TOTALS) this.registry.removeSingleMetric(name);
    this.exporterGauges();
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
    const tickKey = [...planKey, state.sampler, state.sampler?.ticks, state.domains, state.domains?.ticks, state.assumptions];
    const plan = sameKey(this.planText?.key, planKey)
      ? this.planText!
      : { key: planKey, text: this.formatText('plan', viewsNow(), state, []), gzip: undefined, keepText: false };
    const tick = sameKey(this.tickText?.key, tickKey)
      ? this.tickText!
      : { key: tickKey, text: this.formatText('tick', viewsNow(), state, flowMeasurements(state)), gzip: undefined, keepText: true };
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

  /**
   * The text of the families that change with `changes`, formatted in slices with the event loop
   * turning between them: 10,000 flows are 60,000 series, far too many for one go.
   */
  private async formatText(changes: Changes, views: readonly PortView[], state: ExporterState, flows: readonly FlowMeasurementView[]): Promise<Buffer[]> {
    // Kept as bytes chunk by chunk: one 10 MB string would be flattened and copied at the end,
    // in one go, and its pieces would crowd V8's young generation meanwhile.
    const text = new TextChunks(TEXT_CHUNK_BYTES);
    let sliceStart = performance.now();
    const pause = async (): Promise<void> => {
      if (performance.now() - sliceStart < FORMAT_SLICE_MS) return;
      await new Promise<void>((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    };
    for (const [name, help, type, when, read] of FAMILIES) {
      if (when !== changes) continue;
      text.write(familyHeader(PREFIX + name, help, type));
      // A family with samples and no port at all (the exporter's own, the flows of MXL domains)
      // is read once; the others port by port, so 10,000 flows' samples are never made at once.
      const alone = read([], state, flows);
      const parts = alone.length > 0 ? [views] : views.map((v) => [v]);
      for (const part of parts) {
        const samples = alone.length > 0 ? alone : read(part, state, flows);
        for (let at = 0; at < samples.length; at += FORMAT_CHUNK) {
          text.write(formatSamples(PREFIX + name, samples, at, Math.min(samples.length, at + FORMAT_CHUNK)));
          await pause();
        }
        await pause();
      }
    }
    return text.end();
  }

  private exporterGauges(): void {
    const gauge = (name: string, help: string, labelNames: string[], collect: (g: Gauge<string>) => void): void => {
      new Gauge({ name: PREFIX + name, help, labelNames, registers: [this.registry], collect() { collect(this); } });
    };
    gauge('exporter_build_info', 'Build information; always 1.', ['version', 'revision', 'nodeversion'], (g) =>
      g.set({ version: BUILD.version, revision: BUILD.revision, nodeversion: BUILD.nodeVersion }, 1));
    gauge('exporter_config_last_reload_successful', 'Whether the last config (re)load succeeded (1) or kept the previous config (0).', [], (g) =>
      g.set(this.reload().ok ? 1 : 0));
    gauge('exporter_config_last_reload_success_timestamp_seconds', 'Unix time of the last successful config load.', [], (g) =>
      g.set(this.reload().lastSuccessSeconds));
  }
}

/** A piece's text again from its gzipped chunks (each a sync-flushed raw deflate), on libuv's threadpool. */
function gunzipped(gzip: Promise<GzipPiece>): Promise<Buffer[]> {
  return gzip.then((piece) => Promise.all(piece.deflated.map((d) => inflateRawAsync(d, { finishFlush: zlibConstants.Z_SYNC_FLUSH }))));
}

/** Text written into buffers of about `size` bytes each, never copied into one. */
class TextChunks {
  private readonly chunks: Buffer[] = [];
  private buf: Buffer | undefined;
  private at = 0;

  constructor(private readonly size: number) {}

  write(s: string): void {
    const n = Buffer.byteLength(s);
    if (this.buf === undefined || this.at + n > this.buf.length) {
      this.flush();
      this.buf = Buffer.allocUnsafeSlow(Math.max(this.size, n));
    }
    this.at += this.buf.write(s, this.at);
  }

  /** The chunks; the last one copied to its length when it fills less than half its buffer (kept memory). */
  end(): Buffer[] {
    this.flush();
    return this.chunks;
  }

  private flush(): void {
    if (this.buf === undefined || this.at === 0) return;
    this.chunks.push(this.at < this.buf.length / 2 ? Buffer.from(this.buf.subarray(0, this.at)) : this.buf.subarray(0, this.at));
    this.buf = undefined;
    this.at = 0;
  }
}

/** An acknowledgement carries no media and no RDMA payload: only these layers are exported for it. */
const ACK_LAYERS = ['l3', 'l2', 'wire'] as const;

const portLabels = (v: PortView): Labels => ({ device: v.device, port: String(v.port) });

/**
 * The label text of a counter's series (device, port, source, counter), formatted once per
 * series: up to four families print it every tick for each of ~1,800 counters at 32 ports.
 */
const counterLabelText = new WeakMap<SampledCounter, string>();
function counterLabels(v: PortView, c: SampledCounter): string {
  let text = counterLabelText.get(c);
  if (text === undefined) counterLabelText.set(c, (text = formatLabels({ ...portLabels(v), source: c.source, counter: c.series.spec.name })));
  return text;
}

const FAMILIES: Family[] = [
  ['flow_info', 'A configured MXL flow and where it is bound; always 1.', 'gauge', 'plan', (views) =>
    views.flatMap((v) => (v.plan?.flows ?? []).map(({ binding: b }) => ({
      labels: {
        flow_id: b.flow.id, label: b.flow.label, media_type: b.flow.mediaType, format: b.flow.format, device: b.device,
        port: String(b.port), direction: b.direction, provider: b.provider.name, origin: b.origin,
      },
      value: 1,
    })))],
  ['flow_predicted_bytes_per_second', "The model's bytes per second for one flow, per layer (media, payload, l3, l2, wire).", 'gauge', 'plan', (views) =>
    views.flatMap((v) => (v.plan?.flows ?? []).flatMap(({ binding: b, prediction: p }) => p ? LAYERS.map((layer) => ({
      labels: { flow_id: b.flow.id, device: b.device, port: String(b.port), direction: b.direction, layer },
      value: toNumber(p.bytesPerSecond[layer]),
    })) : []))],
  ['flow_predicted_packets_per_second', "The model's packets per second for one flow.", 'gauge', 'plan', (views) =>
    views.flatMap((v) => (v.plan?.flows ?? []).flatMap(({ binding: b, prediction: p }) => p ? [{
      labels: { flow_id: b.flow.id, device: b.device, port: String(b.port), direction: b.direction },
      value: toNumber(p.packetsPerSecond),
    }] : []))],
  ['port_predicted_bytes_per_second', 'Sum of the predictions of the flows that count now on a port and direction (expected or live), plus the ACKs of those bound the other way, per layer.', 'gauge', 'tick', (views) =>
    views.flatMap((v) => v.directions.flatMap((d) => {
      const t = d.predicted;
      return t ? LAYERS.map((layer) => ({ labels: { ...portLabels(v), direction: d.direction, layer }, value: t.bytesPerSecond[layer] })) : [];
    }))],
  ['port_predicted_packets_per_second', 'Sum of the predicted packets per second of the flows that count now on a port and direction (expected or live), plus the ACKs of those bound the other way.', 'gauge', 'tick', (views) =>
    views.flatMap((v) => v.directions.flatMap((d) => {
      const t = d.predicted;
      return t ? [{ labels: { ...portLabels(v), direction: d.direction }, value: t.packetsPerSecond }] : [];
    }))],
  ['port_measured_bytes_per_second', "Bytes per second from a port's counters over the sampling window, by source and comparable layer.", 'gauge', 'tick', (views) =>
    views.flatMap((v) => v.directions.flatMap((d) => firstPer(d.bytes, (m) => `${m.source} ${m.layer}`).map((m) => ({
      labels: { ...portLabels(v), direction: d.direction, source: m.source, layer: m.layer ?? 'unknown' }, value: m.rate,
    }))))],
  ['port_measured_packets_per_second', "Packets per second from a port's counters over the sampling window, by source.", 'gauge', 'tick', (views) =>
    views.flatMap((v) => v.directions.flatMap((d) => firstPer(d.packets, (m) => m.source).map((m) => ({
      labels: { ...portLabels(v), direction: d.direction, source: m.source }, value: m.rate,
    }))))],
  ['port_drift_ratio', 'measured / predicted - 1 at the matching layer, from the preferred source; absent when nothing is predicted or measured.', 'gauge', 'tick', (views) =>
    views.flatMap((v) => v.directions.flatMap((d) => d.drift.map((x) => ({
      labels: { ...portLabels(v), direction: d.direction, quantity: x.quantity }, value: x.ratio,
    }))))],
  ...(['tx', 'rx'] as const).flatMap((direction) => (['bytes', 'packets'] as const).map((quantity): Family => [
    `port_${direction === 'tx' ? 'transmitted' : 'received'}_${quantity}_total`,
    `${quantity === 'bytes' ? 'Bytes' : 'Packets'} ${direction === 'tx' ? 'transmitted' : 'received'} by a port, per source (32-bit wraps unwrapped, resets absorbed).`,
    'counter',
    'tick',
    (views) => views.flatMap((v) => (v.sampled?.counters ?? []).flatMap((c) => {
      const m = c.series.spec.meaning;
      if (!m || m.direction !== direction || m.quantity !== quantity || c.series.total === undefined) return [];
      return [{ labels: counterLabels(v, c), value: Number(c.series.total) * m.scale }];
    })),
  ])),
  ['port_stat_total', "Every counter a port's sources expose, by its driver name (raw units, 32-bit wraps unwrapped).", 'counter', 'tick', (views) =>
    views.flatMap((v) => (v.sampled?.counters ?? []).flatMap((c) => c.series.total === undefined ? [] : [{
      labels: counterLabels(v, c), value: Number(c.series.total),
    }]))],
  ['port_stat_up', 'Whether the last read of a counter succeeded (1) or failed (0).', 'gauge', 'tick', (views) =>
    views.flatMap((v) => (v.sampled?.counters ?? []).map((c) => ({
      labels: counterLabels(v, c), value: c.series.state === 'error' ? 0 : 1,
    })))],
  ['port_stat_saturated', 'Whether a 32-bit PMA counter is stuck at all ones (its rate is then unknown).', 'gauge', 'tick', (views) =>
    views.flatMap((v) => (v.sampled?.counters ?? []).filter((c) => c.series.spec.overflow === 'saturate').map((c) => ({
      labels: counterLabels(v, c), value: c.series.state === 'saturated' ? 1 : 0,
    })))],
  ['port_info', 'A port the host has, with its netdev, link layer and state; always 1.', 'gauge', 'tick', (views) =>
    views.flatMap((v) => v.sampled ? [{
      labels: { ...portLabels(v), netdev: v.sampled.attrs.netdev ?? '', link_layer: v.sampled.attrs.linkLayer, state: v.sampled.attrs.state, attributes_source: v.sampled.attrs.attributeSource },
      value: 1,
    }] : [])],
  ['port_up', 'Whether the port is ACTIVE (1); 0 when down or when a configured port is missing.', 'gauge', 'tick', (views) =>
    views.map((v) => ({ labels: portLabels(v), value: v.sampled?.attrs.state === 'ACTIVE' ? 1 : 0 }))],
  ['port_active_mtu_bytes', "The port's active IB MTU: RDMA payload bytes per packet.", 'gauge', 'tick', (views) =>
    views.flatMap((v) => v.sampled?.attrs.activeIbMtu !== undefined ? [{ labels: portLabels(v), value: v.sampled.attrs.activeIbMtu }] : [])],
  ['port_model_mtu_bytes', 'The L3 MTU the model uses for the port (configured, or active IB MTU + profile overhead).', 'gauge', 'plan', (views) =>
    views.flatMap((v) => v.plan?.mtu ? [{ labels: { ...portLabels(v), from: v.plan.mtuFrom }, value: v.plan.mtu.kind === 'l3' ? v.plan.mtu.bytes : v.plan.mtu.bytes + v.plan.port.provider.mtuOverheadBytes }] : [])],
  ['port_model_payload_bytes_per_packet', 'RDMA payload bytes per packet the model assumes for the port (L3 MTU - the profile\'s mtuOverheadBytes).', 'gauge', 'plan', (views) =>
    views.flatMap((v) => v.plan?.mtu ? [{ labels: portLabels(v), value: v.plan.mtu.kind === 'ib' ? v.plan.mtu.bytes : v.plan.mtu.bytes - v.plan.port.provider.mtuOverheadBytes }] : [])],
  ['port_capacity_bytes_per_second', 'Link capacity in bytes per second (configured, or the port rate).', 'gauge', 'tick', (views) =>
    views.flatMap((v) => {
      const cap = v.plan?.capacityBytesPerSecond ?? (v.sampled?.attrs.rateBitsPerSecond !== undefined ? v.sampled.attrs.rateBitsPerSecond / 8 : undefined);
      return cap !== undefined ? [{ labels: portLabels(v), value: cap }] : [];
    })],
  ['port_predicted_utilization_ratio', 'Provisioned wire bytes per second (every flow bound there) / capacity, per direction.', 'gauge', 'plan', (views) =>
    views.flatMap((v) => v.directions.flatMap((d) => {
      const t = v.plan?.totals[d.direction];
      const cap = v.plan?.capacityBytesPerSecond;
      return t && cap ? [{ labels: { ...portLabels(v), direction: d.direction }, value: t.bytesPerSecond.wire / cap }] : [];
    }))],
  ['port_headroom_ratio', 'Configured share of capacity the predicted wire rate may use.', 'gauge', 'plan', (views) =>
    views.flatMap((v) => v.plan ? [{ labels: portLabels(v), value: v.plan.port.headroom }] : [])],
  ['flow_measured_grains_per_second', "Grains per second a flow's writer commits, from headIndex in its MXL domain over the window.", 'gauge', 'tick', (_v, _s, flows) =>
    flows.flatMap((f) => f.measurement ? [{ labels: { flow_id: f.flowId, domain: f.domain }, value: f.measurement.grainsPerSecond }] : [])],
  ['flow_measured_bytes_per_second', 'Media bytes per second a flow\'s writer commits (layer media: the essence, no MXL headers).', 'gauge', 'tick', (_v, _s, flows) =>
    flows.flatMap((f) => f.measurement ? [{ labels: { flow_id: f.flowId, domain: f.domain, layer: 'media' }, value: f.measurement.mediaBytesPerSecond }] : [])],
  ['flow_drift_ratio', 'Measured / predicted grains per second - 1 for a flow found in an MXL domain.', 'gauge', 'tick', (_v, _s, flows) =>
    flows.flatMap((f) => f.measurement && f.measurement.predictedGrainsPerSecond > 0
      ? [{ labels: { flow_id: f.flowId, domain: f.domain, quantity: 'grains' }, value: f.measurement.grainsPerSecond / f.measurement.predictedGrainsPerSecond - 1 }] : [])],
  ['flow_writer_active', 'Whether a writer holds the flow (MXL\'s own test: a non-blocking exclusive flock on data fails).', 'gauge', 'tick', (_v, _s, flows) =>
    flows.flatMap((f) => f.writerActive === undefined ? [] : [{ labels: { flow_id: f.flowId, domain: f.domain }, value: f.writerActive ? 1 : 0 }])],
  ['flow_last_write_age_seconds', 'Seconds since the flow\'s last write (video, data: lastWriteTime, TAI; audio: since headIndex was seen to move).', 'gauge', 'tick', (_v, _s, flows) =>
    flows.flatMap((f) => f.lastWriteAgeSeconds === undefined ? [] : [{ labels: { flow_id: f.flowId, domain: f.domain }, value: f.lastWriteAgeSeconds }])],
  ['domain_flow_definition_valid', 'Whether a flow folder in an MXL domain has a usable flow_def.json (0: see the log).', 'gauge', 'tick', (_v, _s, flows) =>
    flows.map((f) => ({ labels: { domain: f.domain, flow_id: f.flowId }, value: f.definitionValid ? 1 : 0 }))],
  ['drift_tolerance_ratio', 'Configured drift tolerance: |drift| above it is model drift.', 'gauge', 'plan', (_views, state) =>
    [{ labels: {}, value: state.config.driftTolerance }]],
  ['exporter_rdma_ports', 'RDMA ports found on the host at the last sample.', 'gauge', 'tick', (_views, state) =>
    [{ labels: {}, value: state.sampler?.ports.size ?? 0 }]],
  ['exporter_read_errors_total', 'Counter reads that failed, per port and source.', 'counter', 'tick', (_views, state) =>
    [...(state.sampler?.readErrors ?? new Map<string, number>())].map(([k, n]) => {
      const [device, port, source] = k.split('\0');
      return { labels: { device: device!, port: port!, source: source! }, value: n };
    })],
  ['exporter_read_timeouts_total', 'Reads (of a port, or an MXL domain) that blocked past the read timeout and were given up.', 'counter', 'tick', (_views, state) =>
    state.sampler ? [{ labels: {}, value: state.sampler.reader.timeouts }] : []],
  ['exporter_blocked_reader_threads', 'Reader threads still inside a read that blocked (given up; at most 4 threads exist, and reads pause when all are blocked).', 'gauge', 'tick', (_views, state) =>
    state.sampler ? [{ labels: {}, value: state.sampler.reader.blockedThreads }] : []],
  ['exporter_reader_threads_lost_total', 'Reader threads that died and were replaced (no port is blamed for it).', 'counter', 'tick', (_views, state) =>
    state.sampler ? [{ labels: {}, value: state.sampler.reader.threadsLost }] : []],
  ['exporter_reads_bounded', 'Whether reads run on the native reader threads with a timeout (1), or on the event loop without one because libmfe-reader is missing (0).', 'gauge', 'tick', (_views, state) =>
    state.sampler ? [{ labels: {}, value: state.sampler.reader.mode === 'native' ? 1 : 0 }] : []],
  ['exporter_sample_duration_seconds', 'How long the last sampling tick took.', 'gauge', 'tick', (_views, state) =>
    state.sampler ? [{ labels: {}, value: state.sampler.lastTickSeconds }] : []],
  ...(['packets', 'bytes'] as const).map((quantity): Family => [
    `flow_predicted_ack_${quantity}_per_second`,
    `The model's acknowledgement ${quantity} per second a flow's RDMA writes draw, on the opposite direction of its port${quantity === 'bytes' ? ', per layer' : ''}.`,
    'gauge',
    'plan',
    (views) => views.flatMap((v) => (v.plan?.flows ?? []).flatMap(({ binding: b, prediction: p }) => {
      if (!p || p.reverse.packetsPerSecond.num === 0n) return [];
      const labels = { flow_id: b.flow.id, device: b.device, port: String(b.port), direction: b.direction === 'tx' ? 'rx' : 'tx' };
      return quantity === 'packets'
        ? [{ labels, value: toNumber(p.reverse.packetsPerSecond) }]
        : ACK_LAYERS.map((layer) => ({ labels: { ...labels, layer }, value: toNumber(p.reverse.bytesPerSecond[layer]) }));
    })),
  ]),
  ...FLOW_TRUTH_FAMILIES,
  ...FABRIC_HEALTH_FAMILIES.map(([name, help, type, read]): Family => [name, help, type, 'tick', (views, state) => read(views, state)]),
];

function firstPer<T>(items: readonly T[], key: (t: T) => string): T[] {
  const seen = new Set<string>();
  return items.filter((t) => (seen.has(key(t)) ? false : (seen.add(key(t)), true)));
}
