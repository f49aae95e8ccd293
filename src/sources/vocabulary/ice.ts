/**
 * ice (Intel E810) `ethtool -S` statistics: PFC XOFF per priority, link XOFF, receive drops.
 *
 * Names: drivers/net/ethernet/intel/ice/ice_ethtool.c (torvalds/linux, stored versions
 * 2021-2025): `__ice_get_strings()` prints `rx_priority_%u_xoff.nic` / `tx_priority_%u_xoff.nic`
 * for each user priority, `ice_gstrings_pf_stats[]` has `link_xoff_rx.nic`, `link_xoff_tx.nic`
 * and `rx_dropped.nic` (stats.eth.rx_discards). An XOFF frame is a pause frame; ice counts no
 * pause duration. XON frames (resume) are not pauses and are left out.
 */
import { type DriverTable, discard, pauseFrames, perPriority } from './types.js';

const C = 'drivers/net/ethernet/intel/ice/ice_ethtool.c';

export const ICE: DriverTable = {
  driver: 'ice',
  counters: 'ethtool',
  source: 'torvalds/linux, ice_ethtool.c as stored 2021-2025',
  entries: [
    ...perPriority((p) => [
      { name: `rx_priority_${p}_xoff.nic`, meaning: pauseFrames('rx', p), from: `${C} __ice_get_strings` },
      { name: `tx_priority_${p}_xoff.nic`, meaning: pauseFrames('tx', p), from: `${C} __ice_get_strings` },
    ]),
    { name: 'link_xoff_rx.nic', meaning: pauseFrames('rx', 'global'), from: `${C} ice_gstrings_pf_stats` },
    { name: 'link_xoff_tx.nic', meaning: pauseFrames('tx', 'global'), from: `${C} ice_gstrings_pf_stats` },
    { name: 'rx_dropped.nic', meaning: discard('rx', 'unspecified'), from: `${C} ice_gstrings_pf_stats` },
  ],
};
