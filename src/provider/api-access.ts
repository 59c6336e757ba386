/**
 * The provider's API areas the daemon reads, and which of them an access token grants.
 *
 * A hotel ticks the APIs of an API connection in its extranet (Property settings > API
 * connections > Public APIs tab); the token endpoint then issues JWTs whose `api_accesses`
 * claim names the areas the connection may use (the provider's specification, "Token claims";
 * docs/operations.md, "APIs the connection may not use"), and a request to a method the token
 * may not use answers 403. Only two claim values are documented, `reservation_api` and
 * `content` (the sample token); the others below are assumed, in the same style, and marked so.
 *
 * Rules, so that a provider that behaves otherwise costs nothing:
 * - a token without a readable `api_accesses` claim (not a JWT, no claim, not a list of
 *   strings) grants every area: what the daemon did before it read the claim;
 * - a documented area is granted when the claim names it: the claim says so in the
 *   provider's own words;
 * - an area whose name is assumed is tried whether or not the claim names it: the provider
 *   may call it otherwise, or leave it out of the claim. A 403 decides, per method (the
 *   streams: a stream's property, a reference list), never for the whole area;
 * - what a token grants holds until the next token (about 15 minutes), so an area granted in
 *   the extranet is picked up then.
 */

/** Every area the daemon reads, with the value of `api_accesses` that grants it. */
export const apiAreas = {
  readReservation: { claim: 'reservation_api', title: 'Read Reservation API', pathPrefix: '/api/read-reservation/', documented: true },
  content: { claim: 'content', title: 'Content API', pathPrefix: '/api/content/', documented: true },
  referenceData: { claim: 'reference_data', title: 'Reference Data API', pathPrefix: '/api/reference-data/', documented: false },
  pms: { claim: 'pms', title: 'PMS API', pathPrefix: '/api/pms/', documented: false },
  pmsAnalytics: { claim: 'pms_analytics', title: 'PMS Analytics API', pathPrefix: '/api/pms-analytics/', documented: false },
  pmsIntegrationStorage: {
    claim: 'pms_integration_storage',
    title: 'PMS Integration Storage API',
    pathPrefix: '/api/pms-integration-storage/',
    documented: false,
  },
} as const satisfies Record<string, { claim: string; title: string; pathPrefix: string; documented: boolean }>;

export type ApiArea = keyof typeof apiAreas;
export const apiAreaNames = Object.keys(apiAreas) as ApiArea[];

/** The area a request path belongs to (`/api/pms/v2/…` → pms), or undefined (the token endpoint). */
export function areaOfPath(path: string): ApiArea | undefined {
  return apiAreaNames.find((a) => path.startsWith(apiAreas[a].pathPrefix));
}

/** How an area is named to an operator: its title and its claim value (assumed ones said so). */
export function describeArea(area: ApiArea): string {
  const a = apiAreas[area];
  return `${a.title} (api_accesses "${a.claim}"${a.documented ? '' : ', an assumed name'})`;
}

/** What one access token grants. */
export class ApiAccess {
  private constructor(
    /** The claim's values; undefined when the token has no readable claim (every area granted). */
    readonly claims: readonly string[] | undefined,
  ) {}

  /** Every area: a token without the claim, or no token read yet. */
  static readonly everything = new ApiAccess(undefined);

  /** What `accessToken` grants, from its `api_accesses` claim (see the rules above). Never throws. */
  static ofToken(accessToken: string): ApiAccess {
    const claims = apiAccessesClaim(accessToken);
    return claims === undefined ? ApiAccess.everything : new ApiAccess(claims);
  }

  /** Whether requests to `area` may be sent under this token (an assumed area: tried, and a 403 decides). */
  grants(area: ApiArea): boolean {
    const claims = this.claims;
    if (claims === undefined) return true;
    const def = apiAreas[area];
    return !def.documented || claims.includes(def.claim);
  }

  /** Why `area` is not granted, for status and the log. */
  whyNot(area: ApiArea): string {
    return `the API connection is not granted the ${describeArea(area)}: the access token's api_accesses are [${(this.claims ?? []).join(', ')}]`;
  }

  /** The areas of assumed names the claim does not name: tried all the same (none without a claim). */
  triedUnnamed(): ApiArea[] {
    const claims = this.claims;
    if (claims === undefined) return [];
    return apiAreaNames.filter((a) => !apiAreas[a].documented && !claims.includes(apiAreas[a].claim));
  }

  /** The claim's values no area of the table has. */
  unknownClaims(): string[] {
    const known = new Set<string>(apiAreaNames.map((a) => apiAreas[a].claim));
    return (this.claims ?? []).filter((c) => !known.has(c));
  }

  /** The same grants: a renewed token that changes nothing is not news. */
  sameClaims(other: ApiAccess): boolean {
    const a = this.claims;
    const b = other.claims;
    if (a === undefined || b === undefined) return a === b;
    return a.length === b.length && [...a].sort().join('\n') === [...b].sort().join('\n');
  }
}

/** The `api_accesses` claim of a JWT (its payload, base64url JSON), or undefined when there is none to read. */
function apiAccessesClaim(token: string): string[] | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  try {
    const payload: unknown = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8'));
    if (typeof payload !== 'object' || payload === null) return undefined;
    const claim = (payload as Record<string, unknown>)['api_accesses'];
    // A single value is a list of one (a JWT claim may be either).
    if (typeof claim === 'string') return [claim];
    if (!Array.isArray(claim)) return undefined;
    const values = claim.filter((c): c is string => typeof c === 'string');
    return values.length === claim.length ? values : undefined;
  } catch {
    return undefined;
  }
}
