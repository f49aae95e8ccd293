// The transfer model reads an audio flow's ring length from its header (flowinfo.h,
// mxlContinuousFlowConfigInfo.bufferLength at byte 140) and the sync batch
// (maxSyncBatchSizeHint at 52) when the flow is in a domain.
import { describe, it, expect } from 'vitest';
import { decodeFlowInfo } from '../../src/domain/flowinfo.js';

function header(format: number, bufferLength: number): Uint8Array {
  const b = Buffer.alloc(2048);
  b.writeUInt32LE(1, 0);
  b.writeUInt32LE(2048, 4);
  b.writeUInt32LE(format, 24);
  b.writeBigInt64LE(48000n, 32);
  b.writeBigInt64LE(1n, 40);
  b.writeUInt32LE(480, 52);
  b.writeUInt32LE(8, 136);
  b.writeUInt32LE(bufferLength, 140);
  return b;
}

describe('flow header ring length', () => {
  it('is read for audio flows and not for video', () => {
    expect(decodeFlowInfo(header(2, 19_456))).toMatchObject({ channelCount: 8, bufferLength: 19_456, syncBatchSize: 480 });
    expect(decodeFlowInfo(header(1, 19_456)).bufferLength).toBeUndefined();
  });
});
