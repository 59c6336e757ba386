/**
 * Every payload the OpenAPI document allows passes the daemon's parsers: bodies generated from
 * the document (many per response schema, every generation mode) are parsed exactly as the
 * client parses them (lossless JSON, then the tolerant schemas), and the numbers and dates
 * the parsers hand on are the ones in the body. The database side of the same payloads is
 * checked by bookings.test.ts and content.test.ts; this file names the failing field at once.
 */
import { describe, expect, it } from 'vitest';
import { isJsonNumber, parseJsonLossless } from '../../src/provider/json.js';
import {
  cancellationRulesResponseSchema,
  extraStayRulesResponseSchema,
  mealPlansSchema,
  parseCancellationRule,
  parseContentProperty,
  parseExtraStayRule,
  parseWith,
  paymentMethodsSchema,
  propertyAmenityTypesSchema,
  propertyKindsSchema,
  propertyPageSchema,
  roomAmenityCategoriesSchema,
  roomTypeCategoriesSchema,
} from '../../src/provider/schemas/content.js';
import { parseReservationResponse } from '../../src/provider/schemas/pms.js';
import { parseBookingSummary, parseBookingsPage, parseGetBookingResponse, type ParseResult } from '../../src/provider/schemas/bookings.js';
import { calendarDate, isReadableDateTime, wallClock } from './checks.js';
import { generate, generateMany, withValue, type Operation, type Payload } from './generator.js';

const PER_SCHEMA = 120;

const all = <T>(results: ParseResult<T>[]): ParseResult<T[]> => {
  const bad = results.find((r) => !r.ok);
  return bad && !bad.ok ? bad : { ok: true, value: results.map((r) => (r as { value: T }).value) };
};
const items = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** How each mirrored response is parsed, as the sync code parses it (envelopes, then each item). */
const parsers: Record<Operation, (body: unknown) => ParseResult<unknown>> = {
  bookingsPage: (b) => {
    const page = parseBookingsPage(b);
    return page.ok ? all(page.value.bookingSummaries.map(parseBookingSummary)) : page;
  },
  booking: parseGetBookingResponse,
  propertyPage: (b) => {
    const page = parseWith(propertyPageSchema, b, 'page');
    return page.ok ? all(page.value.properties.map(parseContentProperty)) : page;
  },
  property: parseContentProperty,
  cancellationRules: (b) => {
    const env = parseWith(cancellationRulesResponseSchema, b, 'cancellationRules');
    return env.ok ? all(items(env.value.cancellationRules).map(parseCancellationRule)) : env;
  },
  extraStayRules: (b) => {
    const env = parseWith(extraStayRulesResponseSchema, b, 'extraStayRules');
    return env.ok ? all(items(env.value.extraStayRules).map(parseExtraStayRule)) : env;
  },
  mealPlans: (b) => parseWith(mealPlansSchema, b, 'mealPlans'),
  roomTypeCategories: (b) => parseWith(roomTypeCategoriesSchema, b, 'roomTypeCategories'),
  roomAmenityCategories: (b) => parseWith(roomAmenityCategoriesSchema, b, 'roomAmenityCategories'),
  paymentMethods: (b) => parseWith(paymentMethodsSchema, b, 'paymentMethods'),
  propertyAmenityTypes: (b) => parseWith(propertyAmenityTypesSchema, b, 'propertyAmenityTypes'),
  propertyKinds: (b) => parseWith(propertyKindsSchema, b, 'propertyKinds'),
  // A reservation is fetched by its number, which the sync hands to the parser as its key.
  pmsReservation: (b) => parseReservationResponse(b, 'R-requested'),
};

/** The payloads of an operation as generated. */
const generated = (op: Operation): Payload[] => generateMany(op, PER_SCHEMA, 1_000 * (Object.keys(parsers).indexOf(op) + 1));

/**
 * The payloads of an operation. The document lets a PMS reservation answer leave the
 * reservation out; such an answer has nothing to mirror (it is refused, see below), so each one
 * is given a reservation here. Everything else is as generated: the reservation's number
 * (null, absent and empty included) and its date-times (some of them other text).
 */
function payloads(op: Operation): Payload[] {
  const out = generated(op);
  if (op !== 'pmsReservation') return out;
  return out.map((p) => (p.value.reservation ? p : withValue(p, { ...p.value, reservation: generate('#PmsApi_Reservation', p.seed, p.mode).value })));
}

