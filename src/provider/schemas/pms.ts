/**
 * Tolerant schemas of the PMS, PMS analytics and PMS integration storage APIs (OpenAPI
 * PmsApi_*, PmsAnalyticsApi_*, PmsIntegrationApi_*). Same rules as schemas.ts: unknown fields
 * kept, enums as plain strings (the document marks several as open), ids as strings, nullable
 * objects and arrays may be null or absent. What a row cannot do without (a person id, a room
 * id, a date) is required; everything else is optional. A reservation is keyed by the number
 * it was fetched by (see parseReservationResponse), so its own `number` may be missing.
 */
import { z } from 'zod';
import { dateOnly, id, int, list, localDateTime, nullable, num, optBool, optId, optInt, optNum, optString, optUtcDateTime, utcDateTime } from './primitives.js';
import { safe, type ParseResult } from './bookings.js';

/**
 * A property-local date-time, or null. The document writes `YYYY-MM-DDThh:mm`; every other
 * ISO-8601 form is read too (seconds, a fraction, a space for `T`, a zone, which is dropped):
 * the wall-clock time as written, `YYYY-MM-DDTHH:mm:ss[.fraction]`.
 */
const optLocal = nullable(localDateTime);

/**
 * A date-time whose format the document gives only in its description (the reservation's
 * `modifyDateTime`, a room stay's check-in and check-out times): the document's type is a bare
 * string, so any text is valid there and must not cost the reservation its mirror. What
 * `read` reads (every ISO-8601 form of the description's format) is the typed value; any
 * other text gives null, and `raw` keeps it as sent. Null rather than a guess: a reading of
 * another form (is 01/02/2024 in January or February?) could be wrong, and a wrong
 * modification time is a wrong version for the guard, where a missing one is only missing.
 * Nor is a value JavaScript or PostgreSQL cannot take (year 0000, 24:30, a second 60), which
 * `read` lets through: one refused column would quarantine the whole reservation.
 * `asInstant` makes the typed value an instant text for that check (a local time as UTC).
 */
function readableOrNull(read: z.ZodType<string, string>, asInstant: (typed: string) => string) {
  return z
    .string()
    .nullish()
    .transform((text) => {
      if (text === null || text === undefined) return null;
      const r = read.safeParse(text);
      if (!r.success || r.data.startsWith('0000-') || Number.isNaN(Date.parse(asInstant(r.data)))) return null;
      return r.data;
    });
}
/** An instant of the reservation (`YYYY-MM-DDTHH:mm:ss[.fraction]` and a zone), or null when the text is not one. */
const readableInstant = readableOrNull(utcDateTime, (v) => v);
/** A property-local wall-clock time (`YYYY-MM-DDTHH:mm:ss[.fraction]`), or null when the text is not one. */
const readableLocal = readableOrNull(localDateTime, (v) => `${v}Z`);

/** Every PMS answer, success or error, may carry these. */
const responseError = z.looseObject({ code: optString, message: optString });
const envelope = { warnings: list(responseError), errors: list(responseError) };

/**
 * A page's list, or null when the page does not hold it (absent or null): such a page says
 * nothing of its items, so a read with one is not a complete list (nothing is marked removed,
 * deleted or covered by it).
 */
function pageList<T extends z.ZodType>(item: T) {
  return z
    .array(item)
    .nullish()
    .transform((v) => v ?? null);
}

/**
 * The paging keys of a PMS page: the document names the token `nextPageToken`; documented
 * samples also send `pageToken`, and may leave `hasNextPage` out (null here: paging.ts decides).
 */
const pagedKeys = { hasNextPage: optBool, nextPageToken: optString, pageToken: optString };

/** A parsed page: its items (null: the page does not hold its list) and what it says of the next page. */
export interface PmsPage<T> {
  items: T[] | null;
  hasNextPage: boolean | null;
  nextPageToken: string | null;
}

function pageOf<T>(items: T[] | null, p: { hasNextPage: boolean | null; nextPageToken: string | null; pageToken: string | null }): PmsPage<T> {
  return { items, hasNextPage: p.hasNextPage, nextPageToken: p.nextPageToken ?? p.pageToken };
}

// ------------------------------------------------------------------ reservation search

/**
 * A search page (paging as pagedKeys says). Items carry only `number` per the document; `items`
 * counts them as sent, `numbers` are those with a number.
 */
export const reservationSearchPageSchema = z
  .looseObject({ ...envelope, reservations: pageList(z.looseObject({ number: optString })), ...pagedKeys })
  .transform((p) => ({
    ...pageOf(p.reservations, p),
    numbers: (p.reservations ?? []).map((r) => r.number).filter((n): n is string => n !== null && n !== ''),
  }));
