/**
 * The forecast by the pickup method (reporting.forecast_at, reporting.forecast) on the
 * hand-checked example of docs/tables-and-reporting.md ("Forecast"): Friday nights of one
 * property, written version by version through the daemon's own write path (made, re-priced,
 * cancelled), then the forecast made on Monday 16 March 2026 at 09:00 for the Fridays 20 and
 * 27 March, its parts worked out by hand.
 */
import { oneRoomBooking, writeBookingVersion, type OneRoomVersion } from '../helpers/booking-versions.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { SyncContext } from '../../src/sync/runtime/context.js';
import { query } from '../helpers/database.js';
import { startHarness, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const P = '700200';

/** A booking of one room at property P (test/helpers/booking-versions.ts). */
const booking = (number: string, v: OneRoomVersion) => oneRoomBooking(P, number, v);

/** Writes a version as the booking details stream does. */
const write = (ctx: SyncContext, body: ReturnType<typeof booking>) => writeBookingVersion(ctx, P, body);

/** The example of docs/tables-and-reporting.md, in the order things happened. */
async function writeExample(ctx: SyncContext): Promise<void> {
  await write(ctx, booking('A1', { created: '2026-02-10T10:00:00Z', nights: [['2026-02-27', '100.00']] }));
  await write(ctx, booking('B1', { created: '2026-02-20T10:00:00Z', nights: [['2026-03-06', '100.00']] }));
  await write(ctx, booking('A2', { created: '2026-02-25T12:00:00Z', nights: [['2026-02-27', '120.00']] }));
  await write(ctx, booking('A3', { created: '2026-02-26T12:00:00Z', nights: [['2026-02-27', '100.00']] }));
  await write(ctx, booking('B2', { created: '2026-03-01T10:00:00Z', nights: [['2026-03-06', '110.00']] }));
  await write(ctx, booking('C1', { created: '2026-03-01T11:00:00Z', nights: [['2026-03-13', '100.00']] }));
  await write(ctx, booking('D1', { created: '2026-03-01T12:00:00Z', nights: [['2026-03-20', '100.00']] }));
  await write(ctx, booking('B3', { created: '2026-03-04T15:00:00Z', nights: [['2026-03-06', '130.00']] }));
  await write(ctx, booking('E1', { created: '2026-03-05T09:00:00Z', nights: [['2026-03-27', '100.00']] }));
  await write(
    ctx,
    booking('B2', { created: '2026-03-01T10:00:00Z', modified: '2026-03-05T08:00:00Z', cancelled: '2026-03-05T08:00:00Z', nights: [['2026-03-06', '110.00']] }),
  );
  await write(ctx, booking('B4', { created: '2026-03-06T20:00:00Z', nights: [['2026-03-06', '150.00']] }));
  await write(ctx, booking('C4', { created: '2026-03-09T09:30:00Z', nights: [['2026-03-13', '110.00']] }));
  await write(ctx, booking('C2', { created: '2026-03-10T09:00:00Z', nights: [['2026-03-13', '140.00']] }));
  await write(ctx, booking('C1', { created: '2026-03-01T11:00:00Z', modified: '2026-03-11T10:00:00Z', nights: [['2026-03-13', '90.00']] }));
  await write(
    ctx,
    booking('C3', {
      created: '2026-03-12T09:00:00Z',
      nights: [
        ['2026-03-12', '120.00'],
        ['2026-03-13', '120.00'],
      ],
    }),
  );
  await write(ctx, booking('D2', { created: '2026-03-14T10:00:00Z', nights: [['2026-03-20', '150.00']] }));
  // An hour after the forecast is made: not on its books.
  await write(ctx, booking('D3', { created: '2026-03-16T10:00:00Z', nights: [['2026-03-20', '200.00']] }));
}

function reporting<T extends Record<string, unknown>>(harness: Harness, text: string, params: unknown[] = []): Promise<T[]> {
  return query<T>(harness.dbUrl, `${harness.config.database.reportingSchema},${harness.schema}`, text, params);
}

const columns = `stay_date::text AS night, lead_days AS lead, currency_code AS cur, comparable_nights AS n,
  comparable_first::text AS first, comparable_last::text AS last,
  room_nights_on_the_books::int AS otb, room_nights_pickup::text AS pickup, room_nights_forecast::text AS forecast,
  room_revenue_net_on_the_books::text AS otb_net, room_revenue_net_pickup::text AS pickup_net, room_revenue_net_forecast::text AS forecast_net,
  room_revenue_gross_forecast::text AS forecast_gross`;

describe('forecast by the pickup method (the example of docs/tables-and-reporting.md)', () => {
  it('is the books at the moment plus the average pickup of the comparable nights, as worked out by hand', async () => {
    h = await startHarness({ sim: { properties: [] } });
    await h.migrate();
    await h.sql(`INSERT INTO properties (property_id, name, currency, time_zone, raw, content_hash) VALUES ($1, 'Forecast example', 'EUR', 'UTC', '{}', 'x')`, [
      P,
    ]);
    const ctx = await h.context();
    await writeExample(ctx);

    const rows = await reporting(
      h,
      `SELECT ${columns} FROM forecast_at('2026-03-16T09:00:00Z', 90) WHERE property_id = $1 AND stay_date IN ('2026-03-20', '2026-03-27') ORDER BY stay_date`,
      [P],
    );
    expect(rows).toEqual([
      // Friday 20 March, 4 days ahead: D1 and D2 on the books (D3 is made an hour later). The
      // Fridays 13 and 6 March and 27 February, each from Monday 09:00 four days before it:
      // 13 March +3 rooms (C4 made 30 min after that Monday 09:00, C2, C3) and +360.00 (C1
      // re-priced 100 -> 90: -10); 6 March +1 (B2 cancelled: -1 -110, B3 and B4 +2 +280) and
      // +170.00; 27 February +2 (A2, A3) and +220.00. Average: 6 / 3 = 2.00 rooms, 750 / 3 = 250.00.
      {
        night: '2026-03-20',
        lead: 4,
        cur: 'EUR',
        n: 3,
        first: '2026-02-27',
        last: '2026-03-13',
        otb: 2,
        pickup: '2.00',
        forecast: '4.00',
        otb_net: '250.00',
        pickup_net: '250.00',
        forecast_net: '500.00',
        forecast_gross: '500.00',
      },
      // Friday 27 March, 11 days ahead: the same three Fridays (13 March is the latest at least
      // 11 days behind the forecast), each from 11 days before it. 13 March from 2 March 09:00:
      // the same +3 and +360.00 (C1 was made before); 6 March from 23 February: +2 and +280.00
      // (B2 came and went within); 27 February from 16 February: +2 and +220.00. Average 7 / 3
      // = 2.33 rooms, 860 / 3 = 286.67; on the books E1, 1 room and 100.00.
      {
        night: '2026-03-27',
        lead: 11,
        cur: 'EUR',
        n: 3,
        first: '2026-02-27',
        last: '2026-03-13',
        otb: 1,
        pickup: '2.33',
        forecast: '3.33',
        otb_net: '100.00',
        pickup_net: '286.67',
        forecast_net: '386.67',
        forecast_gross: '386.67',
      },
    ]);

    // Tonight (Monday 16 March): the Mondays 9 and 2 March are comparable (23 February is before
    // the first night with history, 27 February); nothing was booked for them.
    const [tonight] = await reporting(h, `SELECT ${columns} FROM forecast_at('2026-03-16T09:00:00Z', 90) WHERE property_id = $1 AND lead_days = 0`, [P]);
    expect(tonight).toMatchObject({ night: '2026-03-16', n: 2, first: '2026-03-02', last: '2026-03-09', otb: 0, pickup: '0.00', forecast: '0.00' });

    // No comparable week: the books alone, the pickup unknown.
    const [alone] = await reporting(
      h,
      `SELECT ${columns} FROM forecast_at('2026-03-16T09:00:00Z', 90, 0) WHERE property_id = $1 AND stay_date = '2026-03-20'`,
      [P],
    );
    expect(alone).toMatchObject({ n: 0, first: null, last: null, otb: 2, pickup: null, forecast: '2.00', forecast_net: '250.00' });

    // The horizon is at most 366 nights, one row a night in the property's one currency.
    const [count] = await reporting<{ n: number; nights: number }>(
      h,
      `SELECT count(*)::int AS n, count(DISTINCT stay_date)::int AS nights FROM forecast_at('2026-03-16T09:00:00Z', 100000) WHERE property_id = $1`,
      [P],
    );
    expect(count).toEqual({ n: 366, nights: 366 });

    // Local dates: at 11:00 UTC it is already 17 March, 01:00, at a property on UTC+14. Friday
    // 20 March is then 3 days ahead, and D3 (made at 10:00 UTC) is on the books: 3 rooms, 450.00.
    await h.sql(`UPDATE properties SET time_zone = 'Pacific/Kiritimati' WHERE property_id = $1`, [P]);
    const [east] = await reporting(
      h,
      `SELECT as_of_date::text AS today, ${columns} FROM forecast_at('2026-03-16T11:00:00Z', 90) WHERE property_id = $1 AND stay_date = '2026-03-20'`,
      [P],
    );
    expect(east).toMatchObject({ today: '2026-03-17', lead: 3, last: '2026-03-13', otb: 3, otb_net: '450.00' });
    await h.sql(`UPDATE properties SET time_zone = 'UTC' WHERE property_id = $1`, [P]);

    // The view: forecast_at(now(), 90), tonight first.
    const [view] = await reporting<{ n: number; first: number; last: number; today: boolean }>(
      h,
      `SELECT count(*)::int AS n, min(lead_days) AS first, max(lead_days) AS last, bool_and(as_of_date = (now() AT TIME ZONE 'UTC')::date) AS today
         FROM forecast WHERE property_id = $1`,
      [P],
    );
    expect(view).toEqual({ n: 90, first: 0, last: 89, today: true });
  });
});
