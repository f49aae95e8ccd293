/**
 * Child of reload-and-libs.test.ts: runs the daemon on the host's real /sys (so libibverbs is
 * tried) and prints what one scrape saw, as JSON on stdout. Run with LD_LIBRARY_PATH pointing
 * at a directory whose libibverbs.so.1 cannot be loaded.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Writable } from 'node:stream';
import { Daemon } from '../../src/exporter/daemon.js';
import { createLogger } from '../../src/log.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mfe-noverbs-'));
fs.writeFileSync(path.join(dir, 'config.yaml'), 'ports: [{ device: mlx5_0, port: 1, mtu: 4096 }]\nflows: []\n');
const logs: string[] = [];
const sink = new Writable({ write: (chunk, _enc, cb) => { logs.push(String(chunk)); cb(); } });
const daemon = new Daemon({
  configFile: path.join(dir, 'config.yaml'), listenAddress: '127.0.0.1:0', telemetryPath: '/metrics', sysfsRoot: '/sys',
  log: createLogger('info', 'logfmt', sink),
});
await daemon.start();
const res = await fetch(`http://127.0.0.1:${daemon.address().port}/metrics`);
const body = await res.text();
await daemon.stop();
fs.rmSync(dir, { recursive: true, force: true });
process.stdout.write(`${JSON.stringify({ status: res.status, logs: logs.join(''), up: /mxl_fabric_port_up\{device="mlx5_0",port="1"\} (\d)/.exec(body)?.[1] })}\n`);
