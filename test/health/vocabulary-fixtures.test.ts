/**
 * Every fixture tree exports the fabric-health vocabulary with exact values, and every counter
 * the vocabulary does not know stays a raw series (nothing is dropped).
 */
import { describe, expect, it } from 'vitest';
import * as path from 'node:path';
import { FIXTURES_DIR, type FixtureName } from '../fixtures/sysfs.js';
import { Sampler } from '../../src/sampler/sampler.js';
import { selectSources } from '../../src/sources/select.js';
import { healthSeries } from '../../src/health/vocabulary-series.js';

/** One tick over a fixture tree: per port, "family{labels} counter=value" lines, and the raw names left. */
function vocabularyOf(name: FixtureName): { health: Record<string, string[]>; raw: Record<string, string[]> } {
  const m = selectSources({ sysfsRoot: path.join(FIXTURES_DIR, name) });
  const sampler = new Sampler({ inventory: m.inventory, sources: m.sources, intervalMs: 1000, windowMs: 10_000, reads: 'direct' });
  sampler.tick();
  const health: Record<string, string[]> = {};
  const raw: Record<string, string[]> = {};
  for (const [key, port] of sampler.ports) {
    const series = healthSeries(port);
    health[key] = series.map((s) => `${s.family}${JSON.stringify(s.labels)} ${s.counter}=${s.value}`).sort();
    const mapped = new Set(series.map((s) => s.counter));
    raw[key] = port.counters.filter((c) => c.source === 'sysfs_hw_counters' && !mapped.has(c.series.spec.name)).map((c) => c.series.spec.name);
  }
  sampler.stop();
  return { health, raw };
}

