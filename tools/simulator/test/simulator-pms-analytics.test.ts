/**
 * The simulator's PMS Analytics (daily occupancy, derived from the PMS reservations) and PMS
 * Integration Storage (bookings, inventory blocks) over real HTTP, validated against the
 * provider's schemas; and the simulator's faults and rate limits on the PMS paths.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { computeDailyOccupancy, startSimulator, type DailyOccupancy, type IntegrationStorageBooking, type InventoryBlock, type Simulator } from '../index.js';
import { schemaProblemsIn, type SchemaDef } from '../../../test/helpers/schema-check.js';
import { accessToken, noLimits } from '../../../test/helpers/simulator-http.js';

// ---- The provider's PMS Analytics and PMS Integration Storage schemas, and a checker ----
// A compact copy of the provider's PmsAnalyticsApi_* and PmsIntegrationApi_* schemas (required
// fields, field types, nullability, enums): "T?" is nullable, "T[]" an array, "@Name" another
// schema. A field the schema does not list is an error: field names must be exactly these.

const SCHEMAS: Record<string, SchemaDef> = {
  PmsAnalyticsApi_GetDailyOccupancyResponse: {
    required: ['currencyCode', 'propertyRoomCount'],
    props: {
      warnings: '@PmsAnalyticsApi_ResponseError[]?',
      errors: '@PmsAnalyticsApi_ResponseError[]?',
      currencyCode: 'string?',
      propertyRoomCount: 'integer:int32',
      dailyOccupancies: '@PmsAnalyticsApi_DailyOccupancy[]',
    },
  },
  PmsAnalyticsApi_ResponseError: {
    required: [],
    props: { code: 'string?', message: 'string?' },
  },
  PmsAnalyticsApi_DailyOccupancy: {
    required: [
      'arrivalCount',
      'closedRoomCount',
      'complimentaryOccupancyRoomCount',
      'date',
      'guestCount',
      // Required by the OpenAPI document; the specification lists it without a promise, and the
      // simulator leaves it out on a date without meal revenue.
      'occupancyRate',
      'occupancyRoomCount',
      'revenue',
      'roomRevenue',
    ],
    props: {
      date: 'string:date',
      occupancyRate: 'number:double',
      closedRoomCount: 'integer:int32',
      occupancyRoomCount: 'integer:int32',
      complimentaryOccupancyRoomCount: 'integer:int32',
      roomRevenue: 'number:double',
      revenue: 'number:double',
      mealRevenue: 'number:double',
      arrivalCount: 'integer:int32',
      guestCount: 'integer:int32',
    },
  },
  PmsAnalyticsApi_ApiResponse: {
    required: [],
    props: { warnings: '@PmsAnalyticsApi_ResponseError[]?', errors: '@PmsAnalyticsApi_ResponseError[]?' },
  },
  PmsIntegrationApi_BookingRs: {
    required: [],
    props: { booking: '@PmsIntegrationApi_Booking' },
  },
  PmsIntegrationApi_Booking: {
    required: ['bookingChannels', 'id', 'propertyId', 'roomRevenues', 'roomStays', 'uniqueIds'],
    props: {
      id: 'string',
      status: '@PmsIntegrationApi_BookingStatus',
      uniqueIds: '@PmsIntegrationApi_BookingUniqueId[]',
      bookingChannels: '@PmsIntegrationApi_BookingChannel[]',
      roomStays: '@PmsIntegrationApi_BookingRoomStay[]',
      total: '@PmsIntegrationApi_BookingAmount',
      guaranteeInfo: '@PmsIntegrationApi_BookingGuaranteeInfo',
      propertyId: 'string',
      pmsSideUpdateDateTime: 'string:date-time',
      pmsSideCreateDateTime: 'string:date-time',
      updateDateTime: 'string:date-time',
      cancellationInfo: '@PmsIntegrationApi_BookingCancellationInfo',
      roomRevenues: '@PmsIntegrationApi_BookingRoomRevenue[]',
    },
  },
  PmsIntegrationApi_BookingStatus: { enum: ['Unknown', 'Confirmed', 'Waitlisted', 'InHouse', 'CheckedOut', 'Cancelled'] },
  PmsIntegrationApi_BookingUniqueId: {
    required: [],
    props: { id: 'string?', idContext: '@PmsIntegrationApi_BookingUniqueIdContext' },
  },
  PmsIntegrationApi_BookingUniqueIdContext: { enum: ['Unknown', 'Pms', 'Internal', 'External'] },
  PmsIntegrationApi_BookingChannel: {
    required: [],
    props: {
      code: 'string?',
      codeType: '@PmsIntegrationApi_BookingChannelCodeType',
      name: 'string?',
      bookingChannelType: '@PmsIntegrationApi_BookingChannelType',
    },
  },
  PmsIntegrationApi_BookingChannelCodeType: { enum: ['Unknown', 'Pms'] },
  PmsIntegrationApi_BookingChannelType: { enum: ['Unknown', 'TravelAgent', 'Company'] },
  PmsIntegrationApi_BookingRoomStay: {
    required: ['guestCounts', 'inventoryBlocks', 'ratePlans', 'roomRates', 'roomTypes', 'services'],
    props: {
      index: 'integer:int32',
      sourceOfBusiness: 'string?',
      marketCode: 'string?',
      roomTypes: '@PmsIntegrationApi_BookingRoomType[]',
      ratePlans: '@PmsIntegrationApi_BookingRatePlan[]',
      inventoryBlocks: '@PmsIntegrationApi_BookingInventoryBlock[]',
      roomRates: '@PmsIntegrationApi_BookingRoomRate[]',
      services: '@PmsIntegrationApi_BookingService[]',
      guestCounts: '@PmsIntegrationApi_BookingGuestCount[]',
      stayDates: '@PmsIntegrationApi_BookingStayDates',
      roomShare: '@PmsIntegrationApi_BookingRoomShare',
    },
  },
  PmsIntegrationApi_BookingRoomType: {
    required: [],
    props: { index: 'integer:int32', pmsSideCode: 'string?', pmsSideRoomNumber: 'string?' },
  },
  PmsIntegrationApi_BookingRatePlan: {
    required: [],
    props: { index: 'integer:int32', pmsSideCode: 'string?' },
  },
  PmsIntegrationApi_BookingInventoryBlock: {
    required: [],
    props: { index: 'integer:int32', pmsSideCode: 'string?' },
  },
  PmsIntegrationApi_BookingRoomRate: {
    required: [],
    props: {
      stayDate: 'string:date',
      roomTypeIndex: 'integer:int32',
      ratePlanIndex: 'integer:int32',
      inventoryBlockIndex: 'integer:int32?',
      total: '@PmsIntegrationApi_BookingAmount',
    },
  },
  PmsIntegrationApi_BookingAmount: {
    required: ['currencyCode'],
    props: { amountAfterTax: 'number:double', currencyCode: 'string' },
  },
  PmsIntegrationApi_BookingService: {
    required: [],
    props: {
      quantity: 'integer:int32',
      pmsSideCode: 'string?',
      name: 'string?',
      startDate: 'string:date',
      durationStayUnits: 'integer:int32',
      total: '@PmsIntegrationApi_BookingAmount',
      inclusive: 'boolean',
    },
  },
  PmsIntegrationApi_BookingGuestCount: {
    required: [],
    props: { ageQualifyingCode: '@PmsIntegrationApi_BookingAgeQualifyingCode', count: 'integer:int32', age: 'integer:int32?' },
  },
  PmsIntegrationApi_BookingAgeQualifyingCode: { enum: ['AdultBed', 'ChildBandBed'] },
  PmsIntegrationApi_BookingStayDates: {
    required: [],
    props: {
      arrivalDateTime: 'string:date-time',
      departureDateTime: 'string:date-time',
      actualCheckInDateTime: 'string:date-time?',
      actualCheckOutDateTime: 'string:date-time?',
    },
  },
  PmsIntegrationApi_BookingRoomShare: {
    required: ['roomShareCode'],
    props: { roomShareCode: 'string', isPrimaryRoomShare: 'boolean' },
  },
  PmsIntegrationApi_BookingGuaranteeInfo: {
    required: [],
    props: { guaranteeCode: 'string?' },
  },
  PmsIntegrationApi_BookingCancellationInfo: {
    required: [],
    props: { pmsSideCancelDateTime: 'string:date-time', cancelReason: 'string?' },
  },
  PmsIntegrationApi_BookingRoomRevenue: {
    required: [],
    props: { stayDate: 'string:date', amount: '@PmsIntegrationApi_BookingAmount' },
  },
  PmsIntegrationApi_InventoryBlockRs: {
    required: [],
    props: { inventoryBlock: '@PmsIntegrationApi_InventoryBlock' },
  },
  PmsIntegrationApi_InventoryBlock: {
    required: ['dailyItems', 'id', 'propertyId', 'ratePlanCodes'],
    props: {
      id: 'string',
      propertyId: 'string',
      pmsSideId: 'string?',
      pmsSideCode: 'string?',
      updateDateTime: 'string:date-time',
      pmsSideCreateDateTime: 'string:date-time',
      pmsSideCancelDateTime: 'string:date-time?',
      ratePlanCodes: 'string[]',
      blockStatus: '@PmsIntegrationApi_InventoryBlockStatus',
      pmsBlockStatus: 'string?',
      dailyItems: '@PmsIntegrationApi_DailyInventoryBlock[]',
    },
  },
  PmsIntegrationApi_InventoryBlockStatus: { enum: ['Unknown', 'Inquiry', 'Active', 'Cancelled'] },
  PmsIntegrationApi_DailyInventoryBlock: {
    required: [],
    props: {
      date: 'string:date',
      roomTypeCode: 'string?',
      blockedCount: 'integer:int32',
      realizedCount: 'integer:int32?',
      cutoffDate: 'string:date?',
      pricing: '@PmsIntegrationApi_DailyInventoryBlockPricing',
    },
  },
  PmsIntegrationApi_DailyInventoryBlockPricing: {
    required: ['currencyCode'],
    props: { oneAdultPrice: 'number:double?', servicesPrice: 'number:double?', currencyCode: 'string' },
  },
  PmsIntegrationApi_ErrorRs: {
    required: [],
    props: { errors: '@PmsIntegrationApi_Error[]?' },
  },
  PmsIntegrationApi_Error: {
    required: [],
    props: { code: 'string?', message: 'string?' },
  },
};

/** What does not fit schema `name` in `value` (empty when it fits). */
const schemaProblems = (value: unknown, name: string): string[] => schemaProblemsIn(SCHEMAS, value, name);

