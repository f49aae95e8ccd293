/**
 * Loading a config as steps, so one loader serves both callers: the CLI and tests run it to the
 * end at once (runSteps), the daemon runs it beside the event loop (runStepsAsync): its reads go
 * to the bounded reader, and at every PAUSE the loop gets a turn once the current slice of work
 * has taken SLICE_MS, so a 10,000-flow reload never stalls scrapes or /-/healthy for long.
 */
import { TimeSlices } from '../event-loop.js';
import type { BoundedReads } from '../reads/bounded.js';
import { type ReadProgram, runSync } from '../reads/program.js';
import { readErrorText } from '../reads/errors.js';

export const PAUSE = Symbol('pause');

/** A read program to run (its value comes back), or a chance to let the event loop turn. */
type LoadStep = ReadProgram<unknown> | typeof PAUSE;
export type Steps<T> = Generator<LoadStep, T, unknown>;

/** Longest run of loading work between two turns of the event loop. */
const SLICE_MS = 10;

/** The value `program` gives, as a step. */
export function* step<T>(program: ReadProgram<T>): Steps<T> {
  return (yield program) as T;
}

/** A generator that yields between slices of work, as steps. */
export function* pausing<T>(g: Generator<void, T, void>): Steps<T> {
  let s = g.next();
  while (!s.done) {
    yield PAUSE;
    s = g.next();
  }
  return s.value;
}

export function runSteps<T>(steps: Steps<T>): T {
  let s = steps.next();
  while (!s.done) s = steps.next(s.value === PAUSE ? undefined : runSync(s.value));
  return s.value;
}

/** A read the bounded reader could not do (it blocked, or every reader thread is stuck). */
class LoadReadError extends Error {
  override readonly name = 'LoadReadError';
}

export async function runStepsAsync<T>(steps: Steps<T>, reader: BoundedReads | undefined): Promise<T> {
  const slices = new TimeSlices(SLICE_MS);
  let s = steps.next();
  while (!s.done) {
    if (s.value === PAUSE) {
      await slices.pause();
      s = steps.next(undefined);
      continue;
    }
    if (!reader) {
      s = steps.next(runSync(s.value));
      continue;
    }
    const [outcome] = await reader.run([{ group: 'config', program: s.value }]);
    slices.restart();
    if (outcome?.kind === 'done') s = steps.next(outcome.value);
    else if (outcome?.kind === 'failed') s = steps.throw(new Error(readErrorText(outcome.error)));
    else s = steps.throw(new LoadReadError(outcome && 'error' in outcome ? readErrorText(outcome.error) : 'reading the config was deferred'));
  }
  return s.value;
}
