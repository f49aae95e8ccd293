/**
 * mlx5_ib hw counters (RDMA netlink and sysfs hw_counters/).
 *
 * Names: drivers/infiniband/hw/mlx5/counters.c, torvalds/linux at 10d4de4189533840f296ce7e48eac05b985d96bc:
 * `retrans_q_cnts`, `out_of_seq_q_cnts`, `extended_err_cnts` and `basic_q_cnts` (Q-counters),
 * `cong_cnts` (congestion counters), and their `vport_`-prefixed copies (`INIT_VPORT_Q_COUNTER`)
 * that newer kernels show on switchdev representor ports. Meanings: the same file and
 * Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst.
 */
import { type DriverTable, type HealthMeaning, type VocabularyEntry, cnp, discard, ecnMarked, transport } from './types.js';

const COUNTERS_C = 'drivers/infiniband/hw/mlx5/counters.c';

/** Q-counters, present as `name` and, on switchdev representors, as `vport_name`. */
const Q_COUNTERS: readonly (readonly [name: string, table: string, meaning: HealthMeaning])[] = [
  ['out_of_sequence', 'out_of_seq_q_cnts', transport('out_of_sequence')],
  ['duplicate_request', 'retrans_q_cnts', transport('duplicate_request')],
  ['rnr_nak_retry_err', 'retrans_q_cnts', transport('rnr_nak')],
  ['packet_seq_err', 'retrans_q_cnts', transport('packet_seq_err')],
  ['implied_nak_seq_err', 'retrans_q_cnts', transport('implied_nak')],
  ['local_ack_timeout_err', 'retrans_q_cnts', transport('local_ack_timeout')],
  ['req_transport_retries_exceeded', 'extended_err_cnts', transport('retries_exceeded')],
  ['req_rnr_retries_exceeded', 'extended_err_cnts', transport('rnr_retries_exceeded')],
  ['out_of_buffer', 'basic_q_cnts', discard('rx', 'no_receive_wqe')],
];

const entries: VocabularyEntry[] = [
  { name: 'np_ecn_marked_roce_packets', meaning: ecnMarked(), from: `${COUNTERS_C} cong_cnts` },
  { name: 'np_cnp_sent', meaning: cnp('sent'), from: `${COUNTERS_C} cong_cnts` },
  { name: 'rp_cnp_handled', meaning: cnp('handled'), from: `${COUNTERS_C} cong_cnts` },
  { name: 'rp_cnp_ignored', meaning: cnp('ignored'), from: `${COUNTERS_C} cong_cnts` },
  ...Q_COUNTERS.map(([name, table, meaning]) => ({ name, meaning, from: `${COUNTERS_C} ${table}` })),
  ...Q_COUNTERS.map(([name, table, meaning]) => ({ name: `vport_${name}`, meaning, from: `${COUNTERS_C} vport_${table} (INIT_VPORT_Q_COUNTER)` })),
];

export const MLX5: DriverTable = {
  driver: 'mlx5',
  counters: 'rdma',
  source: 'torvalds/linux 10d4de4189533840f296ce7e48eac05b985d96bc',
  entries,
};