// ---- Helpers ----

const LIMITS = { ...noLimits, integrationStorage: [{ limit: 1_000_000, windowMs: 1000 }] };
const OCCUPANCY = (propertyId: string) => `/api/pms-analytics/v1/properties/${propertyId}/daily-occupancy`;
const STORAGE = (propertyId: string) => `/api/pms-integration-storage/v1/properties/${propertyId}`;
const PMS = (propertyId: string) => `/api/pms/v2/properties/${propertyId}`;
const UTC_SECONDS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
const LOCAL_SECONDS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/;

interface Envelope {
  warnings?: unknown[];
  errors: { code: string; message: string }[];
}
interface OccupancyBody extends Envelope {
  currencyCode: string;
  propertyRoomCount: number;
  dailyOccupancies: DailyOccupancy[];
}

function request(sim: Simulator, token: string | undefined, path: string, query: Record<string, string> = {}, init: RequestInit = {}): Promise<Response> {
  const qs = new URLSearchParams(query).toString();
  const headers = new Headers(init.headers);
  if (token !== undefined) headers.set('authorization', `Bearer ${token}`);
  return fetch(`${sim.url}${path}${qs ? `?${qs}` : ''}`, { ...init, headers });
}

async function get<T>(sim: Simulator, token: string, path: string, query: Record<string, string> = {}): Promise<{ status: number; body: T }> {
  const res = await request(sim, token, path, query);
  return { status: res.status, body: (await res.json()) as T };
}

