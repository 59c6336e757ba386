/**
 * Pace, STLY, pickup, on the books, ADR and RevPAR on the hand-checked example of
 * docs/history.md: four bookings of the night of Friday 2026-03-20 (one re-priced, one cancelled,
 * one made on the day) and two of the same night last year (Friday 2025-03-21), written through
 * the daemon's own write path. Then the day close: recorded once the mirror is complete up to
 * it, read back by pace (source snapshot), equal to history; and the reconciliation gap against
 * the PMS statistics that /metrics shows.
 */
import { oneRoomBooking, writeBookingVersion, type OneRoomVersion } from '../helpers/booking-versions.js';
import { afterEach, describe, expect, it } from 'vitest';
import { largestReconciliationGaps, recordDayCloses } from '../../src/store/repositories/day-close.js';
import type { SyncContext } from '../../src/sync/runtime/context.js';
import { query } from '../helpers/database.js';
import { startHarness, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const P = '700100';

/** A booking of one room at property P (test/helpers/booking-versions.ts). */
const booking = (number: string, v: OneRoomVersion) => oneRoomBooking(P, number, v);

/** Writes a version as the booking details stream does. */
const write = (ctx: SyncContext, body: ReturnType<typeof booking>) => writeBookingVersion(ctx, P, body);

/** The example of docs/history.md, version by version in the order they happened. */
async function writeExample(ctx: SyncContext): Promise<void> {
  // Last year: the night of Friday 2025-03-21.
  await write(ctx, booking('LY-1', { created: '2024-12-01T10:00:00Z', nights: [['2025-03-21', '80.00']] }));
  await write(ctx, booking('LY-2', { created: '2025-03-01T10:00:00Z', nights: [['2025-03-21', '95.00']] }));
  // This year: the night of Friday 2026-03-20.
  await write(
    ctx,
    booking('TY-1', {
      created: '2026-01-05T10:00:00Z',
      nights: [
        ['2026-03-19', '100.00'],
        ['2026-03-20', '100.00'],
      ],
    }),
  );
  await write(ctx, booking('TY-2', { created: '2026-02-18T09:00:00Z', nights: [['2026-03-20', '120.00']] }));
  await write(ctx, booking('TY-3', { created: '2026-03-10T08:00:00Z', nights: [['2026-03-20', '90.00']] }));
  await write(ctx, booking('TY-2', { created: '2026-02-18T09:00:00Z', modified: '2026-03-15T12:00:00Z', nights: [['2026-03-20', '150.00']] }));
  await write(
    ctx,
    booking('TY-3', {
      created: '2026-03-10T08:00:00Z',
      modified: '2026-03-18T16:00:00Z',
      cancelled: '2026-03-18T16:00:00Z',
      nights: [['2026-03-20', '90.00']],
    }),
  );
  await write(ctx, booking('TY-4', { created: '2026-03-20T11:00:00Z', nights: [['2026-03-20', '200.00']] }));
}

function reporting<T extends Record<string, unknown>>(harness: Harness, text: string, params: unknown[] = []): Promise<T[]> {
  return query<T>(harness.dbUrl, `${harness.config.database.reportingSchema},${harness.schema}`, text, params);
}

const paceOf = (harness: Harness) =>
  reporting<{ d: number; n: number; net: string; ly: number; ly_net: string; source: string }>(
    harness,
    `SELECT days_before AS d, room_nights::int AS n, room_revenue_net::text AS net, stly_room_nights::int AS ly,
            stly_room_revenue_net::text AS ly_net, source
       FROM pace WHERE property_id = $1 AND stay_date = '2026-03-20' ORDER BY days_before DESC`,
    [P],
  );

describe('pace, STLY and the books over time (the example of docs/history.md)', () => {
  it('reads as worked out by hand, from history and then from the day-close snapshots', async () => {
    h = await startHarness({ sim: { properties: [] } });
    const ctx = await h.context();
    await writeExample(ctx);

    // Pace of the night of 2026-03-20, against the same Friday last year.
    const byHand = [
      { d: 90, n: 0, net: '0', ly: 1, ly_net: '80.00' },
      { d: 60, n: 1, net: '100.00', ly: 1, ly_net: '80.00' },
      { d: 30, n: 2, net: '220.00', ly: 1, ly_net: '80.00' },
      { d: 14, n: 2, net: '220.00', ly: 2, ly_net: '175.00' },
      { d: 7, n: 3, net: '310.00', ly: 2, ly_net: '175.00' },
      { d: 3, n: 3, net: '340.00', ly: 2, ly_net: '175.00' },
      { d: 1, n: 2, net: '250.00', ly: 2, ly_net: '175.00' },
      { d: 0, n: 3, net: '450.00', ly: 2, ly_net: '175.00' },
    ];
    expect(await paceOf(h)).toEqual(byHand.map((r) => ({ ...r, source: 'history' })));

    // On the books at one instant, and pickup day by day (its sum is the books at the close).
    const [otb] = await reporting<{ n: number; net: string }>(
      h,
      `SELECT room_nights::int AS n, room_revenue_net::text AS net FROM on_the_books('2026-03-16T00:00:00Z') WHERE property_id = $1 AND stay_date = '2026-03-20'`,
      [P],
    );
    expect(otb).toEqual({ n: 3, net: '340.00' });
    const pickup = await reporting<{ day: string; n: number; net: string }>(
      h,
      `SELECT pickup_date::text AS day, room_nights::int AS n, room_revenue_net::text AS net FROM pickup
        WHERE property_id = $1 AND stay_date = '2026-03-20' ORDER BY pickup_date`,
      [P],
    );
    expect(pickup).toEqual([
      { day: '2026-01-05', n: 1, net: '100.00' },
      { day: '2026-02-18', n: 1, net: '120.00' },
      { day: '2026-03-10', n: 1, net: '90.00' },
      { day: '2026-03-15', n: 0, net: '30.00' },
      { day: '2026-03-18', n: -1, net: '-90.00' },
      { day: '2026-03-20', n: 1, net: '200.00' },
    ]);

    // ADR and RevPAR of the night, with 10 rooms in the PMS rooms list.
    await h.sql(`INSERT INTO pms_rooms (property_id, room_id, raw, content_hash) SELECT $1, 'R' || i, '{}', 'x' FROM generate_series(1, 10) i`, [P]);
    const [kpi] = await reporting<Record<string, unknown>>(
      h,
      `SELECT rooms_sold::int, room_revenue_net::text, adr_net::text, rooms_available::int, occupancy::text, revpar_net::text
         FROM daily_kpis WHERE property_id = $1 AND stay_date = '2026-03-20'`,
      [P],
    );
    expect(kpi).toEqual({ rooms_sold: 3, room_revenue_net: '450.00', adr_net: '150.00', rooms_available: 10, occupancy: '0.3000', revpar_net: '45.00' });

    // Lifecycle: TY-2 re-priced, TY-3 cancelled.
    const facts = await reporting<Record<string, unknown>>(
      h,
      `SELECT number, versions, times_modified, booked_room_revenue_net::text, room_revenue_net::text FROM booking_facts
        WHERE property_id = $1 AND number IN ('TY-2', 'TY-3') ORDER BY number`,
      [P],
    );
    expect(facts).toEqual([
      { number: 'TY-2', versions: 2, times_modified: 1, booked_room_revenue_net: '120.00', room_revenue_net: '150.00' },
      { number: 'TY-3', versions: 2, times_modified: 1, booked_room_revenue_net: '90.00', room_revenue_net: '90.00' },
    ]);

    // ---- the day close: not before the mirror is complete up to it
    const now = new Date('2026-03-21T06:00:00Z');
    // Not followed yet (no cursor): nothing to record, and nothing to look at before its next local midnight (UTC here).
    const nextMidnight = new Date('2026-03-22T00:00:00Z');
    expect(await ctx.write((trx) => recordDayCloses(trx, [P], now))).toEqual({ days: 0, nights: 0, nextCloseAt: nextMidnight });
    await h.sql(`INSERT INTO sync_cursors (property_id, stream, caught_up, last_poll_at) VALUES ($1, 'booking_summaries', true, '2026-03-21T05:59:00Z')`, [P]);
    await h.sql(`INSERT INTO booking_detail_queue (property_id, number, wanted_modified_at, generation) VALUES ($1, 'TY-9', '2026-03-19T10:00:00Z', 1)`, [P]);
    // A change of 19 March still waits for its details: the closes from the 19th on wait too.
    const early = await ctx.write((trx) => recordDayCloses(trx, [P], now));
    expect(early.days).toBe(5); // 14 to 18 March
    expect(early.nextCloseAt).toEqual(now); // 19 and 20 March wait: looked at again at the next tick
    await h.sql(`DELETE FROM booking_detail_queue`);
    expect(await ctx.write((trx) => recordDayCloses(trx, [P], now))).toMatchObject({ days: 2, nextCloseAt: nextMidnight }); // 19 and 20 March
    expect(await ctx.write((trx) => recordDayCloses(trx, [P], now))).toMatchObject({ days: 0, nextCloseAt: nextMidnight }); // once a day
    const snapshots = await reporting<{ day: string; as_of: string; n: number; net: string }>(
      h,
      `SELECT snapshot_date::text AS day, to_char(as_of AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') AS as_of, room_nights::int AS n, room_revenue_net::text AS net
         FROM otb_snapshots WHERE property_id = $1 AND stay_date = '2026-03-20' ORDER BY snapshot_date`,
      [P],
    );
    expect(snapshots).toEqual([
      { day: '2026-03-14', as_of: '2026-03-15 00:00', n: 3, net: '310.00' },
      { day: '2026-03-15', as_of: '2026-03-16 00:00', n: 3, net: '340.00' },
      { day: '2026-03-16', as_of: '2026-03-17 00:00', n: 3, net: '340.00' },
      { day: '2026-03-17', as_of: '2026-03-18 00:00', n: 3, net: '340.00' },
      { day: '2026-03-18', as_of: '2026-03-19 00:00', n: 2, net: '250.00' },
      { day: '2026-03-19', as_of: '2026-03-20 00:00', n: 2, net: '250.00' },
      { day: '2026-03-20', as_of: '2026-03-21 00:00', n: 3, net: '450.00' },
    ]);
    // Pace reads the closes recorded, with the same figures as history.
    expect(await paceOf(h)).toEqual(byHand.map((r) => ({ ...r, source: r.d <= 3 ? 'snapshot' : 'history' })));
    // A snapshot keeps what the mirror knew at its close: a booking learnt of later, made
    // before that close, shows in history (reconstructed) but not in the snapshot.
    await write(ctx, booking('TY-5', { created: '2026-03-19T20:00:00Z', modified: '2026-03-21T05:00:00Z', nights: [['2026-03-20', '60.00']] }));
    const [late] = await reporting<{ n: number; r: number }>(
      h,
      `SELECT room_nights::int AS n, reconstructed_room_nights::int AS r FROM on_the_books('2026-03-20T00:00:00Z') WHERE property_id = $1 AND stay_date = '2026-03-20'`,
      [P],
    );
    expect(late).toEqual({ n: 3, r: 1 });
    expect((await paceOf(h)).find((r) => r.d === 1)).toMatchObject({ n: 2, source: 'snapshot' });
  });

  it('measures the largest gap against the PMS statistics over the 30 nights before today, for /metrics', async () => {
    h = await startHarness({ sim: { properties: [] } });
    const ctx = await h.context();
    await writeExample(ctx);
    await h.sql(`INSERT INTO properties (property_id, name, raw, content_hash) VALUES ($1, 'Example', '{}', 'x')`, [P]);
    const statistics = (date: string, occupied: number, complimentary: number) =>
      h!.sql(
        `INSERT INTO daily_occupancy (property_id, stay_date, currency_code, property_room_count, occupancy_rate, closed_room_count, occupancy_room_count,
           complimentary_occupancy_room_count, room_revenue, revenue, meal_revenue, arrival_count, guest_count, refreshed_at, raw)
         VALUES ($1, $2, 'EUR', 10, 0, 0, $3, $4, 0, 0, 0, 0, 0, now(), '{}')`,
        [P, date, occupied, complimentary],
      );
    await statistics('2026-03-19', 1, 0); // the mirror has 1: no gap
    await statistics('2026-03-20', 5, 1); // the mirror has 3: 3 rooms the booking list does not carry
    await statistics('2026-02-01', 4, 0); // out of the last 30 nights
    expect(await largestReconciliationGaps(ctx.db, [{ propertyId: P, today: '2026-03-21' }])).toEqual([{ propertyId: P, rooms: 3 }]);
    // The night of the 20th leaves the last 30 nights a month later: no gap then.
    expect(await largestReconciliationGaps(ctx.db, [{ propertyId: P, today: '2026-04-25' }])).toEqual([]);
    const rows = await reporting<Record<string, unknown>>(
      h,
      `SELECT stay_date::text, mirror_rooms_sold::int, provider_rooms_sold::int, rooms_difference::int FROM reconciliation WHERE property_id = $1 ORDER BY stay_date`,
      [P],
    );
    expect(rows).toEqual([
      { stay_date: '2026-02-01', mirror_rooms_sold: 0, provider_rooms_sold: 4, rooms_difference: -4 },
      { stay_date: '2026-03-19', mirror_rooms_sold: 1, provider_rooms_sold: 1, rooms_difference: 0 },
      { stay_date: '2026-03-20', mirror_rooms_sold: 3, provider_rooms_sold: 6, rooms_difference: -3 },
    ]);
  });
});
