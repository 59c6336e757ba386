/** Scenario F's small arithmetic (tools/bench/freshness.ts): goals, the settle time, the median's interval. */
import { describe, expect, it } from 'vitest';
import { freshnessGoalMs, medianInterval, settleMs } from '../freshness.js';
import { defaultRateLimits } from '../../simulator/index.js';

describe('scenario F arithmetic', () => {
  it('sets the goals of the issue: 2 s for one property, P × 0.6 s + 1 s for P', () => {
    expect(freshnessGoalMs(1)).toBe(2_000);
    expect(freshnessGoalMs(20)).toBe(13_000);
    expect(freshnessGoalMs(5)).toBe(4_000);
  });

  it('waits two polling rounds and 10 s for the last changes', () => {
    // The production list budget: one request per 1.2 s (3,000 an hour).
    expect(settleMs(1, defaultRateLimits)).toBeCloseTo(12_400, 6);
    expect(settleMs(20, defaultRateLimits)).toBeCloseTo(58_000, 6);
  });

  it('brackets the median by order statistics', () => {
    const values = Array.from({ length: 30 }, (_, i) => (i + 1) * 1000).reverse();
    // n = 30: ranks 9 and 22 (n/2 ∓ 0.98·√n, the upper one past the middle pair).
    expect(medianInterval(values)).toEqual([9_000, 22_000]);
    expect(medianInterval([1, 2, 3])).toBeUndefined();
    const [lo, hi] = medianInterval(Array.from({ length: 101 }, (_, i) => i))!;
    expect(lo).toBeLessThan(50);
    expect(hi).toBeGreaterThan(50);
    expect(hi - lo).toBeLessThan(25);
  });
});
