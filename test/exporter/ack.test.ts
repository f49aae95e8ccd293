// The reverse direction (issue 12): a flow's RDMA writes draw ACKs on the opposite direction of
// its port, so the sender's rx and the receiver's tx are predicted too. rxe0 (fixture rxe_6_1)
// has active IB MTU 4096; a 60 grains/s data flow under rdma_rocev2_mxl_v1 is one 12,288-byte
// write per grain (4096 + the 8192-byte header) = 3 packets, answered by one 62-byte ACK.
import { describe, it, expect, afterEach } from 'vitest';
import { one, startDaemon, stopDaemons, type Running } from './harness.js';

const CONFIG = `
sampling: { interval: 1s, window: 4s }
metrics: { flow_layers: [media, payload, l3, l2, wire] }
ports:
  - { device: rxe0, port: 1, mtu: auto, capacity: auto, provider: rdma_rocev2_mxl_v1 }
flows:
  - { flow: flows/data_60.json, device: rxe0, port: 1, direction: tx }
`;

let run: Running | undefined;
afterEach(stopDaemons);

describe('ACK predictions', () => {
  it('puts a tx flow\'s ACKs on the port\'s rx and compares them with the rx counters', async () => {
    run = await startDaemon('rxe_6_1', CONFIG);
    let rcvd = 0n, rxBytes = 0n;
    for (let i = 0; i < 4; i++) {
      rcvd += 60n;
      rxBytes += 60n * 62n;
      run.fx.setCounter('rxe0', 1, 'hw_counters', 'rcvd_pkts', rcvd);
      run.fx.setNetdevStat('veth0', 'rx_bytes', rxBytes);
      await run.tick(1);
    }
    const m = await run.scrape();
    const flow = { device: 'rxe0', port: '1' };
    expect(one(m, 'mxl_fabric_flow_predicted_packets_per_second', { ...flow, direction: 'tx' })).toBe(180);
    expect(one(m, 'mxl_fabric_flow_predicted_bytes_per_second', { ...flow, direction: 'tx', layer: 'media' })).toBe(60 * 4096);
    expect(one(m, 'mxl_fabric_flow_predicted_bytes_per_second', { ...flow, direction: 'tx', layer: 'payload' })).toBe(60 * 12_288);
    expect(one(m, 'mxl_fabric_flow_predicted_ack_packets_per_second', { ...flow, direction: 'rx' })).toBe(60);
    expect(one(m, 'mxl_fabric_flow_predicted_ack_bytes_per_second', { ...flow, direction: 'rx', layer: 'l3' })).toBe(60 * 48);
    expect(one(m, 'mxl_fabric_flow_predicted_ack_bytes_per_second', { ...flow, direction: 'rx', layer: 'l2' })).toBe(60 * 62);
    expect(one(m, 'mxl_fabric_flow_predicted_ack_bytes_per_second', { ...flow, direction: 'rx', layer: 'wire' })).toBe(60 * 86);
    const rx = { ...flow, direction: 'rx' };
    expect(one(m, 'mxl_fabric_port_predicted_packets_per_second', rx)).toBe(60);
    expect(one(m, 'mxl_fabric_port_predicted_bytes_per_second', { ...rx, layer: 'l2' })).toBe(3720);
    expect(one(m, 'mxl_fabric_port_predicted_bytes_per_second', { ...rx, layer: 'media' })).toBe(0);
    expect(one(m, 'mxl_fabric_port_drift_ratio', { ...rx, quantity: 'packets' })).toBe(0);
    expect(one(m, 'mxl_fabric_port_drift_ratio', { ...rx, quantity: 'bytes' })).toBe(0);
    // tx carries the data only: 60 x (12,288 + 3 x 58 + 16 + 4).
    expect(one(m, 'mxl_fabric_port_predicted_bytes_per_second', { ...flow, direction: 'tx', layer: 'l2' })).toBe(60 * 12_482);
  });
});
