/**
 * Child of soak.test.ts: the real daemon on a fixture sysfs tree with the real clock, counters
 * advancing as if traffic flowed. Prints {"port": N} once listening; stops on SIGTERM.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Daemon } from '../../src/exporter/daemon.js';
import { createLogger } from '../../src/log.js';

const [configFile, sysfsRoot] = process.argv.slice(2) as [string, string];
const daemon = new Daemon({
  configFile, listenAddress: '127.0.0.1:0', telemetryPath: '/metrics', sysfsRoot, log: createLogger('warn', 'logfmt'),
});
try {
  await daemon.start();
} catch (e) {
  // A daemon that did not start holds threads and timers: stop it, so the soak fails now.
  process.stderr.write(`daemon did not start: ${e instanceof Error ? e.message : String(e)}\n`);
  await daemon.stop();
  process.exit(2);
}
const counters = path.join(sysfsRoot, 'class', 'infiniband', 'mlx5_0', 'ports', '1', 'counters');
let n = 1_000_000n;
const traffic = setInterval(() => {
  n += 1_000_000n;
  for (const f of ['port_xmit_data', 'port_rcv_data', 'port_xmit_packets', 'port_rcv_packets']) fs.writeFileSync(path.join(counters, f), `${n}\n`);
}, 250);
process.stdout.write(`${JSON.stringify({ port: daemon.address().port, pid: process.pid })}\n`);
process.once('SIGTERM', () => {
  clearInterval(traffic);
  void daemon.stop().then(() => process.exit(0));
});
