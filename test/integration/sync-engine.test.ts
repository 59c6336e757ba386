/**
 * The bookings mirror end to end: real PostgreSQL, the simulator over HTTP, the engine.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ContinueTokenLostError } from '../../src/sync/runtime/errors.js';
import { planRecovery } from '../../src/sync/runtime/recovery.js';
import { skippingBackoffs } from '../helpers/skip-backoffs.js';
import { mirrorSnapshot, simulatorSnapshot, startHarness, SIM_CLIENT_SECRET, syncOnce, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('sync engine against the simulator', () => {
  it('mirrors several properties row for row', async () => {
    h = await startHarness({
      sim: {
        properties: [
          // Several pages each (pages of 10), as 120, 80 and 60 in pages of 50 were.
          { id: '500100', bookingCount: 30 },
          { id: '500200', bookingCount: 20 },
          { id: '7291', bookingCount: 15 },
        ],
      },
      config: { sync: { summariesPageSize: 10 } },
    });
    const ctx = await h.context();
    const result = await syncOnce(ctx);
    expect(result.continueTokenLost).toEqual([]);

    const expected = simulatorSnapshot(h.sim);
    expect(expected).toHaveLength(65);
    expect(await mirrorSnapshot(h)).toEqual(expected);

    // Pages of 10 over 65 bookings: the cursor moved page by page, and every booking was fetched once.
    const cursors = await h.sql<{ property_id: string; pages: string; caught_up: boolean; cursor: string }>(
      'SELECT property_id, pages, caught_up, cursor FROM sync_cursors ORDER BY property_id',
    );
    expect(cursors.map((c) => c.property_id)).toEqual(['500100', '500200', '7291']);
    expect(cursors.every((c) => c.caught_up && c.cursor)).toBe(true);
    expect(ctx.counters.detailsFetched).toBe(65);
    expect(await h.sql('SELECT * FROM booking_detail_queue')).toEqual([]);
  });

  it('converges while the data keeps changing, then stops changing', async () => {
    h = await startHarness({
      sim: {
        properties: [
          // 2 x 50: the first pass still runs under churn from start to end (new bookings and
          // changes of listed ones, 75 a second), as with 2 x 150, which took three times as long.
          { id: '500100', bookingCount: 50 },
          { id: '500200', bookingCount: 50 },
        ],
      },
    });
    const ctx = await h.context();
    // Churn changes a booking twice in one second now and then: the list then shows a second
    // it has details of, which are asked for again after 5, 10 and 20 s before they are
    // believed (versions-missed.test.ts). Those waits are cut short: the same calls, sooner.
    h.sim.startChurn({ intervalMs: 40, perTick: 3, newPerTick: 1 });
    await skippingBackoffs(h, () => syncOnce(ctx));
    h.sim.stopChurn();
    // The changes made after the first pass are picked up by the next poll.
    await skippingBackoffs(h, () => syncOnce(ctx));
    expect(await mirrorSnapshot(h)).toEqual(simulatorSnapshot(h.sim));
    const counted = await h.sql<{ n: string }>('SELECT count(*) AS n FROM bookings');
    expect(Number(counted[0]?.n)).toBeGreaterThan(100);
  });

  it('costs no detail call for a summary whose version is already stored', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 30 }] } });
    const ctx = await h.context();
    await syncOnce(ctx);
    const before = h.sim.stats.accepted.bookingDetails ?? 0;
    expect(before).toBe(30);
    // Re-read the whole list from 2009 (as a recovery would): every summary repeats.
    const replay = await h.context();
    await syncOnce(replay, { recoverFrom: new Map([['500100', new Date('2009-01-01T00:00:00Z')]]) });
    expect(replay.counters.summaries).toBe(30);
    expect(replay.counters.detailsEnqueued).toBe(0);
    expect(h.sim.stats.accepted.bookingDetails).toBe(before);
  });

  it('vacuums its fetch queue every sync.vacuumQueueEveryRows rows taken (fetched rows are deleted; autovacuum may be off)', async () => {
    const vacuums = async () => {
      // A fresh statistics snapshot: the count the VACUUM's own backend reported.
      const [r] = await h!.sql<{ n: string }>(
        `SELECT pg_stat_clear_snapshot(), (SELECT vacuum_count FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'booking_detail_queue') AS n`,
        [h!.schema],
      );
      return Number(r!.n);
    };
    // 25 rows, a VACUUM every 10: two, and a remainder that makes none, as 45 every 20 did.
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 25 }] }, config: { sync: { vacuumQueueEveryRows: 10 } } });
    await h.migrate();
    const before = await vacuums();
    const ctx = await h.context();
    await syncOnce(ctx);
    expect(await h.sql(`SELECT 1 FROM bookings`)).toHaveLength(25);
    // 25 rows taken: a VACUUM after the 10th and the 20th.
    await expect.poll(vacuums, { timeout: 5_000 }).toBe(before + 2);
    await h.close();

    // 0: never (autovacuum's job).
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 25 }] }, config: { sync: { vacuumQueueEveryRows: 0 } } });
    await h.migrate();
    const off = await h.context();
    await syncOnce(off);
    expect(off.counters.detailsFetched).toBe(25);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await vacuums()).toBe(0);
  });

  it('keeps the booking lists whose token is lost waiting without --recover, and recovers them with it', async () => {
    h = await startHarness({
      sim: {
        properties: [
          { id: '500100', bookingCount: 30 },
          { id: '500200', bookingCount: 20 },
        ],
      },
    });
    const ctx = await h.context();
    await syncOnce(ctx);
    h.sim.invalidateContinueTokens();
    h.sim.mutate({ count: 10, newCount: 5 });

    const lostRun = await syncOnce(await h.context());
    expect(lostRun.continueTokenLost.map((e) => e.propertyId).sort()).toEqual(['500100', '500200']);
    expect(lostRun.continueTokenLost[0]).toBeInstanceOf(ContinueTokenLostError);
    for (const lost of lostRun.continueTokenLost) expect(lost.message).toContain(`staysync run --recover --property ${lost.propertyId}`);

    // A run without the flag leaves them as they are: no page read, nothing written.
    const snapshot = await mirrorSnapshot(h);
    const cursorsBefore = await h.sql("SELECT * FROM sync_cursors WHERE stream = 'booking_summaries' ORDER BY property_id");
    const again = await syncOnce(await h.context());
    expect(again.continueTokenLost.map((e) => e.propertyId).sort()).toEqual(['500100', '500200']);
    expect(await mirrorSnapshot(h)).toEqual(snapshot);
    expect(await h.sql("SELECT * FROM sync_cursors WHERE stream = 'booking_summaries' ORDER BY property_id")).toEqual(cursorsBefore);

    // With --recover: restart at the last mirrored modification minus two days.
    const rctx = await h.context();
    const recoverFrom = await planRecovery(rctx, h.config.propertyIds, { mode: 'auto' });
    const max = await h.sql<{ m: Date }>(`SELECT max(modified_at) AS m FROM bookings WHERE property_id = '500100'`);
    expect(recoverFrom.get('500100')!.getTime()).toBe(max[0]!.m.getTime() - 2 * 86_400_000);
    expect([...recoverFrom.keys()].sort()).toEqual(['500100', '500200']);
    const result = await syncOnce(rctx, { recovery: { mode: 'auto' } });
    expect(result.continueTokenLost).toEqual([]);
    expect(rctx.counters.continueTokensRecovered).toBe(2);
    expect(await mirrorSnapshot(h)).toEqual(simulatorSnapshot(h.sim));
    const states = await h.sql<{ state: string }>('SELECT state FROM sync_cursors');
    expect(states.every((s) => s.state === 'active')).toBe(true);
  });

  it('converges through a storm of 429, 503 and 401', async () => {
    // Every injected 429 and 503 says retry-after: 1 (whole seconds), so the storm is brief.
    h = await startHarness({
      sim: {
        properties: [
          // Some 90 requests at 10 % of each fault: every kind is met several times.
          { id: '500100', bookingCount: 40 },
          { id: '500200', bookingCount: 20 },
        ],
      },
    });
    h.sim.faults.error5xxRate = 0.1;
    h.sim.faults.spurious429Rate = 0.1;
    h.sim.faults.spurious401Rate = 0.1;
    const ctx = await h.context();
    // The details that failed after the client's own retries are fetched again after 5 s,
    // 10 s, ... (cut short: when is the product's, unit-tested).
    const { result } = await skippingBackoffs(h, () => syncOnce(ctx));
    expect(result.continueTokenLost).toEqual([]);
    expect(await mirrorSnapshot(h)).toEqual(simulatorSnapshot(h.sim));
    const stats = ctx.client.stats();
    expect(stats.responses429).toBeGreaterThan(0);
    expect(stats.responses5xx).toBeGreaterThan(0);
    expect(stats.responses401).toBeGreaterThan(0);
  });

  it('quarantines malformed details, records 404s, and completes the rest', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 60 }] } });
    const numbers = h.sim.bookings('500100').map((b) => b.number);
    const malformed = new Set(numbers.slice(0, 3));
    const missing = new Set(numbers.slice(3, 5));
    for (const n of malformed) h.sim.faults.malformedBookingNumbers.add(n);
    for (const n of missing) h.sim.faults.notFoundBookingNumbers.add(n);
    const ctx = await h.context();
    // The quick retries of a 404 (1, 2, 4 s) cut short: the same calls, sooner.
    const { skipped } = await skippingBackoffs(h, () => syncOnce(ctx));
    expect(skipped.length).toBeGreaterThanOrEqual(2 * 2);

    expect(await mirrorSnapshot(h)).toEqual(simulatorSnapshot(h.sim, new Set([...malformed, ...missing])));
    const q = await h.sql<{ entity_key: string; stream: string; reason: string; raw_body: string }>('SELECT * FROM quarantine ORDER BY entity_key');
    expect(q.map((r) => r.entity_key)).toEqual([...malformed].sort());
    expect(q.every((r) => r.stream === 'booking_details' && r.reason.length > 0 && r.raw_body.length > 0)).toBe(true);
    const parked = await h.sql<{ number: string; state: string }>('SELECT number, state FROM booking_detail_queue ORDER BY number');
    expect(parked).toEqual(
      [...[...malformed].map((n) => ({ number: n, state: 'quarantined' })), ...[...missing].map((n) => ({ number: n, state: 'not_found' }))].sort((a, b) =>
        a.number.localeCompare(b.number),
      ),
    );
    // Not retried forever: a second pass makes no detail call for them.
    const calls = h.sim.stats.accepted.bookingDetails;
    await syncOnce(await h.context());
    expect(h.sim.stats.accepted.bookingDetails).toBe(calls);
  });

  it('never writes a secret or an access token into a log line', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 30 }] }, logLevel: 'trace' });
    h.sim.faults.spurious401Rate = 0.2;
    h.sim.faults.error5xxRate = 0.1;
    const ctx = await h.context();
    await skippingBackoffs(h, () => syncOnce(ctx));
    expect(h.logLines.length).toBeGreaterThan(5);
    const all = h.logLines.join('\n');
    expect(all).not.toContain(SIM_CLIENT_SECRET);
    expect(all).not.toMatch(/eyJ[\w-]+\.[\w-]+\.[\w-]+/); // no JWT
    expect(all.toLowerCase()).not.toContain('bearer ');
  });
});