export type ReservationSearchPage = z.output<typeof reservationSearchPageSchema>;

// ------------------------------------------------------------------ reservation

const amount = z.looseObject({ value: optNum, currencyCode: optString });

export const personSchema = z.looseObject({
  pmsPersonId: optId,
  personName: nullable(z.looseObject({ lastName: optString, firstName: optString, middleName: optString })),
  birthDate: optString,
  citizenship: optString,
  status: nullable(z.looseObject({ id: optId, displayName: optString })),
  emails: list(z.looseObject({ address: optString })),
  phones: list(z.looseObject({ phoneNumber: optString })),
  gender: optString,
});
export type PmsPerson = z.output<typeof personSchema>;

const roomStaySchema = z.looseObject({
  pmsRoomStayId: optId,
  roomId: optId,
  roomTypeId: optId,
  // Ids of the stay's guests, whose profiles are fetched: an empty id (the document allows
  // one) names no guest and is left out here; `raw` keeps it.
  guestsIds: list(optId).transform((ids) => ids.filter((v): v is string => v !== null && v !== '')),
  checkInDateTime: readableLocal,
  checkOutDateTime: readableLocal,
  actualCheckInDateTime: readableLocal,
  actualCheckOutDateTime: readableLocal,
  status: optString,
  guestCount: nullable(z.looseObject({ adults: optInt, children: optInt })),
  deposit: nullable(amount),
  totalPrice: nullable(z.looseObject({ amount: nullable(amount), payAmount: nullable(amount), refundAmount: nullable(amount) })),
  amenities: list(z.looseObject({ name: optString })),
});

export const reservationSchema = z.looseObject({
  // The document lets it be null; the key is the number the reservation was fetched by.
  number: optString,
  customerLanguageCode: optString,
  visitPurpose: nullable(z.looseObject({ id: optId, displayName: optString })),
  customerComment: optString,
  modifyDateTime: readableInstant,
  groupName: optString,
  currencyCode: optString,
  customer: nullable(personSchema),
  customerCompany: nullable(z.looseObject({ id: optId, name: optString, type: optString })),
  creationSource: nullable(z.looseObject({ id: optId, name: optString })),
  channelInformation: nullable(z.looseObject({ channelName: optString })),
  reservationStatus: optString,
  roomStays: list(roomStaySchema),
  agentCommission: nullable(z.looseObject({ percent: optNum, calculationSource: optString, amount: nullable(amount), discount: nullable(amount) })),
});
/** A parsed reservation; `number` is its key in the mirror (see parseReservationResponse). */
export type PmsReservation = z.output<typeof reservationSchema> & { number: string };

// The document does not make `reservation` required: an answer without one is refused below
// with a reason of its own rather than zod's "expected object".
const reservationResponseSchema = z.looseObject({ ...envelope, reservation: nullable(reservationSchema) });
const guestResponseSchema = z.looseObject({ ...envelope, guest: personSchema });

/**
 * A reservation answer. `requestedNumber` is the number the reservation was fetched by (the
 * sync's queue, a change event, the row being rebuilt): it is the reservation's key, whatever
 * the answer's own `number` says (the document lets that be null; `raw` keeps it as sent), so
 * that the queue row, the recheck and the events that name the number all find the row.
 * Without one (a quarantined body replayed) the answer's own number is the key. An answer
 * without a reservation has nothing to mirror and is refused.
 */
export function parseReservationResponse(raw: unknown, requestedNumber?: string): ParseResult<PmsReservation> {
  const r = safe(reservationResponseSchema, raw, 'response');
  if (!r.ok) return r;
  const reservation = r.value.reservation;
  if (reservation === null) return { ok: false, reason: 'response.reservation: absent or null: the answer holds no reservation to mirror' };
  const number = requestedNumber || reservation.number;
  if (!number) return { ok: false, reason: 'response.reservation.number: absent, null or empty, and no requested number to key the reservation by' };
  return { ok: true, value: { ...reservation, number } };
}

export function parseGuestResponse(raw: unknown): ParseResult<PmsPerson> {
  const r = safe(guestResponseSchema, raw, 'response');
  return r.ok ? { ok: true, value: r.value.guest } : r;
}

export function parseReservationSearchPage(raw: unknown): ParseResult<ReservationSearchPage> {
  return safe(reservationSearchPageSchema, raw, 'page');
}

// ------------------------------------------------------------------ rooms

export const roomSchema = z.looseObject({ id, displayName: optString, roomTypeId: optId, floorId: optId });
export type PmsRoom = z.output<typeof roomSchema>;

const roomsPageSchema = z.looseObject({ ...envelope, rooms: pageList(z.unknown()), ...pagedKeys });

