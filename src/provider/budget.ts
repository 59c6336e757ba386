/**
 * Rate budgets: the client, not the provider, says no (docs/architecture.md, The provider client). One
 * RateBudget per scope holds every sliding window of that scope and grants a permit only
 * when all of them have room.
 *
 * Ledger model, per window: a deque of release timestamps (ascending) plus the number of
 * permits in flight. A window is full when `entries younger than windowMs + inFlight >=
 * limit`. In-flight permits occupy a slot from the moment they are granted until the
 * response arrives, and the slot's window starts at release time, never at send time: the
 * provider counts a request when it arrives, so a window started at send could end before
 * the provider's own window does (network jitter) and let request N+1 in too early.
 */
import type { RateLimitScope, RateWindow } from '../config/config.js';
import type { Clock } from '../util/clock.js';

/** The `x-ratelimit-remaining-*` values of one response; window i ↔ header i. */
export interface RemainingCounts {
  second?: number | undefined;
  minute?: number | undefined;
  hour?: number | undefined;
}

/** Response headers as undici gives them. */
export type ResponseHeaders = Record<string, string | string[] | undefined>;

/** One granted request slot. Release it exactly once, when the response arrived (or failed). */
export interface Permit {
  /** Starts the slot's windows now; feeds the remaining-headers of the response back. Idempotent. */
  release(responseHeaders?: ResponseHeaders): void;
}

export interface WindowSnapshot {
  limit: number;
  windowMs: number;
  /** Slots taken: released requests still inside the window, plus the ones in flight. */
  used: number;
}

export interface BudgetSnapshot {
  scope: string;
  inFlight: number;
  waiting: number;
  /** Milliseconds the budget is still paused by a retry-after (0 when not paused). */
  pausedForMs: number;
  windows: WindowSnapshot[];
}

const remainingHeaderNames = ['second', 'minute', 'hour'] as const;

/** Reads `x-ratelimit-remaining-second|minute|hour`; ignores missing or non-numeric values. */
export function remainingFromHeaders(headers: ResponseHeaders): RemainingCounts {
  const out: RemainingCounts = {};
  for (const name of remainingHeaderNames) {
    let v = headers[`x-ratelimit-remaining-${name}`];
    if (Array.isArray(v)) v = v[0];
    if (v === undefined) continue;
    const n = Number(v.trim());
    if (v.trim() !== '' && Number.isInteger(n) && n >= 0) out[name] = n;
  }
  return out;
}

/**
 * Ascending timestamps with O(1) push, shift, index access and length. An array plus a head
 * offset, compacted when the dead prefix dominates (amortised O(1)).
 */
