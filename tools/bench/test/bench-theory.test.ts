import { describe, expect, it } from 'vitest';
import { greedyBursts, maxRequestsIn, minTimeFor, scaleWindows, sustainedPerSecond, type Window } from '../theory.js';
import { mulberry32 } from '../../simulator/random.js';

const details: Window[] = [
  { limit: 10, windowMs: 1000 },
  { limit: 200, windowMs: 60_000 },
  { limit: 4000, windowMs: 3_600_000 },
];

/** Per-request recurrence: t_k = max(t_{k-1}, max over windows of t_{k-L} + W). */
function bruteForceTimes(windows: readonly Window[], n: number): number[] {
  const t: number[] = [];
  for (let k = 0; k < n; k++) {
    let at = k === 0 ? 0 : t[k - 1]!;
    for (const w of windows) if (k - w.limit >= 0) at = Math.max(at, t[k - w.limit]! + w.windowMs);
    t.push(at);
  }
  return t;
}

describe('minTimeFor', () => {
  it('is 0 for the first request and for a full first window', () => {
    expect(minTimeFor([{ limit: 10, windowMs: 1000 }], 0)).toBe(0);
    expect(minTimeFor([{ limit: 10, windowMs: 1000 }], 1)).toBe(0);
    expect(minTimeFor([{ limit: 10, windowMs: 1000 }], 10)).toBe(0);
  });

  it('waits exactly one window for the next batch (a request stops counting at t + windowMs)', () => {
    const w = [{ limit: 10, windowMs: 1000 }];
    expect(minTimeFor(w, 11)).toBe(1000);
    expect(minTimeFor(w, 20)).toBe(1000);
    expect(minTimeFor(w, 21)).toBe(2000);
  });

  it('follows the production details limits: 200 a minute in bursts of 10 a second, 4000 an hour', () => {
    expect(minTimeFor(details, 200)).toBe(19_000);
    expect(minTimeFor(details, 201)).toBe(60_000);
    expect(minTimeFor(details, 4000)).toBe(19 * 60_000 + 19_000);
    expect(minTimeFor(details, 4001)).toBe(3_600_000);
    // N bookings need at least N/4000 hours (4,000 details per hour): 20,000 → 4 full hours plus the last burst.
    expect(minTimeFor(details, 20_000)).toBe(4 * 3_600_000 + 19 * 60_000 + 19_000);
  });

  it('matches the per-request recurrence on random windows', () => {
    const r = mulberry32(42);
    for (let trial = 0; trial < 50; trial++) {
      const windows: Window[] = Array.from({ length: 1 + Math.floor(r() * 3) }, () => ({
        limit: 1 + Math.floor(r() * 30),
        windowMs: 1 + Math.floor(r() * 500),
      }));
      const n = 1 + Math.floor(r() * 800);
      const times = bruteForceTimes(windows, n);
      for (const k of [1, Math.ceil(n / 3), Math.ceil(n / 2), n]) {
        expect(minTimeFor(windows, k)).toBe(times[k - 1]);
      }
    }
  });

  it('handles a million requests quickly (event-driven)', () => {
    const started = performance.now();
    expect(minTimeFor(details, 1_000_000)).toBe(249 * 3_600_000 + 19 * 60_000 + 19_000);
    expect(performance.now() - started).toBeLessThan(3000);
  });
});

describe('maxRequestsIn', () => {
  it('counts both ends of the interval', () => {
    const w = [{ limit: 10, windowMs: 1000 }];
    expect(maxRequestsIn(w, 0)).toBe(10);
    expect(maxRequestsIn(w, 999)).toBe(10);
    expect(maxRequestsIn(w, 1000)).toBe(20);
    expect(maxRequestsIn(w, -1)).toBe(0);
  });

  it('is the inverse of minTimeFor', () => {
    const r = mulberry32(7);
    for (let trial = 0; trial < 30; trial++) {
      const windows: Window[] = Array.from({ length: 1 + Math.floor(r() * 3) }, () => ({
        limit: 1 + Math.floor(r() * 20),
        windowMs: 1 + Math.floor(r() * 300),
      }));
      const d = Math.floor(r() * 3000);
      const n = maxRequestsIn(windows, d);
      expect(minTimeFor(windows, n)).toBeLessThanOrEqual(d);
      expect(minTimeFor(windows, n + 1)).toBeGreaterThan(d);
    }
  });

  it('under the production details limits allows 4000 in the first hour and 8000 at its end', () => {
    expect(maxRequestsIn(details, 3_599_999)).toBe(4000);
    expect(maxRequestsIn(details, 3_600_000)).toBe(4010);
    expect(maxRequestsIn(details, 2 * 3_600_000 - 1)).toBe(8000);
  });
});

describe('greedyBursts', () => {
  it('yields bursts in time order whose counts add up', () => {
    const bursts = [...greedyBursts(details, 450)];
    expect(bursts.reduce((s, b) => s + b.count, 0)).toBe(450);
    for (let i = 1; i < bursts.length; i++) expect(bursts[i]!.t).toBeGreaterThan(bursts[i - 1]!.t);
    expect(bursts[0]).toEqual({ t: 0, count: 10 });
  });

  it('rejects windows that allow nothing', () => {
    expect(() => minTimeFor([{ limit: 0, windowMs: 1000 }], 5)).toThrow(/limit/);
    expect(() => minTimeFor([], 5)).toThrow(/at least one window/);
  });
});

describe('scaleWindows and sustainedPerSecond', () => {
  it('compresses time and rounds to whole milliseconds', () => {
    expect(scaleWindows(details, 120)).toEqual([
      { limit: 10, windowMs: 8 },
      { limit: 200, windowMs: 500 },
      { limit: 4000, windowMs: 30_000 },
    ]);
    expect(scaleWindows([{ limit: 1, windowMs: 1000 }], 5000)).toEqual([{ limit: 1, windowMs: 1 }]);
  });

  it('gives the tightest window as the long-run rate', () => {
    expect(sustainedPerSecond(details)).toBeCloseTo(4000 / 3600, 10);
    expect(sustainedPerSecond(scaleWindows(details, 120))).toBeCloseTo(4000 / 30, 10);
  });
});