const dayOf = (date: string) => Date.parse(`${date}T00:00:00Z`) / 86_400_000;
const dateOf = (day: number) => new Date(day * 86_400_000).toISOString().slice(0, 10);
const round4 = (x: number) => Math.round(x * 10_000) / 10_000;

function localMinute(ms: number, timeZone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-CA', { timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit' })
      .formatToParts(new Date(ms))
      .map((p) => [p.type, p.value]),
  );
  return `${parts['year']}-${parts['month']}-${parts['day']}T${parts['hour']}:${parts['minute']}`;
}

// ---- Tests ----

describe('simulator PMS analytics: daily occupancy', () => {
  let t = Date.UTC(2025, 5, 1, 12, 0, 0);
  let sim: Simulator;
  let token: string;
  const P = '500100';
  const [start, end] = ['2025-05-15', '2025-06-14'];
  beforeAll(async () => {
    sim = await startSimulator({ now: () => t, rateLimits: LIMITS, properties: [{ id: P, bookingCount: 600 }] });
    token = await accessToken(sim);
  });
  afterAll(() => sim.close());

  const occupancy = (query: Record<string, string>) => get<OccupancyBody>(sim, token, OCCUPANCY(P), query);

  it('serves what computeDailyOccupancy computes from the stays, in the PmsAnalyticsApi shape', async () => {
    const res = await occupancy({ startStayDate: start, endStayDate: end });
    expect(res.status).toBe(200);
    expect(schemaProblems(res.body, 'PmsAnalyticsApi_GetDailyOccupancyResponse')).toEqual([]);
    expect(res.body.warnings).toEqual([]);
    expect(res.body.errors).toEqual([]);
    expect(res.body.currencyCode).toBe(sim.content()[0]!.currency);
    expect(res.body.propertyRoomCount).toBe(sim.pmsRooms(P).length);
    expect(res.body.dailyOccupancies.map((d) => d.date)).toEqual(Array.from({ length: 31 }, (_, i) => dateOf(dayOf(start) + i)));
    const pure = computeDailyOccupancy(sim.occupancyInput(P), start, end);
    expect(res.body.dailyOccupancies).toEqual(pure.dailyOccupancies);
    expect(res.body.currencyCode).toBe(pure.currencyCode);
    expect(res.body.propertyRoomCount).toBe(pure.propertyRoomCount);
    expect(sim.dailyOccupancy(P, start, end)).toEqual(res.body.dailyOccupancies);
    expect(res.body.dailyOccupancies.some((d) => d.occupancyRoomCount > 0)).toBe(true);
  });

  it('counts recomputed here from the served reservations agree; the rate follows its formula', async () => {
    const res = await occupancy({ startStayDate: start, endStayDate: end });
    const stays = sim.pmsReservations(P).flatMap((r) => (r.reservationStatus === 'Cancelled' ? [] : r.roomStays));
    const rooms = sim.pmsRooms(P).length;
    for (const d of res.body.dailyOccupancies) {
      const occupying = stays.filter((s) => s.checkInDateTime.slice(0, 10) <= d.date && s.checkOutDateTime.slice(0, 10) > d.date);
      expect(d.occupancyRoomCount, d.date).toBe(occupying.filter((s) => s.totalPrice.amount.value > 0).length);
      expect(d.complimentaryOccupancyRoomCount, d.date).toBe(occupying.filter((s) => s.totalPrice.amount.value === 0).length);
      expect(d.arrivalCount, d.date).toBe(stays.filter((s) => s.checkInDateTime.slice(0, 10) === d.date).length);
      expect(d.guestCount, d.date).toBe(occupying.reduce((n, s) => n + s.guestCount.adults + s.guestCount.children, 0));
      expect(d.closedRoomCount).toBeGreaterThanOrEqual(0);
      expect(d.closedRoomCount).toBeLessThan(rooms);
      expect(d.occupancyRate).toBe(Math.min(1, round4((d.occupancyRoomCount + d.complimentaryOccupancyRoomCount) / (rooms - d.closedRoomCount))));
      expect(d.occupancyRate).toBeGreaterThanOrEqual(0);
      expect(d.occupancyRate).toBeLessThanOrEqual(1);
      expect(d.roomRevenue).toBeGreaterThanOrEqual(0);
      expect(d.revenue).toBeGreaterThanOrEqual(d.roomRevenue);
      if (d.mealRevenue === undefined) expect('mealRevenue' in d).toBe(false);
      else {
        expect(d.mealRevenue).toBeGreaterThan(0);
        expect(d.mealRevenue).toBeLessThanOrEqual(d.revenue - d.roomRevenue + 1e-6);
      }
    }
    // Both shapes in one answer: dates with meal revenue and dates without the field.
    expect(new Set(res.body.dailyOccupancies.map((d) => 'mealRevenue' in d))).toEqual(new Set([true, false]));
  });

  it('the stays of occupancyInput are the served reservations: dates, guests, nightly prices summing to the amount', () => {
    const input = sim.occupancyInput(P);
    const served = sim.pmsReservations(P);
    expect(input.stays).toHaveLength(served.reduce((n, r) => n + r.roomStays.length, 0));
    let k = 0;
    let complimentary = 0;
    for (const r of served) {
      for (const s of r.roomStays) {
        const stay = input.stays[k++]!;
        expect(stay.number).toBe(r.number);
        expect(stay.cancelled).toBe(r.reservationStatus === 'Cancelled');
        expect(stay.arrivalDate).toBe(s.checkInDateTime.slice(0, 10));
        expect(stay.departureDate).toBe(s.checkOutDateTime.slice(0, 10));
        expect(stay.nights).toHaveLength(dayOf(stay.departureDate) - dayOf(stay.arrivalDate));
        expect(Math.round(stay.nights.reduce((sum, n) => sum + n.room, 0) * 100)).toBe(Math.round(s.totalPrice.amount.value * 100));
        expect([stay.adults, stay.children]).toEqual([s.guestCount.adults, s.guestCount.children]);
        if (!stay.cancelled && stay.nights.every((n) => n.room === 0)) complimentary++;
      }
    }
    expect(complimentary).toBeGreaterThan(0);
    // Complimentary nights show up somewhere in the statistics.
    const wide = computeDailyOccupancy(input, '2025-02-01', '2025-07-31');
    expect(wide.dailyOccupancies.some((d) => d.complimentaryOccupancyRoomCount > 0)).toBe(true);
  });

  it('changes after pmsCancel, by exactly the cancelled stays', async () => {
    const before = (await occupancy({ startStayDate: start, endStayDate: end })).body.dailyOccupancies;
    const date = before.find((d) => d.occupancyRoomCount > 0)!.date;
    const victim = sim
      .pmsReservations(P)
      .find(
        (r) => r.reservationStatus !== 'Cancelled' && r.roomStays.some((s) => s.checkInDateTime.slice(0, 10) <= date && s.checkOutDateTime.slice(0, 10) > date),
      )!;
    const stays = sim.occupancyInput(P).stays.filter((s) => s.number === victim.number);
    const nightIndex = dayOf(date) - dayOf(stays[0]!.arrivalDate);
    const roomCents = stays.reduce((c, s) => c + Math.round(s.nights[nightIndex]!.room * 100), 0);

    t += 60_000;
    sim.pmsCancel(P, victim.number);
    const after = (await occupancy({ startStayDate: start, endStayDate: end })).body.dailyOccupancies;
    expect(after).toEqual(computeDailyOccupancy(sim.occupancyInput(P), start, end).dailyOccupancies);
    const b = before.find((d) => d.date === date)!;
    const a = after.find((d) => d.date === date)!;
    expect(b.occupancyRoomCount + b.complimentaryOccupancyRoomCount - (a.occupancyRoomCount + a.complimentaryOccupancyRoomCount)).toBe(stays.length);
    expect(Math.round(b.roomRevenue * 100) - Math.round(a.roomRevenue * 100)).toBe(roomCents);
    expect(a.occupancyRate).toBeLessThanOrEqual(b.occupancyRate);
    expect(after).not.toEqual(before);
  });

  it('otbDate counts only reservations created on or before it', async () => {
    const otb = '2025-04-01';
    const res = await occupancy({ startStayDate: start, endStayDate: end, otbDate: otb });
    expect(res.status).toBe(200);
    expect(res.body.dailyOccupancies).toEqual(computeDailyOccupancy(sim.occupancyInput(P), start, end, otb).dailyOccupancies);
    const all = (await occupancy({ startStayDate: start, endStayDate: end })).body.dailyOccupancies;
    res.body.dailyOccupancies.forEach((d, i) => expect(d.occupancyRoomCount).toBeLessThanOrEqual(all[i]!.occupancyRoomCount));
    expect(res.body.dailyOccupancies.reduce((n, d) => n + d.occupancyRoomCount, 0)).toBeLessThan(all.reduce((n, d) => n + d.occupancyRoomCount, 0));
    const nothing = await occupancy({ startStayDate: start, endStayDate: end, otbDate: '2008-12-31' });
    expect(nothing.body.dailyOccupancies.every((d) => d.occupancyRoomCount + d.complimentaryOccupancyRoomCount + d.arrivalCount === 0)).toBe(true);
  });

  it('a date with nothing occupied still has an item of zeros', async () => {
    const res = await occupancy({ startStayDate: '2031-01-01', endStayDate: '2031-01-05' });
    expect(res.status).toBe(200);
    expect(res.body.dailyOccupancies).toHaveLength(5);
    for (const d of res.body.dailyOccupancies) {
      expect(d).toMatchObject({
        occupancyRate: 0,
        occupancyRoomCount: 0,
        complimentaryOccupancyRoomCount: 0,
        roomRevenue: 0,
        revenue: 0,
        arrivalCount: 0,
        guestCount: 0,
      });
      expect(d).not.toHaveProperty('mealRevenue');
    }
  });

  it('31 days at most; bad dates are 400 with the envelope; an unknown property 404', async () => {
    expect((await occupancy({ startStayDate: '2025-05-01', endStayDate: '2025-05-31' })).status).toBe(200);
    expect((await occupancy({ startStayDate: '2025-05-01', endStayDate: '2025-05-01' })).status).toBe(200);
    const cases: Record<string, string>[] = [
      { startStayDate: '2025-05-01', endStayDate: '2025-06-01' },
      { startStayDate: '2025-05-02', endStayDate: '2025-05-01' },
      { startStayDate: '2025-05-01' },
      { endStayDate: '2025-05-01' },
      {},
      { startStayDate: '2025-5-1', endStayDate: '2025-05-02' },
      { startStayDate: '2025-02-30', endStayDate: '2025-03-02' },
      { startStayDate: '2025-05-01', endStayDate: '2025-05-02', otbDate: 'yesterday' },
    ];
    for (const q of cases) {
      const res = await occupancy(q);
      expect(res.status, JSON.stringify(q)).toBe(400);
      expect(schemaProblems(res.body, 'PmsAnalyticsApi_ApiResponse')).toEqual([]);
      expect(res.body.warnings).toEqual([]);
      expect(res.body.errors).toHaveLength(1);
    }
    const unknown = await get<Envelope>(sim, token, OCCUPANCY('123456'), { startStayDate: start, endStayDate: end });
    expect(unknown.status).toBe(404);
    expect(unknown.body.warnings).toEqual([]);
  });
});

