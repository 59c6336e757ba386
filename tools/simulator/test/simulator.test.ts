/**
 * The provider simulator over real HTTP: token endpoint, summaries paging and its cursor
 * rules, details shape, rate limits (with a manual clock, so windows are exact) and faults.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { simulatorClaims, startSimulator, type BookingPayload, type Simulator } from '../index.js';
import { noLimits, tokenResponse, accessToken, remainingHeaders } from '../../../test/helpers/simulator-http.js';

interface Page {
  continueToken: string;
  hasMoreData: boolean;
  bookingSummaries: {
    number: string;
    propertyId: number | string;
    status: string;
    createdDateTime: string;
    modifiedDateTime: string;
  }[];
}

function listUrl(sim: Simulator, propertyId: string, q: Record<string, string> = {}): string {
  const qs = new URLSearchParams(q).toString();
  return `${sim.url}/api/read-reservation/v1/properties/${propertyId}/bookings${qs ? `?${qs}` : ''}`;
}

async function get(url: string, token: string | undefined): Promise<Response> {
  return fetch(url, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
}

/** Pages to the end from `start` (a token, or none for a full sync). */
async function pageAll(sim: Simulator, token: string, propertyId: string, count: number, start?: string): Promise<{ pages: Page[]; lastToken: string }> {
  const pages: Page[] = [];
  let continueToken = start;
  for (let i = 0; i < 10_000; i++) {
    const q: Record<string, string> = { count: String(count) };
    if (continueToken !== undefined) q['continueToken'] = continueToken;
    const res = await get(listUrl(sim, propertyId, q), token);
    expect(res.status).toBe(200);
    const page = (await res.json()) as Page;
    pages.push(page);
    continueToken = page.continueToken;
    if (!page.hasMoreData) return { pages, lastToken: page.continueToken };
  }
  throw new Error('paging did not end');
}

const cents = (x: number) => Math.round(x * 100);
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

describe('simulator: token endpoint and authentication', () => {
  let t = Date.UTC(2025, 5, 1, 12, 0, 0);
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ now: () => t, tokenTtlSeconds: 600, rateLimits: { ...noLimits } });
  });
  afterAll(() => sim.close());

  it('issues a JWT-shaped bearer token with the provider fields', async () => {
    const res = await tokenResponse(sim, { grant_type: 'client_credentials', client_id: 'sim-client', client_secret: 'sim-secret' });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ expires_in: 600, refresh_expires_in: 0, token_type: 'Bearer', 'not-before-policy': 0, scope: '' });
    const parts = String(body['access_token']).split('.');
    expect(parts).toHaveLength(3);
    const claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;
    expect(claims['azp']).toBe('sim-client');
    // By default the connection has every API the daemon reads (a connection with fewer: simulator-connections.test.ts):
    // the documented names, and names of the simulator's own for the areas the documents do not name.
    expect(claims['api_accesses']).toEqual(['reservation_api', 'content', 'sim.reference_data', 'sim.pms', 'sim.pms_analytics', 'sim.pms_integration_storage']);
    expect(claims['api_accesses']).toEqual(Object.values(simulatorClaims));
    expect(claims['exp']).toBe(Math.floor(t / 1000) + 600);
    expect(typeof claims['jti']).toBe('string');
    expect(sim.stats.tokensIssued).toBeGreaterThanOrEqual(1);
  });

  it('answers 401 unauthorized_client to bad credentials or grant type', async () => {
    const expected = { error: 'unauthorized_client', error_description: 'Invalid client or Invalid client credentials' };
    const wrongSecret = await tokenResponse(sim, { grant_type: 'client_credentials', client_id: 'sim-client', client_secret: 'nope' });
    expect(wrongSecret.status).toBe(401);
    expect(await wrongSecret.json()).toEqual(expected);
    const wrongGrant = await tokenResponse(sim, { grant_type: 'password', client_id: 'sim-client', client_secret: 'sim-secret' });
    expect(wrongGrant.status).toBe(401);
    expect(await wrongGrant.json()).toEqual(expected);
    const unknownClient = await tokenResponse(sim, { grant_type: 'client_credentials', client_id: 'x', client_secret: 'sim-secret' });
    expect(unknownClient.status).toBe(401);
  });

  it('answers 401 without a token, with a forged token and with an expired one', async () => {
    const url = listUrl(sim, '500100', { count: '1' });
    expect((await get(url, undefined)).status).toBe(401);
    expect((await get(url, 'not-a-token')).status).toBe(401);
    const token = await accessToken(sim);
    const [h, p] = token.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as Record<string, unknown>;
    const forged = `${h}.${Buffer.from(JSON.stringify({ ...claims, azp: 'other' })).toString('base64url')}.${token.split('.')[2]}`;
    expect((await get(url, forged)).status).toBe(401);
    expect((await get(url, token)).status).toBe(200);
    t += 600_000; // exactly at exp: expired
    expect((await get(url, token)).status).toBe(401);
  });

  it('answers 404 to unknown paths and properties, 405 to wrong methods', async () => {
    const token = await accessToken(sim);
    expect((await get(`${sim.url}/api/nothing/here`, token)).status).toBe(404);
    expect((await get(listUrl(sim, '999999'), token)).status).toBe(404);
    expect((await fetch(`${sim.url}/auth/token`)).status).toBe(405);
    const post = await fetch(listUrl(sim, '500100'), { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    expect(post.status).toBe(405);
  });
});

