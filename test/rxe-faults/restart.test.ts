// The exporter-restarted fault's check (issue 32): after a restart, no rate or packets per grain
// above what the same series showed before it (test/rxe/faults/restart.mjs).
import { describe, expect, it } from 'vitest';
import { SPIKE_RATIO, spikes } from '../rxe/faults/restart.mjs';

const port = (direction: string, value: number) => ({ labels: { __name__: 'mxl_fabric_port_measured_bytes_per_second', device: 'rxe0', port: '1', direction, source: 'netdev', layer: 'l2' }, value });

describe('spikes', () => {
  it('finds a series whose maximum after the restart is more than 1.5 times the one before', () => {
    expect(SPIKE_RATIO).toBe(1.5);
    const found = spikes([port('tx', 3_500_000), port('rx', 1_550)], [port('tx', 3_600_000), port('rx', 9_300)]);
    expect(found).toEqual([{ series: 'mxl_fabric_port_measured_bytes_per_second{device="rxe0",direction="rx",layer="l2",port="1",source="netdev"}', before: 1_550, after: 9_300 }]);
  });
  it('leaves alone what is at most 1.5 times, series on one side only, and zeros', () => {
    expect(spikes([port('tx', 100)], [port('tx', 150)])).toEqual([]);
    expect(spikes([], [port('tx', 1e9)])).toEqual([]);
    expect(spikes([port('tx', 0)], [port('tx', 0)])).toEqual([]);
  });
  it('compares one family with itself: the same labels under another name are another series', () => {
    const packets = { ...port('tx', 10), labels: { ...port('tx', 10).labels, __name__: 'mxl_fabric_port_measured_packets_per_second' } };
    expect(spikes([packets], [port('tx', 1000)])).toEqual([]);
  });
});
