/**
 * Access tokens and continue tokens of the simulated provider.
 *
 * Access tokens are JWT-shaped (base64url header.payload.signature) like the provider's, but
 * signed with HMAC-SHA256 and a key private to one simulator instance: a token from another
 * instance, or altered in any byte, is rejected with 401.
 */
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import type { ApiArea } from '../../src/provider/api-access.js';
import { EPOCH_2009_MS, type Cursor } from './data.js';

/**
 * The api_accesses value of each API area in the simulated provider's tokens. The documents show
 * two (`reservation_api` and `content`, in the sample token); what the provider calls the others
 * they do not say. The simulator names those its own way, which no name the daemon assumes
 * (src/provider/api-access.ts) matches: a daemon that depended on its guess would fail here.
 */
export const simulatorClaims: Readonly<Record<ApiArea, string>> = {
  readReservation: 'reservation_api',
  content: 'content',
  referenceData: 'sim.reference_data',
  pms: 'sim.pms',
  pmsAnalytics: 'sim.pms_analytics',
  pmsIntegrationStorage: 'sim.pms_integration_storage',
};

export interface AccessClaims {
  exp: number;
  iat: number;
  jti: string;
  azp: string;
  /** The client's credentials generation when issued (the simulator's own claim): a new secret ends the older tokens. */
  gen?: number;
  /** The API areas the connection may use when the token was issued (absent: a token without the claim, which the simulator serves everywhere). */
  api_accesses?: string[];
  /** The simulator's own claim: the areas granted, when the claim says less than that (SimulatorClient.claim). */
  granted?: string[];
}

export class AccessTokens {
  private readonly key = randomBytes(32);

  constructor(private readonly issuer: string) {}

  private sign(data: string): string {
    return createHmac('sha256', this.key).update(data).digest('base64url');
  }

  /** A token of `clientId`; `apiAccesses` is its api_accesses claim (undefined: no such claim), `granted` what it grants when that says less. */
  issue(clientId: string, nowMs: number, ttlSeconds: number, generation = 0, apiAccesses?: readonly string[], granted?: readonly string[]): string {
    const iat = Math.floor(nowMs / 1000);
    const header = { alg: 'HS256', typ: 'JWT', kid: 'staysync-simulator' };
    const payload = {
      exp: iat + ttlSeconds,
      iat,
      jti: randomUUID(),
      iss: `${this.issuer}/auth/realms/PartnerApi`,
      aud: 'TravelLine.PartnerAPI',
      sub: `service-account-${clientId}`,
      typ: 'Bearer',
      azp: clientId,
      scope: '',
      ...(apiAccesses ? { api_accesses: [...apiAccesses] } : {}),
      client_id: clientId,
      gen: generation,
      ...(granted ? { granted: [...granted] } : {}),
    };
    const data = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
    return `${data}.${this.sign(data)}`;
  }

  /** The claims of a valid, unexpired token issued by this instance; undefined otherwise. */
  verify(token: string, nowMs: number): AccessClaims | undefined {
    const parts = token.split('.');
    if (parts.length !== 3) return undefined;
    const [h, p, s] = parts as [string, string, string];
    if (this.sign(`${h}.${p}`) !== s) return undefined;
    try {
      const claims = JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as AccessClaims;
      if (typeof claims.exp !== 'number' || typeof claims.azp !== 'string') return undefined;
      return nowMs < claims.exp * 1000 ? claims : undefined;
    } catch {
      return undefined;
    }
  }
}

/**
 * Continue tokens: base64 of `{"BookingIds":[..],"MillisecondsFrom":..}` as the provider's.
 * After `invalidateContinueTokens()` the simulator adds `"Epoch":n`; tokens of an older
 * epoch are rejected.
 */
export function encodeContinueToken(cursor: Cursor, epoch: number): string {
  const body: Record<string, unknown> = { BookingIds: cursor.ids, MillisecondsFrom: cursor.ms };
  if (epoch > 0) body['Epoch'] = epoch;
  return Buffer.from(JSON.stringify(body), 'utf8').toString('base64');
}

/** The cursor of a token, or a reason why it is refused. */
export function decodeContinueToken(token: string, epoch: number): Cursor | { error: string } {
  // A client that forgets to URL-encode the token turns '+' into ' '.
  const text = Buffer.from(token.replaceAll(' ', '+'), 'base64').toString('utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { error: 'continueToken cannot be decoded' };
  }
  if (typeof parsed !== 'object' || parsed === null) return { error: 'continueToken cannot be decoded' };
  const o = parsed as Record<string, unknown>;
  const ms = o['MillisecondsFrom'];
  const ids = o['BookingIds'];
  const tokenEpoch = o['Epoch'] ?? 0;
  if (
    typeof ms !== 'number' ||
    !Number.isInteger(ms) ||
    !Array.isArray(ids) ||
    !ids.every((x) => typeof x === 'number' && Number.isInteger(x)) ||
    typeof tokenEpoch !== 'number'
  ) {
    return { error: 'continueToken has an unexpected structure' };
  }
  if (ms < EPOCH_2009_MS) return { error: 'continueToken points before 2009-01-01T00:00:00Z' };
  if (tokenEpoch < epoch) return { error: 'continueToken is no longer valid; start again with lastModification' };
  return { ms, ids: ids as number[] };
}