describe('simulator: booking summaries', () => {
  let sim: Simulator;
  let token: string;
  beforeAll(async () => {
    sim = await startSimulator({ rateLimits: { ...noLimits } });
    token = await accessToken(sim);
  });
  afterAll(() => sim.close());

  it('full paging returns every booking exactly once, in modification order', async () => {
    for (const propertyId of sim.propertyIds()) {
      const { pages } = await pageAll(sim, token, propertyId, 37);
      const summaries = pages.flatMap((p) => p.bookingSummaries);
      const numbers = summaries.map((s) => s.number);
      expect(new Set(numbers).size).toBe(numbers.length);
      expect(new Set(numbers)).toEqual(new Set(sim.bookings(propertyId).map((b) => b.number)));
      const modified = summaries.map((s) => s.modifiedDateTime);
      expect([...modified].sort()).toEqual(modified);
      // hasMoreData is true on every page but the last.
      expect(pages.slice(0, -1).every((p) => p.hasMoreData && p.bookingSummaries.length === 37)).toBe(true);
      expect(pages.at(-1)!.hasMoreData).toBe(false);
      expect(pages.length).toBe(Math.ceil(numbers.length / 37)); // hasMoreData is exact: no empty last page
      for (const s of summaries) {
        expect(s.modifiedDateTime).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
        expect(s.createdDateTime <= s.modifiedDateTime).toBe(true);
        expect(s.number).toMatch(new RegExp(`^\\d{8}-${propertyId}-\\d+$`));
      }
      // Several bookings share a modification second.
      expect(new Set(modified).size).toBeLessThan(modified.length);
    }
  });

  it('sends propertyId as an integer for one property and as a string for the other', async () => {
    const [a, b] = sim.propertyIds() as [string, string];
    const pa = (await (await get(listUrl(sim, a, { count: '1' }), token)).json()) as Page;
    const pb = (await (await get(listUrl(sim, b, { count: '1' }), token)).json()) as Page;
    expect(pa.bookingSummaries[0]!.propertyId).toBe(Number(a));
    expect(pb.bookingSummaries[0]!.propertyId).toBe(b);
  });

  it('the continue token has the provider shape; an empty page returns the same token', async () => {
    const { lastToken } = await pageAll(sim, token, '500100', 1000);
    const decoded = JSON.parse(Buffer.from(lastToken, 'base64').toString('utf8')) as Record<string, unknown>;
    expect(Object.keys(decoded).sort()).toEqual(['BookingIds', 'MillisecondsFrom']);
    expect(Array.isArray(decoded['BookingIds'])).toBe(true);
    const res = await get(listUrl(sim, '500100', { continueToken: lastToken }), token);
    const page = (await res.json()) as Page;
    expect(page).toEqual({ continueToken: lastToken, hasMoreData: false, bookingSummaries: [] });
  });

  it('lastModification returns the bookings modified at or after it', async () => {
    const truth = sim.bookings('500100');
    const times = truth.map((b) => b.modifiedDateTime).sort();
    const from = times[Math.floor(times.length / 2)]!;
    const res = await get(listUrl(sim, '500100', { lastModification: from }), token);
    expect(res.status).toBe(200);
    const page = (await res.json()) as Page;
    const expected = truth.filter((b) => b.modifiedDateTime >= from).map((b) => b.number);
    expect(new Set(page.bookingSummaries.map((s) => s.number))).toEqual(new Set(expected));
  });

  it('rejects bad parameters with 400', async () => {
    const full = (await (await get(listUrl(sim, '500100', { count: '5' }), token)).json()) as Page;
    const cases: Record<string, string>[] = [
      { continueToken: full.continueToken, lastModification: '2020-01-01T00:00:00Z' },
      { lastModification: '2008-12-31T23:59:59Z' },
      { lastModification: 'yesterday' },
      { count: '1001' },
      { count: '0' },
      { continueToken: 'bm90IGpzb24=' },
      { continueToken: Buffer.from('{"BookingIds":[],"MillisecondsFrom":1000}').toString('base64') },
    ];
    for (const q of cases) {
      const res = await get(listUrl(sim, '500100', q), token);
      expect(res.status, JSON.stringify(q)).toBe(400);
      const body = (await res.json()) as { errors: { code: string }[] };
      expect(body.errors[0]!.code).toMatch(/Invalid/);
    }
  });

  it('a mutated or new booking reappears with the token held at the end of the stream', async () => {
    const { lastToken } = await pageAll(sim, token, '500200', 1000);
    const before = new Map(sim.bookings('500200').map((b) => [b.number, JSON.stringify(b)]));
    sim.mutate({ count: 8, newCount: 3, propertyId: '500200' });
    const after = sim.bookings('500200');
    const changed = after.filter((b) => before.get(b.number) !== JSON.stringify(b)).map((b) => b.number);
    expect(changed.length).toBeGreaterThanOrEqual(4); // 3 new + at least one changed
    expect(after.length).toBe(before.size + 3);
    const { pages } = await pageAll(sim, token, '500200', 1000, lastToken);
    const again = pages.flatMap((p) => p.bookingSummaries.map((s) => s.number));
    expect(new Set(again)).toEqual(new Set(changed));
    expect(again.length).toBe(changed.length);
  });

  it('invalidateContinueTokens makes earlier tokens 400, while new ones work', async () => {
    const first = (await (await get(listUrl(sim, '500100', { count: '10' }), token)).json()) as Page;
    expect((await get(listUrl(sim, '500100', { continueToken: first.continueToken }), token)).status).toBe(200);
    sim.invalidateContinueTokens();
    const res = await get(listUrl(sim, '500100', { continueToken: first.continueToken }), token);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { errors: { code: string }[] }).errors[0]!.code).toBe('InvalidContinueToken');
    const fresh = (await (await get(listUrl(sim, '500100', { count: '10' }), token)).json()) as Page;
    expect((await get(listUrl(sim, '500100', { continueToken: fresh.continueToken }), token)).status).toBe(200);
  });

  it('continueTokenRejections answers 400 without a body to requests with a token of that property: once, or until deleted', async () => {
    const first = (await (await get(listUrl(sim, '500100', { count: '10' }), token)).json()) as Page;
    const withToken = () => get(listUrl(sim, '500100', { continueToken: first.continueToken }), token);
    const rejectedBefore = sim.stats.continueTokensRejected;
    sim.faults.continueTokenRejections.set('500100', 1);
    const once = await withToken();
    expect({ status: once.status, body: await once.text() }).toEqual({ status: 400, body: '' });
    // The same token works again: the token did not expire, the request was faulty once.
    expect((await withToken()).status).toBe(200);
    sim.faults.continueTokenRejections.set('500100', Infinity);
    expect([(await withToken()).status, (await withToken()).status, (await withToken()).status]).toEqual([400, 400, 400]);
    // Requests without a token, and other properties, are not touched.
    expect((await get(listUrl(sim, '500100', { lastModification: '2020-01-01T00:00:00Z', count: '10' }), token)).status).toBe(200);
    const other = (await (await get(listUrl(sim, '500200', { count: '10' }), token)).json()) as Page;
    expect((await get(listUrl(sim, '500200', { continueToken: other.continueToken }), token)).status).toBe(200);
    sim.faults.continueTokenRejections.delete('500100');
    expect((await withToken()).status).toBe(200);
    expect(sim.stats.continueTokensRejected - rejectedBefore).toBe(4);
  });
});

