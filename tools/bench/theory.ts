/**
 * What a perfect client could do under a set of sliding windows: the yardstick the bench
 * divides measurements by. Pure functions, no clock.
 *
 * Model (the simulator's, tools/simulator/rate-limit.ts): a request sent at `t` is counted by
 * every window of its scope and stops counting at exactly `t + windowMs`; a request is
 * accepted when every window holds fewer than `limit` requests. Requests are instantaneous
 * (no round trip) and the windows start empty at time 0.
 *
 * The greedy client (send whenever every window has room) is optimal: with t_k the time of
 * the k-th request, feasibility is exactly `t_k >= t_{k-L} + W` for every window (L, W), and
 * greedy takes each t_k at the smallest value those constraints allow, so by induction its
 * k-th request is never later than any feasible schedule's k-th request.
 */

export interface Window {
  limit: number;
  windowMs: number;
}

/** One instant of the greedy schedule: `count` requests sent together at `t`. */
export interface Burst {
  t: number;
  count: number;
}

/** Requests (as bursts) still inside one window: a deque of (time, count) with a running sum. */
class BurstDeque {
  private times: number[] = [];
  private counts: number[] = [];
  private head = 0;
  sum = 0;

  constructor(
    readonly limit: number,
    readonly windowMs: number,
  ) {}

  push(t: number, count: number): void {
    this.times.push(t);
    this.counts.push(count);
    this.sum += count;
  }

  /** Drops the bursts that no longer count at `t` (sent at or before `t - windowMs`). */
  expire(t: number): void {
    while (this.head < this.times.length && this.times[this.head]! <= t - this.windowMs) {
      this.sum -= this.counts[this.head]!;
      this.head++;
    }
    // Compact when the dead prefix dominates: amortised O(1), memory bounded by the window.
    if (this.head > 1024 && this.head * 2 > this.times.length) {
      this.times = this.times.slice(this.head);
      this.counts = this.counts.slice(this.head);
      this.head = 0;
    }
  }

  get room(): number {
    return this.limit - this.sum;
  }

  /** When this (full) window next has room: its oldest burst expires. */
  nextRoomAt(): number {
    return this.times[this.head]! + this.windowMs;
  }
}

function validate(windows: readonly Window[]): void {
  if (windows.length === 0) throw new Error('theory: expected at least one window');
  for (const w of windows) {
    if (!Number.isInteger(w.limit) || w.limit < 1) throw new Error(`theory: limit must be a positive integer, got ${w.limit}`);
    if (!(w.windowMs > 0) || !Number.isFinite(w.windowMs)) throw new Error(`theory: windowMs must be positive, got ${w.windowMs}`);
  }
}

/**
 * The greedy schedule as bursts, in time order, starting at t = 0 with empty windows.
 * Event-driven: one step per burst (an instant where some window frees room), never per
 * millisecond, so a million requests under the production limits cost ~1e5 steps.
 * Stops after `maxRequests` requests (the last burst is cut to fit) or when the next burst
 * would be later than `untilMs`.
 */
export function* greedyBursts(windows: readonly Window[], maxRequests: number, untilMs = Infinity): Generator<Burst> {
  validate(windows);
  const ws = windows.map((w) => new BurstDeque(w.limit, w.windowMs));
  let sent = 0;
  let t = 0;
  while (sent < maxRequests && t <= untilMs) {
    for (const w of ws) w.expire(t);
    let room = Infinity;
    for (const w of ws) room = Math.min(room, w.room);
    const count = Math.min(room, maxRequests - sent);
    // room > 0 here: t is the instant the last full window frees a slot (or 0).
    for (const w of ws) w.push(t, count);
    sent += count;
    yield { t, count };
    if (sent >= maxRequests) return;
    // Every window with room left keeps it; the next send waits for the slowest full window.
    let next = t;
    for (const w of ws) if (w.room <= 0) next = Math.max(next, w.nextRoomAt());
    t = next;
  }
}

/**
 * The earliest time (ms after the first request) at which the n-th request can be sent.
 * minTimeFor(w, 1) = 0; minTimeFor(w, 0) = 0.
 */
export function minTimeFor(windows: readonly Window[], n: number): number {
  if (n <= 0) {
    validate(windows);
    return 0;
  }
  let last = 0;
  for (const b of greedyBursts(windows, n)) last = b.t;
  return last;
}

/**
 * The most requests a perfect client can send within `durationMs` of its first request,
 * both ends included (requests at t = 0 … durationMs). Compares with "requests from the
 * first to the last one observed, where last − first = durationMs".
 */
export function maxRequestsIn(windows: readonly Window[], durationMs: number): number {
  if (durationMs < 0) {
    validate(windows);
    return 0;
  }
  let total = 0;
  for (const b of greedyBursts(windows, Number.MAX_SAFE_INTEGER, durationMs)) {
    if (b.t > durationMs) break;
    total += b.count;
  }
  return total;
}

/** The long-run rate (requests per second) the windows allow: the tightest limit/window. */
export function sustainedPerSecond(windows: readonly Window[]): number {
  validate(windows);
  return Math.min(...windows.map((w) => (w.limit * 1000) / w.windowMs));
}

/**
 * Production windows with time compressed by `scale` (an hour becomes 3600/scale seconds);
 * limits unchanged, windowMs rounded to a whole millisecond (the config wants integers), at
 * least 1.
 */
export function scaleWindows(windows: readonly Window[], scale: number): Window[] {
  if (!(scale > 0)) throw new Error(`scale must be positive, got ${scale}`);
  return windows.map((w) => ({ limit: w.limit, windowMs: Math.max(1, Math.round(w.windowMs / scale)) }));
}
