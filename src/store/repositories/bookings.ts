import { sql, type Insertable, type RawBuilder, type Transaction } from 'kysely';
import type { Booking } from '../../provider/schemas/bookings.js';
import type {
  BookingDailyRatesTable,
  BookingDiscountsTable,
  BookingGuestsTable,
  BookingLoyaltyCardsTable,
  BookingRoomStayRatePlansTable,
  BookingRoomStaysTable,
  BookingServicesTable,
  BookingsTable,
  BookingTaxAmountsTable,
  BookingTaxesTable,
  Database,
  TaxLevel,
} from '../schema.js';
import type { Executor } from '../types.js';

type Num = string | null | undefined;
type Total = NonNullable<Booking['total']>;
type RoomStayService = Booking['roomStays'][number]['services'][number];
type Service = Booking['services'][number] | RoomStayService;
/** The rows of one booking version: header plus children. */
export interface BookingRows {
  booking: Insertable<BookingsTable>;
  roomStays: Insertable<BookingRoomStaysTable>[];
  dailyRates: Insertable<BookingDailyRatesTable>[];
  services: Insertable<BookingServicesTable>[];
  guests: Insertable<BookingGuestsTable>[];
  taxes: Insertable<BookingTaxesTable>[];
  discounts: Insertable<BookingDiscountsTable>[];
  taxAmounts: Insertable<BookingTaxAmountsTable>[];
  ratePlans: Insertable<BookingRoomStayRatePlansTable>[];
  loyaltyCards: Insertable<BookingLoyaltyCardsTable>[];
}

/** Money arrives as its exact text (schema-primitives `num`) and goes to numeric columns as text. */
const money = (v: Num): string | null => v ?? null;
/** Text as sent: an empty string is a value the provider gave, not an absent one. */
const str = (v: string | null | undefined): string | null => v ?? null;