describe('simulator PMS integration storage: bookings and inventory blocks', () => {
  let t = Date.UTC(2025, 5, 1, 12, 0, 0);
  let sim: Simulator;
  let token: string;
  const P = '500200';
  beforeAll(async () => {
    sim = await startSimulator({
      now: () => t,
      rateLimits: LIMITS,
      tokenTtlSeconds: 86_400,
      properties: [
        { id: '500100', bookingCount: 50 },
        { id: P, bookingCount: 200 },
      ],
    });
    token = await accessToken(sim);
  });
  afterAll(() => sim.close());

  it('a subset of the bookings has a storage booking; GET serves it in the PmsIntegrationApi_BookingRs shape', async () => {
    const all = sim.integrationStorageBookings(P);
    const bookings = new Map(sim.bookings(P).map((b) => [b.number, b]));
    expect(all.length).toBeGreaterThan(bookings.size * 0.25);
    expect(all.length).toBeLessThan(bookings.size * 0.75);
    const tz = sim.content().find((c) => c.id === P)!.timeZone;
    for (const s of all) {
      const res = await get<{ booking: IntegrationStorageBooking }>(sim, token, `${STORAGE(P)}/bookings/${s.id}`);
      expect(res.status).toBe(200);
      expect(schemaProblems(res.body, 'PmsIntegrationApi_BookingRs')).toEqual([]);
      expect(res.body.booking).toEqual(s);

      const external = s.uniqueIds.filter((u) => u.idContext === 'External');
      expect(external).toHaveLength(1);
      const b = bookings.get(external[0]!.id!)!;
      expect(b).toBeDefined();
      expect(s.id).toMatch(/^\d+$/);
      expect(s.id).not.toBe(b.number);
      expect(s.propertyId).toBe(P);
      expect(s.updateDateTime).toMatch(UTC_SECONDS);
      expect(s.pmsSideUpdateDateTime).toMatch(LOCAL_SECONDS);
      expect(s.pmsSideCreateDateTime).toMatch(LOCAL_SECONDS);
      expect(s.pmsSideUpdateDateTime.slice(0, 16)).toBe(localMinute(Date.parse(s.updateDateTime), tz));
      expect(s.total).toEqual({ amountAfterTax: b.total.priceAfterTax, currencyCode: b.currencyCode });
      expect(s.status === 'Cancelled').toBe(b.status === 'Cancelled');
      expect(s.cancellationInfo !== undefined).toBe(b.status === 'Cancelled');
      expect(s.roomStays).toHaveLength(b.roomStays.length);
      s.roomStays.forEach((rs, i) => {
        const bs = b.roomStays[i]!;
        expect(rs.stayDates.arrivalDateTime).toBe(`${bs.stayDates.arrivalDateTime}:00`);
        expect(rs.stayDates.departureDateTime).toBe(`${bs.stayDates.departureDateTime}:00`);
        expect(rs.roomRates.map((r) => r.stayDate)).toEqual(bs.dailyRates.map((d) => d.date.slice(0, 10)));
        expect(rs.guestCounts.find((g) => g.ageQualifyingCode === 'AdultBed')!.count).toBe(bs.guestCount.adultCount);
      });
      const nights = s.roomStays.flatMap((rs) => rs.roomRates);
      const revenue = s.roomRevenues.reduce((c, r) => c + Math.round(r.amount.amountAfterTax * 100), 0);
      expect(revenue).toBe(nights.reduce((c, r) => c + Math.round(r.total.amountAfterTax * 100), 0));
    }
    expect(all.some((s) => s.status === 'CheckedOut')).toBe(true);
    expect(all.some((s) => s.bookingChannels.length > 0)).toBe(true);

    const unknown = await get<Envelope>(sim, token, `${STORAGE(P)}/bookings/1`);
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ errors: [{ code: expect.any(String), message: expect.any(String) }] });
    expect(schemaProblems(unknown.body, 'PmsIntegrationApi_ErrorRs')).toEqual([]);
    expect((await get<Envelope>(sim, token, `${STORAGE('123456')}/bookings/${all[0]!.id}`)).status).toBe(404);
    expect((await get<Envelope>(sim, token, `${STORAGE('500100')}/bookings/${all[0]!.id}`)).status).toBe(404);
  });

  it('same path template as the read-reservation details: the prefix decides, and the id kind', async () => {
    const s = sim.integrationStorageBookings(P)[0]!;
    const number = s.uniqueIds.find((u) => u.idContext === 'External')!.id!;
    const accepted = { ...sim.stats.accepted };
    const details = await get<{ booking: { number: string } }>(sim, token, `/api/read-reservation/v1/properties/${P}/bookings/${number}`);
    expect(details.status).toBe(200);
    expect(details.body.booking.number).toBe(number);
    expect((await get<Envelope>(sim, token, `${STORAGE(P)}/bookings/${number}`)).status).toBe(404);
    expect((await get<Envelope>(sim, token, `/api/read-reservation/v1/properties/${P}/bookings/${s.id}`)).status).toBe(404);
    expect((await get<Envelope>(sim, token, `${STORAGE(P)}/bookings/${s.id}`)).status).toBe(200);
    expect(sim.stats.accepted['bookingDetails']).toBe((accepted['bookingDetails'] ?? 0) + 2);
    expect(sim.stats.accepted['integrationStorage']).toBe((accepted['integrationStorage'] ?? 0) + 2);
  });

  it('mutate() and touchIntegrationStorageBooking change the storage booking; the touch leaves the reservation alone', () => {
    const before = new Map(sim.integrationStorageBookings(P).map((s) => [s.id, s]));
    t = Date.UTC(2025, 5, 1, 13, 0, 0);
    sim.mutate({ count: 30, newCount: 6, propertyId: P });
    const bookings = new Map(sim.bookings(P).map((b) => [b.number, b]));
    let changed = 0;
    for (const s of sim.integrationStorageBookings(P)) {
      const b = bookings.get(s.uniqueIds.find((u) => u.idContext === 'External')!.id!)!;
      const old = before.get(s.id);
      if (old === undefined || Date.parse(b.modifiedDateTime) >= Date.UTC(2025, 5, 1, 13, 0, 0)) {
        changed++;
        expect(s.updateDateTime).toBe(b.modifiedDateTime);
        expect(s.status === 'Cancelled').toBe(b.status === 'Cancelled');
      } else expect(s).toEqual(old);
    }
    expect(changed).toBeGreaterThan(0);

    const target = sim.integrationStorageBookings(P)[3]!;
    const number = target.uniqueIds.find((u) => u.idContext === 'External')!.id!;
    const reservation = sim.pmsReservation(P, number);
    t = Date.UTC(2025, 5, 1, 14, 7, 9);
    sim.touchIntegrationStorageBooking(P, target.id);
    const touched = sim.integrationStorageBookings(P).find((s) => s.id === target.id)!;
    expect(touched.updateDateTime).toBe('2025-06-01T14:07:09Z');
    expect(touched.pmsSideUpdateDateTime).toBe('2025-06-01T16:07:09');
    expect(sim.pmsReservation(P, number)).toEqual(reservation);
    expect(() => sim.touchIntegrationStorageBooking(P, '1')).toThrow();
  });

  it('inventory blocks: a few per property, GET serves them in the PmsIntegrationApi_InventoryBlockRs shape; a touch changes them', async () => {
    const blocks = sim.inventoryBlocks(P);
    expect(blocks.length).toBeGreaterThanOrEqual(2);
    expect(blocks.length).toBeLessThanOrEqual(4);
    for (const b of blocks) {
      const res = await get<{ inventoryBlock: InventoryBlock }>(sim, token, `${STORAGE(P)}/inventories/blocks/${b.id}`);
      expect(res.status).toBe(200);
      expect(schemaProblems(res.body, 'PmsIntegrationApi_InventoryBlockRs')).toEqual([]);
      expect(res.body.inventoryBlock).toEqual(b);
      expect(b.propertyId).toBe(P);
      expect(b.updateDateTime).toMatch(UTC_SECONDS);
      expect(b.pmsSideCreateDateTime).toMatch(LOCAL_SECONDS);
      expect(b.dailyItems.length).toBeGreaterThan(0);
      for (const d of b.dailyItems) {
        expect(d.pricing.currencyCode).toBe(sim.content().find((c) => c.id === P)!.currency);
        if (d.realizedCount !== null) expect(d.realizedCount).toBeLessThanOrEqual(d.blockedCount);
      }
    }
    const unknown = await get<Envelope>(sim, token, `${STORAGE(P)}/inventories/blocks/999999`);
    expect(unknown.status).toBe(404);
    expect(schemaProblems(unknown.body, 'PmsIntegrationApi_ErrorRs')).toEqual([]);
    expect((await get<Envelope>(sim, token, `${STORAGE('500100')}/inventories/blocks/${blocks[0]!.id}`)).status).toBe(404);

    t = Date.UTC(2025, 5, 1, 15, 0, 0);
    sim.touchInventoryBlock(P, blocks[0]!.id);
    const touched = sim.inventoryBlocks(P)[0]!;
    expect(touched.updateDateTime).toBe('2025-06-01T15:00:00Z');
    expect(touched).not.toEqual(blocks[0]);
    expect(sim.inventoryBlocks(P).slice(1)).toEqual(blocks.slice(1));
    expect(() => sim.touchInventoryBlock(P, '999999')).toThrow();
  });
});

