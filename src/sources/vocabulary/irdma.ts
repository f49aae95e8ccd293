/**
 * irdma (Intel E810/X722) hw counters, gen2 names.
 *
 * Names: `irdma_hw_stat_descs[]` in drivers/infiniband/hw/irdma/verbs.c, torvalds/linux at
 * 01798df19878e87718487046581ef6cdd114f2e0: the gen2 32-bit `cnpHandled`, `cnpIgnored`,
 * `cnpSent`, the 64-bit `RxECNMrkd`, and the IP-level `ip4InDiscards`/`ip6InDiscards` of the
 * RDMA engine (which say no more about why). The gen3 names proposed in 2025 ("RNR received",
 * "Nak Sequence Error", "RTO"...) contain blanks and are not mapped yet.
 */
import { type DriverTable, type VocabularyEntry, cnp, discard, ecnMarked, namesIn } from './types.js';

const C = 'drivers/infiniband/hw/irdma/verbs.c irdma_hw_stat_descs';

const entries: VocabularyEntry[] = namesIn(C, {
  cnpSent: cnp('sent'),
  cnpHandled: cnp('handled'),
  cnpIgnored: cnp('ignored'),
  RxECNMrkd: ecnMarked(),
  ip4InDiscards: discard('rx', 'unspecified'),
  ip6InDiscards: discard('rx', 'unspecified'),
});

export const IRDMA: DriverTable = {
  driver: 'irdma',
  counters: 'rdma',
  source: 'torvalds/linux 01798df19878e87718487046581ef6cdd114f2e0',
  entries,
};
