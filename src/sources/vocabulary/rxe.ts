/**
 * rxe (soft-RoCE) hw counters.
 *
 * Names: `rxe_counter_name[]` in drivers/infiniband/sw/rxe/rxe_hw_counters.c, torvalds/linux at
 * 0f2cb7cf80335db55cd3c406134e8def59f16814, the same set Linux 6.1 shows (measured in the guest,
 * /work/shared/notes/rdma-facts.md); older kernels spell `out_of_seq_request` as
 * `out_of_sequence` (same notes). `rcvd_rnr_err` counts RNR NAKs the requester received,
 * `send_rnr_err` those the responder sent (left raw), `rcvd_seq_err` NAK-sequence-errors received.
 * `completer_retry_err` counts every requester retry, whatever its cause, so it is left raw.
 */
import { type DriverTable, type VocabularyEntry, namesIn, transport } from './types.js';

const C = 'drivers/infiniband/sw/rxe/rxe_hw_counters.c rxe_counter_name';

const entries: VocabularyEntry[] = [
  ...namesIn(C, {
    duplicate_request: transport('duplicate_request'),
    out_of_seq_request: transport('out_of_sequence'),
    rcvd_rnr_err: transport('rnr_nak'),
    rcvd_seq_err: transport('packet_seq_err'),
    retry_exceeded_err: transport('retries_exceeded'),
    retry_rnr_exceeded_err: transport('rnr_retries_exceeded'),
  }),
  ...namesIn(`${C} (older kernels)`, { out_of_sequence: transport('out_of_sequence') }),
];

export const RXE: DriverTable = {
  driver: 'rxe',
  counters: 'rdma',
  source: 'torvalds/linux 0f2cb7cf80335db55cd3c406134e8def59f16814; Linux 6.1 measured',
  entries,
};
