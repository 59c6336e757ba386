import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { createLogger } from '../../src/util/log.js';
import { fetchedAtOf, ProviderClient, readByOf } from '../../src/provider/client.js';
import {
  AuthenticationError,
  ContinueTokenRejectedError,
  InvalidPayloadError,
  NotFoundError,
  ProviderError,
  ProviderUnavailableError,
} from '../../src/provider/errors.js';
import type { Clock } from '../../src/util/clock.js';

const fixtures = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'provider');
const fixture = (name: string): string => readFileSync(join(fixtures, name), 'utf8');

const SECRET = 's3cr3t-Do-Not-Log-9f8e7d';
const CLIENT_ID = 'staysync-test-client';

/** Virtual time: sleep(ms) moves time forward by ms at once (recorded), so backoffs cost nothing. */
class AutoClock implements Clock {
  t = 1_700_000_000_000;
  sleeps: number[] = [];
  now(): number {
    return this.t;
  }
  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) throw signal.reason;
    this.sleeps.push(ms);
    await new Promise<void>((r) => setImmediate(r));
    if (signal?.aborted) throw signal.reason;
    this.t += Math.max(0, ms);
  }
}

interface Seen {
  method: string;
  path: string;
  query: URLSearchParams;
  authorization: string | undefined;
  body: string;
  at: number;
}
interface Reply {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
  delayMs?: number;
}

/** A scripted stand-in for the provider: token endpoint + read-reservation API. */
class FakeProvider {
  server!: Server;
  url = '';
  tokenRequests: Seen[] = [];
  apiRequests: Seen[] = [];
  /** Scripted answers, consumed in order; afterwards `apiDefault` answers. */
  apiScript: ((req: Seen) => Reply)[] = [];
  apiDefault: (req: Seen) => Reply = () => ({ status: 200, body: fixture('read-reservation-booking-summaries-page-propertyId-as-string.json') });
  tokenScript: ((req: Seen) => Reply)[] = [];
  tokenExpiresIn = 1800;
  /** Tokens the API accepts; a request with another token gets 401. */
  validTokens = new Set<string>();
  issued = 0;

