/**
 * A token bucket per client: `rate` requests a second on average, bursts of up to `burst`. The
 * table of clients is bounded: idle clients' buckets (full again) are dropped when it grows, and
 * if a flood of distinct addresses still fills it, it starts over (every client gets a full
 * bucket) rather than growing without end.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    readonly rate: number,
    readonly burst: number = Math.max(1, 2 * rate),
    private readonly maxClients = 10_000,
  ) {}

  /** Takes a token for `client`: 0 when the request may go ahead, else the seconds to wait. */
  take(client: string, now = performance.now()): number {
    let b = this.buckets.get(client);
    if (!b) {
      if (this.buckets.size >= this.maxClients) this.sweep(now);
      b = { tokens: this.burst, at: now };
      this.buckets.set(client, b);
    } else {
      b.tokens = Math.min(this.burst, b.tokens + ((now - b.at) / 1000) * this.rate);
      b.at = now;
    }
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return (1 - b.tokens) / this.rate;
  }

  get clients(): number {
    return this.buckets.size;
  }

  private sweep(now: number): void {
    const full = (this.burst / this.rate) * 1000;
    for (const [k, b] of this.buckets) if (now - b.at >= full) this.buckets.delete(k);
    if (this.buckets.size >= this.maxClients) this.buckets.clear();
  }
}
