/**
 * The PMS side of the simulator over real HTTP: PMS reservations consistent with the bookings
 * (same numbers, plus PMS-only ones), the reservation search (modify and affect windows in
 * property-local time, minute edges, states, paging, page tokens, limits, the legacy token
 * key), single reservations, guests and rooms validated against the provider's schemas, and
 * the PMS side of mutate() and of the PMS-only operations.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type BookingPayload, type PmsReservation, type Simulator } from '../index.js';
import { schemaProblemsIn, type SchemaDef } from '../../../test/helpers/schema-check.js';
import { accessToken, noLimits } from '../../../test/helpers/simulator-http.js';

// ---- The provider's PMS API schemas, and a checker ----
// A compact copy of the provider's PmsApi_* schemas (required fields, field types,
// nullability, enums): "T?" is nullable, "T[]" an array, "@Name" another schema. A field the
// schema does not list is an error: field names must be exactly these.

const SCHEMAS: Record<string, SchemaDef> = {
  PmsApi_GetReservationResponse: {
    required: [],
    props: { warnings: '@PmsApi_ResponseError[]?', errors: '@PmsApi_ResponseError[]?', reservation: '@PmsApi_Reservation' },
  },
  PmsApi_ResponseError: {
    required: [],
    props: { code: 'string?', message: 'string?' },
  },
  PmsApi_Reservation: {
    required: ['creationSource', 'currencyCode', 'customerLanguageCode'],
    props: {
      number: 'string?',
      customerLanguageCode: 'string?',
      visitPurpose: '@PmsApi_VisitPurpose?',
      customerComment: 'string?',
      modifyDateTime: 'string?',
      groupName: 'string?',
      currencyCode: 'string?',
      customer: '@PmsApi_Person?',
      customerCompany: '@PmsApi_Company?',
      creationSource: '@PmsApi_ReservationCreationSource?',
      channelInformation: '@PmsApi_ReservationChannelInformation?',
      reservationStatus: '@PmsApi_ReservationStatus',
      roomStays: '@PmsApi_RoomStay[]?',
      agentCommission: '@PmsApi_AgentCommission?',
    },
  },
  PmsApi_VisitPurpose: {
    required: [],
    props: { id: 'string?', displayName: 'string?' },
  },
  PmsApi_Person: {
    required: [],
    props: {
      pmsPersonId: 'string?',
      personName: '@PmsApi_PersonName?',
      birthDate: 'string?',
      citizenship: 'string?',
      status: '@PmsApi_GuestStatus?',
      emails: '@PmsApi_Email[]?',
      phones: '@PmsApi_Phone[]?',
      gender: '@PmsApi_Gender',
    },
  },
  PmsApi_PersonName: {
    required: [],
    props: { lastName: 'string?', firstName: 'string?', middleName: 'string?' },
  },
  PmsApi_GuestStatus: {
    required: [],
    props: { id: 'string?', displayName: 'string?' },
  },
  PmsApi_Email: {
    required: [],
    props: { address: 'string?' },
  },
  PmsApi_Phone: {
    required: [],
    props: { phoneNumber: 'string?' },
  },
  PmsApi_Gender: { enum: ['Male', 'Female', 'Unknown'] },
  PmsApi_Company: {
    required: [],
    props: { id: 'string?', name: 'string?', type: '@PmsApi_CompanyType' },
  },
  PmsApi_CompanyType: { enum: ['Customer', 'Payer'] },
  PmsApi_ReservationCreationSource: {
    required: ['id', 'name'],
    props: { id: 'string?', name: 'string?' },
  },
  PmsApi_ReservationChannelInformation: {
    required: ['channelName'],
    props: { channelName: 'string?' },
  },
  PmsApi_ReservationStatus: { enum: ['Unconfirmed', 'Confirmed', 'Cancelled', 'Released', 'Pending', 'Edited'] },
  PmsApi_RoomStay: {
    required: [],
    props: {
      pmsRoomStayId: 'string?',
      roomId: 'string?',
      roomTypeId: 'string?',
      guestsIds: 'string[]?',
      checkInDateTime: 'string?',
      checkOutDateTime: 'string?',
      actualCheckInDateTime: 'string?',
      actualCheckOutDateTime: 'string?',
      status: '@PmsApi_RoomStayStatus',
      guestCount: '@PmsApi_GuestCount?',
      deposit: '@PmsApi_Amount?',
      totalPrice: '@PmsApi_TotalPrice?',
      amenities: '@PmsApi_Amenity[]?',
    },
  },
  PmsApi_RoomStayStatus: { enum: ['New', 'CheckedIn', 'CheckedOut', 'Cancelled'] },
  PmsApi_GuestCount: {
    required: [],
    props: { adults: 'integer:int32', children: 'integer:int32' },
  },
  PmsApi_Amount: {
    required: [],
    props: { value: 'number:double', currencyCode: 'string?' },
  },
  PmsApi_TotalPrice: {
    required: [],
    props: { amount: '@PmsApi_Amount?', payAmount: '@PmsApi_Amount?', refundAmount: '@PmsApi_Amount?' },
  },
  PmsApi_Amenity: {
    required: [],
    props: { name: 'string?' },
  },
  PmsApi_AgentCommission: {
    required: [],
    props: { percent: 'number:double?', calculationSource: '@PmsApi_CommissionCalculationSource', amount: '@PmsApi_Amount?', discount: '@PmsApi_Amount?' },
  },
  PmsApi_CommissionCalculationSource: { enum: ['Pms', 'Ota'] },
  PmsApi_GetGuestResponse: {
    required: [],
    props: { warnings: '@PmsApi_ResponseError[]?', errors: '@PmsApi_ResponseError[]?', guest: '@PmsApi_Person' },
  },
  PmsApi_FindRoomsResponse: {
    required: ['hasNextPage', 'nextPageToken'],
    props: {
      warnings: '@PmsApi_ResponseError[]?',
      errors: '@PmsApi_ResponseError[]?',
      nextPageToken: 'string?',
      hasNextPage: 'boolean',
      rooms: '@PmsApi_Room[]',
    },
  },
  PmsApi_Room: {
    required: [],
    props: { id: 'string?', displayName: 'string?', roomTypeId: 'string?', floorId: 'string?' },
  },
  PmsApi_FindReservationsResponse: {
    required: ['hasNextPage', 'nextPageToken'],
    props: {
      warnings: '@PmsApi_ResponseError[]?',
      errors: '@PmsApi_ResponseError[]?',
      nextPageToken: 'string?',
      hasNextPage: 'boolean',
      reservations: '@PmsApi_ReservationInfo[]',
    },
  },
  PmsApi_ReservationInfo: {
    required: ['number'],
    props: { number: 'string?' },
  },
  PmsApi_FindInvoicesResponse: {
    required: ['hasNextPage', 'nextPageToken'],
    props: {
      warnings: '@PmsApi_ResponseError[]?',
      errors: '@PmsApi_ResponseError[]?',
      nextPageToken: 'string?',
      hasNextPage: 'boolean',
      invoices: '@PmsApi_Invoice[]',
    },
  },
  PmsApi_Invoice: {
    required: [],
    props: { number: 'string?', pmsRoomStayId: 'string?', payer: '@PmsApi_Payer?', items: '@PmsApi_InvoiceItem[]?' },
  },
  PmsApi_Payer: { required: [], props: { name: 'string?' } },
  PmsApi_InvoiceItem: {
    required: ['vat'],
    props: {
      accountingCode: 'string?',
      name: 'string?',
      kind: '@PmsApi_InvoiceItemKind',
      total: '@PmsApi_Amount?',
      vat: '@PmsApi_Vat?',
      quantity: '@PmsApi_InvoiceItemQuantity?',
    },
  },
  PmsApi_InvoiceItemKind: { enum: ['RoomType', 'Option', 'Transfer'] },
  PmsApi_Vat: { required: ['applicable', 'included', 'percent'], props: { applicable: 'boolean', included: 'boolean', percent: 'integer:int32' } },
  PmsApi_InvoiceItemQuantity: { required: [], props: { value: 'integer:int32', unit: '@PmsApi_InvoiceItemQuantityType' } },
  PmsApi_InvoiceItemQuantityType: { enum: ['Pcs', 'Hours', 'Nights'] },
  PmsApi_FindCompaniesResponse: {
    required: ['hasNextPage', 'nextPageToken'],
    props: {
      warnings: '@PmsApi_ResponseError[]?',
      errors: '@PmsApi_ResponseError[]?',
      nextPageToken: 'string?',
      hasNextPage: 'boolean',
      companies: '@PmsApi_Company[]',
    },
  },
  PmsApi_FindGuestLoyaltyCardsResponse: {
    required: ['hasNextPage', 'nextPageToken'],
    props: {
      warnings: '@PmsApi_ResponseError[]?',
      errors: '@PmsApi_ResponseError[]?',
      nextPageToken: 'string?',
      hasNextPage: 'boolean',
      loyaltyCards: '@PmsApi_PersonLoyalty[]',
    },
  },
  PmsApi_PersonLoyalty: { required: [], props: { programId: 'string?', cardNumber: 'string?' } },
  PmsApi_ApiResponse: {
    required: [],
    props: { warnings: '@PmsApi_ResponseError[]?', errors: '@PmsApi_ResponseError[]?' },
  },
};

/** What does not fit schema `name` in `value` (empty when it fits). */
const schemaProblems = (value: unknown, name: string): string[] => schemaProblemsIn(SCHEMAS, value, name);

