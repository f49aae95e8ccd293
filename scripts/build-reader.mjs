#!/usr/bin/env node
/**
 * Builds native/build/libmfe-reader.so (make -C native reader), the exporter's bounded read
 * primitive. Without a C compiler the exporter still runs, reading on the event loop with no
 * timeout (it logs that and exports mxl_fabric_exporter_reads_bounded 0), so a failed build is a
 * warning here; with CI set it is an error, as the tests need the library.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const native = fileURLToPath(new URL('../native', import.meta.url));
const r = spawnSync('make', ['-s', '-C', native, 'reader'], { stdio: 'inherit' });
if (r.status !== 0) {
  const why = r.error ? r.error.message : `make exited with ${r.status}`;
  console.error(`warning: native/build/libmfe-reader.so was not built (${why}); reads will run on the event loop with no timeout`);
  if (process.env.CI) process.exit(1);
}
