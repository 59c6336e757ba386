/**
 * Segments, channels and group blocks of the PMS integration storage, through the real path:
 * change events announce storage bookings and inventory blocks, the simulator serves them (their
 * bodies replaced by the hand-made payloads below), the events stream fetches and writes them,
 * and the reporting views segment_mix, segment_mix_monthly and block_pickup give the figures of
 * the worked examples of docs/tables-and-reporting.md, computed by hand. Also: a newer block
 * replaces its days whole and an older one changes nothing; a payload whose typed parts do not
 * parse is quarantined with nothing lost; a mirror from before the child tables gets them
 * from raw by the rebuild.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { rebuild } from '../../src/replay/rebuild.js';
import { insertWebhookEvents } from '../../src/store/repositories/webhook-events.js';
import type { SyncContext } from '../../src/sync/runtime/context.js';
import { reportingSchemaOf } from '../helpers/database.js';
import { startHarness, syncOnce, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const P = '500100';
type Json = Record<string, unknown>;

const eur = (amountAfterTax: number) => ({ amountAfterTax, currencyCode: 'EUR' });

/** A room stay of a storage booking: its nights as [date, amount], its guests. */
function stay(
  index: number,
  marketCode: string | null,
  sourceOfBusiness: string | null,
  nights: [string, number][],
  guests: { adults: number; childAges?: number[] },
  block?: string,
): Json {
  return {
    index,
    sourceOfBusiness,
    marketCode,
    roomTypes: [{ index: 0, pmsSideCode: 'DBL', pmsSideRoomNumber: `30${index}` }],
    ratePlans: [{ index: 0, pmsSideCode: 'BAR' }],
    inventoryBlocks: block ? [{ index: 0, pmsSideCode: block }] : [],
    roomRates: nights.map(([stayDate, amount]) => ({
      stayDate,
      roomTypeIndex: 0,
      ratePlanIndex: 0,
      inventoryBlockIndex: block ? 0 : null,
      total: eur(amount),
    })),
    services: [],
    guestCounts: [
      { ageQualifyingCode: 'AdultBed', count: guests.adults, age: null },
      ...(guests.childAges ?? []).map((age) => ({ ageQualifyingCode: 'ChildBandBed', count: 1, age })),
    ],
    stayDates: { arrivalDateTime: `${nights[0]![0]}T14:00:00`, departureDateTime: `${nights[nights.length - 1]![0]}T12:00:00` },
  };
}

/** A room stay of one night in a room type other than DBL, taken from a block. */
function stayOfType(roomType: string, date: string, blockCode: string): Json {
  const s = stay(2, 'GROUP', 'PHONE', [[date, 80]], { adults: 1 }, blockCode);
  return { ...s, roomTypes: [{ index: 0, pmsSideCode: roomType, pmsSideRoomNumber: null }] };
}

function booking(id: string, status: string, roomStays: Json[], channels: Json[] = []): Json {
  return {
    id,
    status,
    uniqueIds: [{ id: `N-${id}`, idContext: 'External' }],
    bookingChannels: channels,
    roomStays,
    total: eur(0),
    guaranteeInfo: { guaranteeCode: null },
    propertyId: P,
    pmsSideUpdateDateTime: '2026-02-01T10:00:00',
    pmsSideCreateDateTime: '2026-02-01T10:00:00',
    updateDateTime: '2026-02-01T09:00:00Z',
    roomRevenues: [],
  };
}

/** A day of a block: [date, room type, blocked, realised, cut-off]. */
type Day = [string, string, number, number | null, string | null];
function block(id: string, status: string, updateDateTime: string, days: Day[]): Json {
  return {
    id,
    propertyId: P,
    pmsSideId: `BLK-${id}`,
    pmsSideCode: `GRP-${id}`,
    updateDateTime,
    pmsSideCreateDateTime: '2026-01-10T10:00:00',
    pmsSideCancelDateTime: null,
    ratePlanCodes: ['GRP'],
    blockStatus: status,
    pmsBlockStatus: status === 'Active' ? 'DEF' : 'CXL',
    dailyItems: days.map(([date, roomTypeCode, blockedCount, realizedCount, cutoffDate]) => ({
      date,
      roomTypeCode,
      blockedCount,
      realizedCount,
      cutoffDate,
      pricing: { oneAdultPrice: 95.5, servicesPrice: null, currencyCode: 'EUR' },
    })),
  };
}

