/**
 * Keeps the web config current, as exporter-toolkit re-reads it on every request and TLS
 * handshake: here a stat of the file (and of the certificate files it names) decides whether to
 * read it again. A file that no longer loads is refused and the running one kept.
 */
import * as fs from 'node:fs';
import { InputError, formatProblem } from '../../input/problems.js';
import type { Logger } from '../../log.js';
import { BasicAuth } from './basicauth.js';
import { type WebConfig, loadWebConfig } from './config.js';
import { RateLimiter } from './ratelimit.js';

/**
 * The current web config, re-read when the file or a certificate it names changes (size,
 * mtime, inode or ctime). A file that does not load is logged once per change and ignored;
 * switching between HTTP and HTTPS needs a restart, as in the toolkit.
 */
/**
 * The current web config, re-read when the file or a certificate it names changes (size,
 * mtime, inode or ctime). A file that does not load is logged once per change and ignored;
 * switching between HTTP and HTTPS needs a restart, as in the toolkit.
 */
export class WebConfigWatcher {
  private config: WebConfig;
  private signature: string;
  private refused: string | undefined;
  private limiter: RateLimiter | undefined;
  private readonly listeners: ((c: WebConfig) => void)[] = [];
  readonly auth = new BasicAuth();
  /** Successful reloads after the first load. */
  reloads = 0;

  constructor(readonly file: string, private readonly log: Logger) {
    this.config = loadWebConfig(file);
    this.signature = signatureOf(this.config.files);
    this.limiter = this.config.rateLimit ? new RateLimiter(this.config.rateLimit) : undefined;
  }

  get current(): WebConfig {
    return this.config;
  }

  get rateLimiter(): RateLimiter | undefined {
    return this.limiter;
  }

  onChange(fn: (c: WebConfig) => void): void {
    this.listeners.push(fn);
  }

  /** A stat per file; a reload only when something changed. */
  refresh(): WebConfig {
    const sig = signatureOf(this.config.files);
    if (sig === this.signature || sig === this.refused) return this.config;
    let next: WebConfig;
    try {
      next = loadWebConfig(this.file);
      if ((next.tls === undefined) !== (this.config.tls === undefined)) {
        throw new InputError([{ file: this.file, line: 1, col: 1, field: 'tls_server_config',
          reason: `switching between HTTP and HTTPS needs a restart (running ${this.config.tls ? 'HTTPS' : 'HTTP'})` }]);
      }
    } catch (e) {
      this.refused = sig;
      const error = e instanceof InputError ? e.problems.map(formatProblem).join('; ') : (e as Error).message;
      this.log.error({ err: error, file: this.file }, 'web config reload failed; keeping the running web config');
      return this.config;
    }
    this.config = next;
    this.signature = signatureOf(next.files);
    this.refused = undefined;
    this.limiter = next.rateLimit ? new RateLimiter(next.rateLimit) : undefined;
    this.reloads++;
    this.log.info({ file: this.file, tls: next.tls !== undefined, users: next.users.size }, 'web config reloaded');
    for (const fn of this.listeners) fn(next);
    return next;
  }
}

function signatureOf(files: readonly string[]): string {
  return files.map((f) => {
    try {
      const st = fs.statSync(f, { bigint: true });
      return `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
    } catch (e) {
      return `error:${(e as NodeJS.ErrnoException).code ?? 'unknown'}`;
    }
  }).join('|');
}