describe('simulator PMS paths: faults and rate limits', () => {
  let sim: Simulator;
  let token: string;
  let paths: string[];
  let storagePaths: string[];
  const P = '500100';
  beforeAll(async () => {
    sim = await startSimulator({ rateLimits: LIMITS });
    token = await accessToken(sim);
    const r = sim.pmsReservations(P)[0]!;
    paths = [
      `${PMS(P)}/reservations/search?state=Active&startModifyDateTime=2025-01-01T00:00&endModifyDateTime=2025-12-31T00:00`,
      `${PMS(P)}/reservations/${r.number}`,
      `${PMS(P)}/guests/${r.customer!.pmsPersonId}`,
      `${PMS(P)}/rooms`,
      `${OCCUPANCY(P)}?startStayDate=2025-01-01&endStayDate=2025-01-10`,
    ];
    storagePaths = [`${STORAGE(P)}/bookings/${sim.integrationStorageBookings(P)[0]!.id}`, `${STORAGE(P)}/inventories/blocks/${sim.inventoryBlocks(P)[0]!.id}`];
  });
  afterEach(() => {
    sim.faults.propertyStatus.clear();
    sim.faults.error5xxRate = 0;
    sim.faults.spurious429Rate = 0;
    sim.faults.stallMidBodyRate = 0;
    delete sim.faults.stallMidBodyPaths;
    sim.faults.truncatedBodyRate = 0;
    sim.faults.htmlBodyRate = 0;
    sim.faults.latencyMs = { min: 0, max: 0 };
  });
  afterAll(() => sim.close());

  it('propertyStatus: the property id comes from the path; PMS answers keep the envelope; not counted', async () => {
    sim.faults.propertyStatus.set(P, { status: 403 });
    const accepted = { ...sim.stats.accepted };
    for (const path of [...paths, ...storagePaths]) {
      const res = await request(sim, token, path);
      expect(res.status, path).toBe(403);
      expect(res.headers.get('x-ratelimit-remaining-second'), path).not.toBeNull();
      const body = (await res.json()) as Envelope;
      expect(body.errors[0]!.code).toBe('Forbidden');
      if (path.includes('/pms-integration-storage/')) expect(body.warnings).toBeUndefined();
      else expect(body.warnings, path).toEqual([]);
    }
    expect(sim.stats.accepted).toEqual(accepted);
    const log = (sim.stats.requestLog = []);
    expect((await request(sim, token, `${PMS('500200')}/rooms`)).status).toBe(200);
    expect(log[0]).toMatchObject({ propertyId: '500200', status: 200 });
    delete sim.stats.requestLog;

    sim.faults.propertyStatus.set(P, { status: 404, scopes: ['integrationStorage'] });
    for (const path of storagePaths) expect((await request(sim, token, path)).status, path).toBe(404);
    for (const path of paths) expect((await request(sim, token, path)).status, path).toBe(200);
  });

  it('5xx, 429 and 401 on PMS paths carry the PMS envelope', async () => {
    sim.faults.error5xxRate = 1;
    for (const path of paths) {
      const res = await request(sim, token, path);
      expect([500, 503]).toContain(res.status);
      expect(((await res.json()) as Envelope).warnings).toEqual([]);
    }
    sim.faults.error5xxRate = 0;
    sim.faults.spurious429Rate = 1;
    const limited = await request(sim, token, paths[1]!);
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('1');
    expect(((await limited.json()) as Envelope).warnings).toEqual([]);
    sim.faults.spurious429Rate = 0;
    const anonymous = await request(sim, undefined, paths[1]!);
    expect(anonymous.status).toBe(401);
    expect((await anonymous.json()) as Envelope).toMatchObject({ warnings: [], errors: [{ code: 'Unauthorized' }] });
  });

  it('stall, truncated and HTML bodies, and latency, hit the PMS paths too', async () => {
    sim.faults.stallMidBodyRate = 1;
    sim.faults.stallMidBodyPaths = /\/reservations\/search$/;
    const stalled = await request(sim, token, paths[0]!, {}, { signal: AbortSignal.timeout(400) });
    expect(stalled.status).toBe(200);
    await expect(stalled.text()).rejects.toThrow();
    expect((await request(sim, token, paths[3]!)).status).toBe(200);
    sim.faults.stallMidBodyRate = 0;

    sim.faults.truncatedBodyRate = 1;
    const truncated = await request(sim, token, paths[4]!);
    expect(truncated.status).toBe(200);
    const text = await truncated.text();
    expect(() => JSON.parse(text) as unknown).toThrow();
    sim.faults.truncatedBodyRate = 0;

    sim.faults.htmlBodyRate = 1;
    const html = await request(sim, token, storagePaths[1]!);
    expect(html.status).toBe(200);
    expect(html.headers.get('content-type')).toContain('text/html');
    sim.faults.htmlBodyRate = 0;

    sim.faults.latencyMs = { min: 150, max: 150 };
    const started = performance.now();
    expect((await request(sim, token, paths[2]!)).status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(140);
  });

  it('PMS and analytics count in the standard scope, the storage in integrationStorage', async () => {
    const tight = await startSimulator({
      rateLimits: { ...LIMITS, standard: [{ limit: 2, windowMs: 60_000 }], integrationStorage: [{ limit: 1, windowMs: 60_000 }] },
    });
    try {
      const tk = await accessToken(tight);
      const r = tight.pmsReservations(P)[0]!;
      expect((await request(tight, tk, `${PMS(P)}/reservations/${r.number}`)).status).toBe(200);
      expect((await request(tight, tk, `${OCCUPANCY(P)}?startStayDate=2025-01-01&endStayDate=2025-01-02`)).status).toBe(200);
      const third = await request(tight, tk, `${PMS(P)}/rooms`);
      expect(third.status).toBe(429);
      expect(((await third.json()) as Envelope).warnings).toEqual([]);
      const storage = `${STORAGE(P)}/inventories/blocks/${tight.inventoryBlocks(P)[0]!.id}`;
      expect((await request(tight, tk, storage)).status).toBe(200);
      expect((await request(tight, tk, storage)).status).toBe(429);
      expect(tight.stats.accepted).toMatchObject({ standard: 2, integrationStorage: 1 });
    } finally {
      await tight.close();
    }
  });
});
