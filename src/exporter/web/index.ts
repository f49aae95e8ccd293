/** exporter-toolkit's web/ for this exporter: the web config file, TLS, basic auth, rate limit, reloads. */
export { parseWebConfig } from './config.js';
export { checkClientCertificate, secureContextOptions, verifyFlags } from './tls.js';
export { WebConfigWatcher } from './watcher.js';
export { MAX_BODY_BYTES, guarded } from './handler.js';
