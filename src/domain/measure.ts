/** A domain flow's measured grain and media rates, from its headIndex over the window. Pure. */
import { grainOf, toNumber, type Rational } from '../model/index.js';
import { type FlowDefinition, mediaOf } from '../flows/definition.js';

export interface FlowMeasurement {
  readonly grainsPerSecond: number;
  readonly mediaBytesPerSecond: number;
  readonly predictedGrainsPerSecond: number;
}

/**
 * headIndex counts grains for video and data and samples for audio (flowinfo.h,
 * mxlFlowRuntimeInfo), so audio converts through the binding's grain duration.
 */
export function measureFlow(def: FlowDefinition, grainDuration: Rational, headIndexPerSecond: number): FlowMeasurement {
  const grain = grainOf(mediaOf(def, grainDuration));
  const predictedGrainsPerSecond = toNumber(grain.rate);
  if (def.media.format === 'audio') {
    const samplesPerGrain = Number(grain.linesOrSamples);
    return {
      grainsPerSecond: headIndexPerSecond / samplesPerGrain,
      mediaBytesPerSecond: headIndexPerSecond * def.media.channels * (def.media.bitDepth / 8),
      predictedGrainsPerSecond,
    };
  }
  return { grainsPerSecond: headIndexPerSecond, mediaBytesPerSecond: headIndexPerSecond * Number(grain.payloadBytes), predictedGrainsPerSecond };
}
