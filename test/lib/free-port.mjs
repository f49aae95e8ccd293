/**
 * A TCP port on 127.0.0.1 that was free a moment ago: the one freePort() of the test helpers,
 * plain JavaScript so that scripts run by node (test/container, test/rxe, bench) import it as the
 * vitest tests do (through test/deploy/tools.ts).
 */
import { createServer } from 'node:net';

/** @returns {Promise<number>} */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}
