import { describe, expect, it } from 'vitest';
import { priorityOf } from '../../src/mapping/bookings.js';
import { fetchRetryDelayMs } from '../../src/sync/runtime/fetch-drain.js';
import { formatDuration, queueEtaSeconds, sustainedRate } from '../../src/sync/runtime/progress.js';

describe('detail queue ordering and ETA', () => {
  const now = Date.UTC(2026, 10, 21, 12);
  it('fetches stays arriving soon first, using the arrival date in the booking number', () => {
    expect(priorityOf('20261125-7291-1', now)).toBe(1);
    expect(priorityOf('20261120-7291-1', now)).toBe(1);
    expect(priorityOf('20261101-7291-1', now)).toBe(2);
    expect(priorityOf('20270601-7291-1', now)).toBe(2);
    expect(priorityOf('not-a-number', now)).toBe(2);
  });

  it('computes the ETA from the tightest window of the details budget', () => {
    const details = [
      { limit: 10, windowMs: 1000 },
      { limit: 200, windowMs: 60000 },
      { limit: 4000, windowMs: 3600000 },
    ];
    expect(sustainedRate(details)).toBeCloseTo(4000 / 3600, 6);
    expect(queueEtaSeconds(4000, details)).toBe(3600);
    expect(formatDuration(3600)).toBe('1h00m');
    expect(formatDuration(59)).toBe('59s');
    expect(formatDuration(125)).toBe('2m05s');
  });

  it('backs off failed fetches exponentially, capped at ten minutes', () => {
    expect(fetchRetryDelayMs(0)).toBe(5000);
    expect(fetchRetryDelayMs(1)).toBe(10000);
    expect(fetchRetryDelayMs(30)).toBe(600000);
  });
});