class TimestampQueue {
  private items: number[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }
  /** The i-th oldest entry (0 = oldest). */
  at(i: number): number {
    return this.items[this.head + i]!;
  }
  push(t: number): void {
    // Keep the deque sorted even if the clock stepped back a little.
    const last = this.items.length > this.head ? this.items[this.items.length - 1]! : t;
    this.items.push(Math.max(t, last));
  }
  /** Entries `> t`, counted from the newest end (cheap when few are). */
  countNewerThan(t: number): number {
    let n = 0;
    for (let i = this.items.length - 1; i >= this.head && this.items[i]! > t; i--) n++;
    return n;
  }
  /** Drops every entry `<= cutoff`; `into` receives them, oldest first. */
  dropUpTo(cutoff: number, into?: TimestampQueue): void {
    while (this.head < this.items.length && this.items[this.head]! <= cutoff) {
      into?.push(this.items[this.head]!);
      this.head++;
    }
    // Compacted as soon as the dead prefix is half of the array: a queue holds at most about
    // twice its live entries. (Waiting for 1,024 dead entries made each queue of a short window,
    // 3 live entries a second, keep up to 2,000: about 80 KB per busy budget, per connection.)
    if (this.head >= COMPACT_AFTER && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }

  /** Entries the queue keeps in memory, dead prefix included (tests). */
  get stored(): number {
    return this.items.length;
  }
}

/** The fewest dead entries worth a compaction (a copy of the live ones). */
const COMPACT_AFTER = 16;

interface SlidingWindow {
  readonly limit: number;
  readonly windowMs: number;
  readonly released: TimestampQueue;
  /**
   * Entries that left the window in the last `expiredRetentionMs`. A rate-limit header
   * describes the provider's window as of the request's arrival, which can be earlier than
   * now by up to the request's duration; comparing it with the ledger as of then needs them.
   */
  readonly expired: TimestampQueue;
}

/** Default of how long expired entries are kept: longer than any request may take. */
const DEFAULT_EXPIRED_RETENTION_MS = 35_000;

interface Waiter {
  readonly priority: number;
  readonly seq: number;
  resolve(p: Permit): void;
  reject(err: unknown): void;
  signal: AbortSignal;
  onAbort: () => void;
}

/** All sliding windows of one rate-limit scope. See the file comment for the model. */
export class RateBudget {
  readonly scope: string;
  private readonly clock: Clock;
  private readonly windows: SlidingWindow[];
  private inFlight = 0;
  private pausedUntil = 0;
  /** Sorted by (priority, seq): FIFO within a priority, lower priority number first. */
  private readonly waiters: Waiter[] = [];
  private seq = 0;
  /** The one pending wake-up timer, if any, and the instant it fires. */
  private timer: { at: number; abort: AbortController } | undefined;

  /** How long entries that left a window are kept: longer than any request may take (the request timeout). */
  private readonly expiredRetentionMs: number;

  constructor(scope: string, windows: readonly RateWindow[], clock: Clock, expiredRetentionMs = DEFAULT_EXPIRED_RETENTION_MS) {
    if (windows.length === 0) throw new Error(`rate budget ${scope}: expected at least one window`);
    this.scope = scope;
    this.clock = clock;
    this.expiredRetentionMs = expiredRetentionMs;
    this.windows = windows.map((w) => ({
      limit: w.limit,
      windowMs: w.windowMs,
      released: new TimestampQueue(),
      expired: new TimestampQueue(),
    }));
  }

  /**
   * Waits until every window has room (and no pause is active), then takes a slot. Waiters
   * are served in priority order (lower number first), FIFO within a priority. Rejects with
   * the signal's reason when it aborts first.
   */
  acquire(signal: AbortSignal, priority = 0): Promise<Permit> {
    if (signal.aborted) return Promise.reject(signal.reason);
    if (this.waiters.length === 0 && this.waitMs(this.clock.now()) === 0) {
      return Promise.resolve(this.grant());
    }
    return new Promise<Permit>((resolve, reject) => {
      const waiter: Waiter = {
        priority,
        seq: this.seq++,
        resolve,
        reject,
        signal,
        onAbort: () => {
          const i = this.waiters.indexOf(waiter);
          if (i >= 0) this.waiters.splice(i, 1);
          reject(signal.reason);
          // The head may have changed: a lower-priority waiter may now be servable.
          this.pump();
        },
      };
      signal.addEventListener('abort', waiter.onAbort, { once: true });
      this.insertWaiter(waiter);
      this.pump();
    });
  }

  /**
   * Feeds back what the provider says is left. When it reports fewer remaining requests than
   * the ledger believes (another process, or our predecessor before a restart, used them),
   * phantom entries stamped now make the ledger agree. Never removes entries: an answer that
   * reports more room is simply older than our in-flight requests.
   *
   * `asOf` is when the request that carried the header was sent: the provider counted its
   * window at the request's arrival, not at its response. Comparing with the ledger as of the
   * send time keeps our own requests that left the window in the meantime from looking like
   * somebody else's (each such false phantom would block a slot for a whole window).
   */
  observeRemaining(remaining: RemainingCounts, asOf: number = this.clock.now()): void {
    const now = this.clock.now();
    let changed = false;
    this.windows.forEach((w, i) => {
      const name = remainingHeaderNames[i];
      const r = name === undefined ? undefined : remaining[name];
      if (r === undefined) return;
      this.expire(w, now);
      const usedAsOf = w.released.length + w.expired.countNewerThan(Math.min(asOf, now) - w.windowMs) + this.inFlight;
      const believedRemaining = w.limit - usedAsOf;
      const missing = Math.min(w.limit, believedRemaining - Math.max(0, r));
      for (let k = 0; k < missing; k++) w.released.push(now);
      if (missing > 0) changed = true;
    });
    if (changed) this.pump();
  }

