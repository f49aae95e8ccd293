/** Helpers for fault tests that prove the event loop stays free while a read hangs. */
import { expect } from 'vitest';
import type { Running } from '../exporter/harness.js';

/** /-/healthy asked while `pending` runs answers before it is done: the event loop is free. */
export async function answersDuring(r: Running, pending: Promise<unknown>): Promise<boolean> {
  let done = false;
  void pending.then(() => { done = true; });
  const res = await fetch(`${r.base}/-/healthy`);
  expect(res.status).toBe(200);
  return !done;
}

/** Polls `cond` every 10 ms until it holds; throws after `ms`. */
export async function waitFor(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}
