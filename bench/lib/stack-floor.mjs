/**
 * The stack floor: Node.js with the packages the exporter cannot run without loaded (express,
 * prom-client, pino, yaml, and koffi with its native module), nothing else created or run.
 * bench/run.mjs forks it with the exporter's Node flags and reads its RSS from /proc the way it
 * reads the daemon's: what the exporter adds is the daemon's RSS minus this.
 */
import { createRequire } from 'node:module';

const require = createRequire(new URL('../../package.json', import.meta.url));
for (const name of ['express', 'prom-client', 'pino', 'yaml']) await import(require.resolve(name));
require('koffi'); // loads its native module, as src/ffi/libc.ts does
setInterval(() => undefined, 1000);
process.send({ type: 'ready' });
process.on('message', (m) => {
  if (m.cmd === 'stop') process.exit(0);
});
