/**
 * What the mirror must hold for a booking details payload and a booking summary: every typed
 * column of every row, derived from the payload by the suite (not by the daemon's mapping),
 * compared with the rows in PostgreSQL through Checks.
 */
import type pg from 'pg';
import { keptPayload } from '../../src/mapping/personal-data.js';
import { parseJsonLossless } from '../../src/provider/json.js';
import { byKey, calendarDate, instant, MISSING, rowsOf, textOf, wallClock, wallClockKey, type Checks, type Row } from './checks.js';

type Any = any;

const list = (v: unknown): Any[] => (Array.isArray(v) ? v : []);

/** Every row of the booking tables of one property, keyed as the checks look them up. */
export interface BookingTables {
  bookings: Map<string, Row>;
  roomStays: Map<string, Row>;
  dailyRates: Map<string, Row>;
  services: Map<string, Row>;
  guests: Map<string, Row>;
  taxes: Map<string, Row>;
  discounts: Map<string, Row>;
  ratePlans: Map<string, Row>;
  loyaltyCards: Map<string, Row>;
  taxAmounts: Map<string, Row[]>;
}

export async function readBookingTables(client: pg.Client, propertyId: string): Promise<BookingTables> {
  const q = (table: string) => rowsOf(client, `SELECT * FROM ${table} WHERE property_id = $1`, [propertyId]);
  const k =
    (...cols: string[]) =>
    (r: Row) =>
      cols.map((c) => textOf(r[c])).join('/');
  const taxAmounts = new Map<string, Row[]>();
  for (const r of await q('booking_tax_amounts')) {
    const n = textOf(r.number)!;
    taxAmounts.set(n, [...(taxAmounts.get(n) ?? []), r]);
  }
  return {
    bookings: byKey(await q('bookings'), k('number')),
    roomStays: byKey(await q('booking_room_stays'), k('number', 'stay_index')),
    dailyRates: byKey(await q('booking_daily_rates'), k('number', 'stay_index', 'position')),
    services: byKey(await q('booking_services'), k('number', 'position')),
    guests: byKey(await q('booking_guests'), k('number', 'stay_index', 'position')),
    taxes: byKey(await q('booking_taxes'), k('number', 'position')),
    discounts: byKey(await q('booking_discounts'), k('number', 'position')),
    ratePlans: byKey(await q('booking_room_stay_rate_plans'), k('number', 'stay_index', 'position')),
    loyaltyCards: byKey(await q('booking_loyalty_cards'), k('number', 'position')),
    taxAmounts,
  };
}

/** The keys each child table must have for these bookings (and no other). */
export interface ExpectedKeys {
  bookings: string[];
  roomStays: string[];
  dailyRates: string[];
  services: string[];
  guests: string[];
  taxes: string[];
  discounts: string[];
  ratePlans: string[];
  loyaltyCards: string[];
}

export const emptyKeys = (): ExpectedKeys => ({
  bookings: [],
  roomStays: [],
  dailyRates: [],
  services: [],
  guests: [],
  taxes: [],
  discounts: [],
  ratePlans: [],
  loyaltyCards: [],
});

/**
 * Adds the checks of one booking details response (`body` as sent, parsed losslessly) and the
 * keys its rows must have. Missing rows are reported by `checkRowSets`.
 */
