/**
 * What an access token grants (src/provider/api-access.ts): its api_accesses claim, with the
 * rules that keep a provider that behaves otherwise from costing anything.
 */
import { describe, expect, it } from 'vitest';
import { ApiAccess, apiAreaNames, apiAreas, areaOfPath, describeArea } from '../../src/provider/api-access.js';

/** A JWT-shaped token with this payload (the signature is not checked by the daemon). */
const jwt = (payload: unknown): string =>
  ['{"alg":"RS256","typ":"JWT"}', JSON.stringify(payload)].map((p) => Buffer.from(p).toString('base64url')).join('.') + '.c2lnbmF0dXJl';

const grantedBy = (token: string) => apiAreaNames.filter((a) => ApiAccess.ofToken(token).grants(a));

describe('API areas of an access token', () => {
  it('grants the documented areas the claim names; the areas of assumed names are tried whether or not it names them', () => {
    // The provider's documented sample token: api_accesses ["reservation_api","content"] (docs/operations.md, APIs the connection may not use).
    const assumed = ['referenceData', 'pms', 'pmsAnalytics', 'pmsIntegrationStorage'];
    expect(grantedBy(jwt({ exp: 1, api_accesses: ['reservation_api', 'content'], roles: ['content:full_info_reader'] }))).toEqual([
      'readReservation',
      'content',
      ...assumed,
    ]);
    expect(grantedBy(jwt({ api_accesses: ['reservation_api', 'content', 'reference_data'] }))).toEqual(['readReservation', 'content', ...assumed]);
    // A documented area the claim does not name is not granted: the claim says so in the provider's own words.
    expect(grantedBy(jwt({ api_accesses: [] }))).toEqual(assumed);
    expect(grantedBy(jwt({ api_accesses: 'content' }))).toEqual(['content', ...assumed]);
  });

  it('a token without a readable claim grants every area (as before the claim was read)', () => {
    for (const token of [jwt({ exp: 1 }), jwt({ api_accesses: [1, 2] }), jwt({ api_accesses: null }), 'opaque-token', 'a.b.c', jwt('text')]) {
      expect(grantedBy(token), token).toEqual(apiAreaNames);
    }
  });

  it('knows which claim values it does not know, and which areas it tries without the claim naming them', () => {
    const access = ApiAccess.ofToken(jwt({ api_accesses: ['content', 'pms_api', 'pms'] }));
    expect(access.unknownClaims()).toEqual(['pms_api']);
    expect(access.triedUnnamed()).toEqual(['referenceData', 'pmsAnalytics', 'pmsIntegrationStorage']);
    expect(ApiAccess.ofToken(jwt({ exp: 1 })).triedUnnamed()).toEqual([]);
  });

  it('says why a documented area is not granted, naming the claim', () => {
    const access = ApiAccess.ofToken(jwt({ api_accesses: ['content'] }));
    expect(access.whyNot('readReservation')).toBe(
      'the API connection is not granted the Read Reservation API (api_accesses "reservation_api"): the access token\'s api_accesses are [content]',
    );
    expect(describeArea('pms')).toBe('PMS API (api_accesses "pms", an assumed name)');
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