  /** Blocks every acquire for `ms` from now (retry-after). Extends, never shortens, a pause. */
  pauseFor(ms: number): void {
    const until = this.clock.now() + Math.max(0, ms);
    if (until > this.pausedUntil) {
      this.pausedUntil = until;
      this.pump();
    }
  }

  /**
   * The requests still inside the longest window, as ages in ms (oldest first): what another
   * process taking this budget over (a connection handed to another replica) must count.
   */
  ledger(): number[] {
    const now = this.clock.now();
    const longest = this.windows.reduce((a, b) => (b.windowMs > a.windowMs ? b : a));
    this.expire(longest, now);
    const ages: number[] = [];
    for (let i = 0; i < longest.released.length; i++) ages.push(Math.max(0, now - longest.released.at(i)));
    return ages;
  }

  /** Counts requests another process sent (`ledger()`, aged `elapsedMs` more since): call before the first acquire. */
  seed(ages: readonly number[], elapsedMs = 0): void {
    const now = this.clock.now();
    const times = ages.map((a) => now - a - Math.max(0, elapsedMs)).sort((a, b) => a - b);
    for (const w of this.windows) for (const t of times) if (t > now - w.windowMs) w.released.push(t);
  }

  /** Timestamps the budget keeps in memory, over all its windows (tests: it stays proportional to what the windows hold). */
  storedTimestamps(): number {
    return this.windows.reduce((n, w) => n + w.released.stored + w.expired.stored, 0);
  }

  snapshot(): BudgetSnapshot {
    const now = this.clock.now();
    return {
      scope: this.scope,
      inFlight: this.inFlight,
      waiting: this.waiters.length,
      pausedForMs: Math.max(0, this.pausedUntil - now),
      windows: this.windows.map((w) => {
        this.expire(w, now);
        return { limit: w.limit, windowMs: w.windowMs, used: w.released.length + this.inFlight };
      }),
    };
  }

  private grant(): Permit {
    this.inFlight++;
    const sentAt = this.clock.now();
    let released = false;
    return {
      release: (headers?: ResponseHeaders) => {
        if (released) return;
        released = true;
        this.inFlight--;
        const now = this.clock.now();
        for (const w of this.windows) w.released.push(now);
        if (headers !== undefined) this.observeRemaining(remainingFromHeaders(headers), sentAt);
        // A release does not free a slot (it turns "in flight" into "released now"), but it
        // makes the wait finite when only in-flight permits filled a window.
        this.pump();
      },
    };
  }

  private expire(w: SlidingWindow, now: number): void {
    w.released.dropUpTo(now - w.windowMs, w.expired);
    w.expired.dropUpTo(now - w.windowMs - this.expiredRetentionMs);
  }

  /**
   * Milliseconds until one more permit fits every window: 0 = now, Infinity = only a
   * release can help (in-flight permits alone fill a window). Exact, no polling: in a full
   * window the entry that must expire is the (used - limit)-th oldest release.
   */
  private waitMs(now: number): number {
    let wait = Math.max(0, this.pausedUntil - now);
    for (const w of this.windows) {
      this.expire(w, now);
      const used = w.released.length + this.inFlight;
      if (used < w.limit) continue;
      const k = used - w.limit; // index of the entry whose expiry frees the slot
      if (k >= w.released.length) return Infinity;
      wait = Math.max(wait, w.released.at(k) + w.windowMs - now);
    }
    return wait;
  }

