/**
 * Rooms by type on real PostgreSQL: the example of docs/tables-and-reporting.md ("Rooms by
 * type") worked out by hand for daily_kpis_by_room_type and stay_units_reconciliation; and the
 * three refreshes against the simulator: where each room is, the inventory per PMS room type and
 * night equal to the mirror's own PMS room stays, the stay units reconciled with the mirror's
 * room-nights (the difference is the PMS-only stays), quarantine, a 404 of one property, and a
 * connection without the integration storage shown as not granted.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { daemonEnv, runCli } from '../helpers/cli.js';
import { reportingSchemaOf } from '../helpers/database.js';
import { startHarness, syncOnce, SIM_CLIENT_ID, SIM_CLIENT_SECRET, type Harness } from '../helpers/harness.js';
import { parseStorageBooking } from '../../src/provider/schemas/pms.js';
import { storageBookingToRows } from '../../src/mapping/integration-storage.js';
import { saveStorageBooking } from '../../src/store/repositories/integration-storage.js';
import type { SyncContext } from '../../src/sync/runtime/context.js';
import { simulatorClaims } from '../../tools/simulator/index.js';
import { localDate } from '../../src/util/local-time.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

type AnyRecord = Record<string, any>;
const P = '500100';
const dateText = (v: unknown): string => (v instanceof Date ? v.toISOString().slice(0, 10) : String(v).slice(0, 10));
const dayOf = (date: string) => Date.parse(`${date}T00:00:00Z`) / 86_400_000;
const dateOf = (day: number) => new Date(day * 86_400_000).toISOString().slice(0, 10);

/** A booking of one room stay in EUR: its nights as [date, net, gross]. */
async function booking(number: string, status: string, roomTypeId: string, ratePlanId: string, nights: [string, string, string][]): Promise<void> {
  await h!.sql(
    `INSERT INTO bookings (property_id, number, status, currency_code, modified_at, fetched_at, room_stay_count, raw) VALUES ($1, $2, $3, 'EUR', now(), now(), 1, '{}')`,
    [P, number, status],
  );
  await h!.sql(`INSERT INTO booking_room_stays (property_id, number, stay_index, room_type_id, rate_plan_id) VALUES ($1, $2, 0, $3, $4)`, [
    P,
    number,
    roomTypeId,
    ratePlanId,
  ]);
  for (const [i, [date, net, gross]] of nights.entries()) {
    await h!.sql(
      `INSERT INTO booking_daily_rates (property_id, number, stay_index, position, stay_date, price_before_tax, gross_amount) VALUES ($1, $2, 0, $3, $4, $5, $6)`,
      [P, number, i, date, net, gross],
    );
  }
}

/** The integration-storage bookings the simulator holds, stored as the change events would have them fetched. */
async function storeStorageBookings(ctx: SyncContext, propertyId: string): Promise<number> {
  const all = h!.sim.integrationStorageBookings(propertyId);
  await ctx.write(async (trx) => {
    for (const b of all) {
      const parsed = parseStorageBooking({ booking: b });
      if (!parsed.ok) throw new Error(parsed.reason);
      await saveStorageBooking(trx, storageBookingToRows(propertyId, parsed.value, b, new Date(), false));
    }
  });
  return all.length;
}