/** Maps a parsed booking to its relational rows. Pure: no I/O. */
export function bookingToRows(propertyId: string, b: Booking, raw: unknown, fetchedAt: Date): BookingRows {
  const key = { property_id: propertyId, number: b.number };
  // The name of each tax index (the first tax when several share an index).
  const taxNames = new Map<number, string | null>();
  for (const t of b.taxes) if (t.index !== null && !taxNames.has(t.index)) taxNames.set(t.index, str(t.name));
  const paymentMethods = (b.guaranteeInfo?.guarantees ?? []).map((g) => g.paymentMethod);
  const arrivals = b.roomStays.map((s) => s.stayDates.arrivalDateTime).sort();
  const departures = b.roomStays.map((s) => s.stayDates.departureDateTime).sort();
  const rows: BookingRows = {
    booking: {
      ...key,
      status: b.status,
      created_at: str(b.createdDateTime),
      modified_at: b.modifiedDateTime,
      fetched_at: fetchedAt,
      currency_code: str(b.currencyCode),
      arrival_at: arrivals[0] ?? null,
      departure_at: departures[departures.length - 1] ?? null,
      room_stay_count: b.roomStays.length,
      price_before_tax: money(b.total?.priceBeforeTax),
      price_after_tax: money(b.total?.priceAfterTax),
      tax_amount: money(b.total?.taxAmount),
      total_prepaid: money(b.guaranteeInfo?.totalPrepaid),
      cancelled_at: str(b.cancellation?.cancelledDateTime),
      cancellation_penalty: money(b.cancellation?.penaltyAmount),
      source_type: str(b.source?.type),
      source_code: str(b.source?.code),
      source_url: str(b.source?.sourceUrl),
      customer_first_name: str(b.customer?.firstName),
      customer_last_name: str(b.customer?.lastName),
      payment_method: str(paymentMethods[0]),
      payment_methods: paymentMethods.length > 0 ? paymentMethods : null,
      synced_at: new Date(),
      raw: JSON.stringify(raw),
    },
    roomStays: [],
    dailyRates: [],
    services: [],
    guests: [],
    taxes: b.taxes.map((t, position) => ({ ...key, position, tax_index: t.index, name: str(t.name), description: str(t.description) })),
    discounts: [],
    taxAmounts: [],
    ratePlans: [],
    loyaltyCards: (b.guaranteeInfo?.loyalty?.cards ?? []).map((c, position) => ({
      ...key,
      position,
      card_number: str(c.cardNumber),
      loyalty_system_id: str(c.loyaltySystemId),
    })),
  };
  const addTaxAmounts = (
    taxes: readonly { amount: string; index: number | null }[] | undefined,
    level: TaxLevel,
    stayIndex: number | null,
    servicePosition: number | null,
  ) => {
    for (const t of taxes ?? []) {
      rows.taxAmounts.push({
        ...key,
        position: rows.taxAmounts.length,
        level,
        stay_index: stayIndex,
        service_position: servicePosition,
        tax_index: t.index,
        name: t.index === null ? null : (taxNames.get(t.index) ?? null),
        amount: t.amount,
      });
    }
  };
  const addService = (s: Service, stayIndex: number | null) => {
    // Only room stay services carry kind, meal plan and inclusive.
    const stayService = stayIndex === null ? null : (s as RoomStayService);
    addTaxAmounts(s.total?.taxes, 'service', stayIndex, rows.services.length);
    rows.services.push({
      ...key,
      position: rows.services.length,
      stay_index: stayIndex,
      service_id: str(s.id),
      name: str(s.name),
      description: str(s.description),
      kind: str(stayService?.kind),
      meal_plan_code: str(stayService?.mealPlanCode),
      inclusive: stayService?.inclusive ?? null,
      price_before_tax: money(s.total?.priceBeforeTax),
      price_after_tax: money(s.total?.priceAfterTax),
      tax_amount: money(s.total?.taxAmount),
      raw: JSON.stringify(s),
    });
  };
  const addDiscounts = (t: Total | null, stayIndex: number | null) => {
    for (const d of t?.discounts ?? []) {
      rows.discounts.push({
        ...key,
        position: rows.discounts.length,
        stay_index: stayIndex,
        discount_type: str(d.discountType),
        name: str(d.name),
        percent: money(d.percent),
        amount: money(d.amount),
      });
    }
  };
  addTaxAmounts(b.total?.taxes, 'booking', null, null);
  for (const s of b.services ?? []) addService(s, null);
  addDiscounts(b.total, null);
  b.roomStays.forEach((stay, i) => {
    const ratePlan = stay.ratePlans?.[0];
    const early = stay.extraStayCharges?.earlyArrival;
    const late = stay.extraStayCharges?.lateDeparture;
    addTaxAmounts(stay.total.taxes, 'room_stay', i, null);
    addTaxAmounts(early?.total?.taxes, 'early_arrival', i, null);
    addTaxAmounts(late?.total?.taxes, 'late_departure', i, null);
    stay.ratePlans.forEach((r, position) =>
      rows.ratePlans.push({ ...key, stay_index: i, position, rate_plan_id: str(r.id), rate_plan_name: str(r.name) }),
    );
    rows.roomStays.push({
      ...key,
      stay_index: i,
      provider_index: stay.index ?? null,
      arrival_at: stay.stayDates.arrivalDateTime,
      departure_at: stay.stayDates.departureDateTime,
      room_type_id: str(stay.roomType?.id),
      room_type_name: str(stay.roomType?.name),
      rate_plan_id: str(ratePlan?.id),
      rate_plan_name: str(ratePlan?.name),
      adult_count: stay.guestCount?.adultCount ?? null,
      child_ages: stay.guestCount?.childAges ?? [],
      price_before_tax: money(stay.total.priceBeforeTax),
      price_after_tax: money(stay.total.priceAfterTax),
      tax_amount: money(stay.total.taxAmount),
      early_arrival_at: str(early?.overriddenDateTime),
      early_arrival_price_before_tax: money(early?.total?.priceBeforeTax),
      early_arrival_price_after_tax: money(early?.total?.priceAfterTax),
      late_departure_at: str(late?.overriddenDateTime),
      late_departure_price_before_tax: money(late?.total?.priceBeforeTax),
      late_departure_price_after_tax: money(late?.total?.priceAfterTax),
    });
    stay.dailyRates.forEach((r, position) =>
      rows.dailyRates.push({
        ...key,
        stay_index: i,
        position,
        stay_date: r.date,
        rate_plan_id: str(r.ratePlanId),
        price_before_tax: money(r.priceBeforeTax),
      }),
    );
    (stay.guests ?? []).forEach((g, position) =>
      rows.guests.push({ ...key, stay_index: i, position, first_name: str(g.firstName), last_name: str(g.lastName) }),
    );
    for (const s of stay.services ?? []) addService(s, i);
    addDiscounts(stay.total, i);
  });
  return rows;
}

const childTables = [
  'booking_room_stays',
  'booking_daily_rates',
  'booking_services',
  'booking_guests',
  'booking_taxes',
  'booking_discounts',
  'booking_tax_amounts',
  'booking_room_stay_rate_plans',
  'booking_loyalty_cards',
] as const;

