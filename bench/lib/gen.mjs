/**
 * Generates the benchmark inputs: mlx5-like sysfs trees (modelled on
 * test/fixtures/sysfs/mlx5_roce, see its SOURCE.md) and exporter configs with
 * flow files. Everything goes under one output folder; nothing here is timed.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

/** The 22 PMA files of the extended group (pma_group_ext), as in the fixture. */
const PMA = {
  VL15_dropped: 0, excessive_buffer_overrun_errors: 0, link_downed: 0, link_error_recovery: 0,
  local_link_integrity_errors: 0, multicast_rcv_packets: 24, multicast_xmit_packets: 116,
  port_rcv_constraint_errors: 0, port_rcv_data: 18126345378, port_rcv_errors: 0, port_rcv_packets: 541889824,
  port_rcv_remote_physical_errors: 0, port_rcv_switch_relay_errors: 0, port_xmit_constraint_errors: 0,
  port_xmit_data: 2880761508848, port_xmit_discards: 0, port_xmit_packets: 10907922116, port_xmit_wait: 0,
  symbol_error: 0, unicast_rcv_packets: 541889800, unicast_xmit_packets: 10907922000,
};

/** mlx5 hw_counters as the fixture has them (31 counters + the `lifespan` setting). */
const HW = {
  duplicate_request: 41, implied_nak_seq_err: 0, lifespan: 10, local_ack_timeout_err: 131, np_cnp_sent: 5123455000,
  np_ecn_marked_roce_packets: 5123456000, out_of_buffer: 0, out_of_sequence: 1, packet_seq_err: 1, req_cqe_error: 3481,
  req_cqe_flush_error: 80, req_remote_access_errors: 0, req_remote_invalid_request: 0, req_rnr_retries_exceeded: 0,
  req_transport_retries_exceeded: 0, resp_cqe_error: 8109, resp_cqe_flush_error: 4708, resp_local_length_error: 0,
  resp_remote_access_errors: 0, rnr_nak_retry_err: 0, roce_adp_retrans: 99, roce_adp_retrans_to: 4, roce_slow_restart: 0,
  roce_slow_restart_cnps: 131, roce_slow_restart_trans: 0, rp_cnp_handled: 5123456789, rp_cnp_ignored: 0,
  rx_atomic_requests: 0, rx_dct_connect: 0, rx_icrc_encapsulated: 0, rx_read_requests: 175528982, rx_write_requests: 1794967290,
};

const NETDEV_STATS = {
  collisions: 0, multicast: 0, rx_bytes: 91242781121, rx_dropped: 0, rx_errors: 0, rx_packets: 71554300,
  tx_bytes: 73125446631, tx_dropped: 0, tx_errors: 0, tx_packets: 60031007,
};

/**
 * mlx5 RoCE ports have a 255-entry GID table (what `ibv_devinfo -v` calls gid_tbl_len); the
 * kernel lists every index in gid_attrs/{types,ndevs} and gids/, used or not. The first four are
 * used here (RoCE v1 + v2 for a link-local IPv6 and one IPv4 address), like the fixture.
 */
export const GID_TABLE = 255;
const GIDS_USED = 4;

function write(file, text) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

export const deviceName = (i) => `mlx5_${i}`;
/** Two ports per ConnectX card: ens<slot>f<fn>np<fn>. */
export const netdevName = (i) => `ens${1 + Math.floor(i / 2)}f${i % 2}np${i % 2}`;

/** One RDMA device with one port per ConnectX function, as mlx5 registers them. */
export function generateTree(root, ports) {
  fs.rmSync(root, { recursive: true, force: true });
  for (let i = 0; i < ports; i++) {
    const dev = path.join(root, 'class', 'infiniband', deviceName(i));
    const guid = `b8ce:f603:00a1:${(0xb2c4 + i).toString(16).padStart(4, '0')}`;
    write(path.join(dev, 'board_id'), 'MT_0000000359\n');
    write(path.join(dev, 'fw_ver'), '22.36.1010\n');
    write(path.join(dev, 'hca_type'), 'MT4125\n');
    write(path.join(dev, 'hw_rev'), '0x0\n');
    write(path.join(dev, 'node_desc'), `host-a ${deviceName(i)}\n`);
    write(path.join(dev, 'node_guid'), `${guid}\n`);
    write(path.join(dev, 'node_type'), '1: CA\n');
    write(path.join(dev, 'sys_image_guid'), `${guid}\n`);
    const port = path.join(dev, 'ports', '1');
    const attrs = {
      cap_mask: '0x04010000', lid: '0x0', lid_mask_count: '0', link_layer: 'Ethernet', phys_state: '5: LinkUp',
      rate: '100 Gb/sec (4X EDR)', sm_lid: '0x0', sm_sl: '0', state: '4: ACTIVE', 'pkeys/0': '0xffff',
    };
    for (const [k, v] of Object.entries(attrs)) write(path.join(port, k), `${v}\n`);
    // Spread the values a little per port so no two ports read the same text.
    for (const [k, v] of Object.entries(PMA)) write(path.join(port, 'counters', k), `${v === 0 ? 0 : v + i * 7919}\n`);
    for (const [k, v] of Object.entries(HW)) write(path.join(port, 'hw_counters', k), `${v === 0 || k === 'lifespan' ? v : v + i * 31}\n`);
    const ndev = netdevName(i);
    const v4 = `0000:0000:0000:0000:0000:ffff:c000:${(0x020a + i).toString(16).padStart(4, '0')}`;
    const ll = `fe80:0000:0000:0000:bace:f6ff:fea1:${(0xb2c4 + i).toString(16).padStart(4, '0')}`;
    for (let g = 0; g < GID_TABLE; g++) {
      const used = g < GIDS_USED;
      write(path.join(port, 'gid_attrs', 'types', String(g)), used ? (g % 2 === 0 ? 'IB/RoCE v1\n' : 'RoCE v2\n') : '');
      write(path.join(port, 'gid_attrs', 'ndevs', String(g)), used ? `${ndev}\n` : '');
      write(path.join(port, 'gids', String(g)), `${used ? (g < 2 ? ll : v4) : '0000:0000:0000:0000:0000:0000:0000:0000'}\n`);
    }
    const net = path.join(root, 'class', 'net', ndev);
    write(path.join(net, 'mtu'), '9000\n');
    write(path.join(net, 'operstate'), 'up\n');
    for (const [k, v] of Object.entries(NETDEV_STATS)) write(path.join(net, 'statistics', k), `${v === 0 ? 0 : v + i * 104729}\n`);
  }
  return root;
}

