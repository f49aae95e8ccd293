/**
 * bnxt_en `ethtool -S` statistics: PFC per priority and link pause.
 *
 * Names: drivers/net/ethernet/broadcom/bnxt/bnxt_ethtool.c (torvalds/linux, stored versions
 * 2021-2025): `bnxt_port_stats_arr` has `rx_pause_frames`, `tx_pause_frames` and
 * `rx_pfc_ena_frames_pri0..7` / `tx_pfc_ena_frames_pri0..7`; `BNXT_RX_STATS_EXT_PFC_ENTRY(n)` and
 * `BNXT_TX_STATS_EXT_PFC_ENTRY(n)` give `pfc_pri{n}_rx_duration_us` / `pfc_pri{n}_tx_duration_us`
 * (microseconds, as the name says).
 */
import { type DriverTable, type VocabularyEntry, MICROSECONDS, namesIn, pauseDuration, pauseFrames, perDirection, perPriority } from './types.js';

const C = 'drivers/net/ethernet/broadcom/bnxt/bnxt_ethtool.c';

const entries: VocabularyEntry[] = [
  ...perPriority((p) => [
    ...perDirection((d) => namesIn(`${C} bnxt_port_stats_arr`, { [`${d}_pfc_ena_frames_pri${p}`]: pauseFrames(d, p) })),
    ...perDirection((d) => namesIn(`${C} BNXT_${d.toUpperCase()}_STATS_EXT_PFC_ENTRY`, { [`pfc_pri${p}_${d}_duration_us`]: pauseDuration(d, p, MICROSECONDS) })),
  ]),
  ...perDirection((d) => namesIn(`${C} bnxt_port_stats_arr`, { [`${d}_pause_frames`]: pauseFrames(d, 'global') })),
];

export const BNXT_EN: DriverTable = {
  driver: 'bnxt_en',
  counters: 'ethtool',
  source: 'torvalds/linux, bnxt_ethtool.c as stored 2021-2025',
  entries,
};