export function checkBooking(c: Checks, t: BookingTables, body: string, response: Any, keys: ExpectedKeys): void {
  const b = response.booking;
  const n: string = b.number;
  keys.bookings.push(n);
  const row = t.bookings.get(n);
  const at = (what: string) => `booking ${JSON.stringify(n)} ${what}`;
  const stays = list(b.roomStays);
  const col = (r: Row | undefined, name: string) => (r === undefined ? MISSING : r[name]);

  // bookings
  const arrivals = stays.map((s) => wallClock(s.stayDates.arrivalDateTime)!).sort((x, y) => wallClockKey(x).localeCompare(wallClockKey(y)));
  const departures = stays.map((s) => wallClock(s.stayDates.departureDateTime)!).sort((x, y) => wallClockKey(x).localeCompare(wallClockKey(y)));
  const methods = list(b.guaranteeInfo?.guarantees).map((g) => g.paymentMethod);
  const header: [string, Parameters<Checks['add']>[1], unknown][] = [
    ['status', 'text', b.status],
    ['created_at', 'instant', instant(b.createdDateTime)],
    ['modified_at', 'instant', instant(b.modifiedDateTime)],
    ['currency_code', 'text', b.currencyCode],
    ['arrival_at', 'local', arrivals[0] ?? null],
    ['departure_at', 'local', departures[departures.length - 1] ?? null],
    ['room_stay_count', 'int', String(stays.length)],
    ['price_before_tax', 'numeric', b.total?.priceBeforeTax],
    ['price_after_tax', 'numeric', b.total?.priceAfterTax],
    ['tax_amount', 'numeric', b.total?.taxAmount],
    ['total_prepaid', 'numeric', b.guaranteeInfo?.totalPrepaid],
    ['cancelled_at', 'instant', instant(b.cancellation?.cancelledDateTime)],
    ['cancellation_penalty', 'numeric', b.cancellation?.penaltyAmount],
    ['source_type', 'text', b.source?.type],
    ['source_code', 'text', b.source?.code],
    ['source_url', 'text', b.source?.sourceUrl],
    ['customer_first_name', 'text', b.customer?.firstName],
    ['customer_last_name', 'text', b.customer?.lastName],
    ['payment_method', 'text', methods[0]],
    ['payment_methods', 'json', methods.length > 0 ? methods : null],
    // As the personal-data policy keeps it, personal data off (the default): persons by allow-list, no card numbers.
    ['raw', 'json', JSON.stringify(keptPayload(parseJsonLossless(body), false))],
  ];
  for (const [name, kind, expected] of header) c.add(at(name), kind, col(row, name), expected);

  // taxes and the name each tax index gives its amounts (the first tax with that index)
  const taxNames = new Map<string, unknown>();
  list(b.taxes).forEach((tax, position) => {
    const key = `${n}/${position}`;
    keys.taxes.push(key);
    const r = t.taxes.get(key);
    c.add(at(`taxes[${position}].tax_index`), 'int', col(r, 'tax_index'), tax.index);
    c.add(at(`taxes[${position}].name`), 'text', col(r, 'name'), tax.name);
    c.add(at(`taxes[${position}].description`), 'text', col(r, 'description'), tax.description);
    const index = tax.index?.rawJSON;
    if (index !== undefined && !taxNames.has(index)) taxNames.set(index, tax.name ?? null);
  });

  // tax amounts at every level, as a multiset (their order among levels is the mapping's own)
  const wantAmounts: string[] = [];
  const amounts = (taxes: unknown, level: string, stay: number | null, service: number | null) => {
    for (const x of list(taxes)) {
      const name = taxNames.get(x.index.rawJSON) ?? null;
      wantAmounts.push(JSON.stringify([level, stay, service, x.index.rawJSON, name, x.amount.rawJSON]));
    }
  };

  // services: the booking's first, then each room stay's, numbered across the booking
  let servicePosition = 0;
  const service = (s: Any, stay: number | null) => {
    const key = `${n}/${servicePosition}`;
    keys.services.push(key);
    const r = t.services.get(key);
    const w = (x: string) => at(`services[${servicePosition}].${x}`);
    c.add(w('stay_index'), 'int', col(r, 'stay_index'), stay === null ? null : String(stay));
    c.add(w('service_id'), 'text', col(r, 'service_id'), s.id);
    c.add(w('name'), 'text', col(r, 'name'), s.name);
    c.add(w('description'), 'text', col(r, 'description'), s.description);
    c.add(w('kind'), 'text', col(r, 'kind'), stay === null ? null : s.kind);
    c.add(w('meal_plan_code'), 'text', col(r, 'meal_plan_code'), stay === null ? null : s.mealPlanCode);
    c.add(w('inclusive'), 'bool', col(r, 'inclusive'), stay === null ? null : s.inclusive);
    c.add(w('price_before_tax'), 'numeric', col(r, 'price_before_tax'), s.total?.priceBeforeTax);
    c.add(w('price_after_tax'), 'numeric', col(r, 'price_after_tax'), s.total?.priceAfterTax);
    c.add(w('tax_amount'), 'numeric', col(r, 'tax_amount'), s.total?.taxAmount);
    c.add(w('raw'), 'json', col(r, 'raw'), JSON.stringify(s));
    amounts(s.total?.taxes, 'service', stay, servicePosition);
    servicePosition += 1;
  };

  // discounts: the booking total's first, then each room stay's
  let discountPosition = 0;
  const discounts = (total: Any, stay: number | null) => {
    for (const d of list(total?.discounts)) {
      const key = `${n}/${discountPosition}`;
      keys.discounts.push(key);
      const r = t.discounts.get(key);
      const w = (x: string) => at(`discounts[${discountPosition}].${x}`);
      c.add(w('stay_index'), 'int', col(r, 'stay_index'), stay === null ? null : String(stay));
      c.add(w('discount_type'), 'text', col(r, 'discount_type'), d.discountType);
      c.add(w('name'), 'text', col(r, 'name'), d.name);
      c.add(w('percent'), 'numeric', col(r, 'percent'), d.percent);
      c.add(w('amount'), 'numeric', col(r, 'amount'), d.amount);
      discountPosition += 1;
    }
  };

  amounts(b.total?.taxes, 'booking', null, null);
  for (const s of list(b.services)) service(s, null);
  discounts(b.total, null);

  stays.forEach((s, i) => {
    const key = `${n}/${i}`;
    keys.roomStays.push(key);
    const r = t.roomStays.get(key);
    const w = (x: string) => at(`roomStays[${i}].${x}`);
    const early = s.extraStayCharges?.earlyArrival;
    const late = s.extraStayCharges?.lateDeparture;
    const plans = list(s.ratePlans);
    c.add(w('provider_index'), 'int', col(r, 'provider_index'), s.index);
    c.add(w('arrival_at'), 'local', col(r, 'arrival_at'), wallClock(s.stayDates.arrivalDateTime));
    c.add(w('departure_at'), 'local', col(r, 'departure_at'), wallClock(s.stayDates.departureDateTime));
    c.add(w('room_type_id'), 'text', col(r, 'room_type_id'), s.roomType?.id);
    c.add(w('room_type_name'), 'text', col(r, 'room_type_name'), s.roomType?.name);
    c.add(w('rate_plan_id'), 'text', col(r, 'rate_plan_id'), plans[0]?.id);
    c.add(w('rate_plan_name'), 'text', col(r, 'rate_plan_name'), plans[0]?.name);
    c.add(w('adult_count'), 'int', col(r, 'adult_count'), s.guestCount?.adultCount);
    c.add(w('child_ages'), 'json', col(r, 'child_ages'), JSON.stringify(list(s.guestCount?.childAges)));
    c.add(w('price_before_tax'), 'numeric', col(r, 'price_before_tax'), s.total?.priceBeforeTax);
    c.add(w('price_after_tax'), 'numeric', col(r, 'price_after_tax'), s.total?.priceAfterTax);
    c.add(w('tax_amount'), 'numeric', col(r, 'tax_amount'), s.total?.taxAmount);
    c.add(w('early_arrival_at'), 'local', col(r, 'early_arrival_at'), wallClock(early?.overriddenDateTime));
    c.add(w('early_arrival_price_before_tax'), 'numeric', col(r, 'early_arrival_price_before_tax'), early?.total?.priceBeforeTax);
    c.add(w('early_arrival_price_after_tax'), 'numeric', col(r, 'early_arrival_price_after_tax'), early?.total?.priceAfterTax);
    c.add(w('late_departure_at'), 'local', col(r, 'late_departure_at'), wallClock(late?.overriddenDateTime));
    c.add(w('late_departure_price_before_tax'), 'numeric', col(r, 'late_departure_price_before_tax'), late?.total?.priceBeforeTax);
    c.add(w('late_departure_price_after_tax'), 'numeric', col(r, 'late_departure_price_after_tax'), late?.total?.priceAfterTax);
    amounts(s.total?.taxes, 'room_stay', i, null);
    amounts(early?.total?.taxes, 'early_arrival', i, null);
    amounts(late?.total?.taxes, 'late_departure', i, null);

    plans.forEach((p, position) => {
      const pk = `${n}/${i}/${position}`;
      keys.ratePlans.push(pk);
      const pr = t.ratePlans.get(pk);
      c.add(at(`roomStays[${i}].ratePlans[${position}].rate_plan_id`), 'text', col(pr, 'rate_plan_id'), p.id);
      c.add(at(`roomStays[${i}].ratePlans[${position}].rate_plan_name`), 'text', col(pr, 'rate_plan_name'), p.name);
    });
    list(s.dailyRates).forEach((d, position) => {
      const dk = `${n}/${i}/${position}`;
      keys.dailyRates.push(dk);
      const dr = t.dailyRates.get(dk);
      const dw = (x: string) => at(`roomStays[${i}].dailyRates[${position}].${x}`);
      c.add(dw('stay_date'), 'date', col(dr, 'stay_date'), calendarDate(d.date));
      c.add(dw('rate_plan_id'), 'text', col(dr, 'rate_plan_id'), d.ratePlanId);
      c.add(dw('price_before_tax'), 'numeric', col(dr, 'price_before_tax'), d.priceBeforeTax);
    });
    list(s.guests).forEach((g, position) => {
      const gk = `${n}/${i}/${position}`;
      keys.guests.push(gk);
      const gr = t.guests.get(gk);
      c.add(at(`roomStays[${i}].guests[${position}].first_name`), 'text', col(gr, 'first_name'), g.firstName);
      c.add(at(`roomStays[${i}].guests[${position}].last_name`), 'text', col(gr, 'last_name'), g.lastName);
    });
    for (const x of list(s.services)) service(x, i);
    discounts(s.total, i);
  });

  list(b.guaranteeInfo?.loyalty?.cards).forEach((card, position) => {
    const key = `${n}/${position}`;
    keys.loyaltyCards.push(key);
    const r = t.loyaltyCards.get(key);
    // A card number is personal data: stored only with pms.personalData.
    c.add(at(`loyaltyCards[${position}].card_number`), 'text', col(r, 'card_number'), null);
    c.add(at(`loyaltyCards[${position}].loyalty_system_id`), 'text', col(r, 'loyalty_system_id'), card.loyaltySystemId);
  });

  // Tax amounts: the same multiset, amounts compared as numbers with their scale.
  const got = (t.taxAmounts.get(n) ?? []).map((r) => [r.level, r.stay_index, r.service_position, r.tax_index, r.name, r.amount]);
  const want = wantAmounts.map((x) => JSON.parse(x) as unknown[]);
  const sortKey = (x: unknown[]) =>
    JSON.stringify(
      x
        .slice(0, 5)
        .map((v) => (v === null || v === undefined ? null : ((v as { rawJSON?: string }).rawJSON ?? (typeof v === 'string' ? v : JSON.stringify(v))))),
    );
  const gotSorted = [...got].sort((x, y) => sortKey(x).localeCompare(sortKey(y)));
  const wantSorted = [...want].sort((x, y) => sortKey(x).localeCompare(sortKey(y)));
  if (gotSorted.length !== wantSorted.length) c.problems.push(`${at('tax amounts')}: ${gotSorted.length} rows, the payload has ${wantSorted.length}`);
  else {
    gotSorted.forEach((g, i) => {
      const w = wantSorted[i]!;
      if (sortKey(g) !== sortKey(w)) c.problems.push(`${at('tax amounts')}: mirrored ${sortKey(g)}, payload ${sortKey(w)}`);
      else c.add(at(`tax amount ${sortKey(w)}.amount`), 'numeric', g[5], w[5]);
    });
  }
}

