/**
 * What one MXL domain entry says about its flow right now: live, stalled, absent or unknown,
 * and how long ago it was last written. Pure: the watcher gathers the observations.
 *
 * Evidence, from MXL's own behaviour (dmf-mxl/mxl at c2661a91, lib/internal/src):
 * - a writer holds a shared flock on `data` while it runs (SharedMemory.cpp:56-71); the
 *   non-blocking exclusive test fails then;
 * - every commit moves `headIndex` (grains for video and data, samples for audio);
 * - only the discrete (video, data) writer stamps `lastWriteTime`
 *   (PosixDiscreteFlowWriter.cpp:137); the continuous (audio) writer never does after creation
 *   (PosixContinuousFlowWriter.cpp:108-123, FlowManager.cpp:127), so audio activity and write
 *   age come from seeing `headIndex` move;
 * - a writer that exits cleanly deletes the flow folder (Instance.cpp:164-184); a killed one
 *   leaves it behind with no lock held.
 */

export type FlowState = 'live' | 'stalled' | 'absent' | 'unknown';

export interface FlowObservation {
  /** The flow's folder is in the domain's latest listing. */
  readonly present: boolean;
  /** The `data` header was read and decoded at the last sample. */
  readonly headerOk: boolean;
  /** A writer holds the flow's lock; undefined when the lock cannot be tested. */
  readonly writer: boolean | undefined;
  /** Since the sample at which `headIndex` was last seen to change; undefined: never seen moving. */
  readonly sinceHeadChangeNs: bigint | undefined;
  /** Since `lastWriteTime` (discrete flows only; undefined for audio or an unstamped header). */
  readonly sinceLastWriteNs: bigint | undefined;
  /** Since the flow was first seen by this exporter. */
  readonly sinceFirstSeenNs: bigint;
  /** Header reads so far: one reading cannot show an audio head moving. */
  readonly samples: number;
  /** Longer than this without a write is not live. */
  readonly stallAfterNs: bigint;
}

/**
 * How long a flow may go without a visible write and still be live: two sampling intervals
 * (a sample can land just before a write) or three grain periods (slow grain rates), whichever
 * is longer.
 */
export function stallAfterNs(intervalNs: bigint, grainPeriodNs: bigint | undefined): bigint {
  const byInterval = 2n * intervalNs;
  const byGrain = grainPeriodNs === undefined ? 0n : 3n * grainPeriodNs;
  return byInterval > byGrain ? byInterval : byGrain;
}

export function flowState(o: FlowObservation): FlowState {
  if (!o.present) return 'absent';
  if (!o.headerOk) return 'unknown';
  const within = (ns: bigint | undefined): boolean => ns !== undefined && ns <= o.stallAfterNs;
  if (within(o.sinceHeadChangeNs) || within(o.sinceLastWriteNs)) return 'live';
  // Nothing proves a write yet: an audio flow read once, or a discrete flow never stamped.
  if (o.samples < 2 && o.sinceHeadChangeNs === undefined && o.sinceLastWriteNs === undefined) return 'unknown';
  // Left behind by a writer that was killed: no lock, nothing moving.
  if (o.writer === false) return 'absent';
  return 'stalled';
}

/**
 * Time since the flow was last written, as well as this host can tell: `lastWriteTime` for
 * discrete flows (`sinceLastWriteNs`); for audio (and an unstamped header) the time since
 * `headIndex` was seen to move, exact to within one sampling interval, or since the flow was
 * found when it never moved.
 */
export function lastWriteAgeNs(o: FlowObservation): bigint | undefined {
  if (!o.headerOk) return undefined;
  return o.sinceLastWriteNs ?? o.sinceHeadChangeNs ?? o.sinceFirstSeenNs;
}