const addDays = (date: string, n: number) => new Date(Date.parse(`${date}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);

let eventSeq = 0;
/** Announces storage bookings and blocks by their change events, as the webhook receiver stores them. */
async function announce(ctx: SyncContext, bookings: string[], blocks: string[]): Promise<void> {
  const event = (type: string, payload: Json, key: string) => ({
    eventId: `e-${++eventSeq}`,
    eventType: type,
    creationTime: null,
    payload: { ...payload, PropertyId: P },
    propertyId: P,
    entityKey: key,
  });
  await ctx.write((trx) =>
    insertWebhookEvents(trx, [
      ...bookings.map((id) => event('pms_integration_storage:booking_changed', { BookingId: id }, id)),
      ...blocks.map((id) => event('pms_integration_storage:inventory_block_changed', { InventoryBlockId: id }, id)),
    ]),
  );
}

describe('segments and blocks of the integration storage', () => {
  it('types storage bookings and blocks, and the views give the hand-checked figures', async () => {
    h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 20 }] }, config: { occupancy: { daysBack: 2, daysAhead: 2 } } });
    const ctx = await h.context();
    // The first sync: content gives the property its clock.
    expect((await syncOnce(ctx, { streams: 'all' })).failed).toEqual([]);
    const reporting = reportingSchemaOf(h.schema);
    const [{ today }] = (await h.sql<{ today: string }>(`SELECT today::text AS today FROM "${reporting}".property_clock WHERE property_id = $1`, [P])) as [
      { today: string },
    ];

    // Ids the simulator knows (it answers 404 for others); their bodies are ours.
    const ids = h.sim.integrationStorageBookings(P).map((b) => b.id);
    expect(ids.length).toBeGreaterThanOrEqual(8);
    const [A, B, C, D, E, F, G, H] = ids as [string, string, string, string, string, string, string, string];
    const [B1, B2] = h.sim.inventoryBlocks(P).map((b) => b.id) as [string, string];
    const T = (n: number) => addDays(today, n);
    const served = new Map<string, Json>([
      [
        A,
        booking(A, 'Confirmed', [
          stay(
            1,
            'LEISURE',
            'WEB',
            [
              ['2026-03-10', 100],
              ['2026-03-11', 120],
            ],
            { adults: 2 },
          ),
        ]),
      ],
      [
        B,
        booking(
          B,
          'Confirmed',
          [stay(1, 'LEISURE', 'OTA', [['2026-03-10', 90]], { adults: 2 }), stay(2, 'LEISURE', 'OTA', [['2026-03-10', 0]], { adults: 1, childAges: [7] })],
          [{ code: 'TA001', codeType: 'Pms', name: 'Booking.com', bookingChannelType: 'TravelAgent' }],
        ),
      ],
      [
        C,
        booking(C, 'InHouse', [
          stay(
            1,
            'GROUP',
            'PHONE',
            [
              ['2026-03-10', 80],
              ['2026-03-11', 80],
            ],
            { adults: 2 },
            'GRP-2026-1',
          ),
        ]),
      ],
      [
        D,
        booking(D, 'Confirmed', [
          stay(
            1,
            'BUSINESS',
            'WEB',
            [
              ['2026-03-31', 150],
              ['2026-04-01', 150],
            ],
            { adults: 1 },
          ),
        ]),
      ],
      [E, booking(E, 'Cancelled', [stay(1, 'LEISURE', 'WEB', [['2026-03-10', 500]], { adults: 2 })])],
      // Two rooms taken from block B1 on T+10 (F, G) and one on T+12 (F); H is cancelled.
      [F, booking(F, 'Confirmed', [stay(1, 'GROUP', 'PHONE', [[T(10), 95.5]], { adults: 1 }, `GRP-${B1}`), stayOfType('SGL', T(12), `GRP-${B1}`)])],
      [G, booking(G, 'Confirmed', [stay(1, 'GROUP', 'PHONE', [[T(10), 95.5]], { adults: 1 }, `GRP-${B1}`)])],
      [H, booking(H, 'Cancelled', [stay(1, 'GROUP', 'PHONE', [[T(10), 95.5]], { adults: 1 }, `GRP-${B1}`)])],
      // Version 1 of block B1: a fifth day that version 2 drops.
      [
        B1,
        block(B1, 'Active', '2026-02-01T09:00:00Z', [
          [T(10), 'DBL', 10, 4, T(-1)],
          [T(11), 'DBL', 10, 10, T(-1)],
          [T(10), 'SGL', 5, null, T(3)],
          [T(12), 'SGL', 4, 5, today],
          [T(13), 'DBL', 2, 0, T(-1)],
        ]),
      ],
      [B2, block(B2, 'Cancelled', '2026-02-01T09:00:00Z', [[T(10), 'DBL', 20, 0, T(-1)]])],
    ]);
    h.sim.faults.rewriteBody = (path) => {
      const id = path.split('/').pop()!;
      if (path.includes('/pms-integration-storage/') && served.has(id))
        return path.includes('/blocks/') ? { inventoryBlock: served.get(id) } : { booking: served.get(id) };
      return undefined;
    };
    await announce(ctx, [A, B, C, D, E, F, G, H], [B1, B2]);
    expect((await syncOnce(ctx, { streams: 'all' })).failed).toEqual([]);

    // Typed where analysts need it.
    expect(await h.sql(`SELECT market_code, source_of_business FROM integration_storage_bookings WHERE booking_id = $1`, [C])).toEqual([
      { market_code: 'GROUP', source_of_business: 'PHONE' },
    ]);
    expect(await h.sql(`SELECT position, code, code_type, name, channel_type FROM integration_storage_booking_channels WHERE booking_id = $1`, [B])).toEqual([
      { position: 0, code: 'TA001', code_type: 'Pms', name: 'Booking.com', channel_type: 'TravelAgent' },
    ]);
    expect(
      await h.sql(
        `SELECT room_stay_position, position, room_stay_index, stay_date::text, market_code, source_of_business, room_type_code, room_number, rate_plan_code,
                inventory_block_code, amount_after_tax::text, currency_code, adults, children
           FROM integration_storage_booking_nights WHERE booking_id IN ($1, $2) ORDER BY booking_id = $2, room_stay_position, position`,
        [B, C],
      ),
    ).toEqual([
      {
        room_stay_position: 0,
        position: 0,
        room_stay_index: 1,
        stay_date: '2026-03-10',
        market_code: 'LEISURE',
        source_of_business: 'OTA',
        room_type_code: 'DBL',
        room_number: '301',
        rate_plan_code: 'BAR',
        inventory_block_code: null,
        amount_after_tax: '90',
        currency_code: 'EUR',
        adults: 2,
        children: 0,
      },
      {
        room_stay_position: 1,
        position: 0,
        room_stay_index: 2,
        stay_date: '2026-03-10',
        market_code: 'LEISURE',
        source_of_business: 'OTA',
        room_type_code: 'DBL',
        room_number: '302',
        rate_plan_code: 'BAR',
        inventory_block_code: null,
        amount_after_tax: '0',
        currency_code: 'EUR',
        adults: 1,
        children: 1,
      },
      {
        room_stay_position: 0,
        position: 0,
        room_stay_index: 1,
        stay_date: '2026-03-10',
        market_code: 'GROUP',
        source_of_business: 'PHONE',
        room_type_code: 'DBL',
        room_number: '301',
        rate_plan_code: 'BAR',
        inventory_block_code: 'GRP-2026-1',
        amount_after_tax: '80',
        currency_code: 'EUR',
        adults: 2,
        children: 0,
      },
      {
        room_stay_position: 0,
        position: 1,
        room_stay_index: 1,
        stay_date: '2026-03-11',
        market_code: 'GROUP',
        source_of_business: 'PHONE',
        room_type_code: 'DBL',
        room_number: '301',
        rate_plan_code: 'BAR',
        inventory_block_code: 'GRP-2026-1',
        amount_after_tax: '80',
        currency_code: 'EUR',
        adults: 2,
        children: 0,
      },
    ]);

    // segment_mix, night by night (docs/tables-and-reporting.md, "Segment mix"): E is cancelled.
    const mix = await h.sql(
      `SELECT stay_date::text, month::text, market_code, source_of_business, room_nights::int, complimentary_nights::int, room_revenue_gross::text,
              adr_gross::text, guests::int, bookings::int, share_of_room_nights::text, share_of_room_revenue::text
         FROM "${reporting}".segment_mix WHERE property_id = $1 AND currency_code = 'EUR' AND stay_date < '2026-06-01' ORDER BY stay_date, market_code, source_of_business`,
      [P],
    );
    const row = (
      d: string,
      m: string,
      seg: string,
      src: string,
      n: number,
      comp: number,
      rev: string,
      adr: string,
      g: number,
      shareN: string,
      shareR: string,
    ) => ({
      stay_date: d,
      month: m,
      market_code: seg,
      source_of_business: src,
      room_nights: n,
      complimentary_nights: comp,
      room_revenue_gross: rev,
      adr_gross: adr,
      guests: g,
      bookings: 1,
      share_of_room_nights: shareN,
      share_of_room_revenue: shareR,
    });
    expect(mix).toEqual([
      // 10 March: 4 room nights, 270.00 of revenue.
      row('2026-03-10', '2026-03-01', 'GROUP', 'PHONE', 1, 0, '80', '80.00', 2, '0.2500', '0.2963'),
      row('2026-03-10', '2026-03-01', 'LEISURE', 'OTA', 2, 1, '90', '90.00', 4, '0.5000', '0.3333'),
      row('2026-03-10', '2026-03-01', 'LEISURE', 'WEB', 1, 0, '100', '100.00', 2, '0.2500', '0.3704'),
      // 11 March: 2 room nights, 200.00.
      row('2026-03-11', '2026-03-01', 'GROUP', 'PHONE', 1, 0, '80', '80.00', 2, '0.5000', '0.4000'),
      row('2026-03-11', '2026-03-01', 'LEISURE', 'WEB', 1, 0, '120', '120.00', 2, '0.5000', '0.6000'),
      row('2026-03-31', '2026-03-01', 'BUSINESS', 'WEB', 1, 0, '150', '150.00', 1, '1.0000', '1.0000'),
      row('2026-04-01', '2026-04-01', 'BUSINESS', 'WEB', 1, 0, '150', '150.00', 1, '1.0000', '1.0000'),
    ]);
    // segment_mix_monthly: March has 7 room nights and 620.00.
    expect(
      await h.sql(
        `SELECT month::text, market_code, source_of_business, room_nights::int, complimentary_nights::int, room_revenue_gross::text, adr_gross::text,
                guests::int, bookings::int, share_of_room_nights::text, share_of_room_revenue::text
           FROM "${reporting}".segment_mix_monthly WHERE property_id = $1 AND currency_code = 'EUR' AND month < '2026-06-01' ORDER BY month, market_code, source_of_business`,
        [P],
      ),
    ).toEqual([
      {
        month: '2026-03-01',
        market_code: 'BUSINESS',
        source_of_business: 'WEB',
        room_nights: 1,
        complimentary_nights: 0,
        room_revenue_gross: '150',
        adr_gross: '150.00',
        guests: 1,
        bookings: 1,
        share_of_room_nights: '0.1429',
        share_of_room_revenue: '0.2419',
      },
      {
        month: '2026-03-01',
        market_code: 'GROUP',
        source_of_business: 'PHONE',
        room_nights: 2,
        complimentary_nights: 0,
        room_revenue_gross: '160',
        adr_gross: '80.00',
        guests: 4,
        bookings: 1,
        share_of_room_nights: '0.2857',
        share_of_room_revenue: '0.2581',
      },
      {
        month: '2026-03-01',
        market_code: 'LEISURE',
        source_of_business: 'OTA',
        room_nights: 2,
        complimentary_nights: 1,
        room_revenue_gross: '90',
        adr_gross: '90.00',
        guests: 4,
        bookings: 1,
        share_of_room_nights: '0.2857',
        share_of_room_revenue: '0.1452',
      },
      {
        month: '2026-03-01',
        market_code: 'LEISURE',
        source_of_business: 'WEB',
        room_nights: 2,
        complimentary_nights: 0,
        room_revenue_gross: '220',
        adr_gross: '110.00',
        guests: 4,
        bookings: 1,
        share_of_room_nights: '0.2857',
        share_of_room_revenue: '0.3548',
      },
      {
        month: '2026-04-01',
        market_code: 'BUSINESS',
        source_of_business: 'WEB',
        room_nights: 1,
        complimentary_nights: 0,
        room_revenue_gross: '150',
        adr_gross: '150.00',
        guests: 1,
        bookings: 1,
        share_of_room_nights: '1.0000',
        share_of_room_revenue: '1.0000',
      },
    ]);

    // Version 2 of block B1: d0 picks up 3 more rooms, the fifth day goes. Then an older
    // version (a late answer) changes nothing.
    const v2: Day[] = [
      [T(10), 'DBL', 10, 7, T(-1)],
      [T(11), 'DBL', 10, 10, T(-1)],
      [T(10), 'SGL', 5, null, T(3)],
      [T(12), 'SGL', 4, 5, today],
    ];
    served.set(B1, block(B1, 'Active', '2026-02-02T09:00:00Z', v2));
    await announce(ctx, [], [B1]);
    expect((await syncOnce(ctx, { streams: 'all' })).failed).toEqual([]);
    served.set(B1, block(B1, 'Active', '2026-02-01T12:00:00Z', [[T(10), 'DBL', 99, 0, null]]));
    await announce(ctx, [], [B1]);
    expect((await syncOnce(ctx, { streams: 'all' })).failed).toEqual([]);
    expect(await h.sql(`SELECT count(*)::int AS n FROM inventory_block_days WHERE inventory_block_id = $1`, [B1])).toEqual([{ n: 4 }]);

    // block_pickup (docs/tables-and-reporting.md, "Block pickup"): B2 is cancelled.
    const pickup = await h.sql(
      `SELECT block_code, stay_date::text, days_from_today, room_type_code, blocked, realized, pickup_percent::text, unsold, cutoff_date::text,
              days_to_cutoff, released, rooms_released, rooms_held, booked_nights::int, one_adult_price::text, currency_code
         FROM "${reporting}".block_pickup WHERE property_id = $1 ORDER BY room_type_code, stay_date`,
      [P],
    );
    const b = (
      d: number,
      type: string,
      blocked: number,
      realized: number | null,
      pct: string | null,
      unsold: number | null,
      cut: number,
      released: boolean,
      rel: number | null,
      held: number | null,
      booked: number,
    ) => ({
      block_code: `GRP-${B1}`,
      stay_date: T(d),
      days_from_today: d,
      room_type_code: type,
      blocked,
      realized,
      pickup_percent: pct,
      unsold,
      cutoff_date: T(cut),
      days_to_cutoff: cut,
      released,
      rooms_released: rel,
      rooms_held: held,
      booked_nights: booked,
      one_adult_price: '95.5',
      currency_code: 'EUR',
    });
    expect(pickup).toEqual([
      b(10, 'DBL', 10, 7, '70.0', 3, -1, true, 3, 0, 2),
      b(11, 'DBL', 10, 10, '100.0', 0, -1, true, 0, 0, 0),
      b(10, 'SGL', 5, null, null, null, 3, false, 0, null, 0),
      b(12, 'SGL', 4, 5, '125.0', 0, 0, false, 0, 0, 1),
    ]);

    // A mirror from before the child tables (0022): the rebuild derives them from raw.
    const children = `SELECT (SELECT count(*) FROM integration_storage_booking_nights)::int AS nights, (SELECT count(*) FROM integration_storage_booking_channels)::int AS channels,
                             (SELECT count(*) FROM inventory_block_days)::int AS days,
                             (SELECT md5(string_agg(n::text, ',' ORDER BY n::text)) FROM integration_storage_booking_nights n) AS digest`;
    const [before] = await h.sql(children);
    await h.sql(`DELETE FROM integration_storage_booking_nights; DELETE FROM integration_storage_booking_channels; DELETE FROM inventory_block_days`);
    await h.sql(`UPDATE integration_storage_bookings SET market_code = NULL, source_of_business = NULL`);
    const rebuilt = await rebuild({ handle: ctx, config: h.config, logger: h.logger });
    // A 2, B 2 (two stays), C 2, D 2, E 1 (cancelled, still mirrored), F 2, G 1, H 1: 13 nights.
    expect(rebuilt.children.integration_storage_booking_nights).toBe(13);
    expect(await h.sql(children)).toEqual([before]);
    expect(await h.sql(`SELECT market_code FROM integration_storage_bookings WHERE booking_id = $1`, [C])).toEqual([{ market_code: 'GROUP' }]);
  });

  it('quarantines a storage booking or block whose nights or days do not parse, and keeps what was mirrored', async () => {
    h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 10 }] }, config: { occupancy: { daysBack: 2, daysAhead: 2 } } });
    const ctx = await h.context();
    const [A] = h.sim.integrationStorageBookings(P).map((b) => b.id) as [string];
    const [B1] = h.sim.inventoryBlocks(P).map((b) => b.id) as [string];
    let good = true;
    h.sim.faults.rewriteBody = (path) => {
      const id = path.split('/').pop()!;
      if (path.endsWith(`/bookings/${A}`))
        return {
          booking: booking(A, 'Confirmed', [stay(1, 'LEISURE', 'WEB', [[good ? '2026-03-10' : '2026-02-30', 100]], { adults: 2 })]),
        };
      if (path.endsWith(`/blocks/${B1}`))
        return {
          inventoryBlock: block(id, 'Active', good ? '2026-02-01T09:00:00Z' : '2026-02-03T09:00:00Z', [[good ? '2026-03-10' : 'next week', 'DBL', 5, 1, null]]),
        };
      return undefined;
    };
    await announce(ctx, [A], [B1]);
    expect((await syncOnce(ctx, { streams: 'all' })).failed).toEqual([]);
    const mirrored = async () =>
      h!.sql(
        `SELECT (SELECT string_agg(stay_date::text || ':' || amount_after_tax, ',') FROM integration_storage_booking_nights WHERE booking_id = $1) AS nights,
                (SELECT string_agg(stay_date::text || ':' || blocked_count, ',') FROM inventory_block_days WHERE inventory_block_id = $2) AS days`,
        [A, B1],
      );
    expect(await mirrored()).toEqual([{ nights: '2026-03-10:100', days: '2026-03-10:5' }]);

    good = false;
    await announce(ctx, [A], [B1]);
    await syncOnce(ctx, { streams: 'all' });
    // Each body kept whole in the quarantine, with the reason naming the field; the event failed; the mirror as it was.
    const quarantined = await h.sql<{ entity_key: string; reason: string; raw_body: string }>(
      `SELECT entity_key, reason, raw_body::text AS raw_body FROM quarantine WHERE stream = 'webhook_events' ORDER BY entity_key = $1 DESC`,
      [A],
    );
    expect(quarantined.map((q) => q.entity_key)).toEqual([A, B1]);
    expect(quarantined[0]!.reason).toMatch(/roomStays\.0\.roomRates\.0\.stayDate/);
    expect(quarantined[0]!.raw_body).toContain('2026-02-30');
    expect(quarantined[1]!.reason).toMatch(/dailyItems\.0\.date/);
    expect(quarantined[1]!.raw_body).toContain('next week');
    expect(await h.sql(`SELECT count(*)::int AS n FROM webhook_events WHERE state = 'failed'`)).toEqual([{ n: 2 }]);
    expect(await mirrored()).toEqual([{ nights: '2026-03-10:100', days: '2026-03-10:5' }]);
  });

  it('writes a group booking of 5,000 room nights in one transaction (more values than one INSERT may bind)', async () => {
    h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 10 }] }, config: { occupancy: { daysBack: 2, daysAhead: 2 } } });
    const ctx = await h.context();
    const [A] = h.sim.integrationStorageBookings(P).map((b) => b.id) as [string];
    // 50 rooms for 100 nights each, 10.00 a night more for each room: 14 columns a night, 70,000 values.
    const stays = Array.from({ length: 50 }, (_, room) =>
      stay(
        room + 1,
        'GROUP',
        'PHONE',
        Array.from({ length: 100 }, (_, n) => [addDays('2027-01-01', n), 100 + 10 * room] as [string, number]),
        { adults: 1 },
        'GRP-BIG',
      ),
    );
    h.sim.faults.rewriteBody = (path) => (path.endsWith(`/bookings/${A}`) ? { booking: booking(A, 'Confirmed', stays) } : undefined);
    await announce(ctx, [A], []);
    expect((await syncOnce(ctx, { streams: 'all' })).failed).toEqual([]);
    // Revenue: 100 nights × (100 + 110 + … + 590) = 100 × 50 × 345 = 1,725,000.
    expect(
      await h.sql(
        `SELECT count(*)::int AS n, sum(amount_after_tax)::text AS revenue, count(DISTINCT stay_date)::int AS nights FROM integration_storage_booking_nights WHERE booking_id = $1`,
        [A],
      ),
    ).toEqual([{ n: 5000, revenue: '1725000', nights: 100 }]);
    expect(await h.sql(`SELECT count(*)::int AS n FROM quarantine`)).toEqual([{ n: 0 }]);
  });
});
