/**
 * The simulator's newer failure modes over real HTTP: per-property statuses, bodies that stall
 * mid-way, truncated bodies, HTML pages with status 200, details that lag the summaries,
 * token-only faults, and what the request log records.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../index.js';
import { noLimits, tokenResponse, accessToken, remainingHeaders } from '../../../test/helpers/simulator-http.js';

const CREDENTIALS = { grant_type: 'client_credentials', client_id: 'sim-client', client_secret: 'sim-secret' };
const LIST = (propertyId: string) => `/api/read-reservation/v1/properties/${propertyId}/bookings`;
const DETAILS = (propertyId: string, number: string) => `${LIST(propertyId)}/${number}`;
const PROPERTY = (propertyId: string) => `/api/content/v1/properties/${propertyId}`;

function get(sim: Simulator, path: string, token: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  headers.set('authorization', `Bearer ${token}`);
  return fetch(`${sim.url}${path}`, { ...init, headers });
}

/** The body text of a request made with every fault off. */
async function cleanText(sim: Simulator, path: string, token: string): Promise<string> {
  const res = await get(sim, path, token);
  expect(res.status, path).toBe(200);
  return res.text();
}

/** Reads a body until it ends or fails; the bytes received either way. */
async function readAll(res: Response): Promise<{ bytes: Buffer; error?: unknown }> {
  const reader = res.body!.getReader();
  const chunks: Uint8Array[] = [];
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { bytes: Buffer.concat(chunks) };
      chunks.push(value);
    }
  } catch (error) {
    return { bytes: Buffer.concat(chunks), error };
  }
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** Stops retrying a request that a fault may have answered, after `n` tries. */
const tries = (n: number) => Array.from({ length: n }, (_, i) => i);

describe('simulator faults: propertyStatus', () => {
  let sim: Simulator;
  let token: string;
  let number: string;
  beforeAll(async () => {
    sim = await startSimulator({ rateLimits: { ...noLimits } });
    token = await accessToken(sim);
    number = sim.bookings('500100')[0]!.number;
  });
  afterEach(() => sim.faults.propertyStatus.clear());
  afterAll(() => sim.close());

  it('403 on every API path of that property, with an errors body and rate headers, not counted', async () => {
    sim.faults.propertyStatus.set('500100', { status: 403 });
    const before = { ...sim.stats.accepted };
    for (const path of [
      `${LIST('500100')}?count=1`,
      DETAILS('500100', number),
      PROPERTY('500100'),
      `${PROPERTY('500100')}/cancellation-rules`,
      `${PROPERTY('500100')}/extra-stay-rules`,
    ]) {
      const res = await get(sim, path, token);
      expect(res.status, path).toBe(403);
      const body = (await res.json()) as { errors: { code: string; message: string }[] };
      expect(body.errors).toHaveLength(1);
      expect(body.errors[0]!.code).toBe('Forbidden');
      expect(body.errors[0]!.message).toContain('500100');
      expect(res.headers.get('x-ratelimit-remaining-second'), path).not.toBeNull();
      expect(res.headers.get('retry-after')).toBeNull();
    }
    expect(sim.stats.accepted).toEqual(before);

    // The other property, and the lists without a property id, are untouched.
    const other = sim.bookings('500200')[0]!.number;
    for (const path of [
      `${LIST('500200')}?count=1`,
      DETAILS('500200', other),
      PROPERTY('500200'),
      `${PROPERTY('500200')}/cancellation-rules`,
      '/api/content/v1/properties?include=All',
      '/api/content/v1/meal-plans',
    ]) {
      expect((await get(sim, path, token)).status, path).toBe(200);
    }
    const all = (await (await get(sim, '/api/content/v1/properties?include=All', token)).json()) as { properties: { id: string }[] };
    expect(all.properties.map((p) => p.id)).toContain('500100');
    expect(sim.stats.accepted['bookingList']).toBe((before['bookingList'] ?? 0) + 1);
  });

  it('applies only to the given scopes, with the status and code asked for', async () => {
    sim.faults.propertyStatus.set('500100', { status: 404, scopes: ['bookingDetails'] });
    const details = await get(sim, DETAILS('500100', number), token);
    expect(details.status).toBe(404);
    expect(((await details.json()) as { errors: { code: string }[] }).errors[0]!.code).toBe('PropertyNotFound');
    expect((await get(sim, `${LIST('500100')}?count=1`, token)).status).toBe(200);
    expect((await get(sim, PROPERTY('500100'), token)).status).toBe(200);

    sim.faults.propertyStatus.set('500100', { status: 400, scopes: ['bookingList', 'standard'] });
    const list = await get(sim, `${LIST('500100')}?count=1`, token);
    expect(list.status).toBe(400);
    expect(((await list.json()) as { errors: { code: string }[] }).errors[0]!.code).toBe('BadRequest');
    expect((await get(sim, `${PROPERTY('500100')}/extra-stay-rules`, token)).status).toBe(400);
    expect((await get(sim, DETAILS('500100', number), token)).status).toBe(200);

    sim.faults.propertyStatus.set('500100', { status: 503 });
    const unavailable = await get(sim, `${LIST('500100')}?count=1`, token);
    expect(unavailable.status).toBe(503);
    expect(unavailable.headers.get('retry-after')).toBe('1');

    sim.faults.propertyStatus.clear();
    expect((await get(sim, DETAILS('500100', number), token)).status).toBe(200);
  });

  it('comes after authentication', async () => {
    sim.faults.propertyStatus.set('500100', { status: 403 });
    const res = await fetch(`${sim.url}${LIST('500100')}`);
    expect(res.status).toBe(401);
  });
});

