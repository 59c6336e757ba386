/**
 * Occupancy as it stood, on real PostgreSQL: a refresh writes a night only when its figures
 * changed and keeps each change (daily_occupancy_history); the rows written per refresh of an
 * unchanged property, before and after; the migration of the rows mirrored before; and the
 * views over the history (occupancy_as_of, occupancy_pace, reconciliation_as_of) on the example
 * of docs/history.md ("The PMS's figures as they stood"), worked out by hand.
 */
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/config/config.js';
import { writeOccupancyWindow } from '../../src/store/repositories/pms.js';
import type { NewDailyOccupancy } from '../../src/store/schema.js';
import type { Executor } from '../../src/store/types.js';
import { dailyOccupancyStream, occupancyWindows } from '../../src/sync/streams/pms-refreshes.js';
import { reportingSchemaOf } from '../helpers/database.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { migrateUpTo } from '../helpers/migrations.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const P = '500100';
const addDays = (date: string, n: number) => new Date(Date.parse(`${date}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);

/** A night of the PMS statistics: `sold` paid rooms of 60, at 100 a room. */
function night(date: string, sold: number, readAt: Date): NewDailyOccupancy {
  return {
    property_id: P,
    stay_date: date,
    currency_code: 'EUR',
    property_room_count: 60,
    occupancy_rate: (sold / 60).toFixed(4),
    closed_room_count: 0,
    occupancy_room_count: sold,
    complimentary_occupancy_room_count: 0,
    room_revenue: sold * 100,
    revenue: sold * 120,
    meal_revenue: 0,
    arrival_count: 1,
    guest_count: sold * 2,
    refreshed_at: readAt,
    raw: JSON.stringify({ date, occupancyRoomCount: sold }),
  };
}

/** Rows this transaction inserted, updated and deleted in the mirror's tables so far. */
async function rowsWritten(trx: Executor, schema: string): Promise<number> {
  const r = await sql<{ n: string }>`
    SELECT COALESCE(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) AS n FROM pg_stat_xact_user_tables WHERE schemaname = ${schema}`.execute(trx);
  return Number(r.rows[0]!.n);
}

describe('occupancy history', () => {
  it('writes a night only when its figures change: rows written per refresh of an unchanged property, before and after', async () => {
    h = await startHarness();
    const ctx = await h.context();
    // The configured horizon (365 nights back, 365 ahead): 731 nights in 24 windows.
    const first = '2026-01-01';
    const windows = occupancyWindows(first, addDays(first, 730));
    expect(windows).toHaveLength(24);
    const refresh = async (at: Date, sold: (date: string) => number) => {
      let written = 0;
      for (const w of windows) {
        const rows: NewDailyOccupancy[] = [];
        for (let d = w.from; d <= w.to; d = addDays(d, 1)) rows.push(night(d, sold(d), at));
        written += await ctx.write(async (trx) => {
          const before = await rowsWritten(trx, h!.schema);
          await writeOccupancyWindow(trx, P, w.from, w.to, rows, at, { startedAt: at });
          return (await rowsWritten(trx, h!.schema)) - before;
        });
      }
      return written;
    };
    // The first read: every night is new (731 nights, their 731 first versions, the refresh's row).
    expect(await refresh(new Date('2026-02-01T03:00:00Z'), () => 40)).toBe(731 + 731 + 1 + 23);
    // Unchanged: the refresh's row only, once a window.
    const unchanged = await refresh(new Date('2026-02-01T06:00:00Z'), () => 40);
    expect(unchanged).toBe(24);
    // Two nights changed: each its row, the old version ended and the new one started.
    expect(await refresh(new Date('2026-02-01T09:00:00Z'), (d) => (d === '2026-03-01' || d === '2026-03-02' ? 41 : 40))).toBe(24 + 2 * 3);

    // Before: each window's nights deleted and inserted again, whatever changed.
    const before = await ctx
      .write(async (trx) => {
        const start = await rowsWritten(trx, h!.schema);
        for (const w of windows) {
          const rows: NewDailyOccupancy[] = [];
          for (let d = w.from; d <= w.to; d = addDays(d, 1)) rows.push(night(d, 40, new Date()));
          await trx.deleteFrom('daily_occupancy').where('property_id', '=', P).where('stay_date', '>=', w.from).where('stay_date', '<=', w.to).execute();
          await trx.insertInto('daily_occupancy').values(rows).execute();
        }
        const n = (await rowsWritten(trx, h!.schema)) - start;
        throw Object.assign(new Error('roll back'), { n });
      })
      .catch((err: { n?: number }) => err.n);
    expect(before).toBe(2 * 731);
    console.log(
      `bench occupancy: rows written per refresh of an unchanged property (731 nights, 24 windows): before ${before}, after ${unchanged}; a day of 8 refreshes: ${8 * before!} → ${8 * unchanged}`,
    );

    // History: 731 first versions, two of them ended at the third read and followed by new ones.
    const versions = await h.sql<{ stay_date: string; valid_from: Date; valid_to: Date | null; occupancy_room_count: number }>(
      `SELECT stay_date::text, valid_from, valid_to, occupancy_room_count FROM daily_occupancy_history WHERE stay_date IN ('2026-03-01', '2026-03-03') ORDER BY stay_date, valid_from`,
    );
    expect(versions).toEqual([
      { stay_date: '2026-03-01', valid_from: new Date('2026-02-01T03:00:00Z'), valid_to: new Date('2026-02-01T09:00:00Z'), occupancy_room_count: 40 },
      { stay_date: '2026-03-01', valid_from: new Date('2026-02-01T09:00:00Z'), valid_to: null, occupancy_room_count: 41 },
      { stay_date: '2026-03-03', valid_from: new Date('2026-02-01T03:00:00Z'), valid_to: null, occupancy_room_count: 40 },
    ]);
    expect(await h.sql(`SELECT count(*)::int AS n FROM daily_occupancy_history`)).toEqual([{ n: 733 }]);
    expect(await h.sql(`SELECT first_date::text, last_date::text, nights, nights_changed FROM occupancy_refreshes`)).toEqual([
      { first_date: '2026-01-01', last_date: '2028-01-01', nights: 731, nights_changed: 2 },
    ]);
    // The current rows answer as now; a night's refreshed_at is the read that found its figures.
    expect(
      await h.sql(`SELECT stay_date::text, occupancy_room_count, refreshed_at FROM daily_occupancy WHERE stay_date IN ('2026-03-01', '2026-03-03') ORDER BY 1`),
    ).toEqual([
      { stay_date: '2026-03-01', occupancy_room_count: 41, refreshed_at: new Date('2026-02-01T09:00:00Z') },
      { stay_date: '2026-03-03', occupancy_room_count: 40, refreshed_at: new Date('2026-02-01T03:00:00Z') },
    ]);
    // A night the answer no longer gives is removed, its version ended.
    await ctx.write((trx) =>
      writeOccupancyWindow(trx, P, '2026-03-01', '2026-03-02', [night('2026-03-01', 41, new Date('2026-02-02T00:00:00Z'))], new Date('2026-02-02T00:00:00Z')),
    );
    expect(await h.sql(`SELECT count(*)::int AS n FROM daily_occupancy WHERE stay_date = '2026-03-02'`)).toEqual([{ n: 0 }]);
    expect(await h.sql(`SELECT valid_to FROM daily_occupancy_history WHERE stay_date = '2026-03-02' AND occupancy_room_count = 41`)).toEqual([
      { valid_to: new Date('2026-02-02T00:00:00Z') },
    ]);
  });

  it('keeps each change the simulator makes, and nothing else, through the refresh stream', async () => {
    h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 200 }] }, config: { occupancy: { daysBack: 10, daysAhead: 40 } } });
    const ctx = await h.context();
    const run = () => dailyOccupancyStream.run(ctx, new AbortController().signal, [P]);
    await run();
    const current = () => h!.sql<{ stay_date: string; sold: number }>(`SELECT stay_date::text, occupancy_room_count AS sold FROM daily_occupancy ORDER BY 1`);
    const first = await current();
    expect(first).toHaveLength(51);
    const afterFirst = new Date();
    await run();
    // Unchanged: no night written, no version added.
    expect(await h.sql(`SELECT count(*)::int AS n FROM daily_occupancy WHERE synced_at > $1`, [afterFirst])).toEqual([{ n: 0 }]);
    expect(await h.sql(`SELECT count(*)::int AS n FROM daily_occupancy_history`)).toEqual([{ n: 51 }]);
    expect(await h.sql(`SELECT nights, nights_changed FROM occupancy_refreshes`)).toEqual([{ nights: 51, nights_changed: 0 }]);

    // A reservation in the horizon is cancelled in the PMS: its nights change, the others do not.
    const today = first[10]!.stay_date;
    const stay = h.sim
      .pmsReservations(P)
      .find(
        (r) =>
          r.reservationStatus !== 'Cancelled' &&
          r.roomStays.some((s) => s.status === 'New' && (s.checkInDateTime ?? '') > addDays(today, 2) && (s.checkInDateTime ?? '') < addDays(today, 30)),
      );
    expect(stay).toBeDefined();
    h.sim.pmsCancel(P, stay!.number);
    const between = new Date();
    await run();
    const second = await current();
    const changed = second.filter((n, i) => n.sold !== first[i]!.sold).map((n) => n.stay_date);
    expect(changed.length).toBeGreaterThan(0);
    expect(await h.sql(`SELECT count(*)::int AS n FROM daily_occupancy_history`)).toEqual([{ n: 51 + changed.length }]);
    const reporting = reportingSchemaOf(h.schema);
    // As it stood between the reads: the figures of the first; now: those of the last.
    const asOf = async (t: Date) =>
      h!.sql<{ stay_date: string; sold: number }>(
        `SELECT stay_date::text, rooms_sold - complimentary_rooms_sold AS sold FROM "${reporting}".occupancy_as_of($1) ORDER BY 1`,
        [t],
      );
    expect(await asOf(between)).toEqual(first);
    expect(await asOf(new Date())).toEqual(second);
  });

  it('migrates the rows mirrored before: each becomes the first version of its night, valid from its read', async () => {
    h = await startHarness({ emptySchema: true });
    await h.sql(`CREATE SCHEMA IF NOT EXISTS "${h.schema}"`);
    const folder = join(packageRoot, 'migrations');
    const files = (await readdir(folder)).filter((f) => f.endsWith('.sql')).sort();
    const mine = files.indexOf('0023_occupancy_history.sql');
    for (const f of files.slice(0, mine)) await h.sql(await readFile(join(folder, f), 'utf8'));
    await h.sql(
      `INSERT INTO daily_occupancy (property_id, stay_date, currency_code, property_room_count, occupancy_rate, closed_room_count, occupancy_room_count,
                                    complimentary_occupancy_room_count, room_revenue, revenue, meal_revenue, arrival_count, guest_count, refreshed_at, raw)
       VALUES ($1, '2026-03-01', 'EUR', 60, 0.5, 2, 28, 2, 2800, 3400, 300, 5, 55, '2026-02-01T03:00:00Z', '{}'),
              ($1, '2026-03-02', 'EUR', 60, 0.25, 0, 15, 0, 1500, 1700, 100, 3, 30, '2026-02-01T06:00:00Z', '{}')`,
      [P],
    );
    await h.sql(
      `INSERT INTO pms_reservations (property_id, number, currency_code, room_stay_count, fetched_at, agent_commission_amount, raw)
       VALUES ($1, 'R1', 'EUR', 0, now(), 48, '{"agentCommission": {"calculationSource": "Ota", "amount": {"value": 48, "currencyCode": "EUR"}, "discount": {"value": 4.5}}}'),
              ($1, 'R2', 'EUR', 0, now(), NULL, '{"agentCommission": null}')`,
      [P],
    );
    await h.sql(await readFile(join(folder, files[mine]!), 'utf8'));
    expect(
      await h.sql(
        `SELECT stay_date::text, valid_from, valid_to, occupancy_room_count, complimentary_occupancy_room_count, closed_room_count, room_revenue::text
           FROM daily_occupancy_history ORDER BY stay_date`,
      ),
    ).toEqual([
      {
        stay_date: '2026-03-01',
        valid_from: new Date('2026-02-01T03:00:00Z'),
        valid_to: null,
        occupancy_room_count: 28,
        complimentary_occupancy_room_count: 2,
        closed_room_count: 2,
        room_revenue: '2800',
      },
      {
        stay_date: '2026-03-02',
        valid_from: new Date('2026-02-01T06:00:00Z'),
        valid_to: null,
        occupancy_room_count: 15,
        complimentary_occupancy_room_count: 0,
        closed_room_count: 0,
        room_revenue: '1500',
      },
    ]);
    expect(
      await h.sql(`SELECT number, agent_commission_source, agent_commission_discount::text, agent_commission_currency FROM pms_reservations ORDER BY number`),
    ).toEqual([
      { number: 'R1', agent_commission_source: 'Ota', agent_commission_discount: '4.5', agent_commission_currency: 'EUR' },
      { number: 'R2', agent_commission_source: null, agent_commission_discount: null, agent_commission_currency: null },
    ]);
  });

  it('migrates a meal revenue of 0 that the answer did not give to NULL, in the night and its open version (0025)', async () => {
    h = await startHarness({ emptySchema: true });
    await migrateUpTo(h, '0024_loyalty_cards.sql');
    // As 0.2.0 before it stored them: a night without mealRevenue, one with null, one with 0, one with 12.5.
    const day = (date: string, meal: number, raw: string) =>
      h!.sql(
        `INSERT INTO daily_occupancy (property_id, stay_date, currency_code, property_room_count, occupancy_rate, closed_room_count, occupancy_room_count,
                                      complimentary_occupancy_room_count, room_revenue, revenue, meal_revenue, arrival_count, guest_count, refreshed_at, raw)
         VALUES ($1, $2, 'EUR', 60, 0.5, 0, 30, 0, 3000, 3400, $3, 5, 55, '2026-02-01T03:00:00Z', $4)`,
        [P, date, meal, raw],
      );
    await day('2026-03-01', 0, '{"date": "2026-03-01"}');
    await day('2026-03-02', 0, '{"date": "2026-03-02", "mealRevenue": null}');
    await day('2026-03-03', 0, '{"date": "2026-03-03", "mealRevenue": 0}');
    await day('2026-03-04', 12.5, '{"date": "2026-03-04", "mealRevenue": 12.5}');
    const figures = `property_id, stay_date, currency_code, property_room_count, occupancy_rate, closed_room_count, occupancy_room_count,
                     complimentary_occupancy_room_count, room_revenue, revenue, meal_revenue, arrival_count, guest_count`;
    await h.sql(`INSERT INTO daily_occupancy_history (${figures}, valid_from) SELECT ${figures}, refreshed_at FROM daily_occupancy`);
    // An ended version kept no raw: it stays as it was.
    await h.sql(
      `INSERT INTO daily_occupancy_history (${figures}, valid_from, valid_to) SELECT ${figures}, '2026-01-01T00:00:00Z', refreshed_at FROM daily_occupancy WHERE stay_date = '2026-03-01'`,
    );
    await migrateUpTo(h, '0025_documented_units.sql');
    expect(await h.sql(`SELECT stay_date::text, meal_revenue::text FROM daily_occupancy ORDER BY 1`)).toEqual([
      { stay_date: '2026-03-01', meal_revenue: null },
      { stay_date: '2026-03-02', meal_revenue: null },
      { stay_date: '2026-03-03', meal_revenue: '0' },
      { stay_date: '2026-03-04', meal_revenue: '12.5' },
    ]);
    expect(await h.sql(`SELECT stay_date::text, valid_to IS NULL AS open, meal_revenue::text FROM daily_occupancy_history ORDER BY 1, valid_from`)).toEqual([
      { stay_date: '2026-03-01', open: false, meal_revenue: '0' },
      { stay_date: '2026-03-01', open: true, meal_revenue: null },
      { stay_date: '2026-03-02', open: true, meal_revenue: null },
      { stay_date: '2026-03-03', open: true, meal_revenue: '0' },
      { stay_date: '2026-03-04', open: true, meal_revenue: '12.5' },
    ]);
  });

  it('gives the PMS figures as they stood: occupancy_as_of, occupancy_pace and reconciliation_as_of, as docs/history.md works them out', async () => {
    h = await startHarness();
    await h.migrate();
    const reporting = reportingSchemaOf(h.schema);
    // The property's clock: UTC (no content).
    await h.sql(`INSERT INTO sync_cursors (property_id, stream) VALUES ($1, 'daily_occupancy')`, [P]);
    const version = (date: string, from: string, to: string | null, paid: number, comp: number, revenue: number) =>
      h!.sql(
        `INSERT INTO daily_occupancy_history (property_id, stay_date, valid_from, valid_to, currency_code, property_room_count, occupancy_rate, closed_room_count,
                                              occupancy_room_count, complimentary_occupancy_room_count, room_revenue, revenue, meal_revenue, arrival_count, guest_count)
         VALUES ($1, $2, $3, $4, 'EUR', 60, 0, 2, $5, $6, $7, $7, 0, 0, 0)`,
        [P, date, from, to, paid, comp, revenue],
      );
    // The night of Saturday 2026-01-10, read three ways over time.
    await version('2026-01-10', '2025-12-01T10:00:00Z', '2026-01-05T09:00:00Z', 40, 2, 4000);
    await version('2026-01-10', '2026-01-05T09:00:00Z', '2026-01-09T12:00:00Z', 50, 2, 5100);
    await version('2026-01-10', '2026-01-09T12:00:00Z', null, 55, 3, 5600);
    // The same weekday 364 days earlier, Saturday 2025-01-11: read once.
    await version('2025-01-11', '2024-12-01T10:00:00Z', null, 30, 0, 2700);

    expect(
      await h.sql(
        `SELECT stay_date::text, rooms_sold, rooms_available, room_revenue::text, read_since FROM "${reporting}".occupancy_as_of('2026-01-08T00:00:00Z') ORDER BY 1`,
      ),
    ).toEqual([
      { stay_date: '2025-01-11', rooms_sold: 30, rooms_available: 58, room_revenue: '2700', read_since: new Date('2024-12-01T10:00:00Z') },
      { stay_date: '2026-01-10', rooms_sold: 52, rooms_available: 58, room_revenue: '5100', read_since: new Date('2026-01-05T09:00:00Z') },
    ]);

    expect(
      await h.sql(
        `SELECT days_before, as_of_date::text, rooms_sold, occupancy::text, room_revenue::text, stly_rooms_sold, rooms_sold_vs_stly
           FROM "${reporting}".occupancy_pace WHERE property_id = $1 AND stay_date = '2026-01-10' ORDER BY days_before`,
        [P],
      ),
    ).toEqual([
      { days_before: 0, as_of_date: '2026-01-10', rooms_sold: 58, occupancy: '1.0000', room_revenue: '5600', stly_rooms_sold: 30, rooms_sold_vs_stly: 28 },
      { days_before: 1, as_of_date: '2026-01-09', rooms_sold: 58, occupancy: '1.0000', room_revenue: '5600', stly_rooms_sold: 30, rooms_sold_vs_stly: 28 },
      { days_before: 3, as_of_date: '2026-01-07', rooms_sold: 52, occupancy: '0.8966', room_revenue: '5100', stly_rooms_sold: 30, rooms_sold_vs_stly: 22 },
      { days_before: 7, as_of_date: '2026-01-03', rooms_sold: 42, occupancy: '0.7241', room_revenue: '4000', stly_rooms_sold: 30, rooms_sold_vs_stly: 12 },
      { days_before: 14, as_of_date: '2025-12-27', rooms_sold: 42, occupancy: '0.7241', room_revenue: '4000', stly_rooms_sold: 30, rooms_sold_vs_stly: 12 },
      { days_before: 30, as_of_date: '2025-12-11', rooms_sold: 42, occupancy: '0.7241', room_revenue: '4000', stly_rooms_sold: 30, rooms_sold_vs_stly: 12 },
    ]);

    // The mirror's books of the night: two bookings from 2025-12-15, one from 2025-12-20 cancelled
    // on 2026-01-07, one made on 2026-01-09.
    const nightRow = (number: string, from: string, to: string | null, net: string) =>
      h!.sql(
        `INSERT INTO booking_night_history (property_id, number, stay_index, stay_date, valid_from, valid_to, currency_code, net_amount, gross_amount)
         VALUES ($1, $2, 0, '2026-01-10', $3, $4, 'EUR', $5, $5)`,
        [P, number, from, to, net],
      );
    await nightRow('B1', '2025-12-15T08:00:00Z', null, '100.00');
    await nightRow('B2', '2025-12-15T09:00:00Z', null, '100.00');
    await nightRow('B3', '2025-12-20T10:00:00Z', '2026-01-07T11:00:00Z', '90.00');
    await nightRow('B4', '2026-01-09T15:00:00Z', null, '120.00');
    expect(
      await h.sql(
        `SELECT stay_date::text, mirror_rooms_sold, provider_rooms_sold, rooms_difference, mirror_room_revenue_net::text, provider_room_revenue::text,
                room_revenue_difference::text, provider_read_since
           FROM "${reporting}".reconciliation_as_of('2026-01-07T00:00:00Z') WHERE property_id = $1 AND stay_date = '2026-01-10'`,
        [P],
      ),
    ).toEqual([
      {
        stay_date: '2026-01-10',
        mirror_rooms_sold: '3',
        provider_rooms_sold: 52,
        rooms_difference: '-49',
        mirror_room_revenue_net: '290.00',
        provider_room_revenue: '5100',
        room_revenue_difference: '-4810.00',
        provider_read_since: new Date('2026-01-05T09:00:00Z'),
      },
    ]);
    expect(
      await h.sql(
        `SELECT mirror_rooms_sold, provider_rooms_sold, rooms_difference FROM "${reporting}".reconciliation_as_of('2026-01-10T12:00:00Z') WHERE stay_date = '2026-01-10'`,
      ),
    ).toEqual([{ mirror_rooms_sold: '3', provider_rooms_sold: 58, rooms_difference: '-55' }]);
  });
});
