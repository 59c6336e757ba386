/**
 * zod schemas of the provider's payloads, parsed at the edge. TOLERANT by design, since the
 * provider's published schema and its real answers disagree (test/fixtures/provider holds real answers):
 * - unknown fields are kept (loose objects), so `raw` and typed columns never lose data;
 * - enums are plain strings: a new status or payment method must not stop a stream;
 * - ids may come as number or string and are normalised to string;
 * - dates may carry a time part (`2021-03-25T00:00:00`) and are normalised to `YYYY-MM-DD`;
 * - optional objects may be null or absent (→ null), optional arrays may be null (→ []).
 * Only what the mirror cannot do without is required: for a booking its number, status,
 * modifiedDateTime and room stays with stay dates, daily rates and totals.
 */
import { z } from 'zod';
import {
  id,
  num,
  optString,
  optNum,
  optId,
  optInt,
  optBigInt,
  int,
  dateOnly,
  localDateTime,
  utcDateTime,
  optUtcDateTime,
  list,
  nullable,
  serializesAsSent,
} from './primitives.js';

// ---------------------------------------------------------------------------- summaries

/** The page envelope. Summaries stay unparsed so one bad summary can be quarantined alone. */
export const bookingsPageSchema = z.looseObject({
  continueToken: optString,
  hasMoreData: z.boolean(),
  bookingSummaries: list(z.unknown()),
});
export type BookingsPage = {
  continueToken: string | null;
  hasMoreData: boolean;
  bookingSummaries: unknown[];
};

export const bookingSummarySchema = z.looseObject({
  number: id,
  propertyId: optId,
  status: optString,
  createdDateTime: optUtcDateTime,
  modifiedDateTime: optUtcDateTime,
});
export type BookingSummary = z.output<typeof bookingSummarySchema>;

// ---------------------------------------------------------------------------- booking details

const taxAmountSchema = z.looseObject({ amount: num, index: optInt });
const discountSchema = z.looseObject({
  amount: optNum,
  discountType: optString,
  name: optString,
  percent: optNum,
});

/** Prices of a booking, a room stay or an extra stay. */
export const totalSchema = z.looseObject({
  priceBeforeTax: num,
  priceAfterTax: num,
  taxAmount: optNum,
  taxes: list(taxAmountSchema),
  discounts: list(discountSchema),
});
export type Total = z.output<typeof totalSchema>;

const serviceTotalSchema = z.looseObject({
  priceBeforeTax: optNum,
  priceAfterTax: optNum,
  taxAmount: optNum,
  taxes: list(taxAmountSchema),
});

const stayDatesSchema = z.looseObject({
  arrivalDateTime: localDateTime,
  departureDateTime: localDateTime,
});

// The OpenAPI document spells the rate plan `ratePlanId`, the interface specification
// `RatePlanId`: either is read (the document's when both come); raw keeps the key as sent.
const dailyRateSchema = z
  .looseObject({
    ratePlanId: optId,
    RatePlanId: optId,
    priceBeforeTax: num,
    date: dateOnly,
  })
  .transform(({ RatePlanId, ...r }) => ({ ...r, ratePlanId: r.ratePlanId ?? RatePlanId }));

const namedRefSchema = z.looseObject({ id: optId, name: optString });

const guestCountSchema = z.looseObject({
  adultCount: optInt,
  childAges: list(int),
});

const personNameSchema = z.looseObject({ firstName: optString, lastName: optString });

// Services are written to booking_services.raw as parsed: they serialize as received.
const roomStayServiceSchema = serializesAsSent(
  z.looseObject({
    id: optId,
    name: optString,
    description: optString,
    total: nullable(serviceTotalSchema),
    inclusive: z
      .boolean()
      .nullish()
      .transform((v) => v ?? null),
    kind: optString,
    mealPlanCode: optString,
  }),
);

const extraStayDetailsSchema = z.looseObject({
  overriddenDateTime: nullable(localDateTime),
  total: nullable(totalSchema),
});

