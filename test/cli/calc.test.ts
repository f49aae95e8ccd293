import { describe, it, expect } from 'vitest';
import { join } from 'node:path';
import { runCalc } from '../../src/cli/calc.js';

const flows = join(__dirname, '../fixtures/flows');
function run(...argv: string[]): { code: number; out: string; err: string } {
  let out = '';
  let err = '';
  const code = runCalc(argv, { stdout: (t) => void (out += t), stderr: (t) => void (err += t) });
  return { code, out, err };
}

describe('calc', () => {
  it('reproduces the seed v210 example from flags as JSON', () => {
    const r = run('--media-type', 'video/v210', '--width', '1920', '--height', '1080', '--rate', '25', '--output', 'json', '--provider', 'rdma_rocev2');
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toEqual([
      {
        flowId: '00000000-0000-0000-0000-000000000000', label: 'video/v210 1920x1080p25', mediaType: 'video/v210',
        provider: 'rdma_rocev2', mtu: 4096, payloadPerPacket: 4052, payloadBytesPerEvent: 5529600, writeBytesPerEvent: 5529600,
        eventsPerSecond: 25, eventRate: '25/1', packetsPerEvent: 1365, packetsPerSecond: 34125, mediaBytesPerSecond: 138240000,
        overheadBytesPerSecond: 2798250, wireBytesPerSecond: 141038250,
        bytesPerSecond: { media: 138240000, payload: 138240000, l3: 138240000 + 34125 * 44, l2: 138240000 + 34125 * 58, wire: 141038250 },
        writesPerEvent: 1, expectedPacketsPerEvent: 1365, writes: [{ bytes: 5529600, immediate: true, entries: 1 }],
        ack: { acksPerEvent: 0, packetsPerSecond: 0, bytesPerSecond: { l3: 0, l2: 0, wire: 0 } },
      },
    ]);
  });

  it('reproduces the seed audio example with --ptime', () => {
    const r = run('--media-type', 'audio/float32', '--channels', '2', '--sample-rate', '48000', '--ptime', '10ms', '--output', 'json', '--provider', 'rdma_rocev2');
    const [o] = JSON.parse(r.out) as Record<string, unknown>[];
    expect(o).toMatchObject({ payloadBytesPerEvent: 3840, packetsPerSecond: 100, wireBytesPerSecond: 392200, eventRate: '100/1' });
  });

  it('reads flow files and prints one row each in a table', () => {
    const r = run(join(flows, 'v210_1080p2997.json'), join(flows, 'data_60.json'), '--provider', 'rdma_rocev2');
    expect(r.code).toBe(0);
    const lines = r.out.trimEnd().split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(/^flow\s+media type\s+provider\s+mtu\s+bytes\/grain\s+grains\/s/);
    expect(lines[2]).toContain('30000/1001 (29.97)');
    expect(lines[2]).toMatch(/1,365\s+40,909\.091\s+165\.722 MB\/s\s+3\.355 MB\/s\s+169\.077 MB\/s\s+0$/);
    expect(lines[3]).toMatch(/Camera 1 ANC\s+video\/smpte291\s+rdma_rocev2\s+4096\s+4,096\s+60\s+1\s+2\s+120\s+245\.760 kB\/s\s+9\.840 kB\/s\s+255\.600 kB\/s\s+0$/);
  });

  it('prints CSV with a header and the ib-mtu L3 budget', () => {
    const r = run(join(flows, 'data_60.json'), '--ib-mtu', '4096', '--output', 'csv', '--provider', 'rdma_rocev2');
    const [header, row] = r.out.trimEnd().split('\n');
    expect(header!.split(',')).toContain('wireBytesPerSecond');
    expect(row).toBe('0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d05,Camera 1 ANC,video/smpte291,rdma_rocev2,4140,4096,4096,4096,60,60/1,1,60,245760,4920,250680,245760,245760,248400,249240,250680,1,1,,,,,,,,,,,,0,0,0,0,0');
  });

  it('names its CSV columns as the JSON fields, dotted, and gives the same values (both ways)', () => {
    const inputs = [join(flows, 'data_60.json'), join(flows, 'audio_2ch_48k.json'), join(flows, 'v210_1080p2997.json')];
    const json = JSON.parse(run(...inputs, '--output', 'json').out) as Record<string, unknown>[];
    const [header, ...rows] = run(...inputs, '--output', 'csv').out.trimEnd().split('\n');
    const columns = header!.split(',');
    /** Every scalar of a JSON object by its dotted path; arrays (the write lists) have no column. */
    const leaves = (o: Record<string, unknown>, at = ''): [string, unknown][] => Object.entries(o).flatMap(([k, v]): [string, unknown][] =>
      Array.isArray(v) ? [] : v !== null && typeof v === 'object' ? leaves(v as Record<string, unknown>, `${at}${k}.`) : [[`${at}${k}`, v]]);
    json.forEach((flow, i) => {
      const cells = rows[i]!.split(','); // no label here has a comma
      const byColumn = new Map(columns.map((c, k) => [c, cells[k]]));
      const fields = new Map(leaves(flow));
      for (const [path, value] of fields) expect(byColumn.get(path), `${path}: a JSON field without its CSV column`).toBe(String(value));
      for (const c of columns) if (byColumn.get(c) !== '') expect(fields.has(c), `${c}: a CSV column that is no JSON field`).toBe(true);
    });
  });

  it('gives MXL\'s audio writes per batch with rdma_rocev2_mxl_v1 at IB MTU 4096 (issue 12)', () => {
    const batch = (channels: number): Record<string, unknown> => {
      const r = run('--provider', 'rdma_rocev2_mxl_v1', '--ib-mtu', '4096', '--media-type', 'audio/float32', '--channels', String(channels), '--output', 'json');
      expect(r.code).toBe(0);
      return (JSON.parse(r.out) as Record<string, unknown>[])[0]!;
    };
    const bytes = (o: Record<string, unknown>): number[] => (o.writes as { bytes: number }[]).map((w) => w.bytes);
    const eight = batch(8);
    expect(bytes(eight)).toEqual([5776, 7680, 1920]);
    expect(eight).toMatchObject({ packetsPerEvent: 5, packetsPerSecond: 500, expectedPacketsPerEvent: 5 });
    expect(eight.ring).toMatchObject({ lengthSamples: 19456, from: 'default', phase: 'unknown', wrapsPerBatch: '479/19456' });
    expect(eight.audio).toEqual({ channels: 8, samplesPerBatch: 480, sampleBytes: 4, headerBytes: 16, txIovLimit: 4, ringLengthSamples: 19456 });
    expect(eight.writesPerEvent).toBeCloseTo(3 + (2 * 479) / 19456, 12);
    const sixteen = batch(16);
    expect(bytes(sixteen)).toEqual([5776, 7680, 7680, 7680, 1920]);
    expect(sixteen.packetsPerEvent).toBe(9);
    const two = batch(2);
    expect(bytes(two)).toEqual([3856]);
    expect(two.packetsPerEvent).toBe(1);
    // 479 of 19,456 ring positions wrap into 2 writes, 2 packets: 100 x (1 + 479/19456) packets/s.
    expect(two.packetsPerSecond).toBeCloseTo((100 * 19935) / 19456, 9);
    const table = run('--provider', 'rdma_rocev2_mxl_v1', '--ib-mtu', '4096', '--media-type', 'audio/float32', '--channels', '8').out.split('\n')[2];
    expect(table).toMatch(/15,376\s+100\s+3\.049\s+5\s+500\s+1\.536 MB\/s\s+47\.879 kB\/s\s+1\.584 MB\/s\s+304\.924$/);
  });

  it('exits 2 with the flag named on invalid input', () => {
    const r = run('--media-type', 'video/v210', '--width', '9000', '--height', '1080', '--rate', '25');
    expect(r.code).toBe(2);
    expect(r.err).toBe('calc: --width: 9000 is out of range 2..7680\n');
    expect(run('--media-type', 'audio/float32', '--sample-rate', '44100', '--ptime', '1ms').err).toMatch(
      /^calc: grain duration 1ms at 44100 Hz is 44\.1 samples, not a whole number \(within 0\.001 of a sample\); durations that work: 997\.732us \(44 samples\)/,
    );
    expect(run('--media-type', 'video/v210', '--width', '1920', '--height', '1080', '--rate', '25', '--ib-mtu', '9000').err).toMatch(/IB MTU must be one of/);
    expect(run(join(flows, 'bad_many.json')).code).toBe(2);
    expect(run('--provider', 'nope', '--media-type', 'video/smpte291', '--rate', '60').err).toContain('unknown --provider "nope"; known: rdma_rocev2, rdma_rocev2_mxl_v1');
    expect(run('--bogus').code).toBe(2);
  });
});

