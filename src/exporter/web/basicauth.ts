/**
 * Basic auth against bcrypt hashes, as exporter-toolkit's handler does it: verdicts cached,
 * comparisons one at a time, unknown users cost as much as known ones.
 */
import { createHash } from 'node:crypto';
import bcrypt from 'bcryptjs';

/**
 * What a bcrypt hash looks like ($2y$10$ + 53 characters): its version letter and its cost. The
 * letterless `$2$` (the first bcrypt, which leaves the key's NUL out) matches too, to be named
 * in the refusal: bcryptjs verifies no such hash.
 */
const BCRYPT_HASH = /^\$2([abxy]?)\$(\d\d)\$[./A-Za-z0-9]{53}$/;

/** A hash's version letter ('' for `$2$`) and cost, or undefined when it is no bcrypt hash. */
export function bcryptParts(hash: string): { readonly version: string; readonly cost: number } | undefined {
  const m = BCRYPT_HASH.exec(hash);
  return m ? { version: m[1]!, cost: Number(m[2]) } : undefined;
}

/** bcryptjs at cost 10 takes about 100 ms: cache verdicts like the toolkit (100 entries). */
const CACHE_SIZE = 100;

export class BasicAuth {
  private readonly cache = new Map<string, boolean>();
  private queue: Promise<unknown> = Promise.resolve();
  /** bcrypt comparisons run (cache misses), for tests and the curious. */
  comparisons = 0;

  /**
   * Whether the Authorization header names a configured user with the right password. Unknown
   * users cost a bcrypt comparison against a configured hash of the highest cost, so timing
   * does not tell whether a user exists. Comparisons run one at a time (the toolkit's mutex).
   */
  async verify(users: ReadonlyMap<string, string>, header: string | undefined): Promise<boolean> {
    const creds = parseBasicAuth(header);
    if (!creds || users.size === 0) return false;
    const known = users.get(creds.user);
    const hash = known ?? slowestHash(users);
    const key = createHash('sha256').update(creds.user).update('\0').update(hash).update('\0').update(creds.password).digest('base64');
    const cached = this.cache.get(key);
    if (cached !== undefined) return cached && known !== undefined;
    const match = await this.serialized(() => {
      this.comparisons++;
      return bcrypt.compare(creds.password, hash);
    });
    const ok = match && known !== undefined;
    this.remember(key, ok);
    return ok;
  }

  private serialized<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private remember(key: string, ok: boolean): void {
    if (this.cache.size >= CACHE_SIZE) {
      // Drop the oldest tenth at once, so eviction is not paid on every request.
      let n = Math.max(1, Math.floor(this.cache.size / 10));
      for (const k of this.cache.keys()) {
        if (n-- <= 0) break;
        this.cache.delete(k);
      }
    }
    this.cache.set(key, ok);
  }
}

function slowestHash(users: ReadonlyMap<string, string>): string {
  let best = '';
  let cost = -1;
  for (const h of users.values()) {
    const c = bcryptParts(h)?.cost ?? -1;
    if (c > cost) [best, cost] = [h, c];
  }
  return best;
}

function parseBasicAuth(header: string | undefined): { user: string; password: string } | undefined {
  const m = header === undefined ? null : /^Basic +([A-Za-z0-9+/=]+) *$/i.exec(header);
  if (!m) return undefined;
  const text = Buffer.from(m[1]!, 'base64').toString('utf8');
  const i = text.indexOf(':');
  return i < 0 ? undefined : { user: text.slice(0, i), password: text.slice(i + 1) };
}
