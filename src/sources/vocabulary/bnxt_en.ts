/**
 * bnxt_en `ethtool -S` statistics: PFC per priority and link pause.
 *
 * Names: drivers/net/ethernet/broadcom/bnxt/bnxt_ethtool.c (torvalds/linux, stored versions
 * 2021-2025): `bnxt_port_stats_arr` has `rx_pause_frames`, `tx_pause_frames` and
 * `rx_pfc_ena_frames_pri0..7` / `tx_pfc_ena_frames_pri0..7`; `BNXT_RX_STATS_EXT_PFC_ENTRY(n)` and
 * `BNXT_TX_STATS_EXT_PFC_ENTRY(n)` give `pfc_pri{n}_rx_duration_us` / `pfc_pri{n}_tx_duration_us`
 * (microseconds, as the name says).
 */
import { type DriverTable, MICROSECONDS, pauseDuration, pauseFrames, perPriority } from './types.js';

const C = 'drivers/net/ethernet/broadcom/bnxt/bnxt_ethtool.c';

export const BNXT_EN: DriverTable = {
  driver: 'bnxt_en',
  counters: 'ethtool',
  source: 'torvalds/linux, bnxt_ethtool.c as stored 2021-2025',
  entries: [
    ...perPriority((p) => [
      { name: `rx_pfc_ena_frames_pri${p}`, meaning: pauseFrames('rx', p), from: `${C} bnxt_port_stats_arr` },
      { name: `tx_pfc_ena_frames_pri${p}`, meaning: pauseFrames('tx', p), from: `${C} bnxt_port_stats_arr` },
      { name: `pfc_pri${p}_rx_duration_us`, meaning: pauseDuration('rx', p, MICROSECONDS), from: `${C} BNXT_RX_STATS_EXT_PFC_ENTRY` },
      { name: `pfc_pri${p}_tx_duration_us`, meaning: pauseDuration('tx', p, MICROSECONDS), from: `${C} BNXT_TX_STATS_EXT_PFC_ENTRY` },
    ]),
    { name: 'rx_pause_frames', meaning: pauseFrames('rx', 'global'), from: `${C} bnxt_port_stats_arr` },
    { name: 'tx_pause_frames', meaning: pauseFrames('tx', 'global'), from: `${C} bnxt_port_stats_arr` },
  ],
};