describe('calc flags', () => {
  it('maps a decimal broadcast rate to its exact rational and says so (59.94 was refused)', () => {
    const r = run('--media-type', 'video/v210', '--width', '1920', '--height', '1080', '--rate', '59.94');
    expect(r.code).toBe(0);
    expect(r.out).toContain('60000/1001 (59.94)');
    expect(r.err).toBe('calc: note: --rate 59.94 is taken as 60000/1001 (60 x 1000/1001), the broadcast rate it names; write 2997/50 for exactly 59.94\n');
    const j = run('--media-type', 'video/smpte291', '--rate', '29.97', '--output', 'json');
    expect((JSON.parse(j.out) as { eventRate: string }[])[0]!.eventRate).toBe('30000/1001');
    expect(run('--media-type', 'video/smpte291', '--rate', '25', '--output', 'json').err).toBe('');
  });

  it('labels interlaced flows with an i and the field rate, progressive ones with a p', () => {
    const i = run('--media-type', 'video/v210', '--width', '1920', '--height', '1080', '--rate', '30000/1001', '--interlace', 'interlaced_tff', '--output', 'json');
    expect((JSON.parse(i.out) as { label: string }[])[0]!.label).toBe('video/v210 1920x1080i59.94');
    const p = run('--media-type', 'video/v210', '--width', '1280', '--height', '720', '--rate', '50', '--output', 'json');
    expect((JSON.parse(p.out) as { label: string }[])[0]!.label).toBe('video/v210 1280x720p50');
  });

  it('a rate of 1/0 is a rate error, not "0 is out of range"', () => {
    const r = run('--media-type', 'video/smpte291', '--rate', '1/0');
    expect(r.code).toBe(2);
    expect(r.err).toBe('calc: --rate: "1/0": the denominator must be above zero (examples: 30000/1001, 25)\n');
  });

  it('--ptime 10 exits 2 naming the unit (it meant 10 seconds before)', () => {
    const r = run('--media-type', 'audio/float32', '--ptime', '10');
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/^calc: --ptime: "10" needs a unit: 10ms or 10s\?/);
  });

  it('lists all four media types when one is unknown', () => {
    const r = run('--media-type', 'video/h264');
    expect(r.code).toBe(2);
    expect(r.err).toContain('--media-type must be one of video/v210, video/v210a, audio/float32, video/smpte291; got "video/h264"');
  });

  it('refuses flags that do not apply, instead of ignoring them', () => {
    expect(run('--media-type', 'audio/float32', '--width', '1920').err).toBe(
      'calc: --width does not apply to audio/float32 (audio flows take --channels, --sample-rate, --bit-depth)\n');
    expect(run('--media-type', 'video/smpte291', '--rate', '60', '--channels', '2', '--interlace', 'progressive').err).toBe(
      'calc: --interlace, --channels do not apply to video/smpte291 (data flows take --rate)\n');
    expect(run(join(flows, 'data_60.json'), '--height', '1080').err).toBe(
      'calc: --height describes a flow given by flags: add --media-type (flow files carry their own fields)\n');
    expect(run(join(flows, 'data_60.json'), '--ptime', '1ms').err).toBe('calc: --ptime is the grain duration of audio flows, and none is given\n');
    expect(run(join(flows, 'audio_2ch_48k.json'), '--ptime', '1ms').code).toBe(0);
  });

  it('says unknown flags itself, with the closest known one', () => {
    const r = run('--rat', '25');
    expect(r.code).toBe(2);
    expect(r.err).toBe('calc: unknown flag --rat; did you mean --rate?\nRun "mxl-fabric-exporter calc --help" for its flags.\n');
    expect(run('--bogus').err).toMatch(/^calc: unknown flag --bogus\n/);
    expect(run('--output', 'yaml', join(flows, 'data_60.json')).err).toMatch(/^calc: --output must be one of table, json, csv; got "yaml"/);
    expect(run('--bit-depth', '24', '--media-type', 'audio/float32').err).toMatch(/^calc: --bit-depth must be one of 32, 64; got "24"/);
  });

  it('--units bits shows the table in bits per second; with --output json or csv it is refused (their fields are bytes/s), exit 2', () => {
    const bits = run(join(flows, 'v210_1080p2997.json'), '--units', 'bits', '--provider', 'rdma_rocev2');
    expect(bits.out.split('\n')[2]).toMatch(/1\.326 Gb\/s\s+26\.836 Mb\/s\s+1\.353 Gb\/s\s+0$/);
    for (const output of ['json', 'csv']) {
      const r = run(join(flows, 'v210_1080p2997.json'), '--units', 'bits', '--output', output);
      expect(r.code).toBe(2);
      expect(r.out).toBe('');
      expect(r.err).toBe(`calc: --units applies to the table only; --output ${output} gives every rate in bytes per second (fields named ...BytesPerSecond)\n`);
    }
    const json = run(join(flows, 'v210_1080p2997.json'), '--units', 'bytes', '--output', 'json', '--provider', 'rdma_rocev2');
    expect((JSON.parse(json.out) as { wireBytesPerSecond: number }[])[0]!.wireBytesPerSecond).toBeCloseTo(169_077_000, -3);
  });

  it('the default profile is rdma_rocev2_mxl_v1 (what MXL sends), named in the table, JSON and CSV; rdma_rocev2 only by name', () => {
    const audio = ['--media-type', 'audio/float32', '--channels', '16', '--ptime', '1ms'];
    const table = run(...audio);
    expect(table.code).toBe(0);
    expect(table.out.split('\n')[2]).toMatch(/\srdma_rocev2_mxl_v1\s/);
    const def = (JSON.parse(run(...audio, '--output', 'json').out) as { provider: string; packetsPerSecond: number; bytesPerSecond: { wire: number } }[])[0]!;
    expect(def.provider).toBe('rdma_rocev2_mxl_v1');
    // docs/model.md: 16-channel 48 kHz audio at 1 ms, 28.664 Mb/s and 5,010 pkt/s (seed: 25.232 Mb/s, 1,000 pkt/s).
    expect(def.packetsPerSecond).toBeCloseTo(5010, 0);
    expect(def.bytesPerSecond.wire * 8 / 1e6).toBeCloseTo(28.664, 3);
    const seed = (JSON.parse(run(...audio, '--output', 'json', '--provider', 'rdma_rocev2').out) as { packetsPerSecond: number; bytesPerSecond: { wire: number } }[])[0]!;
    expect(seed.packetsPerSecond).toBe(1000);
    expect(seed.bytesPerSecond.wire * 8 / 1e6).toBeCloseTo(25.232, 3);
    const csvRow = run(...audio, '--output', 'csv').out.split('\n')[1]!;
    expect(csvRow.split(',')[3]).toBe('rdma_rocev2_mxl_v1');
    expect(run('--help').out).toMatch(/--provider=PROVIDER\n\s+provider profile .*\(default: rdma_rocev2_mxl_v1\)/);
  });
});