describe('simulator: booking details', () => {
  let sim: Simulator;
  let token: string;
  beforeAll(async () => {
    sim = await startSimulator({ seed: 7, properties: [{ id: '500300', bookingCount: 120 }], rateLimits: { ...noLimits } });
    token = await accessToken(sim);
  });
  afterEach(() => {
    sim.faults.malformedBookingNumbers.clear();
    sim.faults.notFoundBookingNumbers.clear();
    sim.faults.malformedRate = 0;
  });
  afterAll(() => sim.close());

  const detailsUrl = (number: string) => `${sim.url}/api/read-reservation/v1/properties/500300/bookings/${number}`;

  it('details match the summaries and the truth, reference content ids, and totals add up', async () => {
    const { pages } = await pageAll(sim, token, '500300', 1000);
    const content = sim.content()[0]!;
    const roomTypeIds = new Set(content.roomTypes.map((r) => r.id));
    const ratePlanIds = new Set(content.ratePlans.map((r) => r.id));
    const serviceIds = new Set(content.services.map((s) => s.id));
    const truth = new Map(sim.bookings('500300').map((b) => [b.number, b]));
    let cancelled = 0;
    const dateFormats = new Set<number>();
    for (const s of pages[0]!.bookingSummaries) {
      const res = await get(detailsUrl(s.number), token);
      expect(res.status).toBe(200);
      const { booking } = (await res.json()) as { booking: BookingPayload };
      expect(booking).toEqual(truth.get(s.number));
      expect(booking.number).toBe(s.number);
      expect(booking.propertyId).toBe('500300');
      expect(booking.modifiedDateTime).toBe(s.modifiedDateTime);
      expect(booking.createdDateTime).toBe(s.createdDateTime);
      expect(booking.status).toBe(s.status);
      expect(booking.currencyCode).toBe(content.currency);
      expect(booking.number.slice(0, 8)).toBe(booking.roomStays[0]!.stayDates.arrivalDateTime.slice(0, 10).replaceAll('-', ''));
      if (booking.status === 'Cancelled') {
        cancelled++;
        expect(booking.cancellation?.cancelledDateTime).toMatch(/Z$/);
      } else expect(booking.cancellation).toBeNull();

      let bookingBefore = 0;
      let bookingTax = 0;
      for (const rs of booking.roomStays) {
        expect(rs.stayDates.arrivalDateTime).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/);
        expect(roomTypeIds.has(rs.roomType.id)).toBe(true);
        expect(rs.ratePlans.every((rp) => ratePlanIds.has(rp.id))).toBe(true);
        const nights = Math.round(
          (Date.parse(rs.stayDates.departureDateTime.slice(0, 10)) - Date.parse(rs.stayDates.arrivalDateTime.slice(0, 10))) / 86_400_000,
        );
        expect(rs.dailyRates).toHaveLength(nights);
        for (const d of rs.dailyRates) {
          expect(ratePlanIds.has(d.ratePlanId)).toBe(true);
          expect(Math.abs(d.priceBeforeTax * 100 - cents(d.priceBeforeTax))).toBeLessThan(1e-6);
          dateFormats.add(d.date.length);
        }
        expect(cents(rs.total.priceBeforeTax)).toBe(sum(rs.dailyRates.map((d) => cents(d.priceBeforeTax))));
        expect(cents(rs.total.priceAfterTax)).toBe(cents(rs.total.priceBeforeTax) + cents(rs.total.taxAmount));
        const services = rs.services ?? [];
        for (const svc of services) {
          expect(serviceIds.has(svc.id)).toBe(true);
          if (svc.kind === 'Meal') expect(svc.mealPlanCode).toBeTruthy();
        }
        const extras = [rs.extraStayCharges?.earlyArrival, rs.extraStayCharges?.lateDeparture].filter((e) => e != null);
        bookingBefore +=
          cents(rs.total.priceBeforeTax) +
          sum(services.map((x) => cents(x.total?.priceBeforeTax ?? 0))) +
          sum(extras.map((e) => cents(e.total.priceBeforeTax)));
        bookingTax += cents(rs.total.taxAmount);
      }
      bookingBefore += sum((booking.services ?? []).map((x) => cents(x.total?.priceBeforeTax ?? 0)));
      expect(cents(booking.total.priceBeforeTax)).toBe(bookingBefore);
      expect(cents(booking.total.taxAmount)).toBe(bookingTax);
      expect(cents(booking.total.priceAfterTax)).toBe(bookingBefore + bookingTax);
    }
    expect(cancelled).toBeGreaterThan(0);
    expect(dateFormats).toEqual(new Set([10, 19])); // both `YYYY-MM-DD` and `YYYY-MM-DDT00:00:00`
    expect(sim.stats.detailCallsByNumber.size).toBe(pages[0]!.bookingSummaries.length);
  });

  it('unknown numbers and notFound faults answer 404', async () => {
    expect((await get(detailsUrl('20240101-500300-1'), token)).status).toBe(404);
    const number = sim.bookings('500300')[3]!.number;
    sim.faults.notFoundBookingNumbers.add(number);
    expect((await get(detailsUrl(number), token)).status).toBe(404);
  });

  it('malformed faults answer 200 with the same schema-breaking body every time', async () => {
    const all = sim.bookings('500300');
    const number = all[5]!.number;
    sim.faults.malformedBookingNumbers.add(number);
    const first = (await (await get(detailsUrl(number), token)).json()) as { booking: Record<string, unknown> };
    const second = (await (await get(detailsUrl(number), token)).json()) as { booking: Record<string, unknown> };
    expect(second).toEqual(first);
    const b = first.booking;
    const roomStays = b['roomStays'];
    const broken =
      !Array.isArray(roomStays) || (b['total'] === undefined && roomStays.every((rs: Record<string, unknown>) => !Array.isArray(rs['dailyRates'])));
    expect(broken).toBe(true);
    expect(b['number']).toBe(number);

    sim.faults.malformedRate = 1;
    const other = (await (await get(detailsUrl(all[6]!.number), token)).json()) as { booking: Record<string, unknown> };
    expect(other.booking).not.toEqual(all[6]);
    expect(Array.isArray(other.booking['roomStays']) && other.booking['total'] !== undefined).toBe(false);
  });

  it('data is deterministic by seed', async () => {
    const fixed = Date.UTC(2025, 0, 1);
    const a = await startSimulator({ seed: 3, now: () => fixed, properties: [{ id: '1', bookingCount: 50 }] });
    const b = await startSimulator({ seed: 3, now: () => fixed, properties: [{ id: '1', bookingCount: 50 }] });
    try {
      expect(a.bookings()).toEqual(b.bookings());
      a.mutate({ count: 5, newCount: 2 });
      b.mutate({ count: 5, newCount: 2 });
      expect(a.bookings()).toEqual(b.bookings());
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});

describe('simulator: rate limits', () => {
  let t = Date.UTC(2025, 5, 1, 12, 0, 0);
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({
      now: () => t,
      rateLimits: {
        bookingList: [
          { limit: 3, windowMs: 1000 },
          { limit: 5, windowMs: 10_000 },
        ],
        token: [{ limit: 2, windowMs: 1000 }],
      },
    });
  });
  afterAll(() => sim.close());

  it('the 4th request inside the window is 429 with retry-after; headers count down; windows slide', async () => {
    const token = await accessToken(sim);
    const url = listUrl(sim, '500100', { count: '1' });
    const seen: (string | null)[][] = [];
    for (let i = 0; i < 3; i++) {
      const res = await get(url, token);
      expect(res.status).toBe(200);
      seen.push(remainingHeaders(res));
    }
    expect(seen).toEqual([
      ['2', '4', null],
      ['1', '3', null],
      ['0', '2', null],
    ]);
    const rejected = await get(url, token);
    expect(rejected.status).toBe(429);
    expect(rejected.headers.get('retry-after')).toBe('1');
    expect(remainingHeaders(rejected)).toEqual(['0', '2', null]);
    expect(sim.stats.accepted['bookingList']).toBe(3);
    expect(sim.stats.rejected429).toBe(1);

    t += 999; // still inside the 1 s window of the first request
    expect((await get(url, token)).status).toBe(429);
    t += 1; // the first three left the window
    const fourth = await get(url, token);
    expect(fourth.status).toBe(200);
    expect(remainingHeaders(fourth)).toEqual(['2', '1', null]);
    expect((await get(url, token)).status).toBe(200); // 5th in 10 s
    const minuteFull = await get(url, token);
    expect(minuteFull.status).toBe(429);
    // The 10 s window frees its first slot 10 s after the first request: 9 s from now.
    expect(minuteFull.headers.get('retry-after')).toBe('9');
    expect(remainingHeaders(minuteFull)).toEqual(['1', '0', null]);
    expect(sim.stats.accepted['bookingList']).toBe(5);
  });

  it('limits the token endpoint per IP', async () => {
    t += 60_000;
    const form = { grant_type: 'client_credentials', client_id: 'sim-client', client_secret: 'sim-secret' };
    expect((await tokenResponse(sim, form)).status).toBe(200);
    expect((await tokenResponse(sim, form)).status).toBe(200);
    const third = await tokenResponse(sim, form);
    expect(third.status).toBe(429);
    expect(third.headers.get('retry-after')).toBe('1');
  });
});

