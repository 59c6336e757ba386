/**
 * The estimate of a first full sync (src/sync/runtime/progress.ts), on histories made up here:
 * exact when bookings came at a steady pace, low when they grew towards now (as real histories
 * do), exact once the list caught up; and the time is that of the slower budget.
 */
import { describe, expect, it } from 'vitest';
import { estimateFirstSync, firstSyncTotals, type FirstSyncInput } from '../../src/sync/runtime/progress.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const now = Date.parse('2026-11-27T12:00:00Z');
/** The production details budget's sustained pace, 4,000 an hour; one list page a second. */
const details = [{ limit: 4000, windowMs: HOUR }];
const list = [{ limit: 1, windowMs: 1000 }];

/** A history of `count` bookings modified at `at(k)`, listed up to its `listed` first ones. */
function input(count: number, at: (k: number) => number, listed: number, extra: Partial<FirstSyncInput> = {}): FirstSyncInput {
  const times = Array.from({ length: count }, (_, k) => at(k)).sort((a, b) => a - b);
  return {
    found: listed,
    firstModification: new Date(times[0]!),
    position: new Date(times[listed - 1]!),
    caughtUp: false,
    pendingDetails: 0,
    now,
    pageSize: 1000,
    listWindows: list,
    detailWindows: details,
    ...extra,
  };
}

describe('estimateFirstSync', () => {
  it('is exact for a steady history, and the details budget sets the time', () => {
    // 100,000 bookings, one every 100 minutes up to now; 3,000 listed.
    const steady = (k: number) => now - (100_000 - k) * 100 * 60_000;
    const e = estimateFirstSync(input(100_000, steady, 3000));
    expect(Math.abs(e.estimatedTotal! - 100_000)).toBeLessThanOrEqual(34);
    // 97,000 details at 4,000 an hour: about 24 hours (the list's 97 pages take 97 s).
    expect(e.endsInSeconds).toBe(Math.ceil(((e.estimatedTotal! - 3000) / 4000) * 3600));
  });

  it('is low early on for a history that grows towards now, and rises as the list goes on', () => {
    // Most bookings in the last years: the first pages are the sparse old ones.
    const growing = (k: number) => now - Math.floor((1 - k / 20_000) ** 2 * 3000 * DAY) - 1;
    const early = estimateFirstSync(input(20_000, growing, 1000)).estimatedTotal!;
    const later = estimateFirstSync(input(20_000, growing, 10_000)).estimatedTotal!;
    expect(early).toBeLessThan(20_000);
    expect(later).toBeGreaterThan(early);
    expect(later).toBeLessThanOrEqual(20_000);
  });

  it('counts the queued details, and is the count itself once the list caught up', () => {
    const e = estimateFirstSync({ ...input(10, (k) => now - k * DAY, 10), caughtUp: true, pendingDetails: 4000 });
    expect(e.estimatedTotal).toBe(10);
    expect(e.endsInSeconds).toBe(3600);
  });

  it('has no estimate while the pages cover a single modification time', () => {
    const e = estimateFirstSync(input(50, () => now - DAY, 50));
    expect(e).toMatchObject({ found: 50, estimatedTotal: null, endsInSeconds: null });
  });

  it('adds up the properties, which share the budgets', () => {
    const steady = (k: number) => now - (2000 - k) * HOUR;
    const one = input(2000, steady, 1000);
    const both = [one, one].map((i) => ({ input: i, estimate: estimateFirstSync(i) }));
    const alone = both[0]!.estimate;
    const together = firstSyncTotals(both);
    expect(together.detailsLeft).toBe(2 * (alone.estimatedTotal! - 1000));
    expect(together.endsInSeconds).toBe(Math.ceil((together.detailsLeft / 4000) * 3600));
    expect(firstSyncTotals([...both, { input: one, estimate: { ...alone, estimatedTotal: null } }]).endsInSeconds).toBeNull();
  });
});