  private insertWaiter(waiter: Waiter): void {
    // Binary search for the first waiter that sorts after this one.
    let lo = 0;
    let hi = this.waiters.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const m = this.waiters[mid]!;
      if (m.priority < waiter.priority || (m.priority === waiter.priority && m.seq < waiter.seq)) lo = mid + 1;
      else hi = mid;
    }
    this.waiters.splice(lo, 0, waiter);
  }

  /** Grants permits to the head waiters while they fit; otherwise arms one exact timer. */
  private pump(): void {
    const now = this.clock.now();
    let wait = 0;
    while (this.waiters.length > 0) {
      wait = this.waitMs(now);
      if (wait > 0) break;
      const w = this.waiters.shift()!;
      w.signal.removeEventListener('abort', w.onAbort);
      w.resolve(this.grant());
    }
    if (this.waiters.length === 0 || wait === Infinity) {
      this.cancelTimer();
      return;
    }
    const at = now + Math.ceil(wait);
    if (this.timer?.at === at) return;
    this.cancelTimer();
    const abort = new AbortController();
    const timer = { at, abort };
    this.timer = timer;
    this.clock.sleep(at - now, abort.signal).then(
      () => {
        if (this.timer === timer) {
          this.timer = undefined;
          this.pump();
        }
      },
      () => {
        /* cancelled: a newer timer or no waiters */
      },
    );
  }

  private cancelTimer(): void {
    if (this.timer) {
      this.timer.abort.abort();
      this.timer = undefined;
    }
  }
}

/** One RateBudget per scope, built from `config.rateLimits`. Shared by all streams of one API client. */
export class Budgets {
  private readonly byScope: Map<RateLimitScope, RateBudget>;
  private readonly shared: Set<RateLimitScope>;

  /**
   * `requestTimeoutMs`: no response arrives later, so no older expired entry is ever needed.
   * `shared`: budgets owned by someone else for some scopes (the token endpoint's is per IP
   * address, so every connection of the process uses one).
   */
  constructor(
    rateLimits: Readonly<Record<RateLimitScope, readonly RateWindow[]>>,
    clock: Clock,
    requestTimeoutMs?: number,
    shared: Partial<Record<RateLimitScope, RateBudget>> = {},
  ) {
    const retention = requestTimeoutMs === undefined ? undefined : requestTimeoutMs + 5_000;
    this.shared = new Set(Object.keys(shared) as RateLimitScope[]);
    this.byScope = new Map(
      (Object.keys(rateLimits) as RateLimitScope[]).map((scope) => [scope, shared[scope] ?? new RateBudget(scope, rateLimits[scope], clock, retention)]),
    );
  }

  get(scope: RateLimitScope): RateBudget {
    const b = this.byScope.get(scope);
    if (!b) throw new Error(`no rate budget configured for scope ${scope}`);
    return b;
  }

  snapshot(): BudgetSnapshot[] {
    return [...this.byScope.values()].map((b) => b.snapshot());
  }

  /** Every scope's ledger (RateBudget.ledger), except the shared ones: they are not this connection's. */
  ledger(): Partial<Record<RateLimitScope, number[]>> {
    const out: Partial<Record<RateLimitScope, number[]>> = {};
    for (const [scope, b] of this.byScope) if (!this.shared.has(scope)) out[scope] = b.ledger();
    return out;
  }

  /** Seeds each scope from another process's ledger, `elapsedMs` old. */
  seed(ledger: Partial<Record<RateLimitScope, number[]>>, elapsedMs: number): void {
    for (const [scope, ages] of Object.entries(ledger) as [RateLimitScope, number[]][]) {
      const b = this.byScope.get(scope);
      if (b && !this.shared.has(scope) && Array.isArray(ages))
        b.seed(
          ages.filter((a) => typeof a === 'number' && Number.isFinite(a)),
          elapsedMs,
        );
    }
  }
}
