/**
 * Runs `sync` (a `sync --once`) while making due at once every detail fetch that waits out a
 * backoff (fetchRetryDelayMs: 5, 10, 20 s after a failure or an older copy; the quick retries
 * of a 404: 1, 2, 4 s). Their lengths are the product's and unit-tested
 * (test/unit/priority-and-eta.test.ts); `sync --once` looks at its queue every second, so a
 * test that proves what is retried, not when, gets the same retries sooner. Returns the waits
 * it cut short (ms), so that a test can still see each retry put off rather than spun. Rows
 * parked (not_found, quarantined) are left as they are.
 */
import type { Harness } from './harness.js';

export async function skippingBackoffs<T>(h: Pick<Harness, 'sql'>, sync: () => Promise<T>): Promise<{ result: T; skipped: number[] }> {
  const skipped: number[] = [];
  let done = false;
  const cutting = (async () => {
    while (!done) {
      const rows = await h.sql<{ wait_ms: number }>(
        `WITH waiting AS (
           SELECT property_id, number, extract(epoch FROM next_attempt_at - now()) * 1000 AS wait_ms FROM booking_detail_queue
            WHERE state = 'pending' AND attempts > 0 AND next_attempt_at > now() FOR UPDATE)
         UPDATE booking_detail_queue q SET next_attempt_at = now() FROM waiting w
          WHERE q.property_id = w.property_id AND q.number = w.number RETURNING w.wait_ms::float8 AS wait_ms`,
      );
      skipped.push(...rows.map((r) => r.wait_ms));
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  try {
    return { result: await sync(), skipped };
  } finally {
    done = true;
    await cutting;
  }
}
