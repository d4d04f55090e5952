// Per-key rate limits (docs/operations.md): requests per minute and input tokens per second, as token buckets.
//
// Requests: a bucket of `rpm` requests refilled at rpm/60 per second; each request takes one.
// Input tokens: a bucket of `tps` tokens refilled at tps per second. The token count of a request
// is known only after the engine has tokenized it, so a request is admitted while the bucket is
// not in debt, and its `usage.input_tokens` is charged afterwards (the bucket may go negative;
// the next requests wait until it has refilled to zero).
//
// A refused request is told when its bucket will admit it: the refill, then a slot of its own
// (RetrySlots, one request's worth of refill after the caller refused before it), so callers that
// wait exactly what they are told come back one by one.

import { DEFAULTS } from '../defaults.js';
import { RetrySlots } from '../protocol/index.js';

export interface RateLimits {
  requestsPerMinute: number;
  inputTokensPerSecond: number;
}

export const DEFAULT_RATE_LIMITS: RateLimits = {
  requestsPerMinute: DEFAULTS.requestsPerMinute,
  inputTokensPerSecond: DEFAULTS.inputTokensPerSecond,
};

class Bucket {
  private level: number;
  private at: number;
  /** Moving average of what one request takes from the bucket (the spacing of retry slots). */
  private usual = 1;
  private readonly slots = new RetrySlots();
  constructor(
    readonly capacity: number,
    readonly perMs: number,
    now: number,
  ) {
    this.level = capacity;
    this.at = now;
  }
  private refill(now: number): void {
    this.level = Math.min(this.capacity, this.level + (now - this.at) * this.perMs);
    this.at = now;
  }
  /** Milliseconds until the bucket holds `need`, 0 if it does now. */
  wait(now: number, need: number): number {
    this.refill(now);
    return this.level >= need ? 0 : Math.ceil((need - this.level) / this.perMs);
  }
  take(now: number, n: number): void {
    this.refill(now);
    this.level -= n;
    this.usual = 0.8 * this.usual + 0.2 * n;
  }
  /** The wait to tell a caller refused at `now` while the bucket needs `need`: the refill, then a slot of its own. */
  retryAfter(now: number, need: number): number {
    return this.slots.next(now, this.wait(now, need), Math.max(need, this.usual) / this.perMs);
  }
}

/** Outcome of an admission check: 0 = go, else how long to wait. */
export interface Admission {
  retryAfterMs: number;
  limit?: 'requests_per_minute' | 'input_tokens_per_second';
}

export class RateLimiter {
  private readonly requests = new Map<string, Bucket>();
  private readonly tokens = new Map<string, Bucket>();
  constructor(
    private readonly defaults: RateLimits = DEFAULT_RATE_LIMITS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  private buckets(key: string, limits: Partial<RateLimits>): [Bucket, Bucket] {
    const t = this.now();
    let r = this.requests.get(key);
    if (!r) {
      const rpm = limits.requestsPerMinute ?? this.defaults.requestsPerMinute;
      r = new Bucket(rpm, rpm / 60_000, t);
      this.requests.set(key, r);
    }
    let k = this.tokens.get(key);
    if (!k) {
      const tps = limits.inputTokensPerSecond ?? this.defaults.inputTokensPerSecond;
      k = new Bucket(tps, tps / 1000, t);
      this.tokens.set(key, k);
    }
    return [r, k];
  }

  /** Admits one request for `key` (taking one from its request bucket) or says how long to wait. */
  admit(key: string, limits: Partial<RateLimits> = {}): Admission {
    const [r, k] = this.buckets(key, limits);
    const t = this.now();
    if (k.wait(t, 0) > 0) return { retryAfterMs: k.retryAfter(t, 0), limit: 'input_tokens_per_second' };
    if (r.wait(t, 1) > 0) return { retryAfterMs: r.retryAfter(t, 1), limit: 'requests_per_minute' };
    r.take(t, 1);
    return { retryAfterMs: 0 };
  }

  /**
   * How long until `key`'s token bucket holds `need` tokens (at most half the bucket), 0: now. The
   * pace of its batch lines: a claim starts when the bucket holds what it is expected to take, so
   * charging it leaves the bucket out of debt and the key's interactive requests are not refused.
   */
  tokenWaitMs(key: string, need: number, limits: Partial<RateLimits> = {}): number {
    const [, k] = this.buckets(key, limits);
    return k.wait(this.now(), Math.min(Math.max(0, need), k.capacity / 2));
  }

  /** Charges the input tokens a request used. */
  charge(key: string, inputTokens: number, limits: Partial<RateLimits> = {}): void {
    const [, k] = this.buckets(key, limits);
    k.take(this.now(), inputTokens);
  }
}