describe('fabric-health vocabulary on the fixture trees (exact values)', () => {
  it('mlx5_roce: congestion counters, retransmissions, no-WQE drops', () => {
    const { health, raw } = vocabularyOf('mlx5_roce');
    expect(health['mlx5_0/1']).toEqual([
      'cnp_handled{} rp_cnp_handled=5123456789',
      'cnp_ignored{} rp_cnp_ignored=0',
      'cnp_sent{} np_cnp_sent=5123455000',
      'discards{"direction":"rx","reason":"no_receive_wqe"} out_of_buffer=0',
      'ecn_marked_packets{} np_ecn_marked_roce_packets=5123456000',
      'transport_errors{"kind":"duplicate_request"} duplicate_request=41',
      'transport_errors{"kind":"implied_nak"} implied_nak_seq_err=0',
      'transport_errors{"kind":"local_ack_timeout"} local_ack_timeout_err=131',
      'transport_errors{"kind":"out_of_sequence"} out_of_sequence=1',
      'transport_errors{"kind":"packet_seq_err"} packet_seq_err=1',
      'transport_errors{"kind":"retries_exceeded"} req_transport_retries_exceeded=0',
      'transport_errors{"kind":"rnr_nak"} rnr_nak_retry_err=0',
      'transport_errors{"kind":"rnr_retries_exceeded"} req_rnr_retries_exceeded=0',
    ]);
    expect(raw['mlx5_0/1']).toContain('roce_adp_retrans');
    expect(raw['mlx5_0/1']).toContain('rx_write_requests');
  });

  it('mlx5_switchdev: the vport_ names of newer kernels mean the same; the uplink reads zeros', () => {
    const { health } = vocabularyOf('mlx5_switchdev');
    expect(health['mlx5_0/2']).toEqual([
      'discards{"direction":"rx","reason":"no_receive_wqe"} vport_out_of_buffer=7',
      'transport_errors{"kind":"duplicate_request"} vport_duplicate_request=3',
      'transport_errors{"kind":"implied_nak"} vport_implied_nak_seq_err=1',
      'transport_errors{"kind":"local_ack_timeout"} vport_local_ack_timeout_err=5',
      'transport_errors{"kind":"out_of_sequence"} vport_out_of_sequence=2',
      'transport_errors{"kind":"packet_seq_err"} vport_packet_seq_err=4',
      'transport_errors{"kind":"retries_exceeded"} vport_req_transport_retries_exceeded=0',
      'transport_errors{"kind":"rnr_nak"} vport_rnr_nak_retry_err=6',
      'transport_errors{"kind":"rnr_retries_exceeded"} vport_req_rnr_retries_exceeded=1',
    ]);
    expect(health['mlx5_0/1']!.every((l) => l.endsWith('=0'))).toBe(true);
    expect(health['mlx5_0/1']).toHaveLength(9);
  });

  it('bnxt_re (older kernel, no extended counters): retransmissions and RoCE discards only', () => {
    const { health } = vocabularyOf('bnxt_re');
    expect(health['bnxt_re0/1']).toEqual([
      'discards{"direction":"rx","reason":"no_receive_wqe"} rx_out_of_buffer=0',
      'discards{"direction":"rx","reason":"unspecified"} rx_roce_discards=0',
      'transport_errors{"kind":"duplicate_request"} dup_req=0',
      'transport_errors{"kind":"implied_nak"} missing_resp=0',
      'transport_errors{"kind":"local_ack_timeout"} to_retransmits=0',
      'transport_errors{"kind":"out_of_sequence"} oos_drop_count=0',
      'transport_errors{"kind":"packet_seq_err"} seq_err_naks_rcvd=0',
      'transport_errors{"kind":"retries_exceeded"} max_retry_exceeded=0',
      'transport_errors{"kind":"rnr_nak"} rnr_naks_rcvd=0',
    ]);
  });

  const BNXT_EXPECTED = (names: Record<string, string>): string[] => [
    `cnp_handled{} ${names.cnpHandled}=2210`,
    `cnp_sent{} ${names.cnpSent}=3301`,
    `discards{"direction":"rx","reason":"no_receive_wqe"} ${names.oob}=4`,
    'discards{"direction":"rx","reason":"unspecified"} rx_roce_discards=12',
    'discards{"direction":"tx","reason":"unspecified"} tx_roce_discards=3',
    `ecn_marked_packets{} ${names.ecn}=3305`,
    `transport_errors{"kind":"duplicate_request"} ${names.dup}=9`,
    `transport_errors{"kind":"implied_nak"} ${names.implied}=2`,
    `transport_errors{"kind":"local_ack_timeout"} ${names.timeout}=41`,
    `transport_errors{"kind":"out_of_sequence"} ${names.oos}=11`,
    `transport_errors{"kind":"packet_seq_err"} ${names.seq}=7`,
    'transport_errors{"kind":"retries_exceeded"} max_retry_exceeded=1',
    `transport_errors{"kind":"rnr_nak"} ${names.rnr}=5`,
  ];

  it('bnxt_re_legacy: legacy names with CNP and ECN', () => {
    expect(vocabularyOf('bnxt_re_legacy').health['bnxt_re0/1']).toEqual(BNXT_EXPECTED({
      cnpHandled: 'rx_cnp_pkts', cnpSent: 'tx_cnp_pkts', oob: 'rx_out_of_buffer', ecn: 'rx_ecn_marked_pkts', dup: 'dup_req',
      implied: 'missing_resp', timeout: 'to_retransmits', oos: 'oos_drop_count', seq: 'seq_err_naks_rcvd', rnr: 'rnr_naks_rcvd',
    }));
  });

  it('bnxt_re_renamed: the 2025 mlx5-compatible names give the same values', () => {
    expect(vocabularyOf('bnxt_re_renamed').health['bnxt_re0/1']).toEqual(BNXT_EXPECTED({
      cnpHandled: 'rp_cnp_handled', cnpSent: 'np_cnp_pkts', oob: 'out_of_buffer', ecn: 'np_ecn_marked_roce_packets', dup: 'duplicate_request',
      implied: 'implied_nak_seq_err', timeout: 'local_ack_timeout_err', oos: 'out_of_sequence', seq: 'packet_seq_err', rnr: 'rnr_nak_retry_err',
    }));
  });

  it('irdma: gen2 CNP/ECN names and IP-level discards', () => {
    const { health, raw } = vocabularyOf('irdma');
    expect(health['irdma0/1']).toEqual([
      'cnp_handled{} cnpHandled=880',
      'cnp_ignored{} cnpIgnored=0',
      'cnp_sent{} cnpSent=912',
      'discards{"direction":"rx","reason":"unspecified"} ip4InDiscards=17',
      'discards{"direction":"rx","reason":"unspecified"} ip6InDiscards=2',
      'ecn_marked_packets{} RxECNMrkd=915',
    ]);
    expect(raw['irdma0/1']).toHaveLength(46 - 6);
  });

  it('rxe_6_1: soft-RoCE transport counters; the rest stay raw', () => {
    const { health, raw } = vocabularyOf('rxe_6_1');
    expect(health['rxe0/1']).toEqual([
      'transport_errors{"kind":"duplicate_request"} duplicate_request=0',
      'transport_errors{"kind":"out_of_sequence"} out_of_seq_request=0',
      'transport_errors{"kind":"packet_seq_err"} rcvd_seq_err=0',
      'transport_errors{"kind":"retries_exceeded"} retry_exceeded_err=0',
      'transport_errors{"kind":"rnr_nak"} rcvd_rnr_err=0',
      'transport_errors{"kind":"rnr_retries_exceeded"} retry_rnr_exceeded_err=0',
    ]);
    expect(raw['rxe0/1']!.sort()).toEqual(['ack_deferred', 'completer_retry_err', 'link_downed', 'rcvd_pkts', 'rdma_recvs', 'rdma_sends', 'send_err', 'send_rnr_err', 'sent_pkts']);
  });
});
