/** After a load: one full GC and the C heap trimmed, without leaving gc() exposed to code that runs later. */
import { describe, it, expect } from 'vitest';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { runInNewContext } from 'node:vm';
import { releaseLoadGarbage } from '../../src/exporter/memory.js';

describe('releaseLoadGarbage', () => {
  it('collects and trims (glibc), and new contexts still have no gc', async () => {
    expect(await releaseLoadGarbage()).toEqual({ gc: true, trimmed: true });
    expect(runInNewContext('typeof gc')).toBe('undefined');
    expect(await releaseLoadGarbage()).toEqual({ gc: true, trimmed: true }); // again, with the functions kept
  });
});

/** allocator-child.ts in a process of its own: glibc's thresholds are process-wide. */
function child(env: Record<string, string> = {}): { fixed: boolean; again: boolean } {
  const root = path.join(__dirname, '..', '..');
  const r = spawnSync(path.join(root, 'node_modules/.bin/vite-node'), [path.join(__dirname, 'allocator-child.ts')], {
    env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000, killSignal: 'SIGKILL',
  });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { fixed: boolean; again: boolean };
}

describe('fixAllocatorThresholds', () => {
  it('sets glibc\'s mmap and trim thresholds once (mallopt answers 1); an operator\'s setting stands', () => {
    expect(child()).toEqual({ fixed: true, again: true });
    expect(child({ MALLOC_MMAP_THRESHOLD_: '4194304' })).toEqual({ fixed: false, again: false });
    expect(child({ GLIBC_TUNABLES: 'glibc.malloc.trim_threshold=4194304' })).toEqual({ fixed: false, again: false });
  });
});