describe('rooms by type', () => {
  it('daily_kpis_by_room_type and stay_units_reconciliation give the figures the docs work out by hand', async () => {
    h = await startHarness();
    await h.migrate();
    await h.sql(`INSERT INTO properties (property_id, name, currency, raw, content_hash) VALUES ($1, 'Hotel Example', 'EUR', '{}', 'x')`, [P]);
    await h.sql(
      `INSERT INTO room_types (property_id, room_type_id, name, raw, content_hash) VALUES ($1, 'rt-dbl', 'Double', '{}', 'x'), ($1, 'rt-ste', 'Suite', '{}', 'x')`,
      [P],
    );
    await h.sql(
      `INSERT INTO rate_plans (property_id, rate_plan_id, name, raw, content_hash) VALUES ($1, 'rp-bar', 'Best Available Rate', '{}', 'x'), ($1, 'rp-nrf', 'Non-refundable', '{}', 'x')`,
      [P],
    );
    // The PMS's counts: [code, night, physical, available (free), out of order].
    for (const [code, night, physical, free, ooo] of [
      ['DBL', '2026-06-01', 10, 6, 1],
      ['DBL', '2026-06-02', 10, 8, 0],
      ['STE', '2026-06-01', 2, 1, 0],
      ['STE', '2026-06-02', 2, 2, 0],
    ] as const) {
      await h.sql(
        `INSERT INTO room_type_inventory_days (property_id, room_type_code, stay_date, physical_room_count, available_room_count, out_of_order_room_count, refreshed_at, raw)
         VALUES ($1, $2, $3, $4, $5, $6, now(), '{}')`,
        [P, code, night, physical, free, ooo],
      );
    }
    // rt-dbl was seen once under STE too: it counts under DBL, the code of more stays.
    await h.sql(
      `INSERT INTO pms_room_type_codes (property_id, room_type_code, room_type_id, room_stays, learnt_at) VALUES ($1, 'DBL', 'rt-dbl', 3, now()), ($1, 'STE', 'rt-ste', 1, now()), ($1, 'STE', 'rt-dbl', 1, now())`,
      [P],
    );
    await h.sql(
      `INSERT INTO pms_rate_plan_codes (property_id, rate_plan_code, rate_plan_id, room_stays, learnt_at) VALUES ($1, 'BAR', 'rp-bar', 10, now()), ($1, 'NRF', 'rp-nrf', 2, now())`,
      [P],
    );
    await booking('B1', 'Active', 'rt-dbl', 'rp-bar', [
      ['2026-06-01', '100.00', '110.00'],
      ['2026-06-02', '100.00', '110.00'],
    ]);
    await booking('B2', 'Active', 'rt-dbl', 'rp-bar', [['2026-06-01', '0', '0']]);
    await booking('B3', 'Cancelled', 'rt-dbl', 'rp-nrf', [['2026-06-01', '90.00', '99.00']]);
    await booking('B4', 'Active', 'rt-ste', 'rp-nrf', [['2026-06-01', '250.00', '275.00']]);
    await h.sql(
      `INSERT INTO stay_units (property_id, rate_plan_code, month, first_stay_date, last_stay_date, stay_units, read_at)
       VALUES ($1, 'BAR', '2026-06-01', '2026-06-01', '2026-06-30', 4, now()), ($1, 'NRF', '2026-06-01', '2026-06-01', '2026-06-30', 1, now())`,
      [P],
    );
    const reporting = reportingSchemaOf(h.schema);

    const kpis = await h.sql(
      `SELECT room_type_code, stay_date::text, room_type_ids, room_type_names, currency_code, rooms_total, rooms_out_of_order, rooms_available, rooms_sold, rooms_free,
              occupancy::text, room_nights_booked::int, complimentary_rooms::int, room_revenue_net::text, room_revenue_gross::text,
              adr_net::text, adr_gross::text, revpar_net::text, revpar_gross::text
         FROM "${reporting}".daily_kpis_by_room_type ORDER BY room_type_code, stay_date`,
    );
    const row = (code: string, night: string, total: number, ooo: number, sold: number, free: number, occ: string, rest: AnyRecord) => ({
      room_type_code: code,
      stay_date: night,
      room_type_ids: code === 'DBL' ? ['rt-dbl'] : ['rt-ste'],
      room_type_names: code === 'DBL' ? 'Double' : 'Suite',
      currency_code: 'EUR',
      rooms_total: total,
      rooms_out_of_order: ooo,
      rooms_available: total - ooo,
      rooms_sold: sold,
      rooms_free: free,
      occupancy: occ,
      ...rest,
    });
    expect(kpis).toEqual([
      // B1 and B2 (zero rate); B3 is cancelled. ADR over the one paid night; RevPAR over 9 rooms.
      row('DBL', '2026-06-01', 10, 1, 3, 6, '0.3333', {
        room_nights_booked: 2,
        complimentary_rooms: 1,
        room_revenue_net: '100.00',
        room_revenue_gross: '110.00',
        adr_net: '100.00',
        adr_gross: '110.00',
        revpar_net: '11.11',
        revpar_gross: '12.22',
      }),
      row('DBL', '2026-06-02', 10, 0, 2, 8, '0.2000', {
        room_nights_booked: 1,
        complimentary_rooms: 0,
        room_revenue_net: '100.00',
        room_revenue_gross: '110.00',
        adr_net: '100.00',
        adr_gross: '110.00',
        revpar_net: '10.00',
        revpar_gross: '11.00',
      }),
      row('STE', '2026-06-01', 2, 0, 1, 1, '0.5000', {
        room_nights_booked: 1,
        complimentary_rooms: 0,
        room_revenue_net: '250.00',
        room_revenue_gross: '275.00',
        adr_net: '250.00',
        adr_gross: '275.00',
        revpar_net: '125.00',
        revpar_gross: '137.50',
      }),
      row('STE', '2026-06-02', 2, 0, 0, 2, '0.0000', {
        room_nights_booked: 0,
        complimentary_rooms: 0,
        room_revenue_net: '0',
        room_revenue_gross: '0',
        adr_net: null,
        adr_gross: null,
        revpar_net: '0.00',
        revpar_gross: '0.00',
      }),
    ]);

    const reconciled = await h.sql(
      `SELECT rate_plan_code, rate_plan_ids, rate_plan_names, month::text, pms_stay_units, mirror_room_nights::int, difference::int, matches
         FROM "${reporting}".stay_units_reconciliation ORDER BY rate_plan_code`,
    );
    expect(reconciled).toEqual([
      // B1's two nights and B2's one: 3; the PMS counts 4 (a stay the bookings do not have, a walk-in).
      {
        rate_plan_code: 'BAR',
        rate_plan_ids: ['rp-bar'],
        rate_plan_names: 'Best Available Rate',
        month: '2026-06-01',
        pms_stay_units: 4,
        mirror_room_nights: 3,
        difference: 1,
        matches: false,
      },
      // B4's night; B3 is cancelled.
      {
        rate_plan_code: 'NRF',
        rate_plan_ids: ['rp-nrf'],
        rate_plan_names: 'Non-refundable',
        month: '2026-06-01',
        pms_stay_units: 1,
        mirror_room_nights: 1,
        difference: 0,
        matches: true,
      },
    ]);
  });

  it('mirrors where each room is, the inventory per room type equal to the PMS room stays, and the stay units reconciled with the bookings', async () => {
    h = await startHarness({
      sim: { properties: [{ id: P, bookingCount: 200 }] },
      config: { roomInventory: { daysBack: 20, daysAhead: 40 }, occupancy: { daysBack: 20, daysAhead: 40 } },
    });
    const sim = h.sim;
    await h.migrate();
    const ctx = await h.context();
    const first = await syncOnce(ctx, { streams: 'all' });
    expect(first).toMatchObject({ failed: [], refreshFailures: [], fatal: undefined });
    // Without integration-storage bookings no PMS code is known yet: nothing asked, the cursor says refreshed.
    expect(await h.sql(`SELECT count(*)::int AS n FROM room_type_inventory_days`)).toEqual([{ n: 0 }]);
    expect(await storeStorageBookings(ctx, P)).toBeGreaterThan(50);
    sim.stats.requestLog = [];
    const second = await syncOnce(ctx, { streams: 'all' });
    expect(second).toMatchObject({ failed: [], refreshFailures: [], fatal: undefined });

    // Where each room is: every PMS room once, on its floor, of its room type.
    const rooms = sim.pmsRooms(P);
    const placed = await h.sql(
      `SELECT count(*)::int AS n FROM pms_room_places p JOIN pms_rooms r USING (property_id, room_id)
        WHERE p.floor_id = r.floor_id AND p.room_type_id = r.room_type_id AND p.display_name = r.display_name`,
    );
    expect(placed).toEqual([{ n: rooms.length }]);
    const inv = sim.accommodationInventory(P);
    expect((await h.sql(`SELECT building_id, name FROM pms_buildings ORDER BY position`)).map((b) => [b.building_id, b.name])).toEqual(
      inv.buildings.map((b) => [b.id, b.name]),
    );
    expect(await h.sql(`SELECT count(*)::int AS n FROM pms_floors`)).toEqual([{ n: new Set(rooms.map((r) => r.floorId)).size }]);

    // The codes and their pairs: every content room type and rate plan is paired with its PMS code.
    const typeCode = sim.pmsRoomTypeCodes(P);
    const planCode = sim.pmsRatePlanCodes(P);
    const pairs = await h.sql(`SELECT room_type_code, room_type_id FROM pms_room_type_codes ORDER BY room_type_id`);
    expect(pairs.map((p) => [p.room_type_id, p.room_type_code])).toEqual(Object.entries(typeCode).sort(([a], [b]) => a.localeCompare(b)));
    const planPairs = await h.sql(`SELECT rate_plan_code, rate_plan_id FROM pms_rate_plan_codes ORDER BY rate_plan_id`);
    expect(planPairs.map((p) => [p.rate_plan_id, p.rate_plan_code])).toEqual(Object.entries(planCode).sort(([a], [b]) => a.localeCompare(b)));

    // The inventory: 61 nights of every code, sold rooms counted again here from the mirror's PMS room stays.
    const codes = [...new Set(Object.values(typeCode))].sort();
    const days = await h.sql<AnyRecord>(`SELECT * FROM room_type_inventory_days ORDER BY room_type_code, stay_date`);
    expect(days).toHaveLength(61 * codes.length);
    const stays = await h.sql<AnyRecord>(
      `SELECT s.room_type_id, s.check_in_at::date::text AS arrival, s.check_out_at::date::text AS departure, r.number, b.number IS NULL AS pms_only
         FROM pms_room_stays s JOIN pms_reservations r USING (property_id, number) LEFT JOIN bookings b USING (property_id, number)
        WHERE r.reservation_status <> 'Cancelled' AND s.status IS DISTINCT FROM 'Cancelled'`,
    );
    const occupying = (code: string, date: string, pmsOnly?: boolean) =>
      stays.filter((s) => typeCode[s.room_type_id] === code && s.arrival <= date && s.departure > date && (pmsOnly === undefined || s.pms_only === pmsOnly))
        .length;
    const closed = new Map(
      (await h.sql<AnyRecord>(`SELECT stay_date, closed_room_count FROM daily_occupancy`)).map((d) => [dateText(d.stay_date), d.closed_room_count]),
    );
    const closedByDate = new Map<string, number>();
    for (const d of days) {
      const date = dateText(d.stay_date);
      expect(d.sold_room_count, `${d.room_type_code} ${date}`).toBe(occupying(d.room_type_code, date));
      expect(d.physical_room_count).toBe(rooms.filter((r) => typeCode[r.roomTypeId] === d.room_type_code).length);
      closedByDate.set(date, (closedByDate.get(date) ?? 0) + d.out_of_order_room_count);
    }
    for (const [date, n] of closedByDate) expect(n, date).toBe(closed.get(date));
    expect(days.some((d) => d.sold_room_count > 0)).toBe(true);
    // One search (the 61 nights fit in one window), in the integration storage's scope.
    const searches = sim.stats.requestLog.filter((e) => e.path.endsWith('/inventories/search'));
    expect(searches.map((e) => [e.method, e.status])).toEqual([['POST', 200]]);

    // The view: the mirror's booked nights per code, and the PMS-only stays are what the PMS counts besides.
    const reporting = reportingSchemaOf(h.schema);
    const kpis = await h.sql<AnyRecord>(
      `SELECT room_type_code, stay_date, rooms_sold, room_nights_booked::int AS booked FROM "${reporting}".daily_kpis_by_room_type`,
    );
    expect(kpis).toHaveLength(days.length);
    for (const k of kpis) {
      const date = dateText(k.stay_date);
      expect(k.booked, `${k.room_type_code} ${date}`).toBe(occupying(k.room_type_code, date, false));
      expect(k.rooms_sold - k.booked, `${k.room_type_code} ${date}`).toBe(occupying(k.room_type_code, date, true));
    }

    // Stay units: every known rate plan code, month by month over the horizon's months.
    const units = await h.sql<AnyRecord>(`SELECT rate_plan_code, month::text, stay_units FROM stay_units ORDER BY rate_plan_code, month`);
    const today = dateText((await h.sql(`SELECT today FROM "${reporting}".property_clock WHERE property_id = $1`, [P]))[0]!.today);
    const months = [...new Set(Array.from({ length: 61 }, (_, i) => `${dateOf(dayOf(today) - 20 + i).slice(0, 7)}-01`))];
    const plans = [...new Set(Object.values(planCode))].sort();
    expect(units.map((u) => [u.rate_plan_code, u.month])).toEqual(plans.flatMap((p) => months.map((m) => [p, m])));
    // Reconciled: per month, what the PMS counts beyond the bookings' nights is the PMS-only stays' nights.
    const reconciled = await h.sql<AnyRecord>(
      `SELECT month::text, sum(difference)::int AS difference FROM "${reporting}".stay_units_reconciliation GROUP BY month ORDER BY month`,
    );
    for (const r of reconciled) {
      let pmsOnlyNights = 0;
      for (const s of stays.filter((x) => x.pms_only)) {
        for (let d = dayOf(s.arrival); d < dayOf(s.departure); d++) if (dateOf(d).slice(0, 7) === r.month.slice(0, 7)) pmsOnlyNights++;
      }
      expect(r.difference, r.month).toBe(pmsOnlyNights);
    }
    expect((await h.sql(`SELECT sum(pms_stay_units)::int AS n FROM "${reporting}".stay_units_reconciliation`))[0]!.n).toBeGreaterThan(0);

    // Freshness per property, as the occupancy's.
    const cursors = await h.sql(`SELECT stream, state, caught_up FROM sync_cursors WHERE stream IN ('room_type_inventory', 'stay_units') ORDER BY stream`);
    expect(cursors).toEqual([
      { stream: 'room_type_inventory', state: 'active', caught_up: true },
      { stream: 'stay_units', state: 'active', caught_up: true },
    ]);
  }, 120_000);

  it('quarantines what does not parse, and a 404 of one property fails that property only', async () => {
    h = await startHarness({
      sim: {
        properties: [
          { id: P, bookingCount: 60 },
          { id: '500200', bookingCount: 60 },
        ],
      },
      config: { roomInventory: { daysBack: 5, daysAhead: 5 }, occupancy: { enabled: false } },
    });
    const sim = h.sim;
    await h.migrate();
    const ctx = await h.context();
    for (const id of [P, '500200']) await storeStorageBookings(ctx, id);
    // 500100: one inventory record damaged, its accommodation inventory not the documented shape; 500200: 404 from the storage.
    sim.faults.rewriteBody = (path, body) => {
      if (path.endsWith(`/${P}/inventories/search`)) {
        const b = body as { inventory: { inventories: Record<string, unknown>[] } };
        b.inventory.inventories[0]!['physicalRoomCount'] = 'many';
        return b;
      }
      if (path.endsWith(`/${P}/obtain-accommodation-inventory`)) return { warnings: [], errors: [], accommodationInventory: { buildings: 'the annex' } };
      return undefined;
    };
    sim.faults.propertyStatus.set('500200', { status: 404, scopes: ['integrationStorage'] });
    const result = await syncOnce(ctx, { streams: 'all' });
    expect(result.fatal).toBeUndefined();
    const failedStreams = result.refreshFailures.map((f) => f.stream).sort();
    expect(failedStreams).toEqual(['accommodation_inventory', 'room_type_inventory', 'stay_units']);
    expect(result.refreshFailures.find((f) => f.stream === 'accommodation_inventory')!.reason).toContain(P);
    expect(result.refreshFailures.find((f) => f.stream === 'room_type_inventory')!.reason).toContain('500200');
    expect(result.refreshFailures.find((f) => f.stream === 'room_type_inventory')!.reason).not.toContain(P);

    const quarantined = await h.sql(
      `SELECT stream, property_id, entity_key FROM quarantine WHERE stream IN ('accommodation_inventory', 'room_type_inventory') ORDER BY stream`,
    );
    expect(quarantined).toHaveLength(2);
    expect(quarantined[0]).toMatchObject({ stream: 'accommodation_inventory', property_id: P });
    expect(quarantined[1]).toMatchObject({ stream: 'room_type_inventory', property_id: P });
    // The other records of 500100 are stored; 500200's inventory of the other property (the accommodation one) too.
    const codes = new Set(Object.values(sim.pmsRoomTypeCodes(P))).size;
    expect(await h.sql(`SELECT property_id, count(*)::int AS n FROM room_type_inventory_days GROUP BY property_id`)).toEqual([
      { property_id: P, n: 11 * codes - 1 },
    ]);
    expect(await h.sql(`SELECT property_id FROM pms_accommodation_inventories`)).toEqual([{ property_id: '500200' }]);
    const cursors = await h.sql(
      `SELECT property_id, stream, state FROM sync_cursors WHERE stream IN ('room_type_inventory', 'stay_units') ORDER BY property_id, stream`,
    );
    expect(cursors).toEqual([
      { property_id: P, stream: 'room_type_inventory', state: 'active' },
      { property_id: P, stream: 'stay_units', state: 'active' },
      { property_id: '500200', stream: 'room_type_inventory', state: 'failing' },
      { property_id: '500200', stream: 'stay_units', state: 'failing' },
    ]);
  }, 120_000);

  it('stay units: the months from this one on at every refresh, a month before it only until it was read after it ended', async () => {
    h = await startHarness({
      sim: { properties: [{ id: P, bookingCount: 60 }] },
      // Two months back at least, two ahead: months on both sides of this one.
      config: { roomInventory: { daysBack: 62, daysAhead: 40 }, occupancy: { enabled: false } },
    });
    await h.migrate();
    const ctx = await h.context();
    await syncOnce(ctx, { streams: 'all' });
    await storeStorageBookings(ctx, P);
    const codes = Object.values(h.sim.pmsRatePlanCodes(P));
    const zone = (await h.sql<{ time_zone: string }>('SELECT time_zone FROM properties WHERE property_id = $1', [P]))[0]!.time_zone;
    const thisMonth = `${localDate(Date.now(), zone).slice(0, 7)}-01`;
    const asked = async (): Promise<string[]> => {
      h!.sim.stats.requestLog = [];
      expect(await syncOnce(ctx, { streams: 'all' })).toMatchObject({ failed: [], refreshFailures: [], fatal: undefined });
      return h!.sim.stats.requestLog
        .filter((e) => e.path.endsWith('/calculate-stay-units') && e.status === 200)
        .map((e) => new URLSearchParams(e.query).get('firstStayDate')!)
        .sort();
    };
    const first = await asked();
    const months = [...new Set(first)];
    const past = months.filter((m) => m < thisMonth);
    expect(past.length).toBeGreaterThanOrEqual(2);
    expect(first).toHaveLength(new Set(codes).size * months.length);
    // The second refresh: this month and the later ones only; the earlier ones were read after they ended.
    const second = await asked();
    expect([...new Set(second)]).toEqual(months.filter((m) => m >= thisMonth));
    expect(second).toHaveLength(new Set(codes).size * months.filter((m) => m >= thisMonth).length);
    // Last month as read while it ran (its read_at before its end): read once more, then left alone.
    const lastMonth = past.at(-1)!;
    await h.sql(`UPDATE stay_units SET read_at = ($1::date + 14)::timestamptz WHERE property_id = $2 AND month = $1::date`, [lastMonth, P]);
    expect([...new Set(await asked())]).toEqual([lastMonth, ...months.filter((m) => m >= thisMonth)]);
    expect([...new Set(await asked())]).toEqual(months.filter((m) => m >= thisMonth));
    // Every month still has its row, the past ones included.
    expect(await h.sql(`SELECT count(*)::int AS n FROM stay_units WHERE property_id = $1`, [P])).toEqual([{ n: new Set(codes).size * months.length }]);
  }, 120_000);

  it('without change events no PMS code is known: status says why the inventory by room type and the stay units are empty', async () => {
    // The integration storage has no list: its bookings and blocks, the only answers that name
    // the PMS codes these are asked for, come with change events. Without webhooks, none.
    h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 10 }] } });
    h.sim.stats.requestLog = [];
    const env = daemonEnv(h, { allStreams: true });
    const once = await runCli(['sync', '--once'], env);
    expect(once.code, once.stdout + once.stderr).toBe(0);
    expect(h.sim.stats.requestLog.filter((e) => e.path.startsWith('/api/pms-integration-storage/'))).toEqual([]);
    const why =
      'no integration-storage booking or inventory block is mirrored, and only they name the PMS codes these are asked for; ' +
      'the integration storage has no list to read them from: change events bring them, and webhooks.enabled is off (see docs/first-real-sync.md, Reports that need change events)';
    const status = await runCli(['status'], env);
    expect(status.stdout).toContain(`property ${P}: inventory by room type and stay units empty: ${why}`);
    const json = JSON.parse((await runCli(['status', '--json'], env)).stdout) as { roomInventoryWithoutCodes: unknown };
    expect(json.roomInventoryWithoutCodes).toEqual([{ propertyId: P, why }]);

    // With webhooks on, and no storage event yet: the same, said so.
    const withWebhooks = await runCli(['status'], { ...env, STAYSYNC_WEBHOOKS_ENABLED: 'true' });
    expect(withWebhooks.stdout).toContain(`property ${P}: inventory by room type and stay units empty: `);
    expect(withWebhooks.stdout).toContain('no integration-storage change event has named this property yet');

    // Once a storage booking is mirrored, its codes are asked for, and the line goes.
    const ctx = await h.context();
    await storeStorageBookings(ctx, P);
    expect(await syncOnce(ctx, { streams: 'all' })).toMatchObject({ failed: [], refreshFailures: [], fatal: undefined });
    expect(await h.sql(`SELECT count(*)::int AS n FROM room_type_inventory_days`)).not.toEqual([{ n: 0 }]);
    expect((await runCli(['status'], env)).stdout).not.toContain('inventory by room type and stay units empty');
  }, 120_000);

  it('a connection without the integration storage: both refreshes tried, then not granted, not failing', async () => {
    h = await startHarness({
      sim: {
        clients: [
          {
            clientId: SIM_CLIENT_ID,
            clientSecret: SIM_CLIENT_SECRET,
            apiAccesses: ['reservation_api', 'content', simulatorClaims.referenceData, simulatorClaims.pms, simulatorClaims.pmsAnalytics],
          },
        ],
        properties: [{ id: P, bookingCount: 30 }],
      },
      config: { roomInventory: { daysBack: 5, daysAhead: 5 }, occupancy: { daysBack: 5, daysAhead: 5 } },
    });
    await h.migrate();
    const ctx = await h.context();
    // Codes known (as storage events would have brought them): the refreshes have something to ask.
    await storeStorageBookings(ctx, P);
    h.sim.stats.requestLog = [];
    const result = await syncOnce(ctx, { streams: 'all' });
    expect(result).toMatchObject({ failed: [], refreshFailures: [], fatal: undefined });
    // The claim's name for the integration storage is not documented: each refresh asked once, answered 403.
    const storage = h.sim.stats.requestLog.filter((e) => e.path.startsWith('/api/pms-integration-storage/'));
    expect(storage.map((e) => [e.path.split('/').at(-1), e.status]).sort((a, b) => String(a[0]).localeCompare(String(b[0])))).toEqual([
      ['calculate-stay-units', 403],
      ['search', 403],
    ]);
    expect(await h.sql(`SELECT stream, state FROM sync_cursors WHERE stream IN ('room_type_inventory', 'stay_units') ORDER BY stream`)).toEqual([
      { stream: 'room_type_inventory', state: 'not_granted' },
      { stream: 'stay_units', state: 'not_granted' },
    ]);
    // The accommodation inventory is the PMS API's: granted, mirrored.
    expect(await h.sql(`SELECT count(*)::int AS n FROM pms_accommodation_inventories`)).toEqual([{ n: 1 }]);
  }, 120_000);
});
