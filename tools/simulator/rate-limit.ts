/**
 * Provider-side rate limits: sliding windows counted at arrival (spec section 8). A request
 * is accepted only when every window of its scope holds fewer than `limit` accepted
 * requests in the `windowMs` immediately before it; rejected requests are not counted.
 */
import type { RateLimitScope, RateWindow } from '../../src/config/config.js';

/** Production limits, as the provider documents them: 3/s, 100/min, 3,000/h for the booking list, and so on per scope. */
export const defaultRateLimits: Record<RateLimitScope, RateWindow[]> = {
  bookingList: [
    { limit: 3, windowMs: 1000 },
    { limit: 100, windowMs: 60_000 },
    { limit: 3000, windowMs: 3_600_000 },
  ],
  bookingDetails: [
    { limit: 10, windowMs: 1000 },
    { limit: 200, windowMs: 60_000 },
    { limit: 4000, windowMs: 3_600_000 },
  ],
  standard: [
    { limit: 50, windowMs: 1000 },
    { limit: 200, windowMs: 60_000 },
    { limit: 3000, windowMs: 3_600_000 },
  ],
  integrationStorage: [
    { limit: 50, windowMs: 1000 },
    { limit: 1200, windowMs: 60_000 },
    { limit: 30_000, windowMs: 3_600_000 },
  ],
  token: [
    { limit: 3, windowMs: 1000 },
    { limit: 15, windowMs: 60_000 },
    { limit: 300, windowMs: 3_600_000 },
  ],
};

/**
 * One sliding window: a ring buffer of the arrival times of accepted requests. It never
 * holds more than `limit` entries (a full window rejects), so memory is bounded and each
 * request costs amortised O(1).
 */
export class SlidingWindow {
  private readonly buf: Float64Array;
  private head = 0;
  private size = 0;

  constructor(
    readonly limit: number,
    readonly windowMs: number,
  ) {
    this.buf = new Float64Array(Math.max(1, limit));
  }

  /** Drops arrivals that are no longer inside the window ending at `t`. */
  prune(t: number): void {
    while (this.size > 0 && this.buf[this.head]! <= t - this.windowMs) {
      this.head = (this.head + 1) % this.buf.length;
      this.size--;
    }
  }

  get count(): number {
    return this.size;
  }

  hasRoom(): boolean {
    return this.size < this.limit;
  }

  add(t: number): void {
    this.buf[(this.head + this.size) % this.buf.length] = t;
    this.size++;
  }

  /** Milliseconds from `t` until the window has room again (0 when it has room now). */
  waitMs(t: number): number {
    if (this.size < this.limit) return 0;
    return this.buf[this.head]! + this.windowMs - t;
  }
}

export interface RateDecision {
  allowed: boolean;
  /** Remaining requests per configured window, in configuration order. */
  remaining: number[];
  /** Whole seconds until a retry can succeed (>= 1); 0 when allowed. */
  retryAfterSeconds: number;
}

/** Counters per (scope, key); the key is the API client id, or the IP for the token scope. */
export class RateLimiter {
  private readonly windows = new Map<string, SlidingWindow[]>();

  /** `perKey`: limits of some keys (API clients with a contracted budget), by scope; the others use `config`. */
  constructor(
    private readonly config: Record<RateLimitScope, RateWindow[]>,
    private readonly perKey: ReadonlyMap<string, Partial<Record<RateLimitScope, RateWindow[]>>> = new Map(),
  ) {}

  private get(scope: RateLimitScope, key: string): SlidingWindow[] {
    const id = `${scope}\u0000${key}`;
    let ws = this.windows.get(id);
    if (!ws) {
      ws = (this.perKey.get(key)?.[scope] ?? this.config[scope]).map((w) => new SlidingWindow(w.limit, w.windowMs));
      this.windows.set(id, ws);
    }
    return ws;
  }

  /** Counts the request at `t` when every window has room; otherwise rejects without counting. */
  take(scope: RateLimitScope, key: string, t: number): RateDecision {
    const ws = this.get(scope, key);
    for (const w of ws) w.prune(t);
    if (ws.every((w) => w.hasRoom())) {
      for (const w of ws) w.add(t);
      return { allowed: true, remaining: ws.map((w) => w.limit - w.count), retryAfterSeconds: 0 };
    }
    const wait = Math.max(...ws.map((w) => w.waitMs(t)));
    return {
      allowed: false,
      remaining: ws.map((w) => Math.max(0, w.limit - w.count)),
      retryAfterSeconds: Math.max(1, Math.ceil(wait / 1000)),
    };
  }

  /** The remaining counts at `t` without counting a request (for fault answers). */
  peek(scope: RateLimitScope, key: string, t: number): number[] {
    const ws = this.get(scope, key);
    for (const w of ws) w.prune(t);
    return ws.map((w) => Math.max(0, w.limit - w.count));
  }
}