  constructor(private readonly clock: AutoClock) {}

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => {
        const seen = this.record(req, body);
        const isToken = seen.path === '/auth/token';
        (isToken ? this.tokenRequests : this.apiRequests).push(seen);
        const reply = isToken ? (this.tokenScript.shift() ?? this.issueToken)(seen) : this.answerApi(seen);
        const send = () => {
          if (res.destroyed) return;
          const text = typeof reply.body === 'string' ? reply.body : reply.body === undefined ? '' : JSON.stringify(reply.body);
          res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
          res.end(text);
        };
        if (reply.delayMs) setTimeout(send, reply.delayMs);
        else send();
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  issueToken = (): Reply => {
    const token = `tok-${++this.issued}`;
    this.validTokens.add(token);
    return { status: 200, body: { access_token: token, expires_in: this.tokenExpiresIn, token_type: 'Bearer', scope: '' } };
  };

  private answerApi(seen: Seen): Reply {
    const scripted = this.apiScript.shift();
    if (scripted) return scripted(seen);
    const token = seen.authorization?.replace(/^Bearer /, '') ?? '';
    if (!this.validTokens.has(token)) return { status: 401, body: '' };
    return this.apiDefault(seen);
  }

  private record(req: IncomingMessage, body: string): Seen {
    const u = new URL(req.url ?? '/', 'http://x');
    return { method: req.method ?? '', path: u.pathname, query: u.searchParams, authorization: req.headers.authorization, body, at: this.clock.now() };
  }
}

let clock: AutoClock;
let provider: FakeProvider;
let logLines: string[];
let client: ProviderClient;

function makeClient(
  overrides: { clientSecret?: string; maxAttempts?: number; requestTimeoutMs?: number; tokenRenewBeforeExpiryMs?: number } = {},
): ProviderClient {
  const config = loadConfig({
    env: {},
    overrides: {
      provider: {
        url: provider.url,
        referenceDataUrl: provider.url,
        clientId: CLIENT_ID,
        clientSecret: overrides.clientSecret ?? SECRET,
        maxAttempts: overrides.maxAttempts ?? 4,
        requestTimeoutMs: overrides.requestTimeoutMs ?? 5000,
        tokenRenewBeforeExpiryMs: overrides.tokenRenewBeforeExpiryMs ?? 60_000,
      },
    },
  });
  const logger = createLogger('trace', { write: (line: string) => void logLines.push(line) });
  return new ProviderClient({ config, logger, clock, random: () => 0.5 });
}

const signal = () => new AbortController().signal;
const PROPERTY = '500360';

beforeEach(async () => {
  clock = new AutoClock();
  provider = new FakeProvider(clock);
  logLines = [];
  await provider.start();
  client = makeClient();
});

afterEach(async () => {
  await client.close();
  await provider.stop();
});

function expectNoSecretsLogged(): void {
  const all = logLines.join('\n');
  expect(all).not.toContain(SECRET);
  for (let i = 1; i <= provider.issued; i++) expect(all).not.toMatch(new RegExp(`tok-${i}\\b`));
  expect(all.toLowerCase()).not.toContain('bearer');
}

describe('ProviderClient', () => {
  it("reads what each access token grants from its api_accesses claim; renewedAccess gives the next token's, and a change is logged once", async () => {
    const jwt = (accesses: string[], n: number) =>
      [{ alg: 'RS256' }, { api_accesses: accesses, jti: n }].map((p) => Buffer.from(JSON.stringify(p)).toString('base64url')).join('.') + '.sig';
    const claims = [
      ['content', 'provider_client_test_x'],
      ['reservation_api', 'content', 'pms', 'provider_client_test_x'],
      ['content', 'pms', 'provider_client_test_x', 'reservation_api'],
    ];
    provider.tokenScript = claims.map((c, i) => () => ({ status: 200, body: { access_token: jwt(c, i), expires_in: 600, token_type: 'Bearer' } }));
    expect(client.currentAccess.grants('pms')).toBe(true); // no token yet: every area
    const first = await client.access(signal());
    // A documented area the claim does not name is not granted; an assumed one is tried.
    expect([first.grants('readReservation'), first.grants('content'), first.grants('pms')]).toEqual([false, true, true]);
    expect(client.currentAccess).toBe(first);
    const startedAt = clock.t;
    const second = await client.renewedAccess(signal());
    // It waited for the renewal (600 s less 60 s), and the new token grants the Read Reservation API.
    expect(clock.t - startedAt).toBeGreaterThanOrEqual(540_000);
    expect(second.grants('readReservation')).toBe(true);
    await client.renewedAccess(signal()); // the same grants in another order
    expect(provider.tokenRequests).toHaveLength(3);
    const records = logLines.map((l) => JSON.parse(l) as { msg: string; level: number });
    expect(records.filter((l) => l.msg.startsWith('the access token grants')).map((l) => l.msg)).toEqual([
      'the access token grants Content API; not granted: Read Reservation API (their streams do not run); tried although the claim does not name them: Reference Data API, PMS API, PMS Analytics API, PMS Integration Storage API (a 403 decides)',
      'the access token grants Read Reservation API, Content API, PMS API; tried although the claim does not name them: Reference Data API, PMS Analytics API, PMS Integration Storage API (a 403 decides)',
    ]);
    // A value the daemon does not know: said once, whatever the tokens that carry it.
    const unknown = records.filter((l) => l.msg.startsWith("the access token's api_accesses holds values staysync does not know"));
    expect(unknown.map((l) => l.msg)).toEqual([
      "the access token's api_accesses holds values staysync does not know: provider_client_test_x; they may be the names of the APIs it only assumes, which it tries all the same (a 403 decides, per request)",
    ]);
    expectNoSecretsLogged();
    for (const [i, c] of claims.entries()) expect(logLines.join('\n')).not.toContain(jwt(c, i).split('.')[1]!);
  });

  it('a claim of many long values the daemon does not know: said once, at most 20 values of 64 characters', async () => {
    const values = Array.from({ length: 40 }, (_, i) => `provider_client_long_${i}_${'x'.repeat(1000)}`);
    const token =
      [{ alg: 'RS256' }, { api_accesses: ['reservation_api', ...values] }].map((p) => Buffer.from(JSON.stringify(p)).toString('base64url')).join('.') + '.sig';
    provider.tokenScript = [() => ({ status: 200, body: { access_token: token, expires_in: 600, token_type: 'Bearer' } })];
    await client.access(signal());
    const said = logLines.filter((l) => l.includes('holds values staysync does not know'));
    expect(said).toHaveLength(1);
    expect(said[0]!.length).toBeLessThan(4_000);
    expect(said[0]).toContain('(20 more)');
    // The info line of the grants is bounded alike.
    const grants = logLines.find((l) => l.includes('the access token grants'))!;
    expect(grants.length).toBeLessThan(4_000);
  });

  it('gets a token with client credentials, caches it and reuses it across calls', async () => {
    const { page } = await client.getBookingSummaries(PROPERTY, { continueToken: 'abc/+=', count: 500 }, signal());
    expect(page.hasMoreData).toBe(true);
    expect(page.bookingSummaries).toHaveLength(5);
    await client.getBookingSummaries(PROPERTY, { lastModification: '2024-01-01T00:00:00Z' }, signal());
    provider.apiDefault = () => ({ status: 200, body: fixture('read-reservation-booking-details-cancelled-channel.json') });
    const details = await Promise.all(Array.from({ length: 5 }, () => client.getBooking(PROPERTY, '20210325-500360-6987835', signal())));
    expect(details[0]!.booking.number).toBe('20210325-500360-6987835');

    expect(provider.tokenRequests).toHaveLength(1);
    const form = new URLSearchParams(provider.tokenRequests[0]!.body);
    expect(Object.fromEntries(form)).toEqual({ grant_type: 'client_credentials', client_id: CLIENT_ID, client_secret: SECRET });
    expect(provider.apiRequests).toHaveLength(7);
    expect(provider.apiRequests.every((r) => r.authorization === 'Bearer tok-1' && r.method === 'GET')).toBe(true);

    const [first, second] = provider.apiRequests;
    expect(first!.path).toBe(`/api/read-reservation/v1/properties/${PROPERTY}/bookings`);
    expect(first!.query.get('continueToken')).toBe('abc/+=');
    expect(first!.query.get('count')).toBe('500');
    expect(first!.query.has('lastModification')).toBe(false);
    expect(second!.query.get('lastModification')).toBe('2024-01-01T00:00:00Z');
    expect(provider.apiRequests[2]!.path).toBe(`/api/read-reservation/v1/properties/${PROPERTY}/bookings/20210325-500360-6987835`);
    expect(client.stats().requests).toMatchObject({ bookingList: 2, bookingDetails: 5, token: 1 });
    expectNoSecretsLogged();
  });

  it('renews the token before it expires', async () => {
    provider.tokenExpiresIn = 600; // renew 60 s before: after 540 s
    await client.getBookingSummaries(PROPERTY, {}, signal());
    clock.t += 539_000;
    await client.getBookingSummaries(PROPERTY, {}, signal());
    expect(provider.tokenRequests).toHaveLength(1);
    clock.t += 1_000;
    await client.getBookingSummaries(PROPERTY, {}, signal());
    expect(provider.tokenRequests).toHaveLength(2);
    expect(provider.apiRequests.at(-1)!.authorization).toBe('Bearer tok-2');
  });

  it('a token shorter-lived than the renewal margin is still reused, and token calls use the token budget', async () => {
    provider.tokenExpiresIn = 30; // shorter than tokenRenewBeforeExpiryMs (60 s): renew at half-life
    await client.getBookingSummaries(PROPERTY, {}, signal());
    clock.t += 14_000;
    await client.getBookingSummaries(PROPERTY, {}, signal());
    expect(provider.tokenRequests).toHaveLength(1);
    clock.t += 1_000;
    await client.getBookingSummaries(PROPERTY, {}, signal());
    expect(provider.tokenRequests).toHaveLength(2);
    expect(
      client.budgets
        .get('token')
        .snapshot()
        .windows.map((w) => w.used),
    ).toEqual([1, 2, 2]);
  });

  it('on 401 drops the token, gets one new token and retries once; concurrent 401s share one refresh', async () => {
    await client.getBookingSummaries(PROPERTY, {}, signal());
    provider.validTokens.delete('tok-1'); // the provider revokes it
    const results = await Promise.all(Array.from({ length: 4 }, () => client.getBookingSummaries(PROPERTY, {}, signal())));
    expect(results.every((r) => r.page.bookingSummaries.length === 5)).toBe(true);
    expect(provider.tokenRequests).toHaveLength(2);
    const retried = provider.apiRequests.slice(1);
    expect(retried.filter((r) => r.authorization === 'Bearer tok-1')).toHaveLength(4);
    expect(retried.filter((r) => r.authorization === 'Bearer tok-2')).toHaveLength(4);
    expect(client.stats()).toMatchObject({ responses401: 4, retries: 4 });
    expect(logLines.some((l) => l.includes('"status":401'))).toBe(true);
    expectNoSecretsLogged();
  });

  it('a late 401 for an already replaced token does not drop the new token', async () => {
    await client.getBookingSummaries(PROPERTY, {}, signal()); // tok-1 cached
    provider.apiScript = [
      () => ({ status: 401, delayMs: 300 }), // B: sent with tok-1, its 401 arrives late
      () => ({ status: 401 }), // A: sent with tok-1, 401 at once → refresh to tok-2
    ];
    const b = client.getBookingSummaries(PROPERTY, {}, signal());
    while (provider.apiRequests.length < 2) await new Promise((r) => setTimeout(r, 5));
    await client.getBookingSummaries(PROPERTY, {}, signal()); // A
    expect(provider.tokenRequests).toHaveLength(2);
    await b;
    // B's invalidate(tok-1) must not have dropped tok-2: no third token request.
    expect(provider.tokenRequests).toHaveLength(2);
    expect(provider.apiRequests.at(-1)!.authorization).toBe('Bearer tok-2');
  });

  it('a second 401 in a row is an error, not a loop', async () => {
    provider.apiScript = [() => ({ status: 401 }), () => ({ status: 401 })];
    const err = await client.getBooking(PROPERTY, 'N-1', signal()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderError);
    expect((err as ProviderError).status).toBe(401);
    expect(provider.apiRequests).toHaveLength(2);
    expect(provider.tokenRequests).toHaveLength(2);
  });

  it('honours retry-after on 429 by pausing the budget', async () => {
    provider.apiScript = [() => ({ status: 429, headers: { 'retry-after': '3' } })];
    const { page } = await client.getBookingSummaries(PROPERTY, {}, signal());
    expect(page.bookingSummaries).toHaveLength(5);
    expect(provider.apiRequests).toHaveLength(2);
    expect(provider.apiRequests[1]!.at - provider.apiRequests[0]!.at).toBeGreaterThanOrEqual(3000);
    expect(client.stats()).toMatchObject({ responses429: 1, retries: 1 });
    expect(logLines.some((l) => l.includes('"status":429') && l.includes('"scope":"bookingList"'))).toBe(true);
  });

  it('retries 503 and 500 with backoff, then succeeds', async () => {
    provider.apiScript = [() => ({ status: 503 }), () => ({ status: 500 })];
    const { page } = await client.getBookingSummaries(PROPERTY, {}, signal());
    expect(page.hasMoreData).toBe(true);
    expect(provider.apiRequests).toHaveLength(3);
    // Full jitter with random()=0.5: half of 500 ms, then half of 1000 ms.
    expect(clock.sleeps).toEqual(expect.arrayContaining([250, 500]));
    expect(client.stats()).toMatchObject({ responses5xx: 2, retries: 2 });
  });

  it('503 with retry-after pauses the budget for that long', async () => {
    provider.apiScript = [() => ({ status: 503, headers: { 'retry-after': '7' } })];
    await client.getBookingSummaries(PROPERTY, {}, signal());
    expect(provider.apiRequests[1]!.at - provider.apiRequests[0]!.at).toBeGreaterThanOrEqual(7000);
  });

  it('gives up after maxAttempts with ProviderUnavailableError', async () => {
    provider.apiDefault = () => ({ status: 502 });
    const err = await client.getBooking(PROPERTY, 'N-1', signal()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderUnavailableError);
    expect((err as ProviderUnavailableError).attempts).toBe(4);
    expect(provider.apiRequests).toHaveLength(4);
  });

  it('400 on a summaries call with a continueToken is ContinueTokenRejectedError, without retry', async () => {
    provider.apiScript = [() => ({ status: 400, body: { error: 'invalid token' } })];
    const err = await client.getBookingSummaries(PROPERTY, { continueToken: 'stale' }, signal()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ContinueTokenRejectedError);
    expect((err as ContinueTokenRejectedError).propertyId).toBe(PROPERTY);
    expect((err as Error).message).toBe('the provider rejected the stored continueToken (HTTP 400)');
    expect((err as Error).message).not.toContain('stale');
    expect(provider.apiRequests).toHaveLength(1);

    provider.apiScript = [() => ({ status: 400 })];
    const other = await client.getBookingSummaries(PROPERTY, { lastModification: '2001-01-01T00:00:00Z' }, signal()).catch((e: unknown) => e);
    expect(other).toBeInstanceOf(ProviderError);
    expect(other).not.toBeInstanceOf(ContinueTokenRejectedError);
    expect((other as ProviderError).status).toBe(400);
  });

  it('404 is NotFoundError, without retry', async () => {
    provider.apiScript = [() => ({ status: 404 })];
    const err = await client.getBooking(PROPERTY, 'gone/1', signal()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotFoundError);
    expect(provider.apiRequests).toHaveLength(1);
    expect(provider.apiRequests[0]!.path).toBe(`/api/read-reservation/v1/properties/${PROPERTY}/bookings/gone%2F1`);
  });

  it('a booking that fails the schema is InvalidPayloadError with raw body, reason and ids', async () => {
    const raw = JSON.stringify({ booking: { number: 'N-1', status: 'Active', modifiedDateTime: '2024-01-01T00:00:00Z', roomStays: 'x' } });
    provider.apiScript = [() => ({ status: 200, body: raw })];
    const err = await client.getBooking(PROPERTY, 'N-1', signal()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidPayloadError);
    const e = err as InvalidPayloadError;
    expect(e.rawBody).toBe(raw);
    expect(e.reason).toMatch(/booking\.roomStays/);
    expect(e.propertyId).toBe(PROPERTY);
    expect(e.bookingNumber).toBe('N-1');
  });

  it('a 2xx body that is not JSON (cut short, an HTML page) is a transport fault: retried, then given up as unavailable', async () => {
    const page = fixture('read-reservation-booking-summaries-page-propertyId-as-string.json');
    provider.apiScript = [
      () => ({ status: 200, body: page.slice(0, page.length / 2) }),
      () => ({ status: 200, headers: { 'content-type': 'text/html' }, body: '<html><body>502 Bad Gateway</body></html>' }),
    ];
    const { page: parsed } = await client.getBookingSummaries(PROPERTY, {}, signal());
    expect(parsed.bookingSummaries).toHaveLength(5);
    expect(provider.apiRequests).toHaveLength(3);
    expect(client.stats()).toMatchObject({ invalidBodies: 2, retries: 2, failures: expect.objectContaining({ invalid_body: 2 }) });

    provider.apiDefault = () => ({ status: 200, body: '<html>' });
    const err = await client.getBooking(PROPERTY, 'N-1', signal()).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(ProviderUnavailableError);
    expect((err as ProviderUnavailableError).lastError).toMatch(/not JSON/);
    expect((err as ProviderUnavailableError).host).toBe(new URL(provider.url).host);
  });

  it('bad credentials are an AuthenticationError that never reveals the secret', async () => {
    provider.tokenScript = [() => ({ status: 400, body: fixture('auth-token-error-invalid-client.json') })];
    const err = await client.getBookingSummaries(PROPERTY, {}, signal()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthenticationError);
    const message = (err as Error).message;
    expect(message).toContain('STAYSYNC_CLIENT_ID');
    expect(message).toContain('STAYSYNC_CLIENT_SECRET');
    expect(message).toContain('unauthorized_client');
    expect(message).not.toContain(SECRET);
    expect(JSON.stringify(err, Object.getOwnPropertyNames(err))).not.toContain(SECRET);
    expect(provider.apiRequests).toHaveLength(0);
    expect(logLines.length).toBeGreaterThan(0);
    expectNoSecretsLogged();

    provider.tokenScript = [() => ({ status: 401, body: fixture('auth-token-error-invalid-client.json') })];
    await expect(client.getBooking(PROPERTY, 'N', signal())).rejects.toBeInstanceOf(AuthenticationError);
    expectNoSecretsLogged();
  });

  it('an abort rejects with its reason at once and is not retried', async () => {
    await client.getBookingSummaries(PROPERTY, {}, signal()); // token in cache
    provider.apiScript = [() => ({ status: 200, body: '{}', delayMs: 2000 })];
    const ac = new AbortController();
    const reason = new Error('shutting down');
    const started = Date.now();
    const p = client.getBookingSummaries(PROPERTY, {}, ac.signal);
    setTimeout(() => ac.abort(reason), 50);
    await expect(p).rejects.toBe(reason);
    expect(Date.now() - started).toBeLessThan(1500);
    expect(provider.apiRequests).toHaveLength(2);
    expect(client.stats().retries).toBe(0);
    // The permit was released: nothing in flight.
    expect(client.budgets.get('bookingList').snapshot().inFlight).toBe(0);
  });

  it('a request timeout is retried', async () => {
    await client.close();
    client = makeClient({ requestTimeoutMs: 150 });
    provider.apiScript = [() => ({ status: 200, body: '{}', delayMs: 1000 })];
    const { page } = await client.getBookingSummaries(PROPERTY, {}, signal());
    expect(page.bookingSummaries).toHaveLength(5);
    expect(client.stats()).toMatchObject({ timeouts: 1, retries: 1 });
  });

  it('feeds x-ratelimit-remaining headers back into the budget', async () => {
    provider.apiDefault = () => ({
      status: 200,
      headers: { 'x-ratelimit-remaining-second': '2', 'x-ratelimit-remaining-minute': '10', 'x-ratelimit-remaining-hour': '2990' },
      body: fixture('read-reservation-booking-summaries-page-propertyId-as-string.json'),
    });
    await client.getBookingSummaries(PROPERTY, {}, signal());
    expect(
      client.budgets
        .get('bookingList')
        .snapshot()
        .windows.map((w) => w.used),
    ).toEqual([1, 90, 10]);
  });

  it('getBooking reports fetchedAt from the provider Date header', async () => {
    provider.apiDefault = () => ({
      status: 200,
      headers: { date: 'Wed, 27 Mar 2024 11:41:06 GMT' },
      body: fixture('SYNTH-read-reservation-booking-details-from-schema-examples.json'),
    });
    const { booking, raw, fetchedAt } = await client.getBooking('7291', '20240325-7291-260123396', signal());
    expect(booking.modifiedDateTime).toBe('2024-03-27T11:41:04Z');
    expect((raw as { booking: { number: string } }).booking.number).toBe('20240325-7291-260123396');
    expect(fetchedAt.toISOString()).toBe('2024-03-27T11:41:06.000Z');
    // Lower bound: the round trip is subtracted; no header → local send time.
    expect(fetchedAtOf({ date: 'Wed, 27 Mar 2024 11:41:06 GMT' }, 1000, 1400).toISOString()).toBe('2024-03-27T11:41:05.600Z');
    expect(fetchedAtOf({}, 1000, 1400).getTime()).toBe(1000);
    expect(fetchedAtOf({ date: 'not a date' }, 1000, 1400).getTime()).toBe(1000);
    // Upper bound: the header's second ended at the latest; no header or a bad one → local arrival.
    expect(readByOf({ date: 'Wed, 27 Mar 2024 11:41:06 GMT' }, 1400).toISOString()).toBe('2024-03-27T11:41:07.000Z');
    expect(readByOf({}, 1400).getTime()).toBe(1400);
    expect(readByOf({ date: ['x'.repeat(10_000)] }, 1400).getTime()).toBe(1400);
  });

  it('requestJson reaches the reference-data base with a query and returns the parsed body', async () => {
    provider.apiDefault = () => ({ status: 200, body: { paymentMethods: [{ code: 'x', type: 'y' }] } });
    const res = await client.requestJson('standard', 'referenceData', '/api/reference-data/payment-methods', { languageCode: 'en', skip: undefined }, signal());
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ paymentMethods: [{ code: 'x', type: 'y' }] });
    expect(provider.apiRequests[0]!.path).toBe('/api/reference-data/payment-methods');
    expect(provider.apiRequests[0]!.query.toString()).toBe('languageCode=en');
    expect(client.stats().requests.standard).toBe(1);
  });
});

