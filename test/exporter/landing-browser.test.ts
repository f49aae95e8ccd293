/**
 * The landing page in a real browser: Debian's Chromium, headless, driven by playwright-core
 * (which never downloads a browser). It checks what a person sees: the numbers, the colours of
 * drift and utilisation against tolerance and headroom, the units toggle, and that the page
 * reloads itself.
 *
 * The README's screenshot (docs/landing.png, also in docs/landing-page.md) is this page. It
 * carries the SHA-256 of the page's visible text as it was taken (a tEXt chunk), and a test here
 * fails when the page shows other text now; to take it again:
 *   UPDATE_SCREENSHOT=1 npx vitest run test/exporter/landing-browser.test.ts
 */
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startDaemon, type Running } from './harness.js';
import { needs, ROOT, tool } from '../deploy/tools.js';
import { addFlow, commit, makeDomain } from '../domain/mxl-domain.mjs';
import { FakeRestrackKernel } from '../sources/restrack/fake-kernel.js';
import { pngText, withPngText } from './png-text.js';

const browserBin = tool('chromium', 'chromium');

// The machine's closed network: no background connections, no component updates. Playwright
// adds --headless and a fresh temporary --user-data-dir itself.
const CHROMIUM_ARGS = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync',
];

const VIDEO = {
  id: '0a3e1c52-4f0e-4d8b-9d0c-6a1e2b3c4d61', label: 'Camera 3 video', format: 'urn:x-nmos:format:video',
  tags: { 'urn:x-nmos:tag:grouphint/v1.0': ['Camera 3:Video'] }, media_type: 'video/v210',
  grain_rate: { numerator: 25 }, frame_width: 1920, frame_height: 1080, interlace_mode: 'progressive',
};

const SCREENSHOT = join(ROOT, 'docs', 'landing.png');
const SCREENSHOT_KEY = 'mfe-page-text-sha256';

let run: Running;
let browser: Browser;
let page: Page;

/** The daemon and the page the tests read, once for the file. */
async function openPage(): Promise<void> {
  const domain = makeDomain();
  const video = addFlow(domain, VIDEO, { id: VIDEO.id, format: 1, rate: [25n, 1n], grainCount: 2, headIndex: 100n, lastWriteTime: 1n });
  // rxe0 on veth0 (10 Gb/s): tx carries the data flow exactly as predicted (drift 0, green);
  // rx carries 10 % more audio packets and bytes than predicted (drift +10 %, red). The domain
  // covers only Camera 3: a domain that covered the configured data flow without holding it would
  // show it absent and leave it out of the prediction.
  run = await startDaemon('rxe_6_1', `
sampling: { interval: 1s, window: 4s }
drift: { tolerance: 0.05 }
ports:
  - { device: rxe0, port: 1, provider: rdma_rocev2, mtu: auto, capacity: auto }
flows:
  - { flow: flows/data_60.json, device: rxe0, direction: tx }
  - { flow: flows/audio_2ch_48k.json, device: rxe0, direction: rx }
domains:
  - { path: ${domain}, device: rxe0, direction: tx, include: ["Camera 3:*"] }
`, undefined, () => ({ restrack: () => ({ ok: true, transport: new FakeRestrackKernel().transport() }) })); // the same picture on any host
  const c = { tx: 200n, txBytes: 13_420_822n, rx: 100n, rxBytes: 215_404n };
  for (let i = 1; i <= 3; i++) {
    // data: 60 packets, 249,240 l2 bytes; video at IB MTU 4096: 25 x 1350 packets of 4096 + 58.
    c.tx += 60n + 25n * 1350n;
    c.txBytes += 249_240n + 25n * 5_529_600n + 25n * 1350n * 58n;
    c.rx += 110n;
    c.rxBytes += (389_800n * 11n) / 10n;
    run.fx.setCounter('rxe0', 1, 'hw_counters', 'sent_pkts', c.tx);
    run.fx.setNetdevStat('veth0', 'tx_bytes', c.txBytes);
    run.fx.setCounter('rxe0', 1, 'hw_counters', 'rcvd_pkts', c.rx);
    run.fx.setNetdevStat('veth0', 'rx_bytes', c.rxBytes);
    commit(video, 100n + 25n * BigInt(i), 1n);
    await run.tick(1);
  }
  browser = await chromium.launch({ executablePath: browserBin.require(), headless: true, chromiumSandbox: false, args: CHROMIUM_ARGS });
  page = await browser.newPage({ viewport: { width: 1500, height: 900 } });
}

