/**
 * test/rxe/faults/judge.mjs on hand-made webhook records: matching by alertname and the expected
 * labels, extra, missing, unresolved and prematurely resolved pages, repeats counted once, times
 * after injection and undo, and in shipped-rule terms.
 */
import { describe, it, expect } from 'vitest';
import { buildReport, judgeFault, matches } from '../rxe/faults/judge.mjs';

const T0 = 1_700_000_000_000; // injection
const UNDO = T0 + 60_000;
const fault = {
  name: 'link-down', injection: 'ip link set veth0 down',
  pages: [{ alertname: 'MxlFabricPortDown', labels: { device: 'rxe0', port: '1' } }],
};
const down = { alertname: 'MxlFabricPortDown', device: 'rxe0', port: '1', instance: 'sender:9842', severity: 'critical' };
const rec = (atS: number, status: 'firing' | 'resolved', labels: Record<string, string>, base = T0) => ({ at: base + atS * 1000, alert: { status, labels } });

describe('judgeFault', () => {
  it('the expected page fires and clears: nothing extra, missing or unresolved; times from injection and from undo', () => {
    const e = judgeFault({ fault, injectedAt: T0, undoneAt: UNDO, records: [rec(12.5, 'firing', down), rec(70, 'resolved', down)] });
    expect(e).toMatchObject({ name: 'link-down', first_page_s: 12.5, resolved_s: 10, extra: [], missing: [], unresolved: [], premature: [] });
    expect(e.expected).toEqual(fault.pages);
    const labels = { device: 'rxe0', port: '1', instance: 'sender:9842', severity: 'critical' };
    expect(e.received).toEqual([
      { alertname: 'MxlFabricPortDown', labels, status: 'firing', s: 12.5 },
      { alertname: 'MxlFabricPortDown', labels, status: 'resolved', s: 10 },
    ]);
  });
  it('labels the expectation does not name are ignored; a different value of one it names is not a match', () => {
    expect(matches(fault.pages[0]!, down)).toBe(true);
    expect(matches(fault.pages[0]!, { ...down, device: 'rxe1' })).toBe(false);
    expect(matches(fault.pages[0]!, { ...down, alertname: 'MxlFabricPortAbsent' })).toBe(false);
  });
  it('a page no expectation matches is extra; it also has to clear', () => {
    const peer = { ...down, device: 'rxe1', instance: 'receiver:9842' };
    const e = judgeFault({ fault, injectedAt: T0, undoneAt: UNDO, records: [rec(12, 'firing', down), rec(12, 'firing', peer), rec(65, 'resolved', down)] });
    expect(e.extra).toEqual([{ alertname: 'MxlFabricPortDown', labels: { device: 'rxe1', port: '1', instance: 'receiver:9842', severity: 'critical' } }]);
    expect(e.missing).toEqual([]);
    expect(e.unresolved).toEqual(e.extra);
    expect(e.first_page_s).toBe(12);
    expect(e.resolved_s).toBeNull();
  });
  it('an expected page that never fires is missing (a resolved notice alone is not a page)', () => {
    const e = judgeFault({ fault, injectedAt: T0, undoneAt: UNDO, records: [rec(70, 'resolved', down)] });
    expect(e.missing).toEqual(fault.pages);
    expect(e).toMatchObject({ first_page_s: null, resolved_s: null, extra: [], unresolved: [] });
  });
  it('a page with no resolved notification after the undo is unresolved', () => {
    const e = judgeFault({ fault, injectedAt: T0, undoneAt: UNDO, records: [rec(12, 'firing', down)] });
    expect(e.unresolved).toEqual([{ alertname: 'MxlFabricPortDown', labels: { device: 'rxe0', port: '1', instance: 'sender:9842', severity: 'critical' } }]);
    expect(e.resolved_s).toBeNull();
  });
  it('a page Alertmanager sends again (group updates, repeat_interval) counts once: first_page_s is the first', () => {
    const other = { alertname: 'MxlFabricPortDown', device: 'rxe9', port: '1' };
    const e = judgeFault({
      fault: { ...fault, pages: [...fault.pages, { alertname: 'MxlFabricPortDown', labels: { device: 'rxe9' } }] },
      injectedAt: T0, undoneAt: UNDO,
      records: [rec(20, 'firing', down), rec(30, 'firing', down), rec(30, 'firing', other), rec(50, 'firing', down), rec(61, 'resolved', down), rec(64, 'resolved', other)],
    });
    expect(e).toMatchObject({ first_page_s: 20, resolved_s: 4, extra: [], missing: [], unresolved: [], premature: [] });
    expect(e.received).toHaveLength(6);
  });
  it('a page resolved before the undo is premature; firing again and not clearing is unresolved too', () => {
    const once = judgeFault({ fault, injectedAt: T0, undoneAt: UNDO, records: [rec(12, 'firing', down), rec(40, 'resolved', down)] });
    expect(once.premature).toHaveLength(1);
    expect(once.unresolved).toEqual([]);
    expect(once.received[1]).toMatchObject({ status: 'resolved', s: 40 }); // before undo: from injection
    const twice = judgeFault({ fault, injectedAt: T0, undoneAt: UNDO, records: [rec(12, 'firing', down), rec(40, 'resolved', down), rec(45, 'firing', down)] });
    expect(twice.premature).toHaveLength(1);
    expect(twice.unresolved).toHaveLength(1);
    const back = judgeFault({ fault, injectedAt: T0, undoneAt: UNDO, records: [rec(12, 'firing', down), rec(40, 'resolved', down), rec(45, 'firing', down), rec(62, 'resolved', down)] });
    expect(back).toMatchObject({ premature: [{ alertname: 'MxlFabricPortDown' }], unresolved: [], resolved_s: 2 });
  });
  it('records before the injection or from `until` on are not this fault\'s', () => {
    const e = judgeFault({ fault, injectedAt: T0, undoneAt: UNDO, until: T0 + 120_000, records: [rec(-5, 'firing', { ...down, device: 'rxe5' }), rec(12, 'firing', down), rec(61, 'resolved', down), rec(130, 'firing', { ...down, device: 'rxe6' })] });
    expect(e.received).toHaveLength(2);
    expect(e.extra).toEqual([]);
  });
  it('a silent fault: any page is extra', () => {
    const silent = { name: 'exporter-restarted', injection: 'kill', silent: 'quick restart', pages: [] };
    expect(judgeFault({ fault: silent, injectedAt: T0, undoneAt: UNDO, records: [] })).toMatchObject({ first_page_s: null, resolved_s: null, extra: [], missing: [] });
    const drift = { alertname: 'MxlFabricModelDrift', device: 'rxe0', port: '1', direction: 'tx' };
    expect(judgeFault({ fault: silent, injectedAt: T0, undoneAt: UNDO, records: [rec(90, 'firing', drift)] }).extra).toHaveLength(1);
  });
  it('with a time factor, every latency also in shipped-rule terms', () => {
    const e = judgeFault({ fault, injectedAt: T0, undoneAt: UNDO, factor: 20, records: [rec(3.5, 'firing', down), rec(62, 'resolved', down)] });
    expect(e.shipped).toEqual({ factor: 20, first_page_s: 70, resolved_s: 40 });
    expect(e.received.map((r) => r.shipped_s)).toEqual([70, 40]);
  });
  it('an undo before the injection is an error', () => {
    expect(() => judgeFault({ fault, injectedAt: T0, undoneAt: T0 - 1, records: [] })).toThrow(/fault link-down: undone .* before injected/);
  });
});

describe('buildReport', () => {
  const clean = judgeFault({ fault, injectedAt: T0, undoneAt: UNDO, records: [rec(12, 'firing', down), rec(61, 'resolved', down)] });
  it('ok only when no entry has an extra, missing, unresolved or premature page', () => {
    expect(buildReport([clean], { factor: 20 })).toEqual({ ok: true, factor: 20, failures: [], faults: [clean] });
    const missing = judgeFault({ fault: { ...fault, name: 'rxe-deleted' }, injectedAt: T0, undoneAt: UNDO, records: [] });
    const r = buildReport([clean, missing]);
    expect(r.ok).toBe(false);
    expect(r.failures).toEqual(['rxe-deleted: missing page MxlFabricPortDown{"device":"rxe0","port":"1"}']);
    const early = judgeFault({ fault, injectedAt: T0, undoneAt: UNDO, records: [rec(12, 'firing', down), rec(40, 'resolved', down)] });
    expect(buildReport([early]).failures).toEqual([expect.stringMatching(/^link-down: page resolved before the fault was undone MxlFabricPortDown/)]);
  });
});