/** A rooms page; the rooms stay raw so that one bad room can be quarantined. */
export function parseRoomsPage(raw: unknown): ParseResult<PmsPage<unknown>> {
  const r = safe(roomsPageSchema, raw, 'page');
  return r.ok ? { ok: true, value: pageOf(r.value.rooms, r.value) } : r;
}

export function parseRoom(raw: unknown): ParseResult<PmsRoom> {
  return safe(roomSchema, raw, 'room');
}

// ------------------------------------------------------------------ invoices and companies

const invoiceItemSchema = z.looseObject({
  accountingCode: optString,
  name: optString,
  kind: optString,
  total: nullable(amount),
  // Required by the document, nullable too: read as it comes.
  vat: nullable(z.looseObject({ applicable: optBool, included: optBool, percent: optNum })),
  quantity: nullable(z.looseObject({ value: optNum, unit: optString })),
});
export const invoiceSchema = z.looseObject({
  number: optString,
  pmsRoomStayId: optId,
  payer: nullable(z.looseObject({ name: optString })),
  items: list(invoiceItemSchema),
});
export type PmsInvoice = z.output<typeof invoiceSchema>;
const invoicesPageSchema = z.looseObject({ ...envelope, invoices: pageList(invoiceSchema), ...pagedKeys });

/** A page of a reservation's invoices. One bad invoice refuses the page: the invoices of a reservation are mirrored together. */
export function parseInvoicesPage(raw: unknown): ParseResult<PmsPage<PmsInvoice>> {
  const r = safe(invoicesPageSchema, raw, 'page');
  return r.ok ? { ok: true, value: pageOf(r.value.invoices, r.value) } : r;
}

export function parseInvoice(raw: unknown): ParseResult<PmsInvoice> {
  return safe(invoiceSchema, raw, 'invoice');
}

// ------------------------------------------------------------------ loyalty cards

const loyaltyCardSchema = z.looseObject({ programId: optString, cardNumber: optString });
export type PmsLoyaltyCard = z.output<typeof loyaltyCardSchema>;

/** One card as stored (a rebuild reads each from its raw). */
export function parseLoyaltyCard(raw: unknown): ParseResult<PmsLoyaltyCard> {
  return safe(loyaltyCardSchema, raw, 'loyaltyCard');
}
const loyaltyCardsPageSchema = z.looseObject({ ...envelope, loyaltyCards: pageList(loyaltyCardSchema), ...pagedKeys });

/** A page of a person's loyalty cards (PmsApi_FindGuestLoyaltyCardsResponse). One bad card refuses the page: a person's cards are mirrored together. */
export function parseLoyaltyCardsPage(raw: unknown): ParseResult<PmsPage<PmsLoyaltyCard>> {
  const r = safe(loyaltyCardsPageSchema, raw, 'page');
  return r.ok ? { ok: true, value: pageOf(r.value.loyaltyCards, r.value) } : r;
}

// ------------------------------------------------------------------ companies

export const companySchema = z.looseObject({ id, name: optString, type: optString });
export type PmsCompany = z.output<typeof companySchema>;
const companiesPageSchema = z.looseObject({ ...envelope, companies: pageList(z.unknown()), ...pagedKeys });

/** A companies page; the companies stay raw so that one bad company can be quarantined. */
export function parseCompaniesPage(raw: unknown): ParseResult<PmsPage<unknown>> {
  const r = safe(companiesPageSchema, raw, 'page');
  return r.ok ? { ok: true, value: pageOf(r.value.companies, r.value) } : r;
}

export function parseCompany(raw: unknown): ParseResult<PmsCompany> {
  return safe(companySchema, raw, 'company');
}

// ------------------------------------------------------------------ daily occupancy

const money = num;

export const dailyOccupancySchema = z.looseObject({
  date: dateOnly,
  occupancyRate: money,
  closedRoomCount: int,
  occupancyRoomCount: int,
  complimentaryOccupancyRoomCount: int,
  roomRevenue: money,
  revenue: money,
  // The OpenAPI document requires it, the specification lists it with no description: absent or
  // null is "not given" (NULL), never a revenue of 0.
  mealRevenue: money.nullish().transform((v) => v ?? null),
  arrivalCount: int,
  guestCount: int,
});
export type DailyOccupancy = z.output<typeof dailyOccupancySchema>;

export const dailyOccupancyResponseSchema = z.looseObject({
  ...envelope,
  currencyCode: optString,
  propertyRoomCount: int,
  dailyOccupancies: list(dailyOccupancySchema),
});

export function parseDailyOccupancy(raw: unknown): ParseResult<z.output<typeof dailyOccupancyResponseSchema>> {
  return safe(dailyOccupancyResponseSchema, raw, 'response');
}

