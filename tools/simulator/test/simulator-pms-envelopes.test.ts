/**
 * The simulator's PMS answers that are not the data: error envelopes (a 200 with `errors`, a
 * 400 or 404 with the envelope alone), warnings beside the data, and paged answers without
 * `hasNextPage` (the token alone says there is more), over real HTTP.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../index.js';
import { accessToken, noLimits } from '../../../test/helpers/simulator-http.js';

const P = '500100';
const PMS = `/api/pms/v2/properties/${P}`;
type Body = Record<string, any>;

let sim: Simulator;
let token: string;
beforeAll(async () => {
  sim = await startSimulator({ rateLimits: noLimits, properties: [{ id: P, bookingCount: 40 }] });
  token = await accessToken(sim);
});
afterAll(async () => {
  await sim.close();
});

async function get(path: string, query: Record<string, string> = {}): Promise<{ status: number; body: Body }> {
  const url = new URL(sim.url + path);
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: (await res.json()) as Body };
}

describe('simulator PMS: error envelopes and warnings', () => {
  it('pmsErrorEnvelopeRate 1 with status 200: the answer keeps its keys with nothing in them, and one error', async () => {
    sim.faults.pmsErrorEnvelopeRate = 1;
    sim.faults.pmsErrorEnvelopeStatuses = [200];
    try {
      const rooms = await get(`${PMS}/rooms`);
      expect(rooms).toEqual({
        status: 200,
        body: {
          warnings: [],
          errors: [{ code: 'SIM_ERROR', message: expect.stringContaining('HTTP 200') }],
          rooms: [],
          hasNextPage: false,
          nextPageToken: null,
        },
      });
      const occupancy = await get(`/api/pms-analytics/v1/properties/${P}/daily-occupancy`, { startStayDate: '2025-01-01', endStayDate: '2025-01-05' });
      expect(occupancy.status).toBe(200);
      expect(occupancy.body).toMatchObject({ dailyOccupancies: [], propertyRoomCount: 0, currencyCode: null, errors: [{ code: 'SIM_ERROR' }] });
      expect((await get(`${PMS}/obtain-accommodation-inventory`)).body).toMatchObject({ accommodationInventory: null, errors: [{ code: 'SIM_ERROR' }] });
      expect(sim.stats.errorEnvelopes).toBe(3);
    } finally {
      sim.faults.pmsErrorEnvelopeRate = 0;
    }
    expect((await get(`${PMS}/rooms`)).body).toMatchObject({ errors: [], hasNextPage: false });
  });

  it('a 400 or 404 envelope is the envelope alone; pmsErrorEnvelopePaths limits the fault to the paths that match', async () => {
    sim.faults.pmsErrorEnvelopeRate = 1;
    sim.faults.pmsErrorEnvelopeStatuses = [404];
    sim.faults.pmsErrorEnvelopePaths = /\/companies$/;
    try {
      expect(await get(`${PMS}/companies`)).toEqual({ status: 404, body: { warnings: [], errors: [{ code: 'SIM_ERROR', message: expect.any(String) }] } });
      expect((await get(`${PMS}/rooms`)).status).toBe(200);
      sim.faults.pmsErrorEnvelopeStatuses = [400];
      expect((await get(`${PMS}/companies`)).status).toBe(400);
      // The integration storage is not a PMS envelope API: untouched.
      expect((await get(`/api/pms-integration-storage/v1/properties/${P}/calculate-stay-units`)).status).toBe(422);
    } finally {
      sim.faults.pmsErrorEnvelopeRate = 0;
      sim.faults.pmsErrorEnvelopeStatuses = [200];
      sim.faults.pmsErrorEnvelopePaths = undefined;
    }
  });

  it('pmsWarningRate 1: the data as it is, with a warning', async () => {
    const plain = await get(`${PMS}/rooms`);
    sim.faults.pmsWarningRate = 1;
    try {
      const warned = await get(`${PMS}/rooms`);
      expect(warned.status).toBe(200);
      expect(warned.body).toEqual({ ...plain.body, warnings: [{ code: 'SIM_WARNING', message: expect.any(String) }] });
    } finally {
      sim.faults.pmsWarningRate = 0;
    }
  });
});

describe('simulator PMS: pages without hasNextPage, smaller than asked', () => {
  it('the token alone says there is more; the last page has none; pmsMaxPageItems caps every page', async () => {
    sim.faults.pmsPagesWithoutHasNextPage = true;
    sim.faults.pmsMaxPageItems = 3;
    try {
      const first = await get(`${PMS}/rooms`, { maxPageSize: '100' });
      expect(first.body['rooms']).toHaveLength(3);
      expect(first.status).toBe(200);
      expect('hasNextPage' in first.body).toBe(false);
      expect(typeof first.body['nextPageToken']).toBe('string');
      let page = first;
      const ids: string[] = [];
      while (true) {
        ids.push(...(page.body['rooms'] as Body[]).map((r) => r['id'] as string));
        if (!page.body['nextPageToken']) break;
        page = await get(`${PMS}/rooms`, { pageToken: page.body['nextPageToken'] as string });
      }
      expect(page.body['nextPageToken']).toBeNull();
      expect(ids).toEqual(sim.pmsRooms(P).map((r) => r.id));
      expect((await get(`${PMS}/companies`)).body['companies']).toHaveLength(3);
    } finally {
      sim.faults.pmsPagesWithoutHasNextPage = false;
      sim.faults.pmsMaxPageItems = undefined;
    }
  });
});