/**
 * A realistic mix for a broadcast host, cycling every 10 flows: HD and UHD v210 video, a
 * key+fill pair, interlaced HD, 2/8/16-channel audio (16 ch at 1 ms ptime), and ancillary data.
 */
const KINDS = [
  { format: 'video', media_type: 'video/v210', grain_rate: { numerator: 50, denominator: 1 }, frame_width: 1920, frame_height: 1080, interlace_mode: 'progressive' },
  { format: 'audio', media_type: 'audio/float32', sample_rate: { numerator: 48000 }, channel_count: 8, bit_depth: 32 },
  { format: 'video', media_type: 'video/v210', grain_rate: { numerator: 30000, denominator: 1001 }, frame_width: 1920, frame_height: 1080, interlace_mode: 'interlaced_tff' },
  { format: 'audio', media_type: 'audio/float32', sample_rate: { numerator: 48000 }, channel_count: 2, bit_depth: 32 },
  { format: 'data', media_type: 'video/smpte291', grain_rate: { numerator: 50, denominator: 1 } },
  { format: 'video', media_type: 'video/v210a', grain_rate: { numerator: 25, denominator: 1 }, frame_width: 1920, frame_height: 1080, interlace_mode: 'progressive' },
  { format: 'audio', media_type: 'audio/float32', sample_rate: { numerator: 48000 }, channel_count: 16, bit_depth: 32, ptime: '1ms' },
  { format: 'video', media_type: 'video/v210', grain_rate: { numerator: 50, denominator: 1 }, frame_width: 3840, frame_height: 2160, interlace_mode: 'progressive' },
  { format: 'audio', media_type: 'audio/float32', sample_rate: { numerator: 48000 }, channel_count: 8, bit_depth: 32 },
  { format: 'data', media_type: 'video/smpte291', grain_rate: { numerator: 60, denominator: 1 } },
];
const ROLE = { video: 'Video', audio: 'Audio', data: 'Data' };

export const flowId = (n) => `0a3e1c52-4f0e-4d8b-9d0c-${n.toString(16).padStart(12, '0')}`;

/**
 * `dir/flows/flow-N.json` for N < count (NMOS flow resources), and one config per port count,
 * `dir/config-pP.yaml`, binding flow N to port N mod P, alternating tx and rx.
 */
export function generateConfigs(dir, flows, portCounts) {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(path.join(dir, 'flows'), { recursive: true });
  const ptimes = [];
  for (let n = 0; n < flows; n++) {
    const { ptime, format, ...media } = KINDS[n % KINDS.length];
    ptimes.push(ptime);
    const group = `Source ${Math.floor(n / KINDS.length) + 1}`;
    const flow = {
      id: flowId(n),
      label: `${group} ${ROLE[format].toLowerCase()} ${n}`,
      description: 'generated by bench/lib/gen.mjs',
      format: `urn:x-nmos:format:${format}`,
      tags: { 'urn:x-nmos:tag:grouphint/v1.0': [`${group}:${ROLE[format]}`] },
      ...media,
    };
    fs.writeFileSync(path.join(dir, 'flows', `flow-${n}.json`), `${JSON.stringify(flow, null, 2)}\n`);
  }
  const out = {};
  for (const ports of portCounts) {
    const lines = [
      `# generated by bench/lib/gen.mjs: ${flows} flows on ${ports} ports`,
      'sampling:', '  interval: 1s', '  window: 10s',
      'drift:', '  tolerance: 0.05',
      'headroom: 0.9',
      'ports:',
    ];
    for (let i = 0; i < ports; i++) {
      lines.push(`  - { device: ${deviceName(i)}, port: 1, provider: rdma_rocev2_mxl_v1, mtu: auto, capacity: auto }`);
    }
    lines.push('flows:');
    for (let n = 0; n < flows; n++) {
      const ptime = ptimes[n] ? `, ptime: ${ptimes[n]}` : '';
      lines.push(`  - { flow: flows/flow-${n}.json, device: ${deviceName(n % ports)}, port: 1, direction: ${Math.floor(n / ports) % 2 ? 'rx' : 'tx'}${ptime} }`);
    }
    const file = path.join(dir, `config-p${ports}.yaml`);
    fs.writeFileSync(file, `${lines.join('\n')}\n`);
    out[ports] = file;
  }
  return out;
}
