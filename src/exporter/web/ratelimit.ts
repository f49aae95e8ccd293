/** The web config's rate limit: a token bucket, as golang.org/x/time/rate with Every(interval) and burst. */
export class RateLimiter {
  private tokens: number;
  private last = performance.now();

  constructor(private readonly limit: { readonly intervalMs: number; readonly burst: number }) {
    this.tokens = limit.burst;
  }

  allow(): boolean {
    const now = performance.now();
    this.tokens = Math.min(this.limit.burst, this.tokens + (now - this.last) / this.limit.intervalMs);
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}
