/**
 * Bookings as rows: the details of a booking (header and children) and a summary of the
 * booking list. Pure: no I/O. The sync writes what these give, and the replay (src/replay)
 * derives the same rows again from the payloads the mirror keeps.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../provider/json.js';
import type { Booking, BookingSummary } from '../provider/schemas/bookings.js';
import type { BookingRows, SummaryRow } from '../store/schema.js';
import type { TaxLevel } from '../store/states.js';
import { keptPayload } from './personal-data.js';
import { nightlyGross } from './room-revenue.js';

// ------------------------------------------------------------------ booking details

type Num = string | null | undefined;
type Total = NonNullable<Booking['total']>;
type RoomStayService = Booking['roomStays'][number]['services'][number];
type Service = Booking['services'][number] | RoomStayService;
/** Money arrives as its exact text (schema-primitives `num`) and goes to numeric columns as text. */
const money = (v: Num): string | null => v ?? null;
/** Text as sent: an empty string is a value the provider gave, not an absent one. */
const str = (v: string | null | undefined): string | null => v ?? null;

/**
 * The content hash of a booking version: of the payload as stored (`raw`, after the
 * personal-data policy and any erasure), so that a rebuild from raw, and the same version
 * fetched again after an erasure, find the same hash (booking_versions.content_hash).
 */
export function contentHashOf(raw: unknown): string {
  return createHash('sha256').update(canonicalJson(raw)).digest('hex');
}

/**
 * Maps a parsed booking to its relational rows. `received` is the response as received; what
 * is stored of it (`raw`) and of the loyalty card numbers follows the personal-data policy
 * (personal-data.ts), and the content hash is that of what is stored, so that a rebuild from
 * it finds the same. Pure: no I/O.
 */
export function bookingToRows(propertyId: string, b: Booking, received: unknown, fetchedAt: Date, personalData: boolean): BookingRows {
  const raw = keptPayload(received, personalData);
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
    contentHash: contentHashOf(raw),
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
      card_number: personalData ? str(c.cardNumber) : null,
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
    stay.ratePlans.forEach((r, position) => rows.ratePlans.push({ ...key, stay_index: i, position, rate_plan_id: str(r.id), rate_plan_name: str(r.name) }));
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
    const nets = stay.dailyRates.map((r) => money(r.priceBeforeTax));
    const gross = nightlyGross(
      { price_before_tax: money(stay.total.priceBeforeTax), price_after_tax: money(stay.total.priceAfterTax), tax_amount: money(stay.total.taxAmount) },
      nets,
    );
    stay.dailyRates.forEach((r, position) =>
      rows.dailyRates.push({
        ...key,
        stay_index: i,
        position,
        stay_date: r.date,
        rate_plan_id: str(r.ratePlanId),
        price_before_tax: nets[position]!,
        gross_amount: gross[position]!,
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

// ------------------------------------------------------------------ booking summaries

/** Stays arriving within this many days (or yesterday) are fetched first. */
const SOON_DAYS = 30;

/**
 * The priority of a booking's detail fetch: 1 for a stay arriving soon (most useful first
 * during a backfill), 2 for everything else (0, a change found by polling a caught-up property,
 * is the sync's to give: FRESH_CHANGE_PRIORITY in src/sync/streams/booking-summaries.ts).
 *
 * Booking numbers look like `YYYYMMDD-propertyId-id`, where the date is the arrival date:
 * the only hint of the stay a summary gives, and enough to fetch soon-arriving stays first.
 */
export function priorityOf(number: string, now: number): number {
  const m = /^(\d{4})(\d{2})(\d{2})-/.exec(number);
  if (!m) return 2;
  const arrival = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  const today = Math.floor(now / 86_400_000) * 86_400_000;
  const days = (arrival - today) / 86_400_000;
  return days >= -1 && days <= SOON_DAYS ? 1 : 2;
}

/** A validated summary (and the summary as received) as its row. Pure; shared with the replay (src/replay). */
export function summaryToRow(propertyId: string, s: BookingSummary, raw: unknown, now: number, personalData: boolean): SummaryRow {
  return {
    propertyId,
    number: s.number,
    status: s.status,
    createdAt: s.createdDateTime ? new Date(s.createdDateTime) : null,
    modifiedAt: s.modifiedDateTime ? new Date(s.modifiedDateTime) : null,
    // A Date keeps milliseconds only: the columns get the text, every digit the provider sent.
    createdText: s.createdDateTime,
    modifiedText: s.modifiedDateTime,
    priority: priorityOf(s.number, now),
    // As every guest payload: what the personal-data policy keeps (personal-data.ts).
    raw: keptPayload(raw, personalData),
  };
}
