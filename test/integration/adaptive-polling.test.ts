/**
 * Adaptive polling in the real engine (daemon mode, real PostgreSQL, the simulator): a change
 * at a caught-up property is found by the next poll and its details are fetched ahead of the
 * detail backlog of a property that is still backfilling.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Engine } from '../../src/sync/runtime/engine.js';
import { registeredStreams } from '../../src/sync/streams/registry.js';
import { waitFor } from '../helpers/cli.js';
import { bookingStreams, startHarness, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const BACKFILLING = '500100';
const CAUGHT_UP = '500200';

describe('adaptive polling', () => {
  it("fetches a caught-up property's new booking before the backlog of a backfilling one", async () => {
    h = await startHarness({
      sim: {
        properties: [
          { id: BACKFILLING, bookingCount: 600 },
          { id: CAUGHT_UP, bookingCount: 5 },
        ],
      },
      // Details slow enough that the backfill's queue lasts while the change happens.
      config: { rateLimits: { bookingDetails: [{ limit: 20, windowMs: 1000 }] }, sync: { detailConcurrency: 2 } },
    });
    const ctx = await h.context();
    const stop = new AbortController();
    const running = new Engine(ctx, { mode: 'daemon', recovery: { mode: 'none' }, streams: bookingStreams }).run(stop.signal);
    try {
      const count = async (sql: string, id: string) => Number((await h!.sql<{ n: string }>(sql, [id]))[0]!.n);
      const mirrored = (id: string) => count('SELECT count(*) AS n FROM bookings WHERE property_id = $1', id);
      const backlog = () => count("SELECT count(*) AS n FROM booking_detail_queue WHERE property_id = $1 AND state = 'pending'", BACKFILLING);
      const caughtUp = () => count("SELECT count(*) AS n FROM sync_cursors WHERE property_id = $1 AND stream = 'booking_summaries' AND caught_up", CAUGHT_UP);
      await waitFor('the small property caught up', async () => (await caughtUp()) === 1, 30_000);
      await waitFor('the backfill to queue its details', async () => (await backlog()) > 300, 30_000);

      const before = new Set(h.sim.bookings(CAUGHT_UP).map((b) => b.number));
      h.sim.mutate({ count: 0, newCount: 1, propertyId: CAUGHT_UP });
      const added = h.sim.bookings(CAUGHT_UP).find((b) => !before.has(b.number))!.number;
      const changedAt = Date.now();
      await waitFor(
        'the new booking mirrored',
        async () => (await h!.sql('SELECT 1 FROM bookings WHERE property_id = $1 AND number = $2', [CAUGHT_UP, added])).length === 1,
        10_000,
        50,
      );
      const took = Date.now() - changedAt;
      const left = await backlog();
      // Found by a poll within a second (floor 250 ms, polls take a share while the other backfills) and fetched first.
      expect(took).toBeLessThan(3_000);
      expect(left, 'the backfill backlog was still there: the fresh change went first').toBeGreaterThan(100);
      expect(await mirrored(CAUGHT_UP)).toBeGreaterThanOrEqual(1);
    } finally {
      stop.abort();
      await running;
    }
  });

  it('enqueues what a poll finds first in line (priority 0), backfill by arrival after it', async () => {
    h = await startHarness({
      sim: {
        properties: [
          { id: BACKFILLING, bookingCount: 50 },
          { id: CAUGHT_UP, bookingCount: 5 },
        ],
      },
    });
    const ctx = await h.context();
    // The booking list alone: what it enqueues stays in the queue to be looked at.
    const streams = { property: registeredStreams.property.filter((s) => s.name === 'booking_summaries'), queues: [], refreshes: [] };
    const stop = new AbortController();
    const running = new Engine(ctx, { mode: 'daemon', recovery: { mode: 'none' }, streams }).run(stop.signal);
    try {
      await waitFor(
        'both caught up',
        async () => (await h!.sql("SELECT 1 FROM sync_cursors WHERE stream = 'booking_summaries' AND caught_up")).length === 2,
        30_000,
      );
      const before = new Set(h.sim.bookings(CAUGHT_UP).map((b) => b.number));
      h.sim.mutate({ count: 0, newCount: 3, propertyId: CAUGHT_UP });
      const added = h.sim
        .bookings(CAUGHT_UP)
        .filter((b) => !before.has(b.number))
        .map((b) => b.number);
      const rows = await waitFor(
        'the poll to enqueue them',
        async () => {
          const r = await h!.sql<{ number: string; priority: number }>('SELECT number, priority FROM booking_detail_queue WHERE number = ANY($1)', [added]);
          return r.length === 3 ? r : undefined;
        },
        10_000,
        50,
      );
      expect(rows.map((r) => r.priority)).toEqual([0, 0, 0]);
      const backfill = await h.sql<{ priority: number }>('SELECT DISTINCT priority FROM booking_detail_queue WHERE property_id = $1', [BACKFILLING]);
      expect(backfill.map((r) => r.priority).every((p) => p === 1 || p === 2)).toBe(true);
    } finally {
      stop.abort();
      await running;
    }
  });
});