describe('simulator faults: bodies', () => {
  let sim: Simulator;
  let token: string;
  let number: string;
  beforeAll(async () => {
    sim = await startSimulator({ rateLimits: { ...noLimits } });
    token = await accessToken(sim);
    number = sim.bookings('500100')[3]!.number;
  });
  afterEach(() => {
    sim.faults.stallMidBodyRate = 0;
    delete sim.faults.stallMidBodyPaths;
    sim.faults.truncatedBodyRate = 0;
    sim.faults.htmlBodyRate = 0;
  });
  afterAll(() => sim.close());

  it('stallMidBodyRate 1: full content-length, about half of the body, then nothing until the client gives up', async () => {
    const path = DETAILS('500100', number);
    const real = await cleanText(sim, path, token);
    const accepted = sim.stats.accepted['bookingDetails'] ?? 0;
    sim.faults.stallMidBodyRate = 1;

    const started = performance.now();
    const res = await get(sim, path, token, { signal: AbortSignal.timeout(500) });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(Number(res.headers.get('content-length'))).toBe(Buffer.byteLength(real));
    expect(res.headers.get('x-ratelimit-remaining-second')).not.toBeNull();
    const { bytes, error } = await readAll(res);
    expect((error as Error).name).toBe('TimeoutError');
    expect(performance.now() - started).toBeGreaterThanOrEqual(450);

    const received = bytes.toString('utf8');
    expect(received.length).toBeGreaterThan(0);
    expect(real.startsWith(received)).toBe(true);
    expect(Math.abs(received.length - real.length / 2)).toBeLessThanOrEqual(1);
    expect(isJson(received)).toBe(false);
    expect(sim.stats.stalled).toBe(1);
    expect(sim.stats.accepted['bookingDetails']).toBe(accepted + 1);
  });

  it('stallMidBodyPaths limits the stall to matching paths; error answers are never stalled', async () => {
    sim.faults.stallMidBodyRate = 1;
    sim.faults.stallMidBodyPaths = /\/bookings\/[^/]+$/;
    const stalledBefore = sim.stats.stalled;
    const list = await get(sim, `${LIST('500100')}?count=2`, token, { signal: AbortSignal.timeout(2000) });
    expect(list.status).toBe(200);
    expect(((await list.json()) as { bookingSummaries: unknown[] }).bookingSummaries).toHaveLength(2);

    const unknown = await get(sim, DETAILS('500100', 'no-such-number'), token, { signal: AbortSignal.timeout(2000) });
    expect(unknown.status).toBe(404);
    expect(isJson(await unknown.text())).toBe(true);
    expect(sim.stats.stalled).toBe(stalledBefore);

    const details = await get(sim, DETAILS('500100', number), token, { signal: AbortSignal.timeout(300) });
    expect(details.status).toBe(200);
    const { error } = await readAll(details);
    expect((error as Error).name).toBe('TimeoutError');
    expect(sim.stats.stalled).toBe(stalledBefore + 1);
  });

  it('truncatedBodyRate 1: a complete 200 message whose body is the first half of the JSON', async () => {
    const path = `${LIST('500100')}?count=20`;
    const real = await cleanText(sim, path, token);
    const accepted = sim.stats.accepted['bookingList'] ?? 0;
    sim.faults.truncatedBodyRate = 1;
    const res = await get(sim, path, token);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/json');
    const text = await res.text();
    expect(Number(res.headers.get('content-length'))).toBe(Buffer.byteLength(text));
    expect(text.length).toBeGreaterThan(0);
    expect(real.startsWith(text)).toBe(true);
    expect(Math.abs(text.length - real.length / 2)).toBeLessThanOrEqual(1);
    expect(isJson(text)).toBe(false);
    expect(sim.stats.truncated).toBe(1);
    expect(sim.stats.accepted['bookingList']).toBe(accepted + 1);

    // Non-200 answers keep their whole body.
    const unknown = await get(sim, LIST('999999'), token);
    expect(unknown.status).toBe(404);
    expect(isJson(await unknown.text())).toBe(true);
    expect(sim.stats.truncated).toBe(1);
  });

  it('htmlBodyRate 1: status 200 with a text/html gateway error page, counted', async () => {
    const accepted = sim.stats.accepted['standard'] ?? 0;
    sim.faults.htmlBodyRate = 1;
    const res = await get(sim, PROPERTY('500200'), token);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const text = await res.text();
    expect(Number(res.headers.get('content-length'))).toBe(Buffer.byteLength(text));
    expect(text).toMatch(/^<!DOCTYPE html>/);
    expect(text).toContain('502 Bad Gateway');
    expect(isJson(text)).toBe(false);
    expect(res.headers.get('x-ratelimit-remaining-second')).not.toBeNull();
    expect(sim.stats.html).toBe(1);
    expect(sim.stats.accepted['standard']).toBe(accepted + 1);
  });

  it('body faults leave the token endpoint alone', async () => {
    sim.faults.stallMidBodyRate = 1;
    sim.faults.truncatedBodyRate = 1;
    sim.faults.htmlBodyRate = 1;
    const res = await tokenResponse(sim, CREDENTIALS);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { access_token: string }).access_token).toBeTypeOf('string');
  });

  it('rates below 1 damage a share of answers, reproducibly for a seed', async () => {
    const pattern = async (): Promise<string> => {
      const s = await startSimulator({ seed: 5, rateLimits: { ...noLimits } });
      try {
        const tk = await accessToken(s);
        s.faults.truncatedBodyRate = 0.3;
        s.faults.htmlBodyRate = 0.3;
        let out = '';
        for (const _ of tries(40)) {
          const res = await get(s, `${LIST('500100')}?count=3`, tk);
          expect(res.status).toBe(200);
          const text = await res.text();
          out += res.headers.get('content-type')!.startsWith('text/html') ? 'h' : isJson(text) ? '.' : 't';
        }
        expect(s.stats.truncated).toBe(out.split('t').length - 1);
        expect(s.stats.html).toBe(out.split('h').length - 1);
        return out;
      } finally {
        await s.close();
      }
    };
    const first = await pattern();
    expect(first).toMatch(/t/);
    expect(first).toMatch(/h/);
    expect(first).toMatch(/\./);
    expect(await pattern()).toBe(first);
  });
});

