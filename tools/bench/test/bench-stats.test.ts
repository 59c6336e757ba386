import { describe, expect, it } from 'vitest';
import { histogramQuantileBound, minSearchRequests, quantile, readHistogram, DAY_MS } from '../stats.js';

describe('quantile', () => {
  it('interpolates between the nearest ranks', () => {
    expect(quantile([3, 1, 2], 0.5)).toBe(2);
    expect(quantile([4, 1, 3, 2], 0.5)).toBe(2.5);
    expect(quantile([1, 2, 3, 4, 5], 0)).toBe(1);
    expect(quantile([1, 2, 3, 4, 5], 1)).toBe(5);
    // 20 values 1..20: position 0.95 × 19 = 18.05 → 19 + 0.05.
    expect(
      quantile(
        Array.from({ length: 20 }, (_, i) => i + 1),
        0.95,
      ),
    ).toBeCloseTo(19.05, 10);
  });

  it('is NaN without values and refuses a q outside [0, 1]', () => {
    expect(quantile([], 0.5)).toBeNaN();
    expect(() => quantile([1], 1.5)).toThrow(/q must be/);
  });

  it('does not reorder its input', () => {
    const v = [3, 1, 2];
    quantile(v, 0.5);
    expect(v).toEqual([3, 1, 2]);
  });
});

describe('minSearchRequests', () => {
  const from = Date.UTC(2020, 0, 1);
  const at = (days: number, cancelled = false) => ({ modifiedMs: from + days * DAY_MS, cancelled });

  it('needs one page per state of each window even when empty', () => {
    expect(minSearchRequests([], from, from + 10 * DAY_MS)).toEqual({ windows: 1, requests: 2 });
    // Just over two 365-day windows: three windows, six searches.
    expect(minSearchRequests([], from, from + 730 * DAY_MS + 1)).toEqual({ windows: 3, requests: 6 });
    expect(minSearchRequests([], from, from)).toEqual({ windows: 1, requests: 2 });
  });

  it('adds pages of 100 per window and state', () => {
    const rs = [
      ...Array.from({ length: 101 }, () => at(10)), // window 0, Active: 2 pages
      ...Array.from({ length: 100 }, () => at(20, true)), // window 0, Cancelled: 1 page
      ...Array.from({ length: 250 }, () => at(400)), // window 1, Active: 3 pages
    ];
    // Window 1 Cancelled: 1 page (empty).
    expect(minSearchRequests(rs, from, from + 500 * DAY_MS)).toEqual({ windows: 2, requests: 7 });
  });

  it('ignores reservations outside the span and puts the last instant in the last window', () => {
    const rs = [at(-1), at(1000), at(365)];
    expect(minSearchRequests(rs, from, from + 365 * DAY_MS)).toEqual({ windows: 1, requests: 2 });
  });
});

describe('readHistogram', () => {
  const text = [
    '# HELP staysync_webhook_event_latency_seconds From the provider creating a change event to its refresh committed.',
    '# TYPE staysync_webhook_event_latency_seconds histogram',
    'staysync_webhook_event_latency_seconds_bucket{le="0.1",event_type="webpms:check_in"} 3',
    'staysync_webhook_event_latency_seconds_bucket{le="1",event_type="webpms:check_in"} 4',
    'staysync_webhook_event_latency_seconds_bucket{le="+Inf",event_type="webpms:check_in"} 4',
    'staysync_webhook_event_latency_seconds_sum{event_type="webpms:check_in"} 0.9',
    'staysync_webhook_event_latency_seconds_count{event_type="webpms:check_in"} 4',
    'staysync_webhook_event_latency_seconds_bucket{le="0.1",event_type="webpms:check_out"} 0',
    'staysync_webhook_event_latency_seconds_bucket{le="1",event_type="webpms:check_out"} 1',
    'staysync_webhook_event_latency_seconds_bucket{le="+Inf",event_type="webpms:check_out"} 2',
    'staysync_webhook_event_latency_seconds_sum{event_type="webpms:check_out"} 5.5',
    'staysync_webhook_event_latency_seconds_count{event_type="webpms:check_out"} 2',
    'staysync_other_count 7',
  ].join('\n');

  it('adds up every label set', () => {
    expect(readHistogram(text, 'staysync_webhook_event_latency_seconds')).toEqual({
      count: 6,
      sum: 6.4,
      buckets: [
        { le: 0.1, count: 3 },
        { le: 1, count: 5 },
        { le: Infinity, count: 6 },
      ],
    });
    expect(readHistogram(text, 'staysync_missing_seconds')).toBeUndefined();
  });

  it('bounds a quantile by the first bucket that holds it', () => {
    const h = readHistogram(text, 'staysync_webhook_event_latency_seconds')!;
    expect(histogramQuantileBound(h, 0.5)).toBe(0.1);
    expect(histogramQuantileBound(h, 0.8)).toBe(1);
    expect(histogramQuantileBound(h, 0.95)).toBe(Infinity);
  });
});
