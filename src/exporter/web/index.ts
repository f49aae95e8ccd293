/** exporter-toolkit's web/ for this exporter: the web config file, TLS, basic auth, rate limit, reloads. */
export { EXTRA_HEADERS, type WebConfig, loadWebConfig, parseWebConfig } from './config.js';
export { CLIENT_AUTH_TYPES, type ClientAuthType, type TlsSettings, checkClientCertificate, parseSubjectAltNames, secureContextOptions, verifyFlags } from './tls.js';
export { BasicAuth, parseBasicAuth } from './basicauth.js';
export { RateLimiter } from './ratelimit.js';
export { WebConfigWatcher } from './watcher.js';
export { MAX_BODY_BYTES, guarded } from './handler.js';