describe('simulator: injected faults', () => {
  let sim: Simulator;
  let token: string;
  beforeAll(async () => {
    sim = await startSimulator({ rateLimits: { ...noLimits } });
    token = await accessToken(sim);
  });
  afterEach(() => {
    sim.faults.error5xxRate = 0;
    sim.faults.spurious429Rate = 0;
    sim.faults.spurious401Rate = 0;
    sim.faults.latencyMs = { min: 0, max: 0 };
  });
  afterAll(() => sim.close());

  it('error5xxRate 1 answers 500 or 503 (503 with retry-after) with limit headers, not counted', async () => {
    sim.faults.error5xxRate = 1;
    const acceptedBefore = sim.stats.accepted['bookingList'] ?? 0;
    const statuses = new Set<number>();
    for (let i = 0; i < 30; i++) {
      const res = await get(listUrl(sim, '500100', { count: '1' }), token);
      statuses.add(res.status);
      expect([500, 503]).toContain(res.status);
      expect(res.headers.get('x-ratelimit-remaining-second')).not.toBeNull();
      if (res.status === 503) expect(res.headers.get('retry-after')).toBe('1');
    }
    expect(statuses).toEqual(new Set([500, 503]));
    expect(sim.stats.accepted['bookingList'] ?? 0).toBe(acceptedBefore);
  });

  it('spurious 429 and 401 faults', async () => {
    sim.faults.spurious429Rate = 1;
    const r429 = await get(listUrl(sim, '500100'), token);
    expect(r429.status).toBe(429);
    expect(r429.headers.get('retry-after')).toBe('1');
    sim.faults.spurious429Rate = 0;
    sim.faults.spurious401Rate = 1;
    expect((await get(listUrl(sim, '500100'), token)).status).toBe(401);
    sim.faults.spurious401Rate = 0;
    expect((await get(listUrl(sim, '500100', { count: '1' }), token)).status).toBe(200);
  });

  it('latency is added to responses', async () => {
    sim.faults.latencyMs = { min: 80, max: 100 };
    const started = performance.now();
    expect((await get(listUrl(sim, '500100', { count: '1' }), token)).status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(75);
  });
});
