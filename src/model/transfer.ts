/**
 * The RDMA writes MXL fabrics issues per grain (video, data) or per audio batch, as data. Pure.
 * Every rule cites MXL's source (dmf-mxl/mxl at c2661a91; `ofi/` = lib/fabrics/ofi/src/internal/).
 */
import { type MediaFlow, type Grain, v210LineBytes, alphaLineBytes, DATA_GRAIN_BYTES } from './media.js';
import type { ProviderProfile } from './provider.js';

/** One RDMA WRITE (fi_writemsg): the bytes its scatter-gather list carries, and whether it carries immediate data. */
export interface RdmaWrite {
  readonly bytes: bigint;
  readonly immediate: boolean;
  /** Scatter-gather entries in the write (audio); 1 for a grain region. */
  readonly entries: number;
}

/** Per-flow facts that change the writes, from the flow's header in a domain or defaults. */
export interface TransferOptions {
  /** Audio: samples per channel in the ring (mxlContinuousFlowConfigInfo.bufferLength). */
  readonly ringLengthSamples?: bigint;
  /** Audio: any head index a batch ends at, which fixes the batch phase in the ring. */
  readonly batchEndIndex?: bigint;
  /**
   * Video and data: slices (lines; bytes for data) sent per write batch, MXL's
   * maxSyncBatchSizeHint as mxl-fabrics-demo uses it (demo.cpp:405-418). Undefined or at least
   * the grain's slices: whole grains.
   */
  readonly slicesPerBatch?: number;
}

/** One plane of a discrete grain: `slices` slices of `sliceBytes` (flowinfo.h, sliceSizes). */
interface Plane {
  readonly sliceBytes: bigint;
  readonly slices: bigint;
}

/** Planes per MXL's FlowParser::getPayloadSliceLengths / getTotalPayloadSlices. */
function planesOf(media: Exclude<MediaFlow, { format: 'audio' }>, grain: Grain): Plane[] {
  if (media.format === 'data') return [{ sliceBytes: 1n, slices: DATA_GRAIN_BYTES }];
  const lines = grain.linesOrSamples!;
  const planes = [{ sliceBytes: v210LineBytes(media.width), slices: lines }];
  if (media.mediaType === 'video/v210a') planes.push({ sliceBytes: alphaLineBytes(media.width), slices: lines });
  return planes;
}

/**
 * A video or data grain. Whole grain: one write of header + payload with immediate
 * (ofi/ProtocolEgressRMA.cpp:35-39, region = 8192-byte header + grain, ofi/Region.cpp:175-178).
 * In slice batches: per batch one write per plane, the header only with the batch at slice 0,
 * immediate only on the last plane's write (ProtocolEgressRMA.cpp:42-77).
 */
export function grainWrites(media: Exclude<MediaFlow, { format: 'audio' }>, grain: Grain, profile: ProviderProfile, opts: TransferOptions = {}): RdmaWrite[] {
  const header = BigInt(profile.grainHeaderBytes[media.format]);
  const planes = planesOf(media, grain);
  const total = planes[0]!.slices;
  const batch = opts.slicesPerBatch === undefined || opts.slicesPerBatch <= 0 ? total : BigInt(opts.slicesPerBatch);
  if (batch >= total) return [{ bytes: header + grain.payloadBytes, immediate: true, entries: 1 }];
  const writes: RdmaWrite[] = [];
  for (let start = 0n; start < total; start += batch) {
    const slices = start + batch > total ? total - start : batch;
    planes.forEach((plane, i) => {
      const bytes = slices * plane.sliceBytes + (i === 0 && start === 0n ? header : 0n);
      writes.push({ bytes, immediate: i === planes.length - 1, entries: 1 });
    });
  }
  return writes;
}

/**
 * An audio batch: one header entry (16-byte AudioEntryHeader, ofi/ProtocolEgressRMA.cpp:194-198)
 * then, channel by channel, one entry per ring fragment: `split` samples before the ring's end
 * and the rest from its start when the batch wraps (ProtocolEgressRMA.cpp:237-260). The list goes
 * out in writes of at most txIovLimit entries, immediate data on the last
 * (ofi/Endpoint.cpp:356-392). A profile without an audio header has no header entry.
 */
export function audioBatchWrites(channels: number, samples: bigint, sampleBytes: bigint, profile: ProviderProfile, split?: bigint): RdmaWrite[] {
  const entries: bigint[] = profile.grainHeaderBytes.audio > 0 ? [BigInt(profile.grainHeaderBytes.audio)] : [];
  for (let c = 0; c < channels; c++) {
    if (split !== undefined && split > 0n && split < samples) entries.push(split * sampleBytes, (samples - split) * sampleBytes);
    else entries.push(samples * sampleBytes);
  }
  const limit = profile.txIovLimit > 0 ? profile.txIovLimit : entries.length;
  const writes: RdmaWrite[] = [];
  for (let i = 0; i < entries.length; i += limit) {
    const part = entries.slice(i, i + limit);
    writes.push({ bytes: part.reduce((a, b) => a + b, 0n), immediate: i + limit >= entries.length, entries: part.length });
  }
  return writes;
}
