/**
 * irdma (Intel E810/X722) hw counters, gen2 names.
 *
 * Names: `irdma_hw_stat_descs[]` in drivers/infiniband/hw/irdma/verbs.c, torvalds/linux at
 * 01798df19878e87718487046581ef6cdd114f2e0: the gen2 32-bit `cnpHandled`, `cnpIgnored`,
 * `cnpSent`, the 64-bit `RxECNMrkd`, and the IP-level `ip4InDiscards`/`ip6InDiscards` of the
 * RDMA engine (which say no more about why). The gen3 names proposed in 2025 ("RNR received",
 * "Nak Sequence Error", "RTO"...) contain blanks and are not mapped yet.
 */
import { type DriverTable, cnp, discard, ecnMarked } from './types.js';

const C = 'drivers/infiniband/hw/irdma/verbs.c irdma_hw_stat_descs';

export const IRDMA: DriverTable = {
  driver: 'irdma',
  counters: 'rdma',
  source: 'torvalds/linux 01798df19878e87718487046581ef6cdd114f2e0',
  entries: [
    { name: 'cnpSent', meaning: cnp('sent'), from: C },
    { name: 'cnpHandled', meaning: cnp('handled'), from: C },
    { name: 'cnpIgnored', meaning: cnp('ignored'), from: C },
    { name: 'RxECNMrkd', meaning: ecnMarked(), from: C },
    { name: 'ip4InDiscards', meaning: discard('rx', 'unspecified'), from: C },
    { name: 'ip6InDiscards', meaning: discard('rx', 'unspecified'), from: C },
  ],
};