// ------------------------------------------------------------------ integration storage

const storageAmount = z.looseObject({ amountAfterTax: optNum, currencyCode: optString });
/** An element a room rate refers to by its index (PmsIntegrationApi_BookingRoomType, _BookingRatePlan, _BookingInventoryBlock). */
const storageIndexed = z.looseObject({ index: optInt, pmsSideCode: optString, pmsSideRoomNumber: optString });

/**
 * A room stay of a storage booking: its segment and source, and one rate per stay date
 * (roomRates, which name the room type, rate plan and block by their index). A rate without a
 * readable stay date cannot be a night of a report: the booking does not parse (quarantined).
 */
const storageRoomStay = z.looseObject({
  index: optInt,
  sourceOfBusiness: optString,
  marketCode: optString,
  roomTypes: list(storageIndexed),
  ratePlans: list(storageIndexed),
  inventoryBlocks: list(storageIndexed),
  roomRates: list(
    z.looseObject({
      stayDate: dateOnly,
      roomTypeIndex: optInt,
      ratePlanIndex: optInt,
      inventoryBlockIndex: optInt,
      total: nullable(storageAmount),
    }),
  ),
  guestCounts: list(z.looseObject({ ageQualifyingCode: optString, count: optInt, age: optInt })),
  stayDates: nullable(z.looseObject({ arrivalDateTime: optLocal, departureDateTime: optLocal })),
});

export const storageBookingSchema = z.looseObject({
  id,
  propertyId: optId,
  status: optString,
  uniqueIds: list(z.looseObject({ id: optString, idContext: optString })),
  bookingChannels: list(z.looseObject({ code: optString, codeType: optString, name: optString, bookingChannelType: optString })),
  roomStays: list(storageRoomStay),
  total: nullable(storageAmount),
  guaranteeInfo: nullable(z.looseObject({ guaranteeCode: optString })),
  pmsSideUpdateDateTime: optLocal,
  pmsSideCreateDateTime: optLocal,
  updateDateTime: optUtcDateTime,
  cancellationInfo: nullable(z.looseObject({ pmsSideCancelDateTime: optLocal, cancelReason: optString })),
});
export type StorageBooking = z.output<typeof storageBookingSchema>;

/** A day of an inventory block (PmsIntegrationApi_DailyInventoryBlock): without a readable date the block does not parse. */
const inventoryBlockDay = z.looseObject({
  date: dateOnly,
  roomTypeCode: optString,
  blockedCount: optInt,
  realizedCount: optInt,
  cutoffDate: nullable(dateOnly),
  pricing: nullable(z.looseObject({ oneAdultPrice: optNum, servicesPrice: optNum, currencyCode: optString })),
});

export const inventoryBlockSchema = z.looseObject({
  id,
  propertyId: optId,
  pmsSideId: optString,
  pmsSideCode: optString,
  updateDateTime: optUtcDateTime,
  pmsSideCreateDateTime: optLocal,
  pmsSideCancelDateTime: optLocal,
  ratePlanCodes: list(z.string()),
  blockStatus: optString,
  pmsBlockStatus: optString,
  dailyItems: list(inventoryBlockDay),
});
export type InventoryBlock = z.output<typeof inventoryBlockSchema>;

export function parseStorageBooking(raw: unknown): ParseResult<StorageBooking> {
  const r = safe(z.looseObject({ booking: storageBookingSchema }), raw, 'response');
  return r.ok ? { ok: true, value: r.value.booking } : r;
}

export function parseInventoryBlock(raw: unknown): ParseResult<InventoryBlock> {
  const r = safe(z.looseObject({ inventoryBlock: inventoryBlockSchema }), raw, 'response');
  return r.ok ? { ok: true, value: r.value.inventoryBlock } : r;
}

// ------------------------------------------------------------------ change events

/** Ids and types of events: bounded, printable text (an id is a primary key; a type becomes a metric label only when known). */
const eventText = (what: string) =>
  z
    .string()
    .min(1, `expected ${what}`)
    .max(200, `expected ${what} of at most 200 characters`)
    .regex(/^[\x21-\x7e]+$/, `expected ${what} of printable ASCII without spaces`);

/** One event of a webhook batch: only the id and the type are needed to keep it. */
export const webhookEventSchema = z.looseObject({
  eventId: eventText('eventId'),
  eventType: eventText('eventType'),
  creationTime: optUtcDateTime,
  payload: z
    .record(z.string(), z.unknown())
    .nullish()
    .transform((v) => v ?? null),
});
export type WebhookEvent = z.output<typeof webhookEventSchema>;
