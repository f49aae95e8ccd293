/**
 * mlx5_core (mlx5e) `ethtool -S` statistics: PFC and link pause, physical-port discards.
 *
 * Names: drivers/net/ethernet/mellanox/mlx5/core/en_stats.c, torvalds/linux (stored versions
 * of 2024-2025): `pport_per_prio_pfc_stats_desc` formats `rx_%s_pause`, `rx_%s_pause_duration`,
 * `tx_%s_pause`, `tx_%s_pause_duration` with "prio{i}" for each priority that has PFC enabled
 * and "global" when 802.3x pause is on; `pport_802_3_stats_desc` has `rx_pause_ctrl_phy` and
 * `tx_pause_ctrl_phy` (aPAUSEMACCtrlFrames, always present); `pport_phy_statistical_stats_desc`
 * / `pport_2863` give `rx_discards_phy` and `tx_discards_phy`. Units and meanings:
 * Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst ("The duration of
 * pause received (in microSec)"; `rx_discards_phy`: dropped for lack of buffers on the physical
 * port; `tx_discards_phy`: discarded on transmission without an error: head-of-line drop, pause
 * from the network).
 *
 * 802.3x pause frames come from `*_pause_ctrl_phy` (present whether or not global pause is on);
 * `rx_global_pause` counts the same frames and is left out so that no frame is counted twice.
 */
import { type DriverTable, type VocabularyEntry, MICROSECONDS, discard, namesIn, pauseDuration, pauseFrames, perDirection, perPriority } from './types.js';

const EN_STATS_C = 'drivers/net/ethernet/mellanox/mlx5/core/en_stats.c';

const entries: VocabularyEntry[] = [
  ...perPriority((p) => perDirection((d) => namesIn(`${EN_STATS_C} pport_per_prio_pfc_stats_desc`, {
    [`${d}_prio${p}_pause`]: pauseFrames(d, p),
    [`${d}_prio${p}_pause_duration`]: pauseDuration(d, p, MICROSECONDS),
  }))),
  ...perDirection((d) => namesIn(`${EN_STATS_C} pport_802_3_stats_desc`, { [`${d}_pause_ctrl_phy`]: pauseFrames(d, 'global') })),
  ...perDirection((d) => namesIn(`${EN_STATS_C} pport_per_prio_pfc_stats_desc ("global")`, {
    [`${d}_global_pause_duration`]: pauseDuration(d, 'global', MICROSECONDS),
  })),
  ...namesIn(`${EN_STATS_C} pport_phy_statistical / pport_2863 stats`, {
    rx_discards_phy: discard('rx', 'buffer'),
    tx_discards_phy: discard('tx', 'congestion'),
  }),
];

export const MLX5_CORE: DriverTable = {
  driver: 'mlx5_core',
  counters: 'ethtool',
  source: 'torvalds/linux, en_stats.c as stored 2024-2025; counters.rst for units',
  entries,
};