describe('conformance with the OpenAPI document: the parsers accept every spec-valid payload', () => {
  for (const op of Object.keys(parsers) as Operation[]) {
    it(`${op}: ${PER_SCHEMA} generated payloads parse`, () => {
      const failures: string[] = [];
      for (const p of payloads(op)) {
        const r = parsers[op](parseJsonLossless(p.body));
        if (!r.ok) failures.push(`seed ${p.seed} (${p.mode.name}): ${r.reason}\n  ${p.body.slice(0, 400)}`);
      }
      expect(failures).toEqual([]);
    });
  }

  it('PMS reservations: every one is kept under the number it was fetched by, with the date-times that can be read', () => {
    const problems: string[] = [];
    const seen = { parsed: 0, numberNull: 0, numberAbsent: 0, numberEmpty: 0, modifyReadable: 0, modifyOtherText: 0, stayTimeOtherText: 0 };
    /** What the parser should give for a date-time text: the wall clock as written when the suite reads it, else null. */
    const readable = (v: unknown) => (typeof v === 'string' && isReadableDateTime(v) ? wallClock(v)!.replace(' ', 'T') : null);
    const otherText = (v: unknown) => typeof v === 'string' && !isReadableDateTime(v);
    for (const p of payloads('pmsReservation')) {
      const requested = `R-${p.seed}`;
      const r = parseReservationResponse(parseJsonLossless(p.body), requested);
      if (!r.ok) {
        problems.push(`seed ${p.seed}: refused: ${r.reason}`);
        continue;
      }
      seen.parsed += 1;
      const sent = p.value.reservation;
      if (sent.number === null) seen.numberNull += 1;
      if (!('number' in sent)) seen.numberAbsent += 1;
      if (sent.number === '') seen.numberEmpty += 1;
      if (r.value.number !== requested) problems.push(`seed ${p.seed}: keyed ${r.value.number}, fetched by ${requested}`);
      const modify = readable(sent.modifyDateTime);
      if (modify !== null) seen.modifyReadable += 1;
      if (otherText(sent.modifyDateTime)) seen.modifyOtherText += 1;
      // The instant keeps the wall clock as written, followed by its zone (UTC when none).
      const parsedModify = r.value.modifyDateTime;
      if (modify === null ? parsedModify !== null : !parsedModify?.startsWith(modify))
        problems.push(`seed ${p.seed} modifyDateTime: sent ${JSON.stringify(sent.modifyDateTime)}, parsed ${JSON.stringify(parsedModify)}`);
      r.value.roomStays.forEach((stay, i) => {
        for (const key of ['checkInDateTime', 'checkOutDateTime', 'actualCheckInDateTime', 'actualCheckOutDateTime'] as const) {
          const text = sent.roomStays[i][key];
          if (otherText(text)) seen.stayTimeOtherText += 1;
          if (stay[key] !== readable(text))
            problems.push(`seed ${p.seed} roomStays[${i}].${key}: sent ${JSON.stringify(text)}, parsed ${JSON.stringify(stay[key])}`);
        }
      });
    }
    expect(problems).toEqual([]);
    // None refused, and the generated answers carry every case this test is about.
    expect(seen.parsed).toBe(PER_SCHEMA);
    for (const [what, count] of Object.entries(seen)) expect(count, what).toBeGreaterThan(0);
  });

  it('PMS reservations: an answer without a reservation is refused, saying so', () => {
    const without = generated('pmsReservation').filter((p) => p.value.reservation === undefined);
    expect(without.length).toBeGreaterThan(0);
    const reasons = new Set(without.map((p) => parseReservationResponse(parseJsonLossless(p.body), `R-${p.seed}`)).map((r) => (r.ok ? 'parsed' : r.reason)));
    expect([...reasons]).toEqual(['response.reservation: absent or null: the answer holds no reservation to mirror']);
  });

  it('booking details: the parsed numbers and dates are the ones in the body', () => {
    const problems: string[] = [];
    for (const p of payloads('booking')) {
      const r = parseGetBookingResponse(parseJsonLossless(p.body));
      if (!r.ok) continue; // reported above
      const sent = p.value.booking;
      const got = r.value;
      const pairs: [string, unknown, unknown][] = [
        ['total.priceAfterTax', got.total?.priceAfterTax, sent.total?.priceAfterTax],
        ['total.priceBeforeTax', got.total?.priceBeforeTax, sent.total?.priceBeforeTax],
        ['guaranteeInfo.totalPrepaid', got.guaranteeInfo?.totalPrepaid, sent.guaranteeInfo?.totalPrepaid],
      ];
      got.roomStays.forEach((s, i) => {
        const x = sent.roomStays[i];
        pairs.push([`roomStays[${i}].index`, s.index, x.index]);
        pairs.push([`roomStays[${i}].total.priceAfterTax`, s.total.priceAfterTax, x.total.priceAfterTax]);
        pairs.push([`roomStays[${i}].arrival`, s.stayDates.arrivalDateTime.replace('T', ' '), wallClock(x.stayDates.arrivalDateTime)]);
        s.dailyRates.forEach((d, j) => pairs.push([`roomStays[${i}].dailyRates[${j}].date`, d.date, calendarDate(x.dailyRates[j].date)]));
      });
      for (const [what, parsed, payload] of pairs) {
        const want = isJsonNumber(payload) ? payload.rawJSON : (payload ?? null);
        if ((parsed ?? null) !== want) problems.push(`seed ${p.seed} ${what}: parsed ${JSON.stringify(parsed)}, sent ${JSON.stringify(want)}`);
      }
    }
    expect(problems).toEqual([]);
  });
});