describe('ProviderClient: the PMS envelope', () => {
  const ROOMS = `/api/pms/v2/properties/${PROPERTY}/rooms`;
  const rooms = (extra: Record<string, unknown>) => ({ warnings: [], errors: [], rooms: [{ id: '1' }], hasNextPage: false, nextPageToken: null, ...extra });
  const errorsOf = (code: string) => ({ status: 200, body: rooms({ rooms: [], errors: [{ code, message: 'Incorrect dates format' }] }) });

  it('a 2xx whose errors is not empty is a failed request: retried with backoff, counted, its text logged once per kind', async () => {
    provider.apiScript = [() => errorsOf('11'), () => errorsOf('11')];
    provider.apiDefault = () => ({ status: 200, body: rooms({}) });
    const res = await client.requestJson('standard', 'provider', ROOMS, {}, signal());
    expect(res.body).toEqual(rooms({}));
    expect(provider.apiRequests).toHaveLength(3);
    expect(clock.sleeps).toEqual(expect.arrayContaining([250, 500]));
    expect(client.stats()).toMatchObject({ retries: 2, failures: expect.objectContaining({ provider_errors: 2 }) });
    const said = logLines.filter((l) => l.includes('"level":"warn"') && l.includes('answered HTTP 200 with errors'));
    expect(said).toHaveLength(1);
    expect(said[0]).toContain('11: Incorrect dates format');
    expect(said[0]).toContain(ROOMS);
    // An empty or null `errors` is an answer.
    provider.apiScript = [() => ({ status: 200, body: rooms({ errors: null }) })];
    expect((await client.requestJson('standard', 'provider', ROOMS, {}, signal())).body).toEqual(rooms({ errors: null }));
  });

  it('one that goes on gives up as unavailable, with the provider text; the host is not in an outage (it answers)', async () => {
    provider.apiDefault = () => errorsOf('11');
    const err = await client.requestJson('standard', 'provider', ROOMS, {}, signal()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderUnavailableError);
    expect((err as ProviderUnavailableError).attempts).toBe(4);
    expect((err as ProviderUnavailableError).lastError).toBe('HTTP 200 with errors: 11: Incorrect dates format');
    expect((err as Error).message).toContain(ROOMS);
    expect(client.health.hostsSeen().every((h) => !h.outage)).toBe(true);
  });

  it('warnings are counted, and logged once per kind', async () => {
    const warned = (code: string) => ({ status: 200, body: rooms({ warnings: [{ code, message: `about ${code}` }] }) });
    provider.apiScript = [() => warned('W1'), () => warned('W1'), () => warned('W2')];
    for (let i = 0; i < 3; i++) expect((await client.requestJson('standard', 'provider', ROOMS, {}, signal())).status).toBe(200);
    expect(provider.apiRequests).toHaveLength(3);
    expect(client.stats()).toMatchObject({ warnings: 3, retries: 0 });
    const said = logLines.filter((l) => l.includes('answered with a warning'));
    expect(said).toHaveLength(2);
    expect(said[0]).toContain('W1: about W1');
    expect(said[1]).toContain('W2: about W2');
  });
});
