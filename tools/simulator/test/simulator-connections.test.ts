/**
 * The simulator serves several API connections (clients), as the provider does for a partner
 * that follows many hotels: each with its own credentials, its own budget (a contracted one, or
 * the simulator's), only its own properties, and credentials that can be regenerated or
 * deleted while it runs. The token endpoint's budget stays per IP, shared by all of them.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { simulatorClaims, startSimulator, type Simulator } from '../index.js';
import { noLimits, remainingHeaders, tokenResponse } from '../../../test/helpers/simulator-http.js';

let sim: Simulator | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

const A = { clientId: 'conn-a', clientSecret: 'secret-a', propertyIds: ['500100'] };
const B = { clientId: 'conn-b', clientSecret: 'secret-b', propertyIds: ['500200', '500300'], rateLimits: { bookingList: [{ limit: 2, windowMs: 60_000 }] } };
const PROPERTIES = [
  { id: '500100', bookingCount: 3 },
  { id: '500200', bookingCount: 3 },
  { id: '500300', bookingCount: 0 },
];

async function token(s: Simulator, clientId: string, clientSecret: string): Promise<Response> {
  return tokenResponse(s, { grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret });
}
async function tokenOf(s: Simulator, c: { clientId: string; clientSecret: string }): Promise<string> {
  const res = await token(s, c.clientId, c.clientSecret);
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
}
const list = (s: Simulator, propertyId: string, bearer: string) =>
  fetch(`${s.url}/api/read-reservation/v1/properties/${propertyId}/bookings?count=10`, { headers: { authorization: `Bearer ${bearer}` } });

describe('simulator: several API connections', () => {
  it('gives each connection its own budget: a contracted one where set, else the default', async () => {
    sim = await startSimulator({ clients: [A, B], properties: PROPERTIES, rateLimits: { ...noLimits, bookingList: [{ limit: 3, windowMs: 60_000 }] } });
    const [a, b] = [await tokenOf(sim, A), await tokenOf(sim, B)];
    // B's contract: 2 a minute; the third is refused with retry-after, whatever A does.
    expect((await list(sim, '500200', b)).status).toBe(200);
    const second = await list(sim, '500200', b);
    expect(second.status).toBe(200);
    expect(remainingHeaders(second)).toEqual(['0', null, null]);
    const third = await list(sim, '500300', b);
    expect(third.status).toBe(429);
    expect(Number(third.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // A has the simulator's 3 a minute, untouched by B's.
    for (let i = 0; i < 3; i++) expect((await list(sim, '500100', a)).status).toBe(200);
    expect((await list(sim, '500100', a)).status).toBe(429);

    expect(sim.stats.acceptedByClient).toEqual({ 'conn-a': { bookingList: 3 }, 'conn-b': { bookingList: 2 } });
    expect(sim.stats.rejected429ByClient).toEqual({ 'conn-a': 1, 'conn-b': 1 });
  });

  it('answers 403 for a property of another connection, uncounted, and lists only its own properties', async () => {
    sim = await startSimulator({ clients: [A, B], properties: PROPERTIES, rateLimits: noLimits });
    const a = await tokenOf(sim, A);
    const res = await list(sim, '500200', a);
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ errors: [{ code: 'Forbidden', message: 'the API connection has no access to property 500200' }] });
    const details = await fetch(`${sim.url}/api/read-reservation/v1/properties/500200/bookings/${sim.bookings('500200')[0]!.number}`, {
      headers: { authorization: `Bearer ${a}` },
    });
    expect(details.status).toBe(403);
    expect(sim.stats.acceptedByClient['conn-a']).toBeUndefined();

    const b = await tokenOf(sim, B);
    const props = await fetch(`${sim.url}/api/content/v1/properties`, { headers: { authorization: `Bearer ${b}` } });
    expect(props.status).toBe(200);
    expect(((await props.json()) as { properties: { id: string }[] }).properties.map((p) => String(p.id)).sort()).toEqual(['500200', '500300']);
  });

  it('a regenerated secret ends the old one and the tokens issued with it; a deleted connection gets no token', async () => {
    sim = await startSimulator({ clients: [A, B], properties: PROPERTIES, rateLimits: noLimits });
    const old = await tokenOf(sim, A);
    expect((await list(sim, '500100', old)).status).toBe(200);

    sim.setClientSecret('conn-a', 'secret-a2');
    expect((await list(sim, '500100', old)).status).toBe(401);
    const refused = await token(sim, 'conn-a', 'secret-a');
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: string }).error).toBe('unauthorized_client');
    const fresh = await tokenOf(sim, { clientId: 'conn-a', clientSecret: 'secret-a2' });
    expect((await list(sim, '500100', fresh)).status).toBe(200);

    // B is untouched by A's regeneration.
    const b = await tokenOf(sim, B);
    expect((await list(sim, '500200', b)).status).toBe(200);
    sim.setClientSecret('conn-b', undefined);
    expect((await list(sim, '500200', b)).status).toBe(401);
    expect((await token(sim, 'conn-b', 'secret-b')).status).toBe(401);
    expect(() => sim!.setClientSecret('conn-b', 'again')).toThrow('no simulator client conn-b');
  });

  it('keeps the token endpoint budget per IP, shared by every connection', async () => {
    sim = await startSimulator({ clients: [A, B], properties: PROPERTIES, rateLimits: { ...noLimits, token: [{ limit: 3, windowMs: 60_000 }] } });
    expect((await token(sim, 'conn-a', 'secret-a')).status).toBe(200);
    expect((await token(sim, 'conn-b', 'secret-b')).status).toBe(200);
    expect((await token(sim, 'conn-a', 'secret-a')).status).toBe(200);
    const fourth = await token(sim, 'conn-b', 'secret-b');
    expect(fourth.status).toBe(429);
  });

  it("grants each connection the APIs the hotel ticked: the token's api_accesses claim, 403 for the others (uncounted), changed for the tokens issued after", async () => {
    const C = { clientId: 'conn-c', clientSecret: 'secret-c', apiAccesses: ['reservation_api', 'content'] };
    sim = await startSimulator({ clients: [A, C], properties: PROPERTIES, rateLimits: noLimits });
    const claims = (t: string) => JSON.parse(Buffer.from(t.split('.')[1]!, 'base64url').toString('utf8')) as { api_accesses?: string[] };
    const get = (path: string, bearer: string) => fetch(`${sim!.url}${path}`, { headers: { authorization: `Bearer ${bearer}` } });
    const paths = {
      reservation_api: '/api/read-reservation/v1/properties/500100/bookings?count=10',
      content: '/api/content/v1/properties/500100',
      [simulatorClaims.referenceData]: '/api/reference-data/payment-methods',
      [simulatorClaims.pms]: '/api/pms/v2/properties/500100/rooms',
      [simulatorClaims.pmsAnalytics]: '/api/pms-analytics/v1/properties/500100/daily-occupancy?startStayDate=2026-01-01&endStayDate=2026-01-02',
      [simulatorClaims.pmsIntegrationStorage]: '/api/pms-integration-storage/v1/properties/500100/inventories/blocks/1',
    };
    const statuses = async (bearer: string) =>
      Object.fromEntries(await Promise.all(Object.entries(paths).map(async ([claim, path]) => [claim, (await get(path, bearer)).status] as const)));

    // By default every area the daemon reads is granted.
    const a = await tokenOf(sim, A);
    expect(claims(a).api_accesses).toEqual(Object.keys(paths));
    expect(Object.values(await statuses(a)).every((s) => s !== 403)).toBe(true);

    const c = await tokenOf(sim, C);
    expect(claims(c).api_accesses).toEqual(['reservation_api', 'content']);
    expect(await statuses(c)).toEqual({
      reservation_api: 200,
      content: 200,
      'sim.reference_data': 403,
      'sim.pms': 403,
      'sim.pms_analytics': 403,
      'sim.pms_integration_storage': 403,
    });
    const pmsPath = paths[simulatorClaims.pms]!;
    const refused = await get(pmsPath, c);
    expect(await refused.json()).toEqual({
      warnings: [],
      errors: [{ code: 'Forbidden', message: 'the access token has no access to this method (api_accesses lacks sim.pms)' }],
    });
    expect(sim.stats.acceptedByClient['conn-c']).toEqual({ bookingList: 1, standard: 1 });

    // The hotel ticks the PMS API: the next token has it; the token in hand keeps its claim.
    sim.setApiAccesses('conn-c', ['reservation_api', 'content', simulatorClaims.pms]);
    expect((await get(pmsPath, c)).status).toBe(403);
    const c2 = await tokenOf(sim, C);
    expect(claims(c2).api_accesses).toEqual(['reservation_api', 'content', 'sim.pms']);
    expect((await get(pmsPath, c2)).status).toBe(200);

    // null: tokens without the claim, served everywhere (a provider that does not say).
    sim.setApiAccesses('conn-c', null);
    const c3 = await tokenOf(sim, C);
    expect(claims(c3).api_accesses).toBeUndefined();
    expect((await get(paths[simulatorClaims.pmsAnalytics]!, c3)).status).toBe(200);
  });

  it('a claim that names fewer APIs than the connection may use: the token says the documented two, and every API answers', async () => {
    const D = { clientId: 'conn-d', clientSecret: 'secret-d', claim: ['reservation_api', 'content'] };
    sim = await startSimulator({ clients: [D], properties: PROPERTIES, rateLimits: noLimits });
    const d = await tokenOf(sim, D);
    expect((JSON.parse(Buffer.from(d.split('.')[1]!, 'base64url').toString('utf8')) as { api_accesses: string[] }).api_accesses).toEqual([
      'reservation_api',
      'content',
    ]);
    const get = (path: string) => fetch(`${sim!.url}${path}`, { headers: { authorization: `Bearer ${d}` } });
    expect((await get('/api/pms/v2/properties/500100/rooms')).status).toBe(200);
    expect((await get('/api/reference-data/payment-methods')).status).toBe(200);
    // What it grants is still the connection's: without the PMS API, a 403.
    sim.setApiAccesses('conn-d', ['reservation_api', 'content']);
    const d2 = await tokenOf(sim, D);
    expect((await fetch(`${sim.url}/api/pms/v2/properties/500100/rooms`, { headers: { authorization: `Bearer ${d2}` } })).status).toBe(403);
  });
});
