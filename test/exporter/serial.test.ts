import { describe, expect, it } from 'vitest';
import { CoalescingRun } from '../../src/serial.js';

/** A task whose runs are settled by hand: each run is one entry of `runs`. */
function manualTask(): { task: () => Promise<number>; runs: { resolve: (v: number) => void; reject: (e: Error) => void }[] } {
  const runs: { resolve: (v: number) => void; reject: (e: Error) => void }[] = [];
  const task = (): Promise<number> => new Promise<number>((resolve, reject) => { runs.push({ resolve, reject }); });
  return { task, runs };
}

const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('CoalescingRun', () => {
  it('a request made while a run is going gets one more run after it; those made meanwhile share it', async () => {
    const { task, runs } = manualTask();
    const c = new CoalescingRun(task);
    const a = c.request();
    const b = c.request();
    const b2 = c.request();
    expect(b2).toBe(b);
    expect(runs).toHaveLength(1);
    runs[0]!.resolve(1);
    expect(await a).toBe(1);
    await settle();
    expect(runs).toHaveLength(2);
    runs[1]!.resolve(2);
    expect(await b).toBe(2);
    const later = c.request();
    expect(runs).toHaveLength(3);
    runs[2]!.resolve(3);
    expect(await later).toBe(3);
  });

  it('a run that fails does not stop the queued one, nor any later request', async () => {
    const { task, runs } = manualTask();
    const c = new CoalescingRun(task);
    const a = c.request();
    const queued = c.request();
    runs[0]!.reject(new Error('boom'));
    await expect(a).rejects.toThrow('boom');
    await settle();
    expect(runs).toHaveLength(2);
    runs[1]!.resolve(2);
    expect(await queued).toBe(2);
    const later = c.request();
    expect(later).not.toBe(queued);
    await settle();
    expect(runs).toHaveLength(3);
    runs[2]!.resolve(3);
    expect(await later).toBe(3);
  });
});
