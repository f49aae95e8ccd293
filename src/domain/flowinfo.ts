/**
 * The 2048-byte header in each flow's `data` file (mxlFlowInfo), decoded.
 * Layout: dmf-mxl/mxl lib/include/mxl/flowinfo.h (version 1):
 *   0 version u32, 4 size u32, 8 mxlCommonFlowConfigInfo (id[16] @8, format u32 @24,
 *   grainRate {i64 numerator @32, i64 denominator @40}, maxCommitBatchSizeHint u32 @48,
 *   maxSyncBatchSizeHint u32 @52), 136 discrete {sliceSizes[4],
 *   grainCount @152} | continuous {channelCount @136, bufferLength @140},
 *   200 mxlFlowRuntimeInfo {headIndex u64 @200, lastWriteTime @208, lastReadTime @216} (TAI ns).
 * mxlDataFormat (lib/include/mxl/dataformat.h): 0 unspecified, 1 video, 2 audio, 3 data, 4 mux.
 */
import { type Rational, rational } from '../model/index.js';

const FLOW_INFO_SIZE = 2048;
const FLOW_INFO_VERSION = 1;
/** Bytes from the start that hold everything read here (through the runtime block). */
export const FLOW_INFO_READ_BYTES = 224;
const RUNTIME_OFFSET = 200;

const MXL_FORMATS = ['unspecified', 'video', 'audio', 'data', 'mux'] as const;
type MxlFormat = (typeof MXL_FORMATS)[number] | 'unknown';

interface FlowRuntime {
  /** Grain index (video, data) or sample index (audio) of the last commit. */
  readonly headIndex: bigint;
  /** TAI nanoseconds since the SMPTE ST 2059 epoch. */
  readonly lastWriteTime: bigint;
  readonly lastReadTime: bigint;
}

export interface FlowInfo extends FlowRuntime {
  readonly version: number;
  readonly size: number;
  readonly id: string;
  readonly format: MxlFormat;
  /** Grain rate (video, data) or sample rate (audio); undefined when not positive. */
  readonly rate: Rational | undefined;
  readonly grainCount: number | undefined;
  readonly channelCount: number | undefined;
  /** Audio: samples per channel in the ring (the transfer model's wrap rate depends on it). */
  readonly bufferLength: number | undefined;
  /** maxSyncBatchSizeHint: slices (video, data) or samples (audio) a reader is woken for. */
  readonly syncBatchSize: number;
}

export class FlowInfoError extends Error {
  override readonly name = 'FlowInfoError';
}

const uuid = (b: Uint8Array): string => {
  const h = Buffer.from(b).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
};

function decodeRuntime(buf: Uint8Array, offset = RUNTIME_OFFSET): FlowRuntime {
  const v = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  return {
    headIndex: v.getBigUint64(offset, true),
    lastWriteTime: v.getBigUint64(offset + 8, true),
    lastReadTime: v.getBigUint64(offset + 16, true),
  };
}

export function decodeFlowInfo(buf: Uint8Array): FlowInfo {
  if (buf.byteLength < FLOW_INFO_READ_BYTES) throw new FlowInfoError(`flow header has ${buf.byteLength} bytes, expected ${FLOW_INFO_SIZE}`);
  const v = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const version = v.getUint32(0, true);
  const size = v.getUint32(4, true);
  if (version !== FLOW_INFO_VERSION) throw new FlowInfoError(`flow header version ${version} is not supported (expected ${FLOW_INFO_VERSION})`);
  if (size !== FLOW_INFO_SIZE) throw new FlowInfoError(`flow header says size ${size}, expected ${FLOW_INFO_SIZE}`);
  const format: MxlFormat = MXL_FORMATS[v.getUint32(24, true)] ?? 'unknown';
  const num = v.getBigInt64(32, true);
  const den = v.getBigInt64(40, true);
  const discrete = format === 'video' || format === 'data';
  return {
    version, size, id: uuid(buf.subarray(8, 24)), format,
    rate: num > 0n && den > 0n ? rational(num, den) : undefined,
    grainCount: discrete ? v.getUint32(152, true) : undefined,
    channelCount: format === 'audio' ? v.getUint32(136, true) : undefined,
    bufferLength: format === 'audio' ? v.getUint32(140, true) : undefined,
    syncBatchSize: v.getUint32(52, true),
    ...decodeRuntime(buf),
  };
}
