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
import { calendarDate, wallClock } from './checks.js';
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
  pmsReservation: parseReservationResponse,
};

/**
 * The payloads of an operation. A PMS reservation is fetched by its number and mirrored under
 * it: the document lets a response leave the reservation out and lets its number be null,
 * but a response without either has nothing to mirror, so each one is given both here.
 */
function payloads(op: Operation): Payload[] {
  const out = generateMany(op, PER_SCHEMA, 1_000 * (Object.keys(parsers).indexOf(op) + 1));
  if (op !== 'pmsReservation') return out;
  return out.map((p, i) => {
    const reservation = p.value.reservation ?? generate('#PmsApi_Reservation', p.seed, p.mode).value;
    return withValue(p, { ...p.value, reservation: { ...reservation, number: `R-${i}` } });
  });
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