export const roomStaySchema = z.looseObject({
  index: optBigInt,
  stayDates: stayDatesSchema,
  ratePlans: list(namedRefSchema),
  roomType: nullable(namedRefSchema),
  guestCount: nullable(guestCountSchema),
  guests: list(personNameSchema),
  dailyRates: z.array(dailyRateSchema),
  total: totalSchema,
  services: list(roomStayServiceSchema),
  extraStayCharges: nullable(
    z.looseObject({
      earlyArrival: nullable(extraStayDetailsSchema),
      lateDeparture: nullable(extraStayDetailsSchema),
    }),
  ),
});
export type RoomStay = z.output<typeof roomStaySchema>;

const bookingServiceSchema = serializesAsSent(
  z.looseObject({
    id: optId,
    name: optString,
    description: optString,
    total: nullable(serviceTotalSchema),
  }),
);

/** ReservationApi_Booking of the OpenAPI document (test/fixtures/openapi). */
export const bookingSchema = z.looseObject({
  propertyId: optId,
  number: id,
  status: z.string(),
  createdDateTime: optUtcDateTime,
  modifiedDateTime: utcDateTime,
  guaranteeInfo: nullable(
    z.looseObject({
      loyalty: nullable(
        z.looseObject({
          cards: list(z.looseObject({ cardNumber: optString, loyaltySystemId: optString })),
        }),
      ),
      totalPrepaid: optNum,
      guarantees: list(z.looseObject({ paymentMethod: optString })),
    }),
  ),
  currencyCode: optString,
  roomStays: z.array(roomStaySchema),
  services: list(bookingServiceSchema),
  total: nullable(totalSchema),
  taxes: list(
    z.looseObject({
      index: optInt,
      name: optString,
      description: optString,
    }),
  ),
  cancellation: nullable(
    z.looseObject({
      penaltyAmount: optNum,
      cancelledDateTime: optUtcDateTime,
    }),
  ),
  source: nullable(z.looseObject({ type: optString, code: optString, sourceUrl: optString })),
  customer: nullable(personNameSchema),
});
export type Booking = z.output<typeof bookingSchema>;

/** ReservationApi_GetBookingResponse: `{ booking }`. */
export const getBookingResponseSchema = z.looseObject({ booking: bookingSchema });

// ---------------------------------------------------------------------------- helpers

export type ParseResult<T> = { ok: true; value: T } | { ok: false; reason: string };

/** A readable one-line summary of zod issues, each with its path: `booking.roomStays: expected array, received string`. */
export function describeIssues(error: z.ZodError, root?: string): string {
  return error.issues
    .slice(0, 10)
    .map((issue) => {
      const path = [...(root === undefined ? [] : [root]), ...issue.path.map(String)].join('.') || '(root)';
      return `${path}: ${issue.message.replace(/^Invalid input: /, '')}`;
    })
    .concat(error.issues.length > 10 ? [`… and ${error.issues.length - 10} more`] : [])
    .join('; ');
}

/** Parses `raw` with `schema`; a failure gives the issues with their paths, under `root`. */
export function safe<T extends z.ZodType>(schema: T, raw: unknown, root: string): ParseResult<z.output<T>> {
  const r = schema.safeParse(raw);
  return r.success ? { ok: true, value: r.data } : { ok: false, reason: describeIssues(r.error, root) };
}

/** Parses one element of `bookingSummaries`; a failure is quarantined, the page goes on. */
export function parseBookingSummary(raw: unknown): ParseResult<BookingSummary> {
  return safe(bookingSummarySchema, raw, 'bookingSummary');
}

/** Parses a summaries page envelope (the summaries themselves stay raw). */
export function parseBookingsPage(raw: unknown): ParseResult<BookingsPage> {
  return safe(bookingsPageSchema, raw, 'page');
}

/** Parses a bare booking object (e.g. replayed from the `raw` column). */
export function parseBooking(raw: unknown): ParseResult<Booking> {
  return safe(bookingSchema, raw, 'booking');
}

/** Parses a details response `{ booking }`; issue paths start with `booking.`. */
export function parseGetBookingResponse(raw: unknown): ParseResult<Booking> {
  const r = getBookingResponseSchema.safeParse(raw);
  return r.success ? { ok: true, value: r.data.booking } : { ok: false, reason: describeIssues(r.error) };
}