// ---- HTTP and time helpers ----

const LIMITS = { ...noLimits, integrationStorage: [{ limit: 1_000_000, windowMs: 1000 }] };
const PMS = (propertyId: string) => `/api/pms/v2/properties/${propertyId}`;
const ID = /^\d+$/;
const LOCAL_MINUTE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/;
const UTC_SECONDS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

interface Envelope {
  warnings: unknown[];
  errors: { code: string; message: string }[];
}
interface SearchPage extends Envelope {
  reservations: { number: string }[];
  hasNextPage: boolean;
  nextPageToken?: string | null;
  pageToken?: string | null;
}
interface RoomsPage extends Envelope {
  rooms: { id: string; displayName: string; roomTypeId: string; floorId: string }[];
  hasNextPage: boolean;
  nextPageToken: string | null;
}

async function get<T>(sim: Simulator, token: string, path: string, query: Record<string, string> = {}): Promise<{ status: number; body: T }> {
  const qs = new URLSearchParams(query).toString();
  const res = await fetch(`${sim.url}${path}${qs ? `?${qs}` : ''}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: (await res.json()) as T };
}

/** Property-local `YYYY-MM-DDTHH:mm` of an instant (truncated to the minute), computed here with Intl. */
function localMinute(ms: number, timeZone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-CA', { timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit' })
      .formatToParts(new Date(ms))
      .map((p) => [p.type, p.value]),
  );
  return `${parts['year']}-${parts['month']}-${parts['day']}T${parts['hour']}:${parts['minute']}`;
}

/** Wall-clock arithmetic on `YYYY-MM-DDTHH:mm`. */
function shift(local: string, minutes: number): string {
  return new Date(Date.parse(`${local}:00Z`) + minutes * 60_000).toISOString().slice(0, 16);
}

const DAY_MIN = 24 * 60;
const expectEnvelopeError = (body: Envelope) => {
  expect(body.warnings).toEqual([]);
  expect(body.errors).toHaveLength(1);
  expect(typeof body.errors[0]!.code).toBe('string');
  expect(typeof body.errors[0]!.message).toBe('string');
  expect(schemaProblems(body, 'PmsApi_ApiResponse')).toEqual([]);
};

/** Every page of a search, following the page tokens; checks each page's envelope and paging fields. */
async function searchAll(
  sim: Simulator,
  token: string,
  propertyId: string,
  query: Record<string, string>,
): Promise<{ numbers: string[]; pages: SearchPage[] }> {
  const size = Number(query['maxPageSize'] ?? 100);
  const pages: SearchPage[] = [];
  let res = await get<SearchPage>(sim, token, `${PMS(propertyId)}/reservations/search`, query);
  for (;;) {
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(schemaProblems(res.body, 'PmsApi_FindReservationsResponse')).toEqual([]);
    const page = res.body;
    expect(page.warnings).toEqual([]);
    expect(page.errors).toEqual([]);
    expect(page.reservations.length).toBeLessThanOrEqual(size);
    pages.push(page);
    if (!page.hasNextPage) {
      expect(page.nextPageToken).toBeNull();
      break;
    }
    expect(page.reservations).toHaveLength(size);
    expect(typeof page.nextPageToken).toBe('string');
    res = await get<SearchPage>(sim, token, `${PMS(propertyId)}/reservations/search`, { pageToken: page.nextPageToken! });
  }
  return { numbers: pages.flatMap((p) => p.reservations.map((r) => r.number)), pages };
}

/** Every number of one state, through modify windows of 365 days from 2009 to the clock. */
async function allOfState(sim: Simulator, token: string, propertyId: string, state: string, nowLocal: string): Promise<string[]> {
  const numbers: string[] = [];
  for (let start = '2009-01-01T00:00'; start <= nowLocal; start = shift(start, 365 * DAY_MIN)) {
    const { numbers: found } = await searchAll(sim, token, propertyId, {
      state,
      startModifyDateTime: start,
      endModifyDateTime: shift(start, 365 * DAY_MIN - 1),
    });
    numbers.push(...found);
  }
  return numbers;
}

/** What the truth says a modify window matches. */
function modifiedWithin(all: PmsReservation[], timeZone: string, start: string, end: string, state: 'Active' | 'Cancelled'): string[] {
  return all
    .filter((r) => (r.reservationStatus === 'Cancelled') === (state === 'Cancelled'))
    .filter((r) => {
      const m = localMinute(Date.parse(r.modifyDateTime), timeZone);
      return m >= start && m <= end;
    })
    .map((r) => r.number);
}

/** The reservation follows its booking: stays, dates, guests, prices, status, customer, channel. */
function expectFollowsBooking(r: PmsReservation, b: BookingPayload): void {
  expect(r.number).toBe(b.number);
  expect(r.currencyCode).toBe(b.currencyCode);
  expect(r.reservationStatus === 'Cancelled').toBe(b.status === 'Cancelled');
  expect(r.roomStays).toHaveLength(b.roomStays.length);
  expect(r.channelInformation !== null).toBe(b.source.type === 'Channel');
  if (b.customer) {
    expect(r.customer?.personName?.firstName).toBe(b.customer.firstName);
    expect(r.customer?.personName?.lastName).toBe(b.customer.lastName);
  }
  expect(Date.parse(r.modifyDateTime)).toBeGreaterThanOrEqual(Date.parse(b.modifiedDateTime));
  r.roomStays.forEach((s, i) => {
    const bs = b.roomStays[i]!;
    expect(s.roomTypeId).toBe(bs.roomType.id);
    expect(s.checkInDateTime).toBe(bs.stayDates.arrivalDateTime);
    expect(s.checkOutDateTime).toBe(bs.stayDates.departureDateTime);
    expect(s.guestCount).toEqual({ adults: bs.guestCount.adultCount, children: bs.guestCount.childAges?.length ?? 0 });
    expect(s.totalPrice.amount.value).toBe(bs.total.priceBeforeTax);
    expect(s.status === 'Cancelled').toBe(b.status === 'Cancelled');
    if (i === 0) expect(s.guestsIds[0]).toBe(r.customer!.pmsPersonId);
    expect(s.guestsIds.length).toBeLessThanOrEqual(i === 0 ? 3 : 2);
  });
}

/** Rooms of the right type, never two stays in one room on one night. */
function expectRoomsConsistent(sim: Simulator, propertyId: string): void {
  const rooms = new Map(sim.pmsRooms(propertyId).map((r) => [r.id, r]));
  const nights = new Map<string, string>();
  for (const r of sim.pmsReservations(propertyId)) {
    for (const s of r.roomStays) {
      if (s.roomId === null) continue;
      expect(rooms.get(s.roomId)?.roomTypeId, `${r.number} room ${s.roomId}`).toBe(s.roomTypeId);
      if (r.reservationStatus === 'Cancelled') continue;
      for (let d = Date.parse(`${s.checkInDateTime.slice(0, 10)}T00:00Z`); d < Date.parse(`${s.checkOutDateTime.slice(0, 10)}T00:00Z`); d += 86_400_000) {
        const key = `${s.roomId}/${d}`;
        expect(nights.get(key), `${key} taken by ${nights.get(key)} and ${r.number}`).toBeUndefined();
        nights.set(key, r.number);
      }
    }
  }
}

// ---- Tests ----

describe('simulator PMS: reservations consistent with the bookings', () => {
  const t = Date.UTC(2025, 5, 1, 12, 0, 0);
  let sim: Simulator;
  let token: string;
  beforeAll(async () => {
    sim = await startSimulator({
      now: () => t,
      rateLimits: LIMITS,
      properties: [
        { id: '500100', bookingCount: 300 },
        { id: '500200', bookingCount: 150 },
      ],
      contentOnlyProperties: 1,
    });
    token = await accessToken(sim);
  });
  afterAll(() => sim.close());

  it('the search lists the booking numbers plus a few PMS-only ones; Active and Cancelled partition them', async () => {
    const tz = sim.content().find((c) => c.id === '500100')!.timeZone;
    const nowLocal = localMinute(t, tz);
    const active = await allOfState(sim, token, '500100', 'Active', nowLocal);
    const cancelled = await allOfState(sim, token, '500100', 'Cancelled', nowLocal);
    expect(new Set(active).size).toBe(active.length);
    expect(new Set(cancelled).size).toBe(cancelled.length);
    expect(active.filter((n) => cancelled.includes(n))).toEqual([]);

    const truth = sim.pmsReservations('500100');
    expect([...active, ...cancelled].sort()).toEqual(truth.map((r) => r.number).sort());
    expect(active.sort()).toEqual(
      truth
        .filter((r) => r.reservationStatus !== 'Cancelled')
        .map((r) => r.number)
        .sort(),
    );

    const bookings = sim.bookings('500100').map((b) => b.number);
    const all = new Set([...active, ...cancelled]);
    for (const n of bookings) expect(all.has(n), n).toBe(true);
    const pmsOnly = [...all].filter((n) => !bookings.includes(n));
    expect(pmsOnly.length).toBeGreaterThanOrEqual(1);
    expect(pmsOnly.length).toBeLessThanOrEqual(Math.ceil(bookings.length * 0.05));
    for (const n of pmsOnly) expect(n).toMatch(/^\d{8}-500100-\d+$/);

    // A property without bookings has no reservations, but rooms.
    const empty = await searchAll(sim, token, '900001', { state: 'Active', startModifyDateTime: '2024-06-02T00:00', endModifyDateTime: '2025-06-01T23:59' });
    expect(empty.numbers).toEqual([]);
    expect(sim.pmsReservations('900001')).toEqual([]);
    expect(sim.pmsRooms('900001').length).toBeGreaterThan(0);
  });

  it('each reservation follows its booking; rooms fit; stays in the past are checked out, future ones are new', () => {
    for (const propertyId of ['500100', '500200']) {
      const tz = sim.content().find((c) => c.id === propertyId)!.timeZone;
      const truth = new Map(sim.pmsReservations(propertyId).map((r) => [r.number, r]));
      for (const b of sim.bookings(propertyId)) expectFollowsBooking(truth.get(b.number)!, b);
      expectRoomsConsistent(sim, propertyId);

      const today = localMinute(t, tz).slice(0, 10);
      const stayIds = new Set<string>();
      let unassignedFuture = 0;
      for (const r of truth.values()) {
        expect(r.modifyDateTime).toMatch(UTC_SECONDS);
        expect(Date.parse(r.modifyDateTime)).toBeLessThanOrEqual(t);
        for (const s of r.roomStays) {
          stayIds.add(s.pmsRoomStayId);
          for (const v of [s.checkInDateTime, s.checkOutDateTime]) expect(v).toMatch(LOCAL_MINUTE);
          if (r.reservationStatus === 'Cancelled') {
            expect(s.status).toBe('Cancelled');
            expect([s.actualCheckInDateTime, s.actualCheckOutDateTime]).toEqual([null, null]);
            continue;
          }
          const inDate = s.checkInDateTime.slice(0, 10);
          const outDate = s.checkOutDateTime.slice(0, 10);
          if (shift(`${outDate}T00:00`, 2 * DAY_MIN).slice(0, 10) < today) {
            expect(s.status).toBe('CheckedOut');
            expect(s.actualCheckInDateTime).toMatch(LOCAL_MINUTE);
            expect(s.actualCheckOutDateTime! > s.actualCheckInDateTime!).toBe(true);
          } else if (shift(`${inDate}T00:00`, -2 * DAY_MIN).slice(0, 10) > today) {
            expect(s.status).toBe('New');
            expect([s.actualCheckInDateTime, s.actualCheckOutDateTime]).toEqual([null, null]);
            if (s.roomId === null) unassignedFuture++;
          }
          // Only stays that have not begun may lack a room.
          if (s.status !== 'New') expect(s.roomId).not.toBeNull();
        }
      }
      expect(stayIds.size).toBe([...truth.values()].reduce((n, r) => n + r.roomStays.length, 0));
      expect(unassignedFuture).toBeGreaterThan(0);
    }
  });

  it('GET reservation serves exactly the truth, in the PmsApi_GetReservationResponse shape', async () => {
    const truth = sim.pmsReservations('500200');
    for (const r of truth) {
      const res = await get<Envelope & { reservation: PmsReservation }>(sim, token, `${PMS('500200')}/reservations/${r.number}`);
      expect(res.status).toBe(200);
      expect(schemaProblems(res.body, 'PmsApi_GetReservationResponse')).toEqual([]);
      expect(res.body.warnings).toEqual([]);
      expect(res.body.errors).toEqual([]);
      expect(res.body.reservation).toEqual(r);
      expect(sim.pmsReservation('500200', r.number)).toEqual(r);
    }
    // Ids are numeric strings, money JSON numbers; the optional parts appear on some reservations.
    const both = [...truth, ...sim.pmsReservations('500100')];
    for (const r of both) {
      expect(r.customer!.pmsPersonId).toMatch(ID);
      for (const s of r.roomStays) {
        expect(s.pmsRoomStayId).toMatch(ID);
        for (const g of s.guestsIds) expect(g).toMatch(ID);
        if (s.roomId !== null) expect(s.roomId).toMatch(ID);
        expect(typeof s.totalPrice.amount.value).toBe('number');
      }
      if (r.customer!.birthDate !== null) expect(r.customer!.birthDate).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      if (r.customer!.citizenship !== null) expect(r.customer!.citizenship).toMatch(/^[A-Z]{3}$/);
    }
    expect(both.some((r) => r.customerCompany !== undefined)).toBe(true);
    expect(both.some((r) => r.agentCommission !== undefined)).toBe(true);
    expect(both.some((r) => r.groupName !== undefined)).toBe(true);
    expect(both.some((r) => r.reservationStatus === 'Unconfirmed')).toBe(true);
    expect(both.some((r) => r.roomStays.some((s) => s.deposit !== undefined))).toBe(true);
    expect(both.some((r) => r.roomStays.some((s) => s.totalPrice.amount.currencyCode === null))).toBe(true);
    expect(both.some((r) => r.roomStays.some((s) => s.totalPrice.amount.currencyCode === r.currencyCode))).toBe(true);
    expect(both.some((r) => r.roomStays.some((s) => s.totalPrice.amount.value === 0))).toBe(true);

    const unknown = await get<Envelope>(sim, token, `${PMS('500200')}/reservations/20250101-500200-1`);
    expect(unknown.status).toBe(404);
    expectEnvelopeError(unknown.body);
    const otherProperty = await get<Envelope>(sim, token, `${PMS('500100')}/reservations/${truth[0]!.number}`);
    expect(otherProperty.status).toBe(404);
    const noProperty = await get<Envelope>(sim, token, `${PMS('123456')}/reservations/${truth[0]!.number}`);
    expect(noProperty.status).toBe(404);
    expectEnvelopeError(noProperty.body);
    expect((await get<Envelope>(sim, token, `${PMS('500200')}/reservations/${truth[0]!.number}`, { languageCode: 'ru' })).status).toBe(200);
    const badLanguage = await get<Envelope>(sim, token, `${PMS('500200')}/reservations/${truth[0]!.number}`, { languageCode: 'xx' });
    expect(badLanguage.status).toBe(400);
    expectEnvelopeError(badLanguage.body);
  });

  it('every person a reservation references has a guest profile; the customer is that profile', async () => {
    const truth = sim.pmsReservations('500200');
    let checked = 0;
    for (const r of truth) {
      const ids = new Set([r.customer!.pmsPersonId, ...r.roomStays.flatMap((s) => s.guestsIds)]);
      for (const id of ids) {
        const res = await get<Envelope & { guest: unknown }>(sim, token, `${PMS('500200')}/guests/${id}`);
        expect(res.status).toBe(200);
        expect(schemaProblems(res.body, 'PmsApi_GetGuestResponse')).toEqual([]);
        expect(res.body.guest).toEqual(sim.pmsGuest('500200', id));
        expect((res.body.guest as { pmsPersonId: string }).pmsPersonId).toBe(id);
        if (id === r.customer!.pmsPersonId) expect(res.body.guest).toEqual(r.customer);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(truth.length);

    // Slot 9 of a reservation is never used; other ids are unknown.
    const unused = `${truth[0]!.customer!.pmsPersonId.slice(0, -1)}9`;
    for (const id of [unused, '4503999999999999', 'someone']) {
      const res = await get<Envelope>(sim, token, `${PMS('500200')}/guests/${id}`);
      expect(res.status, id).toBe(404);
      expectEnvelopeError(res.body);
      expect(sim.pmsGuest('500200', id)).toBeUndefined();
    }
  });

  it('rooms: stable, every room type covered, paged by 7, filtered by room type, PmsApi_FindRoomsResponse shape', async () => {
    const truth = sim.pmsRooms('500100');
    const content = sim.content().find((c) => c.id === '500100')!;
    const paged: RoomsPage['rooms'] = [];
    let res = await get<RoomsPage>(sim, token, `${PMS('500100')}/rooms`, { maxPageSize: '7' });
    for (;;) {
      expect(res.status).toBe(200);
      expect(schemaProblems(res.body, 'PmsApi_FindRoomsResponse')).toEqual([]);
      paged.push(...res.body.rooms);
      if (!res.body.hasNextPage) {
        expect(res.body.nextPageToken).toBeNull();
        break;
      }
      expect(res.body.rooms).toHaveLength(7);
      // The token alone decides: the other parameters are ignored.
      res = await get<RoomsPage>(sim, token, `${PMS('500100')}/rooms`, { pageToken: res.body.nextPageToken!, roomTypeId: 'nope', maxPageSize: '500' });
    }
    expect(paged).toEqual(truth);
    expect(new Set(truth.map((r) => r.id)).size).toBe(truth.length);
    expect(new Set(truth.map((r) => r.displayName)).size).toBe(truth.length);
    for (const r of truth) {
      expect(r.id).toMatch(ID);
      expect(r.floorId).toMatch(ID);
      expect(r.displayName).toMatch(/^\d{3,}$/);
    }
    for (const rt of content.roomTypes) {
      const all = await get<RoomsPage>(sim, token, `${PMS('500100')}/rooms`, { roomTypeId: rt.id });
      expect(all.body.rooms.length).toBeGreaterThan(0);
      expect(all.body.rooms).toEqual(truth.filter((r) => r.roomTypeId === rt.id));
    }
    expect(new Set(truth.map((r) => r.roomTypeId))).toEqual(new Set(content.roomTypes.map((rt) => rt.id)));
    const whole = await get<RoomsPage>(sim, token, `${PMS('500100')}/rooms`);
    expect(whole.body.rooms).toHaveLength(Math.min(100, truth.length));
    for (const maxPageSize of ['0', '101', 'x']) {
      const bad = await get<Envelope>(sim, token, `${PMS('500100')}/rooms`, { maxPageSize });
      expect(bad.status).toBe(400);
      expectEnvelopeError(bad.body);
    }
    expect(sim.pmsRooms('500100')).toEqual(truth);
  });

  it('invoices: one per room stay (one for a group), none when cancelled, the payer and amounts of the reservation, paged; PmsApi_FindInvoicesResponse shape', async () => {
    const reservations = sim.pmsReservations('500100');
    let items = 0;
    for (const r of reservations) {
      const res = await get<{ invoices: unknown[]; hasNextPage: boolean; nextPageToken: string | null }>(
        sim,
        token,
        `${PMS('500100')}/reservations/${r.number}/invoices`,
      );
      expect(res.status).toBe(200);
      expect(schemaProblems(res.body, 'PmsApi_FindInvoicesResponse')).toEqual([]);
      const truth = sim.pmsInvoices('500100', r.number)!;
      expect(res.body.invoices).toEqual(truth);
      if (r.reservationStatus === 'Cancelled') {
        expect(truth).toEqual([]);
        continue;
      }
      if (r.groupName) expect(truth.map((i) => i.pmsRoomStayId)).toEqual([null]);
      else expect(truth.map((i) => i.pmsRoomStayId)).toEqual(r.roomStays.map((st) => st.pmsRoomStayId));
      const payer = r.customerCompany?.name ?? [r.customer?.personName?.firstName, r.customer?.personName?.lastName].filter(Boolean).join(' ');
      for (const inv of truth) {
        expect(inv.payer?.name).toBe(payer);
        const accommodation = inv.items.filter((i) => i.kind === 'RoomType');
        expect(accommodation).toHaveLength(inv.pmsRoomStayId === null ? r.roomStays.length : 1);
        items += inv.items.length;
      }
    }
    expect(items).toBeGreaterThan(reservations.length / 2);
    // Paged by 1 through a group invoice's reservation or any: the token alone decides.
    const several = reservations.find((r) => (sim.pmsInvoices('500100', r.number) ?? []).length > 1);
    if (several) {
      const pages: unknown[] = [];
      let res = await get<{ invoices: unknown[]; hasNextPage: boolean; nextPageToken: string | null }>(
        sim,
        token,
        `${PMS('500100')}/reservations/${several.number}/invoices`,
        {
          maxPageSize: '1',
        },
      );
      for (;;) {
        pages.push(...res.body.invoices);
        if (!res.body.hasNextPage) break;
        res = await get(sim, token, `${PMS('500100')}/reservations/${several.number}/invoices`, { pageToken: res.body.nextPageToken!, maxPageSize: '50' });
      }
      expect(pages).toEqual(sim.pmsInvoices('500100', several.number));
    }
    const missing = await get<Envelope>(sim, token, `${PMS('500100')}/reservations/no-such-number/invoices`);
    expect(missing.status).toBe(404);
    expectEnvelopeError(missing.body);
  });

  it('invoice items as documented: totals tax included (a stay at its price after tax), VAT quoted excluded at one property in two, some invoices in two currencies', async () => {
    const included = new Map<string, Set<boolean>>();
    let mixed = 0;
    for (const pid of ['500100', '500200']) {
      const bookings = new Map(sim.bookings(pid).map((b) => [b.number, b]));
      for (const r of sim.pmsReservations(pid)) {
        const invoices = sim.pmsInvoices(pid, r.number) ?? [];
        for (const inv of invoices) {
          for (const item of inv.items) included.set(pid, (included.get(pid) ?? new Set()).add(item.vat.included));
          if (new Set(inv.items.map((i) => i.total?.currencyCode)).size > 1) mixed += 1;
        }
        const booking = bookings.get(r.number);
        if (!booking || r.groupName || invoices.length === 0) continue;
        // "Cost of an invoice item, tax INCLUDED": the accommodation is the stay's price after tax.
        invoices.forEach((inv, i) => {
          const accommodation = inv.items.find((x) => x.kind === 'RoomType')!;
          expect(accommodation.total?.value).toBe(r.roomStays[i]!.totalPrice.amount.value === 0 ? 0 : booking.roomStays[i]!.total.priceAfterTax);
        });
      }
    }
    expect(included.get('500100')).toEqual(new Set([true]));
    expect(included.get('500200')).toEqual(new Set([false]));
    expect(mixed).toBeGreaterThan(0);
  });

  it('companies: the customer companies the reservations name and the agents, in id order, paged; PmsApi_FindCompaniesResponse shape', async () => {
    const res = await get<{ companies: { id: string; name: string; type: string }[]; hasNextPage: boolean }>(sim, token, `${PMS('500100')}/companies`, {
      maxPageSize: '100',
    });
    expect(res.status).toBe(200);
    expect(schemaProblems(res.body, 'PmsApi_FindCompaniesResponse')).toEqual([]);
    expect(res.body.companies).toEqual(sim.pmsCompanies('500100'));
    expect(res.body.companies.map((c) => c.id)).toEqual(res.body.companies.map((c) => c.id).sort());
    expect(new Set(res.body.companies.map((c) => c.type))).toEqual(new Set(['Customer', 'Payer']));
    const ids = new Set(res.body.companies.map((c) => c.id));
    for (const r of sim.pmsReservations('500100')) if (r.customerCompany) expect(ids.has(r.customerCompany.id!)).toBe(true);
    const first = await get<{ companies: unknown[]; hasNextPage: boolean; nextPageToken: string }>(sim, token, `${PMS('500100')}/companies`, {
      maxPageSize: '4',
    });
    expect(first.body.companies).toHaveLength(4);
    expect(first.body.hasNextPage).toBe(true);
    const second = await get<{ companies: unknown[]; hasNextPage: boolean }>(sim, token, `${PMS('500100')}/companies`, { pageToken: first.body.nextPageToken });
    expect([...first.body.companies, ...second.body.companies]).toEqual(sim.pmsCompanies('500100'));
    expect(second.body.hasNextPage).toBe(false);
  });
});

describe('simulator PMS: loyalty cards', () => {
  let sim: Simulator;
  let token: string;
  beforeAll(async () => {
    sim = await startSimulator({ rateLimits: LIMITS, properties: [{ id: '500100', bookingCount: 200 }] });
    token = await accessToken(sim);
  });
  afterAll(() => sim.close());

  it("a customer holds the cards of the booking's guarantee, a guest sometimes the hotel's; PmsApi_FindGuestLoyaltyCardsResponse shape; 404 for a person the property does not know", async () => {
    let customers = 0;
    let guests = 0;
    for (const r of sim.pmsReservations('500100').slice(0, 80)) {
      for (const id of [r.customer?.pmsPersonId, ...r.roomStays.flatMap((s) => s.guestsIds)].filter((x): x is string => !!x)) {
        const res = await get<{ loyaltyCards: { programId: string; cardNumber: string }[] }>(sim, token, `${PMS('500100')}/guests/${id}/loyalty-cards`, {
          maxPageSize: '100',
        });
        expect(res.status).toBe(200);
        expect(schemaProblems(res.body, 'PmsApi_FindGuestLoyaltyCardsResponse')).toEqual([]);
        expect(res.body.loyaltyCards).toEqual(sim.pmsLoyaltyCards('500100', id));
        if (id === r.customer?.pmsPersonId) customers += res.body.loyaltyCards.length;
        else guests += res.body.loyaltyCards.length;
      }
    }
    expect(customers).toBeGreaterThan(0);
    expect(guests).toBeGreaterThanOrEqual(0);
    const missing = await get<Envelope>(sim, token, `${PMS('500100')}/guests/450399999999999/loyalty-cards`);
    expect(missing.status).toBe(404);
    expect(schemaProblems(missing.body, 'PmsApi_ApiResponse')).toEqual([]);
  });
});

describe('simulator PMS: reservation search', () => {
  let t = Date.UTC(2025, 5, 1, 12, 0, 0);
  let sim: Simulator;
  let token: string;
  const tzOf = (propertyId: string) => sim.content().find((c) => c.id === propertyId)!.timeZone;
  beforeAll(async () => {
    sim = await startSimulator({
      now: () => t,
      rateLimits: LIMITS,
      properties: [
        { id: '500100', bookingCount: 300 },
        { id: '500200', bookingCount: 150 },
      ],
    });
    token = await accessToken(sim);
  });
  afterAll(() => sim.close());

  const search = (propertyId: string, query: Record<string, string>) => get<SearchPage>(sim, token, `${PMS(propertyId)}/reservations/search`, query);

  it('modify window at minute edges, in the property-local time of a non-UTC zone', async () => {
    const tz = tzOf('500100');
    expect(tz).toBe('Europe/Moscow');
    const active = sim.pmsReservations('500100').filter((r) => r.reservationStatus !== 'Cancelled');
    const [x, y] = [active[0]!.number, active[1]!.number];

    t = Date.UTC(2025, 5, 1, 12, 0, 59, 999);
    sim.pmsCancel('500100', x);
    t = Date.UTC(2025, 5, 1, 12, 1, 0, 0);
    sim.pmsCancel('500100', y);
    expect(sim.pmsReservation('500100', x)!.modifyDateTime).toBe('2025-06-01T12:00:59Z');
    expect(sim.pmsReservation('500100', y)!.modifyDateTime).toBe('2025-06-01T12:01:00Z');
    // Moscow is UTC+3: the local minutes are 15:00 and 15:01.
    expect(localMinute(Date.UTC(2025, 5, 1, 12, 0, 59, 999), tz)).toBe('2025-06-01T15:00');

    const found = async (start: string, end: string) =>
      (await searchAll(sim, token, '500100', { state: 'Cancelled', startModifyDateTime: start, endModifyDateTime: end })).numbers;
    // Modified within the end minute: included; a minute later: not.
    expect(await found('2025-06-01T14:00', '2025-06-01T15:00')).toContain(x);
    expect(await found('2025-06-01T14:00', '2025-06-01T15:00')).not.toContain(y);
    expect(await found('2025-06-01T15:00', '2025-06-01T15:00')).toEqual([x]);
    expect(await found('2025-06-01T15:01', '2025-06-01T15:01')).toEqual([y]);
    expect(await found('2025-06-01T15:00', '2025-06-01T15:01')).toEqual([x, y]);
    expect(await found('2025-06-01T14:59', '2025-06-01T14:59')).toEqual([]);
    // The same digits read as UTC find neither.
    expect(await found('2025-06-01T12:00', '2025-06-01T12:01')).toEqual([]);
    // Active no longer has them.
    const stillActive = await searchAll(sim, token, '500100', {
      state: 'Active',
      startModifyDateTime: '2024-06-02T00:00',
      endModifyDateTime: '2025-06-01T23:59',
    });
    expect(stillActive.numbers).not.toContain(x);
  });

  it('a zone with summer time: the offset of the modification instant applies', async () => {
    const tz = tzOf('500200');
    expect(tz).toBe('Europe/Berlin');
    const [summer, winter] = sim.pmsReservations('500200').filter((r) => r.reservationStatus !== 'Cancelled');
    t = Date.UTC(2025, 6, 10, 10, 30, 0);
    sim.pmsCancel('500200', summer!.number);
    t = Date.UTC(2025, 11, 10, 10, 30, 0);
    sim.pmsCancel('500200', winter!.number);
    token = await accessToken(sim);
    const found = async (start: string) =>
      (await searchAll(sim, token, '500200', { state: 'Cancelled', startModifyDateTime: start, endModifyDateTime: start })).numbers;
    expect(await found('2025-07-10T12:30')).toEqual([summer!.number]);
    expect(await found('2025-12-10T11:30')).toEqual([winter!.number]);
  });

  it('modify and affect windows match what the truth says; both states partition every window', async () => {
    const tz = tzOf('500100');
    const truth = sim.pmsReservations('500100');
    const now = localMinute(t, tz);
    const start = shift(now, -365 * DAY_MIN);
    for (const state of ['Active', 'Cancelled'] as const) {
      const { numbers } = await searchAll(sim, token, '500100', { state, startModifyDateTime: start, endModifyDateTime: now });
      expect(numbers.sort()).toEqual(modifiedWithin(truth, tz, start, now, state).sort());
    }
    // Affect window: a planned stay overlapping it (check-in <= end, check-out >= start).
    const [aStart, aEnd] = ['2025-03-01T00:00', '2025-05-31T23:59'];
    const overlapping = (r: PmsReservation) => r.roomStays.some((s) => s.checkInDateTime <= aEnd && s.checkOutDateTime >= aStart);
    const active = await searchAll(sim, token, '500100', { state: 'Active', startAffectPeriodDateTime: aStart, endAffectPeriodDateTime: aEnd });
    const cancelled = await searchAll(sim, token, '500100', { state: 'Cancelled', startAffectPeriodDateTime: aStart, endAffectPeriodDateTime: aEnd });
    expect(active.numbers.length).toBeGreaterThan(0);
    expect(active.numbers.filter((n) => cancelled.numbers.includes(n))).toEqual([]);
    expect([...active.numbers, ...cancelled.numbers].sort()).toEqual(
      truth
        .filter(overlapping)
        .map((r) => r.number)
        .sort(),
    );
    // Both windows: both must match.
    const both = await searchAll(sim, token, '500100', {
      state: 'Active',
      startAffectPeriodDateTime: aStart,
      endAffectPeriodDateTime: aEnd,
      startModifyDateTime: start,
      endModifyDateTime: now,
    });
    const modified = new Set(modifiedWithin(truth, tz, start, now, 'Active'));
    expect(both.numbers.sort()).toEqual(active.numbers.filter((n) => modified.has(n)).sort());
    // roomId: reservations with a stay in that room.
    const room = truth.find((r) => r.reservationStatus !== 'Cancelled' && overlapping(r) && r.roomStays[0]!.roomId !== null)!.roomStays[0]!.roomId!;
    const inRoom = await searchAll(sim, token, '500100', { state: 'Active', startAffectPeriodDateTime: aStart, endAffectPeriodDateTime: aEnd, roomId: room });
    expect(inRoom.numbers.length).toBeGreaterThan(0);
    for (const n of inRoom.numbers) expect(truth.find((r) => r.number === n)!.roomStays.some((s) => s.roomId === room)).toBe(true);
  });

  it('pages of 7 return each number once, in (modifyDateTime, number) order; the token ignores every other parameter', async () => {
    const tz = tzOf('500100');
    const truth = sim.pmsReservations('500100');
    const now = localMinute(t, tz);
    const start = shift(now, -365 * DAY_MIN);
    const query = { state: 'Active', startModifyDateTime: start, endModifyDateTime: now, maxPageSize: '7' };
    const { numbers, pages } = await searchAll(sim, token, '500100', query);
    expect(pages.length).toBeGreaterThanOrEqual(3);
    expect(new Set(numbers).size).toBe(numbers.length);
    expect([...numbers].sort()).toEqual(modifiedWithin(truth, tz, start, now, 'Active').sort());
    const order = truth.map((r) => r.number);
    const positions = numbers.map((n) => order.indexOf(n));
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
    for (const r of truth) expect(order.indexOf(r.number)).toBe(truth.indexOf(r));
    expect(truth.map((r) => [r.modifyDateTime, r.number].join(' '))).toEqual(truth.map((r) => [r.modifyDateTime, r.number].join(' ')).sort());

    const first = pages[0]!;
    const clean = await search('500100', { pageToken: first.nextPageToken! });
    const noisy = await search('500100', {
      pageToken: first.nextPageToken!,
      state: 'Bogus',
      maxPageSize: '1000',
      startModifyDateTime: 'garbage',
      endAffectPeriodDateTime: '2099-01-01T00:00',
    });
    expect(noisy.status).toBe(200);
    expect(noisy.body).toEqual(clean.body);
    expect(clean.body.reservations.map((r) => r.number)).toEqual(numbers.slice(7, 14));

    const bad = await search('500100', { pageToken: 'not-a-token' });
    expect(bad.status).toBe(400);
    expectEnvelopeError(bad.body);
    const foreign = await search('500200', { pageToken: first.nextPageToken! });
    expect(foreign.status).toBe(400);
  });

  it('400 with the PMS envelope for bad parameters; windows of 365 days are the limit', async () => {
    const ok = (q: Record<string, string>) => search('500100', { state: 'Active', ...q });
    expect((await ok({ startModifyDateTime: '2024-06-01T00:00', endModifyDateTime: '2025-06-01T00:00' })).status).toBe(200);
    expect((await ok({ startAffectPeriodDateTime: '2024-06-01T00:00', endAffectPeriodDateTime: '2025-06-01T00:00' })).status).toBe(200);
    expect((await ok({ startModifyDateTime: '2025-06-01T00:00', endModifyDateTime: '2025-06-01T00:00', maxPageSize: '100' })).status).toBe(200);
    const cases: Record<string, string>[] = [
      { startModifyDateTime: '2024-06-01T00:00', endModifyDateTime: '2025-06-01T00:01' },
      { startAffectPeriodDateTime: '2024-06-01T00:00', endAffectPeriodDateTime: '2025-06-01T00:01' },
      {
        startModifyDateTime: '2024-06-01T00:00',
        endModifyDateTime: '2024-07-01T00:00',
        startAffectPeriodDateTime: '2020-01-01T00:00',
        endAffectPeriodDateTime: '2025-01-01T00:00',
      },
      {},
      { startModifyDateTime: '2025-05-01T00:00' },
      { endAffectPeriodDateTime: '2025-05-01T00:00' },
      { startModifyDateTime: '2025-05-01 00:00', endModifyDateTime: '2025-05-02T00:00' },
      { startModifyDateTime: '2025-05-01T00:00:00', endModifyDateTime: '2025-05-02T00:00' },
      { startModifyDateTime: '2025-02-30T00:00', endModifyDateTime: '2025-03-02T00:00' },
      { startModifyDateTime: '2025-05-02T00:00', endModifyDateTime: '2025-05-01T00:00' },
      { startModifyDateTime: '2025-05-01T00:00', endModifyDateTime: '2025-05-02T00:00', maxPageSize: '101' },
      { startModifyDateTime: '2025-05-01T00:00', endModifyDateTime: '2025-05-02T00:00', maxPageSize: '0' },
    ];
    for (const q of cases) {
      const res = await ok(q);
      expect(res.status, JSON.stringify(q)).toBe(400);
      expectEnvelopeError(res.body);
    }
    const formats = await ok({ startModifyDateTime: '2025-05-01 00:00', endModifyDateTime: '2025-05-02T00:00' });
    expect(formats.body.errors[0]!.code).toBe('11');
    for (const state of [undefined, 'Bogus']) {
      const q: Record<string, string> = { startModifyDateTime: '2025-05-01T00:00', endModifyDateTime: '2025-05-02T00:00' };
      if (state) q['state'] = state;
      const res = await search('500100', q);
      expect(res.status).toBe(400);
      expectEnvelopeError(res.body);
    }
    const noProperty = await search('123456', { state: 'Active', startModifyDateTime: '2025-05-01T00:00', endModifyDateTime: '2025-05-02T00:00' });
    expect(noProperty.status).toBe(404);
    expectEnvelopeError(noProperty.body);
  });

  it('pmsLegacyPageTokenKey: the token comes as pageToken (and still works)', async () => {
    const tz = tzOf('500100');
    const now = localMinute(t, tz);
    const query = { state: 'Active', startModifyDateTime: shift(now, -365 * DAY_MIN), endModifyDateTime: now, maxPageSize: '7' };
    const normal = await search('500100', query);
    sim.faults.pmsLegacyPageTokenKey = true;
    try {
      const legacy = await search('500100', query);
      expect(legacy.status).toBe(200);
      expect('nextPageToken' in legacy.body).toBe(false);
      expect(legacy.body.pageToken).toBe(normal.body.nextPageToken);
      expect(legacy.body.reservations).toEqual(normal.body.reservations);
      const next = await search('500100', { pageToken: legacy.body.pageToken! });
      expect(next.status).toBe(200);
      expect(next.body.reservations).toHaveLength(7);
      const rooms = await get<Record<string, unknown>>(sim, token, `${PMS('500100')}/rooms`, { maxPageSize: '2' });
      expect(typeof rooms.body['pageToken']).toBe('string');
      expect('nextPageToken' in rooms.body).toBe(false);
    } finally {
      sim.faults.pmsLegacyPageTokenKey = false;
    }
  });
});

describe('simulator PMS: mutate() and the PMS-only operations', () => {
  let t = Date.UTC(2025, 5, 1, 12, 0, 0);
  let sim: Simulator;
  let token: string;
  beforeAll(async () => {
    sim = await startSimulator({ now: () => t, rateLimits: LIMITS, tokenTtlSeconds: 30 * 86_400, properties: [{ id: '500100', bookingCount: 250 }] });
    token = await accessToken(sim);
  });
  afterAll(() => sim.close());

  it('mutate() changes the reservation of every booking it changes or creates, and nothing else', async () => {
    const tz = sim.content()[0]!.timeZone;
    const before = new Map(sim.pmsReservations('500100').map((r) => [r.number, r]));
    const bookingsBefore = new Map(sim.bookings('500100').map((b) => [b.number, b]));
    t = Date.UTC(2025, 5, 2, 9, 0, 0);
    sim.mutate({ count: 25, newCount: 4, propertyId: '500100' });
    const after = new Map(sim.pmsReservations('500100').map((r) => [r.number, r]));
    const changed: string[] = [];
    for (const b of sim.bookings('500100')) {
      const r = after.get(b.number)!;
      expectFollowsBooking(r, b);
      const old = bookingsBefore.get(b.number);
      if (!old || old.modifiedDateTime !== b.modifiedDateTime) {
        changed.push(b.number);
        expect(r.modifyDateTime).toBe(b.modifiedDateTime);
        expect(Date.parse(r.modifyDateTime)).toBeGreaterThanOrEqual(Math.floor(t / 1000) * 1000);
      } else {
        expect(r).toEqual(before.get(b.number));
      }
    }
    expect(changed.length).toBeGreaterThanOrEqual(4);
    expect(changed.filter((n) => !before.has(n))).toHaveLength(4);
    expectRoomsConsistent(sim, '500100');

    const minute = localMinute(t, tz);
    const found = [
      ...(await searchAll(sim, token, '500100', { state: 'Active', startModifyDateTime: minute, endModifyDateTime: shift(minute, 1) })).numbers,
      ...(await searchAll(sim, token, '500100', { state: 'Cancelled', startModifyDateTime: minute, endModifyDateTime: shift(minute, 1) })).numbers,
    ];
    expect(found.sort()).toEqual([...changed].sort());
  });

  it('pmsCheckIn, pmsCheckOut, pmsChangeRoom and pmsCancel change the PMS side only, modified now', async () => {
    const tz = sim.content()[0]!.timeZone;
    const bookings = JSON.stringify(sim.bookings('500100'));
    const target = sim
      .pmsReservations('500100')
      .find((r) => r.reservationStatus !== 'Cancelled' && r.roomStays[0]!.status === 'New' && r.roomStays[0]!.roomId === null)!;
    expect(target).toBeDefined();

    t = Date.UTC(2025, 5, 3, 10, 15, 42);
    sim.pmsCheckIn('500100', target.number);
    let r = sim.pmsReservation('500100', target.number)!;
    expect(r.modifyDateTime).toBe('2025-06-03T10:15:42Z');
    expect(r.roomStays[0]!.status).toBe('CheckedIn');
    expect(r.roomStays[0]!.actualCheckInDateTime).toBe(localMinute(t, tz));
    expect(r.roomStays[0]!.actualCheckOutDateTime).toBeNull();
    expect(r.roomStays[0]!.roomId).not.toBeNull();
    expect(() => sim.pmsCheckIn('500100', target.number)).toThrow();

    t += 3_600_000;
    sim.pmsCheckOut('500100', target.number, 0);
    r = sim.pmsReservation('500100', target.number)!;
    expect(r.roomStays[0]!.status).toBe('CheckedOut');
    expect(r.roomStays[0]!.actualCheckOutDateTime).toBe(localMinute(t, tz));
    expect(r.modifyDateTime).toBe('2025-06-03T11:15:42Z');
    expect(() => sim.pmsCheckOut('500100', target.number, 0)).toThrow();
    expect(() => sim.pmsCheckIn('500100', target.number, 99)).toThrow();

    const moving = sim.pmsReservations('500100').find((x) => x.reservationStatus !== 'Cancelled' && x.roomStays[0]!.roomId !== null)!;
    const oldRoom = moving.roomStays[0]!.roomId!;
    t += 60_000;
    sim.pmsChangeRoom('500100', moving.number, 0);
    r = sim.pmsReservation('500100', moving.number)!;
    expect(r.roomStays[0]!.roomId).not.toBe(oldRoom);
    expect(sim.pmsRooms('500100').find((x) => x.id === r.roomStays[0]!.roomId)!.roomTypeId).toBe(r.roomStays[0]!.roomTypeId);
    t += 60_000;
    sim.pmsChangeRoom('500100', moving.number, 0, oldRoom);
    expect(sim.pmsReservation('500100', moving.number)!.roomStays[0]!.roomId).toBe(oldRoom);
    const otherType = sim.pmsRooms('500100').find((x) => x.roomTypeId !== r.roomStays[0]!.roomTypeId)!;
    expect(() => sim.pmsChangeRoom('500100', moving.number, 0, otherType.id)).toThrow();
    expectRoomsConsistent(sim, '500100');

    t += 60_000;
    sim.pmsCancel('500100', moving.number);
    r = sim.pmsReservation('500100', moving.number)!;
    expect(r.reservationStatus).toBe('Cancelled');
    expect(r.roomStays.every((s) => s.status === 'Cancelled' && s.roomId === null)).toBe(true);
    expect(r.modifyDateTime).toBe(new Date(Math.floor(t / 1000) * 1000).toISOString().slice(0, 19) + 'Z');
    expect(() => sim.pmsCancel('500100', moving.number)).toThrow();
    expect(() => sim.pmsCancel('500100', 'no-such-number')).toThrow();
    const minute = localMinute(t, tz);
    const cancelled = await searchAll(sim, token, '500100', { state: 'Cancelled', startModifyDateTime: minute, endModifyDateTime: minute });
    expect(cancelled.numbers).toEqual([moving.number]);

    // The bookings are untouched by the PMS-only operations.
    expect(JSON.stringify(sim.bookings('500100'))).toBe(bookings);
  });
});
