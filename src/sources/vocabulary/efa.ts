/**
 * EFA (AWS Elastic Fabric Adapter) hw counters: of its documented port statistics only
 * `rx_drops` belongs to fabric health. Names: `EFA_DEFINE_PORT_STATS` in
 * drivers/infiniband/hw/efa/efa_verbs.c (torvalds/linux, stored versions since 2021).
 */
import { type DriverTable, discard } from './types.js';

export const EFA: DriverTable = {
  driver: 'efa',
  counters: 'rdma',
  source: 'torvalds/linux, efa_verbs.c as stored (EFA_DEFINE_PORT_STATS)',
  entries: [{ name: 'rx_drops', meaning: discard('rx', 'unspecified'), from: 'drivers/infiniband/hw/efa/efa_verbs.c EFA_DEFINE_PORT_STATS' }],
};