async function closePage(): Promise<void> {
  await browser?.close();
  await run?.stop();
}

/** The visible text of the cell under `header` in the first row whose first cells match. */
async function cellOf(tableId: string, header: string, rowMatch: (cells: string[]) => boolean): Promise<{ text: string; background: string; className: string }> {
  return page.evaluate(({ tableId, header, rowMatchSrc }) => {
    const table = document.getElementById(tableId)!;
    const headers = [...table.querySelectorAll('thead th')].map((th) => th.textContent);
    const col = headers.indexOf(header);
    const match = new Function('cells', `return (${rowMatchSrc})(cells)`) as (cells: string[]) => boolean;
    for (const tr of table.querySelectorAll('tbody tr')) {
      const cells = [...tr.querySelectorAll('td')] as HTMLElement[];
      if (match(cells.map((c) => c.innerText))) {
        const td = cells[col]!;
        return { text: td.innerText, background: getComputedStyle(td).backgroundColor, className: td.className };
      }
    }
    throw new Error(`no row in ${tableId}`);
  }, { tableId, header, rowMatchSrc: rowMatch.toString() });
}

const GREEN = 'rgb(223, 240, 216)';
const RED = 'rgb(248, 215, 218)';

needs(browserBin).describe('landing page in Chromium', () => {
  beforeAll(openPage, 60_000);
  afterAll(closePage);

  it('shows each port direction with capacity, utilisation, predicted against measured, drift coloured against the tolerance, and the source', async () => {
    await page.goto(`${run.base}/`);
    expect(await page.title()).toBe('MXL Fabric Exporter');
    const tx = (cells: string[]): boolean => cells[0]!.startsWith('rxe0/1') && cells[1] === 'tx';
    const rx = (cells: string[]): boolean => cells[0]!.startsWith('rxe0/1') && cells[1] === 'rx';
    expect((await cellOf('ports', 'state', tx)).text).toBe('ACTIVE');
    // In bits by default (broadcast engineers budget in Gb/s); ?units=bytes for bytes.
    expect((await cellOf('ports', 'capacity', tx)).text).toBe('10.000 Gb/s\n1.250 GB/s · link rate');
    expect((await cellOf('ports', 'port', tx)).text).toBe('rxe0/1\nveth0 · rdma_rocev2');
    // One predicted column, at the layer drift uses (netdev: l2), the wire rate on its last line.
    const headers = await page.locator('#ports thead th').allInnerTexts();
    expect(headers.filter((h) => h.startsWith('predicted'))).toEqual(['predicted']);
    expect(await page.locator('#ports thead th:text-is("predicted")').getAttribute('title')).toMatch(/layer drift compares with.*wire rate/);
    const util = await cellOf('ports', 'utilisation', tx);
    // (250,680 + 141,007,500) wire B/s of 1.25e9
    expect(util.text).toBe('11.30 %\nheadroom 90.00 %');
    expect(util.background).toBe(GREEN);

    const txDrift = await cellOf('ports', 'drift', tx);
    expect(txDrift.text).toBe('bytes +0.00 %\npackets +0.00 %\ntolerance ±5.00 %');
    expect(txDrift.background).toBe(GREEN);
    const rxDrift = await cellOf('ports', 'drift', rx);
    expect(rxDrift.text).toBe('bytes +10.00 %\npackets +10.00 %\ntolerance ±5.00 %');
    expect(rxDrift.background).toBe(RED);
    expect((await cellOf('ports', 'source', rx)).text).toBe('bytes: netdev (l2)\npackets: sysfs_hw_counters');
    // 389,800 l2 B/s = 3.1184 Mb/s; 392,200 wire B/s = 3.1376 Mb/s; measured +10 %: 428,780 B/s.
    expect((await cellOf('ports', 'predicted', rx)).text).toBe('3.118 Mb/s l2\n100 pkt/s\nwire 3.138 Mb/s');
    expect((await cellOf('ports', 'measured', rx)).text).toBe('3.430 Mb/s l2\n110 pkt/s');
  });

  it('shows per flow the prediction, and for a domain flow the measured grains and the writer', async () => {
    await page.goto(`${run.base}/`);
    const camera = (cells: string[]): boolean => cells[0]!.startsWith('Camera 3 video');
    expect((await cellOf('flows', 'bound to', camera)).text).toBe('rxe0/1 tx\ndomain · rdma_rocev2');
    expect((await cellOf('flows', 'grain rate', camera)).text).toBe('25/1\n25/s');
    expect((await cellOf('flows', 'predicted', camera)).text).toBe('1.128 Gb/s wire\n33.750 kpkt/s');
    const grains = await cellOf('flows', 'measured grains', camera);
    expect(grains.text).toBe('25 grains/s\ndrift +0.00 %');
    expect(grains.background).toBe(GREEN);
    expect((await cellOf('flows', 'writer', camera)).text).toBe('no');
    const anc = (cells: string[]): boolean => cells[0]!.startsWith('Camera 1 ANC');
    expect((await cellOf('flows', 'measured grains', anc)).text).toBe('—');
    // state: the domain shows the video moving; the ANC flow no domain covers is trusted (always)
    const live = await cellOf('flows', 'state', camera);
    expect(live.text).toBe('live\nexpect when_live');
    expect(live.background).toBe(GREEN);
    expect((await cellOf('flows', 'state', anc)).text).toBe('unknown\nexpect always');
  });

  it('shows bits by default, switches to bytes per second and back with the toggle', async () => {
    await page.goto(`${run.base}/`);
    expect(await page.locator('nav .units a.current').innerText()).toBe('bits');
    await page.click('nav .units a:text-is("bytes")');
    await page.waitForURL(/\?units=bytes$/);
    const tx = (cells: string[]): boolean => cells[0]!.startsWith('rxe0/1') && cells[1] === 'tx';
    const rx = (cells: string[]): boolean => cells[0]!.startsWith('rxe0/1') && cells[1] === 'rx';
    expect((await cellOf('ports', 'capacity', tx)).text).toBe('1.250 GB/s\n10.000 Gb/s · link rate');
    expect((await cellOf('ports', 'predicted', rx)).text).toBe('389.800 kB/s l2\n100 pkt/s\nwire 392.200 kB/s');
    expect(await page.locator('nav .units a.current').innerText()).toBe('bytes');
    await page.click('nav .units a:text-is("bits")');
    await page.waitForURL(/\?units=bits$/);
    expect((await cellOf('ports', 'capacity', tx)).text).toMatch(/^10\.000 Gb\/s/);
  });

  it('reloads itself every sampling interval (at least 2 s), keeping the units', async () => {
    await page.goto(`${run.base}/?units=bits`);
    expect(await page.locator('meta[http-equiv="refresh"]').getAttribute('content')).toBe('2');
    const first = await page.locator('#updated').innerText();
    await page.waitForFunction((t) => document.getElementById('updated')?.textContent !== t, first, { timeout: 8000 });
    expect(page.url()).toMatch(/\?units=bits$/);
  });

  it("is what docs/landing.png shows (the README's picture): its visible text has not changed since it was taken", async () => {
    await page.setViewportSize({ width: 1300, height: 560 });
    await page.goto(`${run.base}/`);
    // What changes from run to run: the config's temporary folder and the time of the last sample.
    const text = (await page.locator('body').innerText())
      .replace(/\/tmp\/mfe-daemon-\w+\//g, '/tmp/mfe-daemon-X/').replace(/updated \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/g, 'updated T');
    const sha = createHash('sha256').update(text).digest('hex');
    if (process.env.UPDATE_SCREENSHOT === '1') writeFileSync(SCREENSHOT, withPngText(await page.screenshot({ fullPage: true }), SCREENSHOT_KEY, sha));
    const shown = pngText(readFileSync(SCREENSHOT), SCREENSHOT_KEY);
    expect(shown, `docs/landing.png shows another page than this one; take it again: UPDATE_SCREENSHOT=1 npx vitest run test/exporter/landing-browser.test.ts\nThe page now:\n${text}`).toBe(sha);
  });
});
