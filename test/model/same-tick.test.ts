/** Counts read together (src/model/same-tick.ts): the window's two ends and the deltas between them. */
import { describe, expect, it } from 'vitest';
import { PortTotalsByRead, type PortTotals, SameTickWindow, type Snapshot, connectionDelta, countedBetween, headDelta, headKey, portDelta } from '../../src/model/same-tick.js';

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

describe('PortTotalsByRead (issue 33: reads late by the clock)', () => {
  const at = (tx: number | undefined, rx: number | undefined, unbroken?: number): ReadonlyMap<string, PortTotals> =>
    new Map([['rxe0/1', { tx, rx, ...(unbroken === undefined ? {} : { unbroken }) }]]);

  it('counts what the port counted since a read it remembers, in the direction that counted more', () => {
    const h = new PortTotalsByRead(2);
    h.remember(1000, at(100, 50, 0));
    expect(h.countedSince('rxe0/1', 1000, at(400, 1050, 0))).toBe(1000);
    expect(h.countedSince('rxe0/2', 1000, at(400, 1050, 0))).toBeUndefined();
    h.remember(2000, at(400, 1050, 0));
    h.remember(3000, at(500, 1100, 0));
    // Kept: the last two reads only.
    expect(h.countedSince('rxe0/1', 1000, at(600, 1200, 0))).toBeUndefined();
    expect(h.countedSince('rxe0/1', 2000, at(600, 1200, 0))).toBe(200);
  });

  it('cannot say across a counter reset, a read that failed, or a direction not counted', () => {
    expect(countedBetween({ tx: 1, rx: 1, unbroken: 0 }, { tx: 9, rx: 9, unbroken: 1 })).toBeUndefined();
    expect(countedBetween({ tx: 1, rx: 1, unbroken: 0 }, { tx: 9, rx: 9 })).toBeUndefined();
    expect(countedBetween({ tx: 1, rx: 1 }, { tx: 9, rx: 9 })).toBeUndefined();
    expect(countedBetween({ tx: 1, rx: undefined, unbroken: 0 }, { tx: 9, rx: undefined, unbroken: 0 })).toBeUndefined();
    expect(countedBetween({ tx: 1, rx: 2, unbroken: 3 }, { tx: 9, rx: 4, unbroken: 3 })).toBe(8);
  });
});
