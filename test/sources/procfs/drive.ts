/**
 * Runs a read program by hand, op by op, through the direct executor (src/reads/direct.ts),
 * so a test can change the fixture tree between two reads of one round (a process exiting
 * while its files are read) or between rounds, or answer an op with an errno the fixture
 * cannot produce as root (EACCES on another user's maps: root passes every ptrace check).
 */
import { type Op, OpBatch, Results, layoutOutput, outputBuffer } from '../../../src/reads/ops.js';
import { runDirect } from '../../../src/reads/direct.js';
import type { ReadProgram } from '../../../src/reads/program.js';

export interface Drive {
  /** Called before each op runs; `round` counts from 0. */
  readonly beforeOp?: (op: Op, round: number) => void;
  /** A -errno to answer `op` with instead of running it. */
  readonly status?: (op: Op) => number | undefined;
}

export interface Driven<T> {
  readonly value: T;
  /** The ops of each round, in order. */
  readonly rounds: Op[][];
}

export function runDriven<T>(program: ReadProgram<T>, drive: Drive = {}): Driven<T> {
  const rounds: Op[][] = [];
  let step = program.next();
  while (!step.done) {
    rounds.push([...step.value.ops]);
    step = program.next(runOps(step.value, drive, rounds.length - 1));
  }
  return { value: step.value, rounds };
}

/** The batch's ops one at a time, their results laid out as one request's (ops.ts). */
function runOps(batch: OpBatch, drive: Drive, round: number): Results {
  const out = outputBuffer(batch.outputBytes);
  layoutOutput(batch.ops, out);
  const results = new Results(out, batch.length);
  const words = new Int32Array(out.buffer, out.byteOffset, batch.length * 4);
  batch.ops.forEach((op, i) => {
    drive.beforeOp?.(op, round);
    const forced = drive.status?.(op);
    const one = forced === undefined ? runDirect(new OpBatch([op])) : undefined;
    const status = forced ?? one!.status(0);
    words[i * 4] = status;
    words[i * 4 + 1] = status < 0 ? -1 : 0;
    if (one && status >= 0) words[i * 4 + 3] = one.bytes(0).copy(out, results.start(i));
  });
  return results;
}

/** The path an op reads, for hooks that match on it. */
export const pathOf = (op: Op): string | undefined => ('path' in op ? op.path : undefined);
