/**
 * bnxt_re hw counters, under both spellings the kernel has used or proposed.
 *
 * Legacy names: `bnxt_re_stat_descs[]` in drivers/infiniband/hw/bnxt_re/hw_counters.c,
 * torvalds/linux at 73a98bc5a947f7db6e7e3e614284e3026341fcd7 (with the gen P5+ extended
 * counters `rx_out_of_buffer`, `tx_cnp_pkts`, `rx_cnp_pkts`, `rx_ecn_marked_pkts`; older kernels,
 * e.g. 063975feedb1, lack those and `tx_roce_discards`).
 *
 * Renamed names: "[PATCH rdma-next 6/9] RDMA/bnxt_re: RoCE related hardware counters update"
 * (linux-rdma, 2025-08-14, Message-ID 20250814112555.221665-7-kalesh-anakkur.purayil@broadcom.com),
 * which renames the same `BNXT_RE_*` entries to mlx5's names "for compatibility with
 * open-source monitoring agents": to_retransmits -> local_ack_timeout_err, seq_err_naks_rcvd ->
 * packet_seq_err, rnr_naks_rcvd -> rnr_nak_retry_err, missing_resp -> implied_nak_seq_err,
 * dup_req -> duplicate_request, oos_drop_count -> out_of_sequence, rx_out_of_buffer ->
 * out_of_buffer, tx_cnp_pkts -> np_cnp_pkts, rx_cnp_pkts -> rp_cnp_handled, rx_ecn_marked_pkts ->
 * np_ecn_marked_roce_packets. A kernel has one spelling or the other, never both.
 */
import { type DriverTable, type HealthMeaning, type VocabularyEntry, cnp, discard, ecnMarked, transport } from './types.js';

const HW_COUNTERS_C = 'drivers/infiniband/hw/bnxt_re/hw_counters.c bnxt_re_stat_descs';
const RENAME_PATCH = 'rdma-next patch 2025-08-14 "RDMA/bnxt_re: RoCE related hardware counters update"';

/** [legacy name, renamed name (undefined: unchanged), meaning]. */
const NAMES: readonly (readonly [legacy: string, renamed: string | undefined, meaning: HealthMeaning])[] = [
  ['to_retransmits', 'local_ack_timeout_err', transport('local_ack_timeout')],
  ['seq_err_naks_rcvd', 'packet_seq_err', transport('packet_seq_err')],
  ['max_retry_exceeded', undefined, transport('retries_exceeded')],
  ['rnr_naks_rcvd', 'rnr_nak_retry_err', transport('rnr_nak')],
  ['missing_resp', 'implied_nak_seq_err', transport('implied_nak')],
  ['dup_req', 'duplicate_request', transport('duplicate_request')],
  ['oos_drop_count', 'out_of_sequence', transport('out_of_sequence')],
  ['rx_out_of_buffer', 'out_of_buffer', discard('rx', 'no_receive_wqe')],
  ['rx_roce_discards', undefined, discard('rx', 'unspecified')],
  ['tx_roce_discards', undefined, discard('tx', 'unspecified')],
  ['tx_cnp_pkts', 'np_cnp_pkts', cnp('sent')],
  ['rx_cnp_pkts', 'rp_cnp_handled', cnp('handled')],
  ['rx_ecn_marked_pkts', 'np_ecn_marked_roce_packets', ecnMarked()],
];

const entries: VocabularyEntry[] = [
  ...NAMES.map(([name, , meaning]) => ({ name, meaning, from: HW_COUNTERS_C })),
  ...NAMES.flatMap(([, renamed, meaning]) => (renamed === undefined ? [] : [{ name: renamed, meaning, from: RENAME_PATCH }])),
];

export const BNXT_RE: DriverTable = {
  driver: 'bnxt_re',
  counters: 'rdma',
  source: 'torvalds/linux 73a98bc5a947f7db6e7e3e614284e3026341fcd7; linux-rdma patch of 2025-08-14',
  entries,
};