/** Reports rows missing from, or extra in, each booking table. */
export function checkRowSets(c: Checks, t: BookingTables, keys: ExpectedKeys): void {
  c.rowsFor('bookings', t.bookings, keys.bookings);
  c.rowsFor('booking_room_stays', t.roomStays, keys.roomStays);
  c.rowsFor('booking_daily_rates', t.dailyRates, keys.dailyRates);
  c.rowsFor('booking_services', t.services, keys.services);
  c.rowsFor('booking_guests', t.guests, keys.guests);
  c.rowsFor('booking_taxes', t.taxes, keys.taxes);
  c.rowsFor('booking_discounts', t.discounts, keys.discounts);
  c.rowsFor('booking_room_stay_rate_plans', t.ratePlans, keys.ratePlans);
  c.rowsFor('booking_loyalty_cards', t.loyaltyCards, keys.loyaltyCards);
}

/** Adds the checks of one booking summary (as sent) against its booking_summaries row. */
export function checkSummary(c: Checks, rows: Map<string, Row>, summary: Any): void {
  const n: string = summary.number;
  const r = rows.get(n);
  const at = (what: string) => `summary ${JSON.stringify(n)} ${what}`;
  const col = (name: string) => (r === undefined ? MISSING : r[name]);
  c.add(at('status'), 'text', col('status'), summary.status);
  c.add(at('created_at'), 'instant', col('created_at'), instant(summary.createdDateTime));
  c.add(at('modified_at'), 'instant', col('modified_at'), instant(summary.modifiedDateTime));
  c.add(at('raw'), 'json', col('raw'), JSON.stringify(summary));
}
