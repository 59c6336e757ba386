/**
 * What an access token grants (src/provider/api-access.ts): its api_accesses claim, with the
 * rules that keep a provider that behaves otherwise from costing anything.
 */
import { describe, expect, it } from 'vitest';
import { ApiAccess, apiAreaNames, apiAreas, areaOfPath } from '../../src/provider/api-access.js';

/** A JWT-shaped token with this payload (the signature is not checked by the daemon). */
const jwt = (payload: unknown): string =>
  ['{"alg":"RS256","typ":"JWT"}', JSON.stringify(payload)].map((p) => Buffer.from(p).toString('base64url')).join('.') + '.c2lnbmF0dXJl';

const grantedBy = (token: string) => apiAreaNames.filter((a) => ApiAccess.ofToken(token).grants(a));

describe('API areas of an access token', () => {
  it("grants what the provider's sample claim names, and nothing else", () => {
    // The provider's documented sample token: api_accesses ["reservation_api","content"] (docs/operations.md, APIs the connection may not use).
    expect(grantedBy(jwt({ exp: 1, api_accesses: ['reservation_api', 'content'], roles: ['content:full_info_reader'] }))).toEqual([
      'readReservation',
      'content',
    ]);
    expect(grantedBy(jwt({ api_accesses: ['reservation_api', 'content', 'reference_data'] }))).toEqual(['readReservation', 'content', 'referenceData']);
    expect(grantedBy(jwt({ api_accesses: [] }))).toEqual([]);
    expect(grantedBy(jwt({ api_accesses: 'content' }))).toEqual(['content']);
  });

  it('a token without a readable claim grants every area (as before the claim was read)', () => {
    for (const token of [jwt({ exp: 1 }), jwt({ api_accesses: [1, 2] }), jwt({ api_accesses: null }), 'opaque-token', 'a.b.c', jwt('text')]) {
      expect(grantedBy(token), token).toEqual(apiAreaNames);
    }
  });

  it('a claim value not known here may be an assumed area under its real name: assumed areas count as granted, documented ones do not', () => {
    const access = ApiAccess.ofToken(jwt({ api_accesses: ['content', 'pms_api'] }));
    expect(access.unknownClaims()).toEqual(['pms_api']);
    expect(apiAreaNames.filter((a) => access.grants(a))).toEqual(['content', 'referenceData', 'pms', 'pmsAnalytics', 'pmsIntegrationStorage']);
  });

  it('a 403 refuses an area for this token only', () => {
    const token = jwt({ api_accesses: ['reservation_api', 'content', 'pms'] });
    const access = ApiAccess.ofToken(token);
    access.refuse('pms');
    expect(access.grants('pms')).toBe(false);
    expect(access.whyNot('pms')).toMatch(/403 .*until the next token/);
    expect(ApiAccess.ofToken(token).grants('pms')).toBe(true);
    // The grants before any token are shared: a refusal never sticks to them.
    ApiAccess.everything.refuse('pms');
    expect(ApiAccess.everything.grants('pms')).toBe(true);
  });

  it('says why an area is not granted, naming the claim and whether its name is assumed', () => {
    const access = ApiAccess.ofToken(jwt({ api_accesses: ['reservation_api', 'content'] }));
    expect(access.whyNot('pmsAnalytics')).toBe(
      'the API connection is not granted the PMS Analytics API (api_accesses "pms_analytics", an assumed name): the access token\'s api_accesses are [reservation_api, content]',
    );
    expect(access.whyNot('content')).toContain('(api_accesses "content")');
  });

  it('every area has a claim of its own and a path prefix of its own', () => {
    expect(new Set(apiAreaNames.map((a) => apiAreas[a].claim)).size).toBe(apiAreaNames.length);
    expect(areaOfPath('/api/read-reservation/v1/properties/1/bookings')).toBe('readReservation');
    expect(areaOfPath('/api/content/v1/properties')).toBe('content');
    expect(areaOfPath('/api/reference-data/payment-methods')).toBe('referenceData');
    expect(areaOfPath('/api/pms/v2/properties/1/rooms')).toBe('pms');
    expect(areaOfPath('/api/pms-analytics/v1/properties/1/daily-occupancy')).toBe('pmsAnalytics');
    expect(areaOfPath('/api/pms-integration-storage/v1/properties/1/bookings/2')).toBe('pmsIntegrationStorage');
    expect(areaOfPath('/auth/token')).toBeUndefined();
  });
});
