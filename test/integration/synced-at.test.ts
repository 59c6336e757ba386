/**
 * synced_at (migrations/0013_synced_at.sql) against the simulator and real PostgreSQL: every
 * mirror table has it, a sync stamps every row it writes with its transaction's time (a booking
 * or reservation and its children alike), a second sync moves it on the rows it writes and on
 * no other, every writer that updates a mirror row sets it, and a rebuild keeps it.
 */
import { sql } from 'kysely';
import { HISTORY_TABLES, TYPED_TABLES } from '../helpers/tables.js';
import { afterEach, describe, expect, it } from 'vitest';
import { bookingHistoryOf } from '../../src/mapping/history.js';
import { bookingToRows } from '../../src/mapping/bookings.js';
import { parseBooking } from '../../src/provider/schemas/bookings.js';
import { rebuild } from '../../src/replay/rebuild.js';
import { saveBookingVersion } from '../../src/store/repositories/bookings.js';
import { upsertSummariesAndEnqueue } from '../../src/store/repositories/booking-summaries.js';
import { markMissingRemoved, saveReferenceList, upsertChanged } from '../../src/store/repositories/content.js';
import { savePmsReservation, upsertPmsGuest, writeOccupancyWindow } from '../../src/store/repositories/pms.js';
import { saveInventoryBlock, saveStorageBooking } from '../../src/store/repositories/integration-storage.js';
import { deferEvents, eventAgainLater, finishEvent, insertWebhookEvents } from '../../src/store/repositories/webhook-events.js';
import type { Trx } from '../../src/store/types.js';
import type { SyncContext } from '../../src/sync/runtime/context.js';
import type { RequestLogEntry } from '../../tools/simulator/index.js';
import { announceStorage, startHarness, syncOnce, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

type AnyRecord = Record<string, any>;

/** The tables that hold what the provider sent, which a reporting tool reads: each has synced_at. */
const MIRROR_TABLES = [...TYPED_TABLES, 'webhook_events', ...HISTORY_TABLES];

/** The daemon's own bookkeeping, pos_codes (not mirrored) and the day-close snapshots (their time is taken_at): none has synced_at. */
const OTHER_TABLES = [
  'otb_snapshot_days',
  'otb_snapshot_nights',
  'sync_cursors',
  'booking_detail_queue',
  'pms_reservation_queue',
  'booking_sweeps',
  'change_lags',
  'sync_runs',
  'sync_connections',
  'sync_replicas',
  'sync_lease',
  'token_requests',
  'quarantine',
  'content_refreshes',
  'mirror_settings',
  'pos_codes',
];

/** Child tables the simulator's random bookings may leave empty. */
const OPTIONAL_CHILDREN = ['booking_guests', 'booking_taxes', 'booking_discounts', 'booking_tax_amounts', 'booking_loyalty_cards'];

/** The numbers whose booking details (`details`) or PMS reservation (`pms`) the simulator served. */
function servedNumbers(log: readonly RequestLogEntry[], what: 'details' | 'pms'): Set<string> {
  const path =
    what === 'details' ? /\/api\/read-reservation\/v1\/properties\/[^/]+\/bookings\/([^/]+)$/ : /\/api\/pms\/v2\/properties\/[^/]+\/reservations\/([^/]+)$/;
  return new Set(
    log.flatMap((e) => {
      const m = path.exec(e.path);
      return m && m[1] !== 'search' && e.status === 200 ? [decodeURIComponent(m[1]!)] : [];
    }),
  );
}

/** Child table → its parent table and the columns that join them: written together, they share synced_at. */
const CHILDREN: Record<string, { parent: string; on: string[] }> = {
  booking_room_stays: { parent: 'bookings', on: ['property_id', 'number'] },
  booking_daily_rates: { parent: 'bookings', on: ['property_id', 'number'] },
  booking_services: { parent: 'bookings', on: ['property_id', 'number'] },
  booking_guests: { parent: 'bookings', on: ['property_id', 'number'] },
  booking_taxes: { parent: 'bookings', on: ['property_id', 'number'] },
  booking_discounts: { parent: 'bookings', on: ['property_id', 'number'] },
  booking_tax_amounts: { parent: 'bookings', on: ['property_id', 'number'] },
  booking_room_stay_rate_plans: { parent: 'bookings', on: ['property_id', 'number'] },
  booking_loyalty_cards: { parent: 'bookings', on: ['property_id', 'number'] },
  pms_room_stays: { parent: 'pms_reservations', on: ['property_id', 'number'] },
  room_type_amenities: { parent: 'room_types', on: ['property_id', 'room_type_id'] },
  property_amenities: { parent: 'properties', on: ['property_id'] },
  cancellation_rule_terms: { parent: 'cancellation_rules', on: ['property_id', 'rule_id'] },
  cancellation_rule_arrival_dates: { parent: 'cancellation_rules', on: ['property_id', 'rule_id'] },
  extra_stay_rule_periods: { parent: 'extra_stay_rules', on: ['property_id', 'rule_id'] },
};

/** An instant as exact text (seconds since the epoch, to the microsecond), whatever the session's time zone. */
const exact = (column: string) => `extract(epoch FROM ${column})::text`;

/** Runs `write` in one fenced transaction of the sync and returns that transaction's time (now()), exactly. */
async function writeAt(ctx: SyncContext, write: (trx: Trx) => Promise<unknown>): Promise<string> {
  return ctx.write(async (trx) => {
    await write(trx);
    const r = await sql<{ t: string }>`SELECT ${sql.raw(exact('now()'))} AS t`.execute(trx);
    return r.rows[0]!.t;
  });
}

/** The database's time now, exactly. */
const databaseNow = async (harness: Harness) => (await harness.sql<{ t: string }>(`SELECT ${exact('now()')} AS t`))[0]!.t;

/** Per row of `table`: the row without synced_at (as text: its identity here) → its synced_at, exactly. */
async function syncedAtByRow(harness: Harness, table: string): Promise<Map<string, string>> {
  const rows = await harness.sql<{ k: string; s: string }>(`SELECT (to_jsonb(t) - 'synced_at')::text AS k, ${exact('t.synced_at')} AS s FROM ${table} t`);
  return new Map(rows.map((r) => [r.k, r.s]));
}

/** Per row of `table`: the key columns (as text) → synced_at and the given bookkeeping columns, exactly. */
async function stampsByKey(harness: Harness, table: string, keys: string[], columns: string[] = []): Promise<Map<string, AnyRecord>> {
  const rows = await harness.sql<AnyRecord>(
    `SELECT concat_ws('/', ${keys.join(', ')}) AS k, ${exact('synced_at')} AS s${columns.map((c) => `, ${exact(c)} AS ${c}`).join('')} FROM ${table}`,
  );
  return new Map(rows.map((r) => [r.k as string, r]));
}

/** Rows of a child table whose synced_at is not its parent's. */
async function childrenApart(harness: Harness, child: string): Promise<number> {
  const { parent, on } = CHILDREN[child]!;
  const [r] = await harness.sql<{ n: string }>(
    `SELECT count(*) AS n FROM ${child} c JOIN ${parent} p ON ${on.map((k) => `p.${k} = c.${k}`).join(' AND ')} WHERE c.synced_at <> p.synced_at`,
  );
  return Number(r!.n);
}

describe('synced_at', () => {
  it('is a NOT NULL timestamptz, the writing transaction’s time by default, with a comment, on every mirror table and on no other', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 1 }] } });
    await h.migrate();
    const columns = await h.sql<AnyRecord>(
      `SELECT c.table_name, c.data_type, c.is_nullable, c.column_default,
              col_description(format('%I.%I', c.table_schema, c.table_name)::regclass, c.ordinal_position) AS comment
         FROM information_schema.columns c
         JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
        WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE' AND c.column_name = 'synced_at'`,
    );
    const byTable = new Map(columns.map((c) => [c.table_name as string, c]));
    for (const table of MIRROR_TABLES) {
      expect({ table, ...byTable.get(table) }).toEqual({
        table,
        table_name: table,
        data_type: 'timestamp with time zone',
        is_nullable: 'NO',
        column_default: 'now()',
        comment: expect.stringMatching(/^When staysync last wrote this row \(UTC\)/),
      });
    }
    for (const table of OTHER_TABLES) expect({ table, has: byTable.has(table) }).toEqual({ table, has: false });
    // Indexed on bookings alone, for freshness checks and incremental models (see the migration).
    const indexed = await h.sql<{ tablename: string }>(
      `SELECT tablename FROM pg_indexes WHERE schemaname = current_schema() AND indexdef LIKE '%(synced_at)%' ORDER BY 1`,
    );
    expect(indexed).toEqual([{ tablename: 'bookings' }]);
    // Every table that keeps a provider payload is a mirror table.
    const withRaw = await h.sql<{ table_name: string }>(
      `SELECT table_name FROM information_schema.columns WHERE table_schema = current_schema() AND column_name = 'raw' ORDER BY 1`,
    );
    const views = await h.sql<{ table_name: string }>(`SELECT table_name FROM information_schema.views WHERE table_schema = current_schema()`);
    const tablesWithRaw = withRaw.map((r) => r.table_name).filter((t) => !views.some((v) => v.table_name === t));
    expect(tablesWithRaw.length).toBeGreaterThan(10);
    expect(tablesWithRaw.filter((t) => !MIRROR_TABLES.includes(t))).toEqual([]);
  });

  it('is set on every row a sync writes, between its start and its end, and a parent’s children share it', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 30 }] }, config: { occupancy: { daysBack: 10, daysAhead: 10 } } });
    const ctx = await h.context();
    // Every integration-storage booking, so that one from a channel fills its channels table
    // whatever the simulator's day (the first three alone may all be direct).
    const storage = h.sim.integrationStorageBookings('500100');
    expect(storage.some((b) => b.bookingChannels.length > 0)).toBe(true);
    await announceStorage(h, ctx, '500100', { storage: storage.length, blocks: 2 });
    const started = await databaseNow(h);
    const synced = await syncOnce(ctx, { streams: 'all' });
    expect(synced.failed).toEqual([]);
    expect(synced.refreshFailures).toEqual([]);
    const ended = await databaseNow(h);

    const empty: string[] = [];
    for (const table of MIRROR_TABLES) {
      const [r] = await h.sql<AnyRecord>(
        `SELECT count(*)::int AS n, count(*) FILTER (WHERE extract(epoch FROM synced_at) BETWEEN $1::numeric AND $2::numeric)::int AS within FROM ${table}`,
        [started, ended],
      );
      expect({ table, within: r!.within }).toEqual({ table, within: r!.n });
      if (r!.n === 0) empty.push(table);
    }
    // Some child tables may stay empty with the simulator's random data; these are always written.
    expect(empty.filter((t) => !OPTIONAL_CHILDREN.includes(t))).toEqual([]);

    for (const child of Object.keys(CHILDREN)) expect({ child, apart: await childrenApart(h, child) }).toEqual({ child, apart: 0 });
  });

  it('moves on the rows a second sync writes, to that write’s time, and stays on every other', async () => {
    const P = '500100';
    h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 40 }] }, config: { occupancy: { daysBack: 5, daysAhead: 5 } } });
    const ctx = await h.context();
    expect((await syncOnce(ctx, { streams: 'all' })).failed).toEqual([]);

    const bookingsBefore = await stampsByKey(h, 'bookings', ['property_id', 'number'], ['modified_at']);
    const summariesBefore = await stampsByKey(h, 'booking_summaries', ['property_id', 'number'], ['listed_at']);
    const ratesBefore = await syncedAtByRow(h, 'booking_daily_rates');
    const roomTypesBefore = await stampsByKey(h, 'room_types', ['property_id', 'room_type_id']);
    const ratePlansBefore = await stampsByKey(h, 'rate_plans', ['property_id', 'rate_plan_id']);
    const mealPlansBefore = await stampsByKey(h, 'meal_plans', ['code']);
    const reservationsBefore = await stampsByKey(h, 'pms_reservations', ['property_id', 'number']);

    h.sim.mutate({ count: 6, newCount: 2, propertyId: P });
    const content = h.sim.contentProperty(P) as unknown as AnyRecord;
    const renamed: string = content.roomTypes[1].id;
    const removed: string = content.ratePlans[0].id;
    h.sim.renameRoomType(P, renamed, 'Renamed Suite');
    h.sim.removeRatePlan(P, removed);
    const guest = h.sim.pmsReservations(P).find((r) => r.reservationStatus !== 'Cancelled' && r.roomStays[0]?.status === 'New' && r.roomStays[0]?.roomId);
    h.sim.pmsCheckIn(P, guest!.number);
    h.sim.stats.requestLog = [];
    const secondStarted = await databaseNow(h);
    expect((await syncOnce(ctx, { streams: 'all' })).failed).toEqual([]);

    // Bookings: a version fetched and written again (every changed one, and perhaps one of the
    // same second fetched again) is stamped anew, header and children alike; the others keep theirs.
    const bookingsAfter = await stampsByKey(h, 'bookings', ['property_id', 'number'], ['modified_at']);
    const modified = [...bookingsAfter].filter(([k, r]) => bookingsBefore.get(k)?.modified_at !== r.modified_at).map(([k]) => k);
    expect(modified.length).toBeGreaterThanOrEqual(6);
    const fetched = [...servedNumbers(h.sim.stats.requestLog, 'details')].map((n) => `${P}/${n}`);
    expect(fetched).toEqual(expect.arrayContaining(modified));
    const changed = fetched;
    for (const [k, r] of bookingsAfter) {
      if (changed.includes(k)) expect({ k, stamped: Number(r.s) >= Number(secondStarted) }).toEqual({ k, stamped: true });
      else expect({ k, s: r.s }).toEqual({ k, s: bookingsBefore.get(k)!.s });
    }
    expect(changed.length).toBeLessThan(bookingsAfter.size);
    for (const child of Object.keys(CHILDREN)) expect({ child, apart: await childrenApart(h, child) }).toEqual({ child, apart: 0 });
    // A nightly rate of an unchanged booking is the same row with the same synced_at.
    const ratesAfter = await syncedAtByRow(h, 'booking_daily_rates');
    const keptRates = [...ratesBefore].filter(([row]) => !changed.includes(`${JSON.parse(row).property_id}/${JSON.parse(row).number}`));
    expect(keptRates.length).toBeGreaterThan(0);
    for (const [row, s] of keptRates) expect(ratesAfter.get(row)).toBe(s);

    // Summaries: rewritten (listed again) means stamped anew; not listed again means untouched.
    const summariesAfter = await stampsByKey(h, 'booking_summaries', ['property_id', 'number'], ['listed_at']);
    let relisted = 0;
    for (const [k, r] of summariesAfter) {
      const before = summariesBefore.get(k);
      if (before && before.listed_at === r.listed_at) expect({ k, s: r.s }).toEqual({ k, s: before.s });
      else {
        relisted += 1;
        expect({ k, stamped: Number(r.s) >= Number(secondStarted) }).toEqual({ k, stamped: true });
      }
    }
    expect(relisted).toBeGreaterThanOrEqual(changed.length);
    expect(relisted).toBeLessThan(summariesAfter.size);

    // Content: the renamed room type and the removed rate plan are stamped anew, nothing else.
    const roomTypesAfter = await stampsByKey(h, 'room_types', ['property_id', 'room_type_id']);
    for (const [k, r] of roomTypesAfter) {
      if (k === `${P}/${renamed}`) expect(Number(r.s)).toBeGreaterThanOrEqual(Number(secondStarted));
      else expect({ k, s: r.s }).toEqual({ k, s: roomTypesBefore.get(k)!.s });
    }
    const ratePlansAfter = await stampsByKey(h, 'rate_plans', ['property_id', 'rate_plan_id']);
    for (const [k, r] of ratePlansAfter) {
      if (k === `${P}/${removed}`) expect(Number(r.s)).toBeGreaterThanOrEqual(Number(secondStarted));
      else expect({ k, s: r.s }).toEqual({ k, s: ratePlansBefore.get(k)!.s });
    }
    expect(await stampsByKey(h, 'meal_plans', ['code'])).toEqual(mealPlansBefore);

    // PMS: a reservation fetched and written again is stamped anew; one not fetched is untouched.
    const reservationsAfter = await stampsByKey(h, 'pms_reservations', ['property_id', 'number']);
    const refetched = [...servedNumbers(h.sim.stats.requestLog, 'pms')].map((n) => `${P}/${n}`);
    expect(refetched).toContain(`${P}/${guest!.number}`);
    expect(refetched.length).toBeLessThan(reservationsAfter.size);
    for (const [k, r] of reservationsAfter) {
      if (refetched.includes(k)) expect({ k, stamped: Number(r.s) >= Number(secondStarted) }).toEqual({ k, stamped: true });
      else expect({ k, s: r.s }).toEqual({ k, s: reservationsBefore.get(k)!.s });
    }
  });

  it('is the writing transaction’s time for every writer that updates a mirror row, whatever synced_at the row brought', async () => {
    const P = '500100';
    h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 3 }] } });
    await h.migrate();
    const ctx = await h.context();
    const longAgo = new Date('2001-01-01T00:00:00Z');
    const stampOf = async (table: string, where: string) =>
      (await h!.sql<{ s: string }>(`SELECT ${exact('synced_at')} AS s FROM ${table} WHERE ${where}`)).map((r) => r.s);

    // A booking version: the mapping's own synced_at gives way to the transaction's, children included.
    const payload = h.sim.bookings(P)[0]!;
    const parsed = parseBooking(payload);
    if (!parsed.ok) throw new Error(parsed.reason);
    const booking = () => {
      const rows = bookingToRows(P, parsed.value, { booking: payload }, new Date(), false);
      return { ...rows, booking: { ...rows.booking, synced_at: longAgo } };
    };
    const whereBooking = `number = '${payload.number}'`;
    for (let i = 0; i < 2; i++) {
      const t = await writeAt(ctx, (trx) => saveBookingVersion(trx, booking(), bookingHistoryOf(booking())));
      expect(await stampOf('bookings', whereBooking)).toEqual([t]);
      expect(new Set(await stampOf('booking_daily_rates', whereBooking))).toEqual(new Set([t]));
      expect(new Set(await stampOf('booking_room_stays', whereBooking))).toEqual(new Set([t]));
    }

    // Summaries: the one listed again moves, the other stays.
    const summary = (number: string) => ({
      propertyId: P,
      number,
      status: 'Active',
      createdAt: null,
      modifiedAt: new Date('2024-01-01T00:00:00Z'),
      priority: 1,
      raw: {},
    });
    const t1 = await writeAt(ctx, (trx) => upsertSummariesAndEnqueue(trx, [summary('A'), summary('B')], new Date()));
    const t2 = await writeAt(ctx, (trx) => upsertSummariesAndEnqueue(trx, [summary('B')], new Date()));
    expect(await stampOf('booking_summaries', `number = 'A'`)).toEqual([t1]);
    expect(await stampOf('booking_summaries', `number = 'B'`)).toEqual([t2]);

    // Content rows: unchanged stays, changed moves, marked removed moves, revived moves.
    const c1 = await writeAt(ctx, (trx) =>
      upsertChanged(trx, 'meal_plans', [
        { code: 'A', name: 'a' },
        { code: 'B', name: 'b' },
      ]),
    );
    const c2 = await writeAt(ctx, (trx) =>
      upsertChanged(trx, 'meal_plans', [
        { code: 'A', name: 'a' },
        { code: 'B', name: 'b2' },
      ]),
    );
    expect([await stampOf('meal_plans', `code = 'A'`), await stampOf('meal_plans', `code = 'B'`)]).toEqual([[c1], [c2]]);
    const c3 = await writeAt(ctx, (trx) => markMissingRemoved(trx, 'meal_plans', ['A']));
    expect([await stampOf('meal_plans', `code = 'A'`), await stampOf('meal_plans', `code = 'B'`)]).toEqual([[c1], [c3]]);
    const c4 = await writeAt(ctx, (trx) => upsertChanged(trx, 'meal_plans', [{ code: 'B', name: 'b2' }]));
    expect(await stampOf('meal_plans', `code = 'B'`)).toEqual([c4]);
    const l1 = await writeAt(ctx, (trx) => saveReferenceList(trx, 'mealPlans', [], 'h1', new Date()));
    expect(await stampOf('reference_lists', 'true')).toEqual([l1]);
    const l2 = await writeAt(ctx, (trx) => saveReferenceList(trx, 'mealPlans', [], 'h1', new Date()));
    expect(await stampOf('reference_lists', 'true')).toEqual([l2]);

    // PMS: reservation (with its room stays), person, storage record, occupancy.
    const reservation = {
      reservation: { property_id: P, number: 'R1', room_stay_count: 1, fetched_at: new Date(), synced_at: longAgo, raw: '{}' },
      roomStays: [{ property_id: P, number: 'R1', position: 0, guest_person_ids: [], amenities: [] }],
      customer: { property_id: P, pms_person_id: 'G1', fetched_at: new Date(), raw: '{}' },
    };
    for (let i = 0; i < 2; i++) {
      const t = await writeAt(ctx, (trx) => savePmsReservation(trx, reservation));
      expect([await stampOf('pms_reservations', 'true'), await stampOf('pms_room_stays', 'true'), await stampOf('pms_guests', 'true')]).toEqual([
        [t],
        [t],
        [t],
      ]);
    }
    const g = await writeAt(ctx, (trx) => upsertPmsGuest(trx, { property_id: P, pms_person_id: 'G1', first_name: 'x', fetched_at: new Date(), raw: '{}' }));
    expect(await stampOf('pms_guests', 'true')).toEqual([g]);
    const block = { property_id: P, inventory_block_id: 'I1', rate_plan_codes: [], fetched_at: new Date(), synced_at: longAgo, raw: '{}' };
    for (let i = 0; i < 2; i++) {
      const days = [{ property_id: P, inventory_block_id: 'I1', position: 0, stay_date: '2024-01-01', blocked_count: 2, realized_count: 1 }];
      const t = await writeAt(ctx, (trx) => saveInventoryBlock(trx, { block, days }));
      expect(await stampOf('inventory_blocks', 'true')).toEqual([t]);
      expect(await stampOf('inventory_block_days', 'true')).toEqual([t]);
    }
    const storage = { property_id: P, booking_id: 'S1', fetched_at: new Date(), synced_at: longAgo, raw: '{}' };
    for (let i = 0; i < 2; i++) {
      const channels = [{ property_id: P, booking_id: 'S1', position: 0, code: 'TA001' }];
      const nights = [{ property_id: P, booking_id: 'S1', room_stay_position: 0, position: 0, stay_date: '2024-01-01', adults: 2, children: 0 }];
      const t = await writeAt(ctx, (trx) => saveStorageBooking(trx, { booking: storage, channels, nights }));
      expect(await stampOf('integration_storage_bookings', 'true')).toEqual([t]);
      expect(await stampOf('integration_storage_booking_channels', 'true')).toEqual([t]);
      expect(await stampOf('integration_storage_booking_nights', 'true')).toEqual([t]);
    }
    const day = {
      property_id: P,
      stay_date: '2024-01-01',
      property_room_count: 1,
      occupancy_rate: 0,
      closed_room_count: 0,
      occupancy_room_count: 0,
      complimentary_occupancy_room_count: 0,
      room_revenue: 0,
      revenue: 0,
      meal_revenue: 0,
      arrival_count: 0,
      guest_count: 0,
      refreshed_at: new Date(),
      raw: '{}',
    };
    const o = await writeAt(ctx, (trx) => writeOccupancyWindow(trx, P, '2024-01-01', '2024-01-01', [day], day.refreshed_at));
    expect(await stampOf('daily_occupancy', 'true')).toEqual([o]);
    expect(await stampOf('daily_occupancy_history', 'true')).toEqual([o]);
    expect(await stampOf('occupancy_refreshes', 'true')).toEqual([o]);
    // Read again unchanged: the night is not written, the window's read is.
    const o2 = await writeAt(ctx, (trx) => writeOccupancyWindow(trx, P, '2024-01-01', '2024-01-01', [day], new Date()));
    expect(await stampOf('daily_occupancy', 'true')).toEqual([o]);
    expect(await stampOf('occupancy_refreshes', 'true')).toEqual([o2]);

    // Change events: received, then every change of state or schedule.
    const event = { eventId: 'E1', eventType: 'pms:reservation_changed', creationTime: null, payload: {}, propertyId: P, entityKey: 'R1' };
    const e1 = await writeAt(ctx, (trx) => insertWebhookEvents(trx, [event]));
    expect(await stampOf('webhook_events', 'true')).toEqual([e1]);
    const e2 = await writeAt(ctx, (trx) => deferEvents(trx, ['E1'], 1000));
    expect(await stampOf('webhook_events', 'true')).toEqual([e2]);
    const e3 = await writeAt(ctx, (trx) => eventAgainLater(trx, 'E1', 1000, 'later'));
    expect(await stampOf('webhook_events', 'true')).toEqual([e3]);
    const e4 = await writeAt(ctx, (trx) => finishEvent(trx, 'E1', 'processed'));
    expect(await stampOf('webhook_events', 'true')).toEqual([e4]);
    // Each write above was a transaction of its own, later than the one before.
    expect(Number(e4)).toBeGreaterThan(Number(e1));
  });

  it('is kept by a rebuild: over an unchanged mapping, on rows it restores, and a child it inserts again takes its parent’s', async () => {
    const P = '500100';
    h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 30 }] }, config: { occupancy: { daysBack: 5, daysAhead: 5 } } });
    const ctx = await h.context();
    await announceStorage(h, ctx, P);
    expect((await syncOnce(ctx, { streams: 'all' })).failed).toEqual([]);
    // A later write for some rows, so that the tables hold more than one synced_at.
    h.sim.mutate({ count: 5, propertyId: P });
    h.sim.renameRoomType(P, (h.sim.contentProperty(P) as unknown as AnyRecord).roomTypes[0].id, 'Renamed');
    expect((await syncOnce(ctx, { streams: 'all' })).failed).toEqual([]);
    const stamps = async () => {
      const out: Record<string, Map<string, string>> = {};
      for (const table of MIRROR_TABLES) out[table] = await syncedAtByRow(h!, table);
      return out;
    };
    const before = await stamps();
    expect(new Set(before.bookings!.values()).size).toBeGreaterThan(1);

    const replayEnv = { handle: ctx, config: h.config, logger: h.logger };
    await rebuild(replayEnv);
    expect(await stamps()).toEqual(before);

    // Rows damaged by hand (typed columns changed, children deleted): the rebuild restores them,
    // synced_at included, and the children it inserts again take their parent's.
    const [one] = await h.sql<{ number: string }>(`SELECT number FROM bookings WHERE property_id = $1 ORDER BY synced_at DESC, number LIMIT 1`, [P]);
    await h.sql(`DELETE FROM booking_room_stays WHERE property_id = $1 AND number = $2`, [P, one!.number]);
    await h.sql(`UPDATE booking_daily_rates SET price_before_tax = price_before_tax + 1 WHERE property_id = $1`, [P]);
    await h.sql(`DELETE FROM room_type_amenities WHERE property_id = $1`, [P]);
    await h.sql(`DELETE FROM cancellation_rule_terms WHERE property_id = $1`, [P]);
    await h.sql(`UPDATE pms_room_stays SET amount = 0 WHERE property_id = $1`, [P]);
    expect(await stamps()).not.toEqual(before);
    const second = await rebuild(replayEnv);
    expect(second.sources.bookings!.changed).toBe(0);
    expect(await stamps()).toEqual(before);
  });
});