/**
 * Writes one booking version: the header only if it is not older than the stored one
 * (version guard), then its children replaced whole. `written` is false when the stored
 * version was newer and nothing was written.
 *
 * `alongside`: a statement (e.g. completing the queue row) run after the header, as part of
 * the children's statement when there is one (one round trip less per booking on a full
 * sync), on its own otherwise. `alongsideRows`: how many rows it returned (0 without it).
 */
export async function saveBookingVersion(
  trx: Transaction<Database>,
  rows: BookingRows,
  alongside?: RawBuilder<unknown>,
): Promise<{ written: boolean; alongsideRows: number }> {
  const { property_id, number } = rows.booking;
  // Few statements instead of one per table: on a full sync the round trips to the database,
  // not the SQL, dominate the cost of a booking.
  const header = await trx
    .insertInto('bookings')
    .values(rows.booking)
    .onConflict((oc) =>
      oc
        .columns(['property_id', 'number'])
        .doUpdateSet((eb) => {
          const set: Record<string, unknown> = {};
          for (const col of Object.keys(rows.booking)) {
            if (col !== 'property_id' && col !== 'number') set[col] = eb.ref(`excluded.${col}` as never);
          }
          return set;
        })
        .where('bookings.modified_at', '<=', (eb) => eb.ref('excluded.modified_at')),
    )
    // xmax = 0 on the returned row means it was inserted: a new booking has no children to delete.
    .returning(sql<boolean>`(xmax = 0)`.as('inserted'))
    .executeTakeFirst();
  const alone = async () => (alongside ? (await alongside.execute(trx)).rows.length : 0);
  // 1. The header, under the version guard: no row means the stored version is newer.
  if (!header) return { written: false, alongsideRows: await alone() };
  if (!header.inserted) {
    // An update: the old version's children go, in one statement.
    await sql`
      WITH ${sql.join(
        childTables.map((table, i) => sql`${sql.id(`d${i}`)} AS (DELETE FROM ${sql.table(table)} WHERE property_id = ${property_id} AND number = ${number})`),
      )}
      SELECT 1`.execute(trx);
  }
  // 2. The children of this version.
  const inserts = [
    rows.roomStays.length ? trx.insertInto('booking_room_stays').values(rows.roomStays) : null,
    rows.dailyRates.length ? trx.insertInto('booking_daily_rates').values(rows.dailyRates) : null,
    rows.services.length ? trx.insertInto('booking_services').values(rows.services) : null,
    rows.guests.length ? trx.insertInto('booking_guests').values(rows.guests) : null,
    rows.taxes.length ? trx.insertInto('booking_taxes').values(rows.taxes) : null,
    rows.discounts.length ? trx.insertInto('booking_discounts').values(rows.discounts) : null,
    rows.taxAmounts.length ? trx.insertInto('booking_tax_amounts').values(rows.taxAmounts) : null,
    rows.ratePlans.length ? trx.insertInto('booking_room_stay_rate_plans').values(rows.ratePlans) : null,
    rows.loyaltyCards.length ? trx.insertInto('booking_loyalty_cards').values(rows.loyaltyCards) : null,
  ].filter((q) => q !== null);
  if (inserts.length === 0) return { written: true, alongsideRows: await alone() };
  const ctes = inserts.map((q, i) => sql`${sql.id(`i${i}`)} AS (${q})`);
  const last = alongside ? sql`${sql.join(ctes)}, alongside AS (${alongside}) SELECT count(*)::int AS n FROM alongside` : sql`${sql.join(ctes)} SELECT 0 AS n`;
  const r = await sql<{ n: number }>`WITH ${last}`.execute(trx);
  return { written: true, alongsideRows: r.rows[0]!.n };
}

/** Latest mirrored modification of a property (bookings or summaries), for --recover. */
export async function maxMirroredModification(db: Executor, propertyId: string): Promise<Date | null> {
  const r = await sql<{ m: Date | null }>`
    SELECT GREATEST(
      (SELECT max(modified_at) FROM bookings WHERE property_id = ${propertyId}),
      (SELECT max(modified_at) FROM booking_summaries WHERE property_id = ${propertyId})) AS m`.execute(db);
  return r.rows[0]?.m ?? null;
}

/** True when the mirror holds rows of the property (used to detect a vanished cursor). */
export async function hasMirroredRows(db: Executor, propertyId: string): Promise<boolean> {
  const r = await sql<{ e: boolean }>`
    SELECT EXISTS (SELECT 1 FROM booking_summaries WHERE property_id = ${propertyId})
        OR EXISTS (SELECT 1 FROM bookings WHERE property_id = ${propertyId}) AS e`.execute(db);
  return r.rows[0]?.e === true;
}
