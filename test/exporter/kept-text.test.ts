/**
 * The per-flow text is kept gzipped only: once compressed its text is let go, and a scrape
 * without gzip gets the same bytes again from the compressed chunks.
 */
import { describe, it, expect, afterEach } from 'vitest';
import { request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { startDaemon, stopDaemons, type Running } from './harness.js';

const CONFIG = `
ports:
  - { device: rxe0, port: 1, mtu: 4200 }
flows:
  - { flow: flows/data_60.json, device: rxe0, direction: tx }
  - { flow: flows/audio_2ch_48k.json, device: rxe0, direction: rx }
  - { flow: flows/v210_1080p2997.json, device: rxe0, direction: tx }
`;

let run: Running | undefined;
afterEach(stopDaemons);

/** One scrape, as bytes; `gzip` asks for it as Prometheus does. */
function scrape(base: string, gzip: boolean): Promise<{ encoding: string | undefined; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}/metrics`, { headers: { 'accept-encoding': gzip ? 'gzip' : 'identity' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ encoding: res.headers['content-encoding'], body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

interface Kept { text: Promise<Buffer[]> | undefined; gzip: unknown }

describe('kept exposition text', () => {
  it('serves the same text with and without gzip after the per-flow text was let go', async () => {
    run = await startDaemon('rxe_6_1', CONFIG);
    await run.tick();
    await run.daemon.settled();
    const zipped = await scrape(run.base, true);
    expect(zipped.encoding).toBe('gzip');
    const metrics = (run.daemon as unknown as { metrics: { planText: Kept } }).metrics;
    // Let the gzip's follow-up (dropping the text) run.
    await new Promise((r) => setImmediate(r));
    expect(metrics.planText.gzip).toBeDefined();
    expect(metrics.planText.text).toBeUndefined();
    const plain = await scrape(run.base, false);
    expect(plain.encoding).toBeUndefined();
    const text = plain.body.toString('utf8');
    expect(gunzipSync(zipped.body).toString('utf8')).toBe(text);
    // The per-flow families are in it, whole.
    expect(text).toMatch(/^mxl_fabric_flow_info\{flow_id="[^"]+",label=.* 1$/m);
    expect(text.match(/^mxl_fabric_flow_predicted_packets_per_second\{/gm)).toHaveLength(3);
    expect(text.endsWith('\n')).toBe(true);
  });
});
