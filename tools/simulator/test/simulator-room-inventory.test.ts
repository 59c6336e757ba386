/**
 * Rooms by type in the simulator, over real HTTP: the accommodation inventory (PMS API), the
 * inventory search per room type and day and the stay units (PMS Integration Storage API), in
 * the provider's shapes, checked against the reservations the simulator serves: sold rooms per
 * type and day are its PMS room stays, rooms out of order add up to the statistics' closed
 * rooms, and the stay units of every rate plan add up to the rooms the statistics count.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type AccommodationInventory, type DailyRoomTypeInventory, type Simulator } from '../index.js';
import { schemaProblemsIn, type SchemaDef } from '../../../test/helpers/schema-check.js';
import { accessToken, noLimits } from '../../../test/helpers/simulator-http.js';

// A compact copy of the provider's schemas (see simulator-pms-analytics.test.ts for the notation).
const SCHEMAS: Record<string, SchemaDef> = {
  PmsApi_ObtainAccommodationInventoryResponse: {
    required: [],
    props: { warnings: '@PmsApi_ResponseError[]?', errors: '@PmsApi_ResponseError[]?', accommodationInventory: '@PmsApi_AccommodationInventory' },
  },
  PmsApi_ResponseError: { required: [], props: { code: 'string?', message: 'string?' } },
  PmsApi_AccommodationInventory: { required: [], props: { buildings: '@PmsApi_Building[]?' } },
  PmsApi_Building: { required: ['id', 'name'], props: { id: 'string?', name: 'string?', floors: '@PmsApi_Floor[]?' } },
  PmsApi_Floor: { required: ['id', 'name'], props: { id: 'string?', name: 'string?', rooms: '@PmsApi_Room[]?' } },
  PmsApi_Room: { required: [], props: { id: 'string?', displayName: 'string?', roomTypeId: 'string?', floorId: 'string?' } },
  PmsIntegrationApi_SearchInventoryRs: { required: [], props: { inventory: '@PmsIntegrationApi_SearchInventoryResult' } },
  PmsIntegrationApi_SearchInventoryResult: {
    required: ['inventories', 'propertyId'],
    props: { propertyId: 'string', inventories: '@PmsIntegrationApi_DailyRoomTypeInventory[]' },
  },
  PmsIntegrationApi_DailyRoomTypeInventory: {
    required: [],
    props: {
      roomTypeCode: 'string?',
      date: 'string:date',
      physicalRoomCount: 'integer:int32',
      availableRoomCount: 'integer:int32',
      outOfOrderRoomCount: 'integer:int32',
      updateDateTime: 'string:date-time',
    },
  },
  PmsIntegrationApi_BookedNightsCountRs: { required: [], props: { stayUnits: 'integer:int32' } },
  PmsIntegrationApi_ErrorRs: { required: [], props: { errors: '@PmsIntegrationApi_Error[]?' } },
  PmsIntegrationApi_Error: { required: [], props: { code: 'string?', message: 'string?' } },
};
const schemaProblems = (value: unknown, name: string): string[] => schemaProblemsIn(SCHEMAS, value, name);

const LIMITS = { ...noLimits, integrationStorage: [{ limit: 1_000_000, windowMs: 1000 }] };
const P = '500100';
const STORAGE = `/api/pms-integration-storage/v1/properties/${P}`;
const dayOf = (date: string) => Date.parse(`${date}T00:00:00Z`) / 86_400_000;
const dateOf = (day: number) => new Date(day * 86_400_000).toISOString().slice(0, 10);

describe('simulator rooms by type', () => {
  const t = Date.UTC(2025, 5, 1, 12, 0, 0);
  let sim: Simulator;
  let token: string;
  const [start, end] = ['2025-05-15', '2025-06-14'];
  beforeAll(async () => {
    sim = await startSimulator({ now: () => t, rateLimits: LIMITS, properties: [{ id: P, bookingCount: 600 }] });
    token = await accessToken(sim);
  });
  afterAll(() => sim.close());

  const call = (path: string, init: RequestInit = {}, query: Record<string, string> = {}) => {
    const qs = new URLSearchParams(query).toString();
    const headers = new Headers(init.headers);
    headers.set('authorization', `Bearer ${token}`);
    return fetch(`${sim.url}${path}${qs ? `?${qs}` : ''}`, { ...init, headers });
  };
  const search = (body: unknown) =>
    call(`${STORAGE}/inventories/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const codes = () => [...new Set(Object.values(sim.pmsRoomTypeCodes(P)))].sort();

  it('serves the accommodation inventory: every PMS room once, under the floor its floorId names', async () => {
    const res = await call(`/api/pms/v2/properties/${P}/obtain-accommodation-inventory`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { warnings: unknown[]; errors: unknown[]; accommodationInventory: AccommodationInventory };
    expect(schemaProblems(body, 'PmsApi_ObtainAccommodationInventoryResponse')).toEqual([]);
    expect(body.errors).toEqual([]);
    const placed = body.accommodationInventory.buildings.flatMap((b) => b.floors.flatMap((f) => f.rooms.map((r) => ({ ...r, floor: f.id }))));
    const rooms = sim.pmsRooms(P);
    expect(placed.map((r) => r.id).sort()).toEqual(rooms.map((r) => r.id).sort());
    for (const r of placed) expect(r.floorId).toBe(r.floor);
    expect(new Set(rooms.map((r) => r.roomTypeId))).toEqual(new Set(placed.map((r) => r.roomTypeId)));
    expect(body.accommodationInventory).toEqual(sim.accommodationInventory(P));
    expect((await call(`/api/pms/v2/properties/999999/obtain-accommodation-inventory`)).status).toBe(404);
  });

  it('serves the inventory per room type and day: sold rooms are the PMS room stays, out of order adds up to the closed rooms', async () => {
    const res = await search({ roomTypeCodes: codes(), startDate: start, endDate: end });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { inventory: { propertyId: string; inventories: DailyRoomTypeInventory[] } };
    expect(schemaProblems(body, 'PmsIntegrationApi_SearchInventoryRs')).toEqual([]);
    expect(body.inventory.propertyId).toBe(P);
    const days = dayOf(end) - dayOf(start) + 1;
    expect(body.inventory.inventories).toHaveLength(days * codes().length);
    // Recomputed here from the served reservations and rooms.
    const typeCode = sim.pmsRoomTypeCodes(P);
    const stays = sim.pmsReservations(P).flatMap((r) => (r.reservationStatus === 'Cancelled' ? [] : r.roomStays));
    const rooms = sim.pmsRooms(P);
    const occupancy = new Map(sim.dailyOccupancy(P, start, end).map((d) => [d.date, d]));
    for (let d = 0; d < days; d++) {
      const date = dateOf(dayOf(start) + d);
      const items = body.inventory.inventories.filter((i) => i.date === date);
      let closed = 0;
      let sold = 0;
      for (const i of items) {
        const physical = rooms.filter((r) => typeCode[r.roomTypeId] === i.roomTypeCode).length;
        const occupying = stays.filter(
          (s) => typeCode[s.roomTypeId] === i.roomTypeCode && s.checkInDateTime.slice(0, 10) <= date && s.checkOutDateTime.slice(0, 10) > date,
        );
        expect(i.physicalRoomCount, `${date} ${i.roomTypeCode}`).toBe(physical);
        expect(i.physicalRoomCount - i.availableRoomCount - i.outOfOrderRoomCount, `${date} ${i.roomTypeCode}`).toBe(occupying.length);
        expect(i.availableRoomCount).toBeGreaterThanOrEqual(0);
        closed += i.outOfOrderRoomCount;
        sold += occupying.length;
      }
      const o = occupancy.get(date)!;
      expect(closed, date).toBe(o.closedRoomCount);
      expect(sold, date).toBe(o.occupancyRoomCount + o.complimentaryOccupancyRoomCount);
    }
    expect(body.inventory.inventories.some((i) => i.outOfOrderRoomCount > 0)).toBe(true);
    expect(body.inventory.inventories.some((i) => i.availableRoomCount < i.physicalRoomCount - i.outOfOrderRoomCount)).toBe(true);
    expect(sim.roomTypeInventory(P, codes(), start, end)).toEqual(body.inventory.inventories);
  });

  it('answers only the codes asked for and known; refuses what the document does not allow with 422', async () => {
    const [first] = codes();
    const one = (await (await search({ roomTypeCodes: [first, 'NOPE'], startDate: start, endDate: start })).json()) as {
      inventory: { inventories: DailyRoomTypeInventory[] };
    };
    expect(one.inventory.inventories.map((i) => i.roomTypeCode)).toEqual([first]);
    const bad = [
      { startDate: start, endDate: end },
      { roomTypeCodes: [], startDate: start, endDate: end },
      { roomTypeCodes: [first], startDate: start },
      { roomTypeCodes: [first], startDate: end, endDate: start },
      { roomTypeCodes: [first], startDate: '2025-01-01', endDate: '2027-01-01' },
      { roomTypeCodes: [first], startDate: '15.05.2025', endDate: end },
      { roomTypeCodes: [first], startDate: start, endDate: end, propertyId: P },
      'not json',
    ];
    for (const b of bad) {
      const res = await search(b);
      expect(res.status, JSON.stringify(b)).toBe(422);
      expect(schemaProblems(await res.json(), 'PmsIntegrationApi_ErrorRs')).toEqual([]);
    }
    // Two years less a day is allowed.
    expect((await search({ roomTypeCodes: [first], startDate: '2025-01-01', endDate: '2026-12-31' })).status).toBe(200);
    expect((await call(`${STORAGE}/inventories/search`)).status).toBe(405);
    expect((await search('x'.repeat(1_000_001))).status).toBe(413);
  });

  it('serves stay units: every rate plan together counts the rooms the statistics count', async () => {
    const plans = [...new Set(Object.values(sim.pmsRatePlanCodes(P)))];
    let total = 0;
    for (const code of plans) {
      const res = await call(`${STORAGE}/calculate-stay-units`, {}, { firstStayDate: start, lastStayDate: end, pmsSideRatePlanCode: code });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { stayUnits: number };
      expect(schemaProblems(body, 'PmsIntegrationApi_BookedNightsCountRs')).toEqual([]);
      expect(body.stayUnits).toBe(sim.stayUnits(P, start, end, code));
      total += body.stayUnits;
    }
    const counted = sim.dailyOccupancy(P, start, end).reduce((n, d) => n + d.occupancyRoomCount + d.complimentaryOccupancyRoomCount, 0);
    expect(total).toBe(counted);
    expect(counted).toBeGreaterThan(0);
    // Case-sensitive: a code in lower case is another code.
    expect(sim.stayUnits(P, start, end, plans[0]!.toLowerCase())).toBe(0);
    const refused: Record<string, string>[] = [
      { firstStayDate: start, lastStayDate: end },
      { firstStayDate: end, lastStayDate: start, pmsSideRatePlanCode: plans[0]! },
      { lastStayDate: end, pmsSideRatePlanCode: plans[0]! },
    ];
    for (const q of refused) {
      expect((await call(`${STORAGE}/calculate-stay-units`, {}, q)).status, JSON.stringify(q)).toBe(422);
    }
  });

  it('counts the storage operations in the integrationStorage scope, the accommodation inventory in standard', async () => {
    const before = { ...sim.stats.accepted };
    await search({ roomTypeCodes: codes(), startDate: start, endDate: start });
    await call(`${STORAGE}/calculate-stay-units`, {}, { firstStayDate: start, lastStayDate: end, pmsSideRatePlanCode: 'BAR' });
    await call(`/api/pms/v2/properties/${P}/obtain-accommodation-inventory`);
    expect((sim.stats.accepted['integrationStorage'] ?? 0) - (before['integrationStorage'] ?? 0)).toBe(2);
    expect((sim.stats.accepted['standard'] ?? 0) - (before['standard'] ?? 0)).toBe(1);
  });
});