describe('simulator faults: close() with a stalled response', () => {
  it('close() ends promptly and the client sees the body cut off', async () => {
    const sim = await startSimulator({ rateLimits: { ...noLimits } });
    const token = await accessToken(sim);
    sim.faults.stallMidBodyRate = 1;
    const res = await get(sim, `${LIST('500100')}?count=50`, token);
    expect(res.status).toBe(200);
    const reading = readAll(res);
    await new Promise((r) => setTimeout(r, 100));
    expect(sim.stats.stalled).toBe(1);
    const started = performance.now();
    await sim.close();
    expect(performance.now() - started).toBeLessThan(1000);
    const { bytes, error } = await reading;
    expect(error).toBeDefined();
    expect(bytes.length).toBeLessThan(Number(res.headers.get('content-length')));
  });
});

describe('simulator faults: replica lag', () => {
  let t = Date.UTC(2025, 5, 1, 12, 0, 0);
  let sim: Simulator;
  let token: string;
  beforeAll(async () => {
    sim = await startSimulator({
      seed: 3,
      now: () => t,
      properties: [{ id: '500100', bookingCount: 30 }],
      rateLimits: { ...noLimits },
    });
    token = await accessToken(sim);
  });
  afterEach(() => {
    sim.faults.replicaLag404s = 0;
  });
  afterAll(() => sim.close());

  /** Statuses of `n` detail requests in a row. */
  async function statuses(number: string, n: number): Promise<number[]> {
    const out: number[] = [];
    for (const _ of tries(n)) {
      const res = await get(sim, DETAILS('500100', number), token);
      out.push(res.status);
      if (res.status === 404) {
        expect(((await res.json()) as { errors: { code: string }[] }).errors[0]!.code).toBe('BookingNotFound');
      } else {
        const body = (await res.json()) as { booking: { number: string } };
        expect(body.booking).toEqual(sim.bookings('500100').find((b) => b.number === number));
      }
    }
    return out;
  }

  it('exactly N 404s per booking, then the real body; counted against the limits and per number', async () => {
    sim.faults.replicaLag404s = 2;
    const [a, b] = sim.bookings('500100').map((x) => x.number);
    const accepted = sim.stats.accepted['bookingDetails'] ?? 0;
    const lagged = sim.stats.lagged404;
    expect(await statuses(a!, 4)).toEqual([404, 404, 200, 200]);
    expect(await statuses(b!, 3)).toEqual([404, 404, 200]);
    expect(sim.stats.lagged404).toBe(lagged + 4);
    expect(sim.stats.accepted['bookingDetails']).toBe(accepted + 7);
    expect(sim.stats.detailCallsByNumber.get(a!)).toBe(4);
    expect(sim.stats.detailCallsByNumber.get(b!)).toBe(3);
  });

  it('a booking read while the fault was off is past its lag; a raised N lags only the missing reads', async () => {
    const c = sim.bookings('500100')[5]!.number;
    expect(await statuses(c, 1)).toEqual([200]);
    sim.faults.replicaLag404s = 3;
    expect(await statuses(c, 3)).toEqual([404, 404, 200]);
  });

  it('lags again after mutate(), and a new booking lags from its creation', async () => {
    const all = sim.bookings('500100');
    sim.faults.replicaLag404s = 1;
    // Every booking past its lag.
    for (const x of all) {
      for (const _ of tries(2)) await get(sim, DETAILS('500100', x.number), token);
    }
    for (const x of all.slice(0, 3)) expect(await statuses(x.number, 1)).toEqual([200]);

    t += 60_000;
    const before = new Map(all.map((x) => [x.number, JSON.stringify(x)]));
    sim.mutate({ count: 4, newCount: 1, propertyId: '500100' });
    const after = sim.bookings('500100');
    const changed = after.filter((x) => before.has(x.number) && before.get(x.number) !== JSON.stringify(x));
    const created = after.filter((x) => !before.has(x.number));
    expect(changed.length).toBeGreaterThan(0);
    expect(created).toHaveLength(1);

    sim.faults.replicaLag404s = 2;
    for (const x of [...changed, ...created]) expect(await statuses(x.number, 3), x.number).toEqual([404, 404, 200]);
    const untouched = after.find((x) => before.get(x.number) === JSON.stringify(x))!;
    // Read three times already: past a lag of 2.
    expect(await statuses(untouched.number, 1)).toEqual([200]);

    // The list announces the change while the details still lag.
    const list = (await (await get(sim, `${LIST('500100')}?count=1000`, token)).json()) as { bookingSummaries: { number: string }[] };
    expect(list.bookingSummaries.map((s) => s.number)).toContain(created[0]!.number);
    t += 60_000;
    sim.mutate({ count: 0, newCount: 1, propertyId: '500100' });
    const newest = sim.bookings('500100').find((x) => !after.some((y) => y.number === x.number))!;
    const listed = (await (await get(sim, `${LIST('500100')}?count=1000`, token)).json()) as { bookingSummaries: { number: string }[] };
    expect(listed.bookingSummaries.at(-1)!.number).toBe(newest.number);
    expect(await statuses(newest.number, 3)).toEqual([404, 404, 200]);
  });

  it('with notFoundBookingNumbers the fault does not count as lag', async () => {
    sim.faults.replicaLag404s = 1;
    const d = sim.bookings('500100')[7]!.number;
    t += 60_000;
    const lagged = sim.stats.lagged404;
    sim.faults.notFoundBookingNumbers.add(d);
    try {
      expect((await get(sim, DETAILS('500100', d), token)).status).toBe(404);
    } finally {
      sim.faults.notFoundBookingNumbers.delete(d);
    }
    expect(sim.stats.lagged404).toBe(lagged);
  });
});

