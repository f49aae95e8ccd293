/** Counts read together (src/model/same-tick.ts): the window's two ends and the deltas between them. */
import { describe, expect, it } from 'vitest';
import { SameTickWindow, type Snapshot, connectionDelta, headDelta, headKey, portDelta } from '../../src/model/same-tick.js';

const snap = (atMs: number, sent: Record<string, number>, port: number | undefined, head?: number): Snapshot => ({
  atMs,
  connections: new Map(Object.entries(sent).map(([k, v]) => [k, { sent: v, received: 0 }])),
  readings: { ports: new Map([['rxe0/1', { tx: port, rx: undefined }]]), heads: new Map(head === undefined ? [] : [[headKey('/d', 'f'), head]]) },
});

describe('SameTickWindow', () => {
  it('spans the oldest and newest snapshot within the window; nothing until there are two', () => {
    const w = new SameTickWindow();
    w.push(snap(0, {}, 0), 2000);
    expect(w.span()).toBeUndefined();
    w.push(snap(1000, {}, 10), 2000);
    w.push(snap(2000, {}, 20), 2000);
    w.push(snap(3000, {}, 30), 2000);
    expect([w.span()!.oldest.atMs, w.span()!.newest.atMs]).toEqual([1000, 3000]);
    // A clock that went back (a new monitor's time) leaves only what is before the newest.
    w.push(snap(2500, {}, 40), 2000);
    expect([w.span()!.oldest.atMs, w.span()!.newest.atMs]).toEqual([1000, 2500]);
  });

  it('deltas: a connection first seen in the window counts from its baseline; one not in the newest counts nothing', () => {
    const a = snap(0, { old: 100, gone: 5 }, 1000, 7);
    const b = snap(1000, { old: 350, fresh: 40 }, 1290, 13);
    expect(connectionDelta(a, b, 'old', 'tx')).toBe(250);
    expect(connectionDelta(a, b, 'fresh', 'tx')).toBe(40);
    expect(connectionDelta(a, b, 'gone', 'tx')).toBeUndefined();
    expect(connectionDelta(a, b, 'old', 'rx')).toBe(0);
    expect(portDelta(a, b, 'rxe0/1', 'tx')).toBe(290);
    expect(portDelta(a, b, 'rxe0/1', 'rx')).toBeUndefined();
    expect(headDelta(a, b, '/d', 'f')).toBe(6);
    expect(headDelta(a, snap(1000, {}, 0), '/d', 'f')).toBeUndefined();
  });
});
