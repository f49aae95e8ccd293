/**
 * ice (Intel E810) `ethtool -S` statistics: PFC XOFF per priority, link XOFF, receive drops.
 *
 * Names: drivers/net/ethernet/intel/ice/ice_ethtool.c (torvalds/linux, stored versions
 * 2021-2025): `__ice_get_strings()` prints `rx_priority_%u_xoff.nic` / `tx_priority_%u_xoff.nic`
 * for each user priority, `ice_gstrings_pf_stats[]` has `link_xoff_rx.nic`, `link_xoff_tx.nic`
 * and `rx_dropped.nic` (stats.eth.rx_discards). An XOFF frame is a pause frame; ice counts no
 * pause duration. XON frames (resume) are not pauses and are left out.
 */
import { type DriverTable, type VocabularyEntry, discard, namesIn, pauseFrames, perDirection, perPriority } from './types.js';

const C = 'drivers/net/ethernet/intel/ice/ice_ethtool.c';

const entries: VocabularyEntry[] = [
  ...perPriority((p) => perDirection((d) => namesIn(`${C} __ice_get_strings`, { [`${d}_priority_${p}_xoff.nic`]: pauseFrames(d, p) }))),
  ...perDirection((d) => namesIn(`${C} ice_gstrings_pf_stats`, { [`link_xoff_${d}.nic`]: pauseFrames(d, 'global') })),
  ...namesIn(`${C} ice_gstrings_pf_stats`, { 'rx_dropped.nic': discard('rx', 'unspecified') }),
];

export const ICE: DriverTable = {
  driver: 'ice',
  counters: 'ethtool',
  source: 'torvalds/linux, ice_ethtool.c as stored 2021-2025',
  entries,
};
