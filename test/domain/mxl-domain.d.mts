/** Types of mxl-domain.mjs (MXL domains in the exact on-disk format, for tests). */
export interface HeaderFields {
  readonly id: string;
  /** mxlDataFormat: 1 video, 2 audio, 3 data. */
  readonly format: 1 | 2 | 3;
  readonly rate: [bigint, bigint];
  readonly grainCount?: number;
  readonly channelCount?: number;
  readonly headIndex?: bigint;
  readonly lastWriteTime?: bigint;
}

export function flowHeader(h: HeaderFields): Buffer;
export function makeDomain(): string;
/** Writes a flow the way MXL does: build under .mxl-tmp-*, then rename into place; returns its folder. */
export function addFlow(domain: string, flowDef: Record<string, unknown> | string, header: HeaderFields): string;
/** Rewrites the runtime block in place, as a writer's commit does. */
export function commit(dir: string, headIndex: bigint, lastWriteTime: bigint): void;