describe('simulator faults: token endpoint', () => {
  let sim: Simulator;
  let token: string;
  beforeAll(async () => {
    sim = await startSimulator({ rateLimits: { ...noLimits } });
    token = await accessToken(sim);
  });
  afterEach(() => {
    delete sim.faults.tokenStatus;
    sim.faults.tokenError5xxRate = 0;
    sim.faults.error5xxRate = 0;
  });
  afterAll(() => sim.close());

  it('tokenStatus answers every token request with that status; the API keeps working', async () => {
    const issued = sim.stats.tokensIssued;
    const acceptedToken = sim.stats.accepted['token'] ?? 0;
    sim.faults.tokenStatus = 503;
    for (const _ of tries(3)) {
      const res = await tokenResponse(sim, CREDENTIALS);
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(remainingHeaders(res)[0]).not.toBeNull();
      expect(await res.json()).toEqual({ error: 'temporarily_unavailable', error_description: expect.any(String) });
    }
    sim.faults.tokenStatus = 500;
    const five = await tokenResponse(sim, CREDENTIALS);
    expect(five.status).toBe(500);
    expect(five.headers.get('retry-after')).toBeNull();
    expect(((await five.json()) as { error: string }).error).toBe('server_error');
    // Bad credentials get the fault too: it comes before the handler.
    expect((await tokenResponse(sim, { ...CREDENTIALS, client_secret: 'wrong' })).status).toBe(500);

    expect((await get(sim, `${LIST('500100')}?count=1`, token)).status).toBe(200);
    expect((await get(sim, PROPERTY('500100'), token)).status).toBe(200);
    expect(sim.stats.tokensIssued).toBe(issued);
    expect(sim.stats.accepted['token'] ?? 0).toBe(acceptedToken);

    delete sim.faults.tokenStatus;
    expect((await tokenResponse(sim, CREDENTIALS)).status).toBe(200);
    expect(sim.stats.tokensIssued).toBe(issued + 1);
  });

  it('tokenError5xxRate 1 answers 500 or 503 to the token endpoint only', async () => {
    sim.faults.tokenError5xxRate = 1;
    const seen = new Set<number>();
    for (const _ of tries(30)) {
      const res = await tokenResponse(sim, CREDENTIALS);
      seen.add(res.status);
      if (res.status === 503) expect(res.headers.get('retry-after')).toBe('1');
      await res.arrayBuffer();
    }
    expect(seen).toEqual(new Set([500, 503]));
    for (const _ of tries(5)) expect((await get(sim, `${LIST('500100')}?count=1`, token)).status).toBe(200);
  });

  it('error5xxRate still hits the token endpoint as well as the API', async () => {
    sim.faults.error5xxRate = 1;
    expect([500, 503]).toContain((await tokenResponse(sim, CREDENTIALS)).status);
    expect([500, 503]).toContain((await get(sim, `${LIST('500100')}?count=1`, token)).status);
  });
});

