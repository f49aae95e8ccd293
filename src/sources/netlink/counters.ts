/**
 * What the hw counter names RDMA netlink reports mean for the model.
 *
 * Names not listed here are still exported under their own name, with no meaning.
 * Netlink always carries u64 (RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE); `bits` is the
 * width of the driver's own counter behind it.
 */
import type { CounterMeaning, CounterSpec } from '../types.js';

interface KnownCounter {
  readonly bits: 32 | 64;
  readonly overflow: 'saturate' | 'wrap';
  readonly meaning: CounterMeaning;
}

const KNOWN: Readonly<Record<string, KnownCounter>> = {
  // rxe (drivers/infiniband/sw/rxe/rxe_hw_counters.c): atomic64 counters of RoCE packets,
  // data and ACKs alike; rxe has no byte counters, bytes come from the netdev.
  sent_pkts: { bits: 64, overflow: 'wrap', meaning: { direction: 'tx', quantity: 'packets', scale: 1 } },
  rcvd_pkts: { bits: 64, overflow: 'wrap', meaning: { direction: 'rx', quantity: 'packets', scale: 1 } },
  // mlx5 optional counters (drivers/infiniband/hw/mlx5/counters.c packets_op_cnts, added in 2025 by
  // "RDMA/mlx5: Add optional counters for RDMA_TX/RX_packets/bytes"):
  // 64-bit flow counters of all RDMA packets/bytes per link, visible over netlink only after
  // `rdma statistic set link DEV/PORT optional-counters ...`. The byte count is the steering
  // flow counter's packet length, taken here as the Ethernet frame without FCS (l2); that
  // assumption needs checking on a ConnectX.
  rdma_tx_packets: { bits: 64, overflow: 'wrap', meaning: { direction: 'tx', quantity: 'packets', scale: 1 } },
  rdma_rx_packets: { bits: 64, overflow: 'wrap', meaning: { direction: 'rx', quantity: 'packets', scale: 1 } },
  rdma_tx_bytes: { bits: 64, overflow: 'wrap', meaning: { direction: 'tx', quantity: 'bytes', scale: 1, layer: 'l2' } },
  rdma_rx_bytes: { bits: 64, overflow: 'wrap', meaning: { direction: 'rx', quantity: 'bytes', scale: 1, layer: 'l2' } },
};

/** Spec for a counter name seen in a STAT_GET answer. */
export function netlinkCounterSpec(name: string): CounterSpec {
  const known = Object.hasOwn(KNOWN, name) ? KNOWN[name] : undefined;
  if (known === undefined) return { name, bits: 64, overflow: 'wrap', meaning: undefined };
  return { name, bits: known.bits, overflow: known.overflow, meaning: known.meaning };
}
