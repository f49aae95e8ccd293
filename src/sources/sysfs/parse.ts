/**
 * Parsers for the text the kernel prints in /sys/class/infiniband/<dev>/ports/<n>/.
 * Formats are those of drivers/infiniband/core/sysfs.c: state_show ("%d: %s"),
 * phys_state_show ("%d: %s"), link_layer_show, rate_show ("%d%s Gb/sec (%dX%s)").
 */
import type { LinkLayer } from '../types.js';

/** "4: ACTIVE" -> "ACTIVE"; undefined when the text is not in that shape. */
export function parseNumberedName(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const m = /^\d+:\s*(.+)$/.exec(text.trim());
  return m?.[1]?.trim() || undefined;
}

export function parseLinkLayer(text: string | undefined): LinkLayer {
  if (text === 'Ethernet' || text === 'InfiniBand') return text;
  return 'unknown';
}

/**
 * "100 Gb/sec (4X EDR)", "2.5 Gb/sec (1X SDR)", "10 Gb/sec (1X FDR10)" -> bits per second.
 * rate_show prints deci-Gb/s as an integer plus an optional ".5", so decimal Gb -> bits is exact.
 */
export function parseRate(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const m = /^(\d+(?:\.\d+)?)\s*Gb\/sec\b/.exec(text.trim());
  if (!m?.[1]) return undefined;
  return Math.round(Number(m[1]) * 1e9);
}

/** IB MTU enum values 1..5 in bytes (enum ib_mtu, include/rdma/ib_verbs.h). */
const IB_MTUS = [4096, 2048, 1024, 512, 256] as const;

/**
 * How a RoCE driver turns its netdev MTU into the port's active IB MTU.
 *  - 'iboe': iboe_get_mtu() in include/rdma/ib_addr.h, used by mlx4, mlx5 (mlx5_query_port_roce),
 *    bnxt_re, ionic and rdma_cm. It subtracts the largest possible RoCE header stack:
 *    IB_GRH_BYTES 40 + IB_UDP_BYTES 8 + IB_BTH_BYTES 12 + IB_EXT_XRC_BYTES 4 +
 *    IB_EXT_ATOMICETH_BYTES 28 + IB_ICRC_BYTES 4 = 96 (include/rdma/ib_pack.h), then
 *    rounds down to an IB MTU; below 256 it gives 0 (no usable MTU).
 *  - 'rxe': rxe_set_mtu() in drivers/infiniband/sw/rxe/rxe.c calls eth_mtu_int_to_enum()
 *    (rxe_param.h), which subtracts RXE_MAX_HDR_LENGTH = 80 (rxe_hdr.h) and rounds down the
 *    same way, but falls back to IB_MTU_256 instead of 0.
 * Measured on rxe (shared notes): netdev MTU 9000 -> 4096, 1500 -> 1024. The two rules differ
 * only near the boundaries, e.g. netdev MTU 4176 gives 4096 on rxe and 2048 via iboe_get_mtu.
 */
export type RoceMtuRule = 'iboe' | 'rxe';

const ROCE_HEADER_BUDGET: Record<RoceMtuRule, number> = { iboe: 96, rxe: 80 };

export function roceActiveMtu(netdevMtu: number, rule: RoceMtuRule): number | undefined {
  if (!Number.isFinite(netdevMtu) || netdevMtu <= 0) return undefined;
  const budget = netdevMtu - ROCE_HEADER_BUDGET[rule];
  const fit = IB_MTUS.find((m) => budget >= m);
  if (fit !== undefined) return fit;
  return rule === 'rxe' ? 256 : undefined;
}
