/**
 * The exposition text of the families that change together, formatted in slices with the event
 * loop turning between them: 10,000 flows are 60,000 series, far too many for one go.
 */
import { TimeSlices } from '../event-loop.js';
import { familyHeader, formatSamples } from './exposition.js';
import { type Changes, type Family, PREFIX } from './family.js';
import { TextChunks } from './text-chunks.js';
import type { ExporterState, FlowMeasurementView, PortView } from './view.js';

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

/** The text of those of `families` that change with `changes`, in their order. */
export async function formatText(
  families: readonly Family[], changes: Changes, views: readonly PortView[], state: ExporterState, flows: readonly FlowMeasurementView[],
): Promise<Buffer[]> {
  // Kept as bytes chunk by chunk: one 10 MB string would be flattened and copied at the end,
  // in one go, and its pieces would crowd V8's young generation meanwhile.
  const text = new TextChunks(TEXT_CHUNK_BYTES);
  const slices = new TimeSlices(FORMAT_SLICE_MS);
  const pause = (): Promise<void> => slices.pause();
  for (const { name, help, type, changes: when, read } of families) {
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