describe('simulator faults: request log', () => {
  let sim: Simulator;
  let token: string;
  beforeAll(async () => {
    sim = await startSimulator({ rateLimits: { ...noLimits } });
    token = await accessToken(sim);
  });
  afterAll(() => sim.close());

  it('records the user-agent and the property id of the path', async () => {
    sim.stats.requestLog = [];
    const ua = { 'user-agent': 'staysync-test/1.2 (+faults)' };
    const number = sim.bookings('500200')[0]!.number;
    await (await get(sim, `${LIST('500100')}?count=1`, token, { headers: ua })).arrayBuffer();
    await (await get(sim, DETAILS('500200', number), token, { headers: ua })).arrayBuffer();
    await (await get(sim, `${PROPERTY('500100')}/cancellation-rules`, token, { headers: ua })).arrayBuffer();
    await (await get(sim, '/api/reference-data/payment-methods', token, { headers: ua })).arrayBuffer();
    await (await fetch(`${sim.url}${LIST('500100')}`, { headers: ua })).arrayBuffer();
    await (await tokenResponse(sim, CREDENTIALS)).arrayBuffer();

    const log = sim.stats.requestLog;
    expect(log.map(({ t: _t, ...rest }) => rest)).toEqual([
      { method: 'GET', path: LIST('500100'), query: 'count=1', status: 200, clientId: 'sim-client', userAgent: ua['user-agent'], propertyId: '500100' },
      {
        method: 'GET',
        path: DETAILS('500200', number),
        status: 200,
        clientId: 'sim-client',
        userAgent: ua['user-agent'],
        propertyId: '500200',
      },
      {
        method: 'GET',
        path: `${PROPERTY('500100')}/cancellation-rules`,
        status: 200,
        clientId: 'sim-client',
        userAgent: ua['user-agent'],
        propertyId: '500100',
      },
      { method: 'GET', path: '/api/reference-data/payment-methods', status: 200, clientId: 'sim-client', userAgent: ua['user-agent'] },
      { method: 'GET', path: LIST('500100'), status: 401, userAgent: ua['user-agent'], propertyId: '500100' },
      { method: 'POST', path: '/auth/token', status: 200, userAgent: expect.any(String) },
    ]);
    for (const entry of log) expect(entry.t).toBeTypeOf('number');
  });

  it('logs the fault answers with their status', async () => {
    sim.stats.requestLog = [];
    sim.faults.propertyStatus.set('500200', { status: 403 });
    try {
      await (await get(sim, PROPERTY('500200'), token)).arrayBuffer();
    } finally {
      sim.faults.propertyStatus.clear();
    }
    expect(sim.stats.requestLog).toMatchObject([{ path: PROPERTY('500200'), status: 403, propertyId: '500200' }]);
  });
});
