/**
 * The provider client: every HTTP request to the Partner API goes through here.
 *
 * Per request: token → budget permit → send (timeout ∧ caller's signal) → release the permit
 * with the response's `x-ratelimit-remaining-*` headers → classify:
 * - 2xx: parse JSON (and the schema, for typed calls);
 * - 429: pause the scope's budget for retry-after (default 1 s), retry;
 * - 500/502/503/504, network errors, timeouts: full-jitter backoff (503 with retry-after
 *   pauses the budget instead), retry, up to maxAttempts, then ProviderUnavailableError;
 * - 401: drop the token and retry once; a second 401 in a row is an error;
 * - 404: NotFoundError; other 4xx: ProviderError (no retry).
 * An abort of the caller's signal rethrows its reason at once, without retry.
 *
 * Logs carry scope, path (never the query: it holds continue tokens), status and attempt;
 * never the Authorization header, a token or the secret.
 */
import { Agent, type Dispatcher } from 'undici';
import type { Config, RateLimitScope } from '../config.js';
import { rateLimitScopes } from '../config.js';
import type { Logger } from '../log.js';
import { systemClock, type Clock } from '../util/clock.js';
import { Budgets, type ResponseHeaders } from './budget.js';
import { ContinueTokenRejectedError, InvalidPayloadError, NotFoundError, ProviderError, ProviderUnavailableError } from './errors.js';
import { bodyExcerpt, RequestTimeoutError, sendOnce, type RawResponse } from './http.js';
import { backoffMs, isRetryableStatus, retryAfterMs } from './retry.js';
import { parseBookingsPage, parseGetBookingResponse, type Booking, type BookingsPage } from './schemas.js';
import { describeNetworkError, TokenManager } from './token.js';

export interface ProviderClientOptions {
  config: Config;
  logger: Logger;
  clock?: Clock;
  /** A dispatcher to use instead of the client's own keep-alive Agent (not closed by close()). */
  dispatcher?: Dispatcher;
  /** Source of jitter, [0, 1); tests pin it. */
  random?: () => number;
}

export interface ProviderStats {
  /** HTTP exchanges attempted, by scope (token requests under 'token'). */
  requests: Record<RateLimitScope, number>;
  responses429: number;
  responses5xx: number;
  responses401: number;
  networkErrors: number;
  timeouts: number;
  /** Requests sent again after a 429, 5xx, 401, network error or timeout. */
  retries: number;
}

export type QueryParams = Record<string, string | number | undefined>;

export interface JsonResponse {
  status: number;
  body: unknown;
  rawBody: string;
  headers: ResponseHeaders;
  /** See {@link fetchedAtOf}: a lower bound of when the provider read the data, on its clock. */
  fetchedAt: Date;
}

/** A 2xx exchange with its local send/receive instants. */
interface TimedResponse extends RawResponse {
  sentAt: number;
  receivedAt: number;
}

/**
 * When the provider read the data, as a LOWER bound on the provider's own clock (the clock
 * of `modifiedDateTime`): the response's `Date` header (truncated to the second, so at most
 * the true response time) minus the measured round trip (the read happened after the request
 * left). Falls back to the local send time when the header is missing. Booking versions
 * compare this with the end of a modification second (DESIGN.md, Versions of a booking):
 * erring early only causes a repeat fetch, erring late could keep stale details.
 */
export function fetchedAtOf(headers: ResponseHeaders, sentAt: number, receivedAt: number): Date {
  let d = headers.date;
  if (Array.isArray(d)) d = d[0];
  const providerNow = d === undefined ? Number.NaN : Date.parse(d);
  if (Number.isNaN(providerNow)) return new Date(sentAt);
  return new Date(providerNow - Math.max(0, receivedAt - sentAt));
}

/** Thrown inside the retry loop for a 4xx that is not retried; carries the response. */
class ClientStatusError extends ProviderError {
  override name = 'ProviderError';
}

export class ProviderClient {
  readonly budgets: Budgets;
  private readonly config: Config;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly dispatcher: Dispatcher;
  private readonly ownsDispatcher: boolean;
  private readonly tokens: TokenManager;
  private readonly counters: Omit<ProviderStats, 'requests'> = {
    responses429: 0,
    responses5xx: 0,
    responses401: 0,
    networkErrors: 0,
    timeouts: 0,
    retries: 0,
  };
  private readonly requestsByScope = Object.fromEntries(rateLimitScopes.map((s) => [s, 0])) as Record<RateLimitScope, number>;

  constructor(opts: ProviderClientOptions) {
    this.config = opts.config;
    this.logger = opts.logger.child({ component: 'provider' });
    this.clock = opts.clock ?? systemClock;
    this.random = opts.random ?? Math.random;
    // An Agent keeps one keep-alive pool per origin (provider host, reference-data host).
    this.dispatcher = opts.dispatcher ?? new Agent({ keepAliveTimeout: 30_000, connections: 32 });
    this.ownsDispatcher = opts.dispatcher === undefined;
    this.budgets = new Budgets(opts.config.rateLimits, this.clock);
    const p = opts.config.provider;
    this.tokens = new TokenManager({
      providerUrl: p.url,
      clientId: p.clientId,
      clientSecret: p.clientSecret,
      renewBeforeExpiryMs: p.tokenRenewBeforeExpiryMs,
      requestTimeoutMs: p.requestTimeoutMs,
      maxAttempts: p.maxAttempts,
      budget: this.budgets.get('token'),
      dispatcher: this.dispatcher,
      clock: this.clock,
      logger: this.logger,
      random: this.random,
    });
  }

  /**
   * One page of booking summaries. Send either `continueToken` or `lastModification` (or
   * neither: full sync from 2009). A 400 for a request with a continueToken means the stored
   * token is rejected: ContinueTokenRejectedError ("token lost"). The summaries stay raw in
   * the page: parse each with `parseBookingSummary` so one bad summary can be quarantined.
   */
  async getBookingSummaries(
    propertyId: string,
    params: { continueToken?: string | undefined; lastModification?: string | undefined; count?: number | undefined },
    signal: AbortSignal,
    priority?: number,
  ): Promise<{ page: BookingsPage; rawBody: string }> {
    const path = `/api/read-reservation/v1/properties/${encodeURIComponent(propertyId)}/bookings`;
    let res: JsonResponse;
    try {
      res = await this.requestJson(
        'bookingList',
        'provider',
        path,
        { continueToken: params.continueToken, lastModification: params.lastModification, count: params.count },
        signal,
        priority,
      );
    } catch (err) {
      if (err instanceof ClientStatusError && err.status === 400 && params.continueToken) {
        throw new ContinueTokenRejectedError(propertyId, { status: 400, path, cause: err });
      }
      if (err instanceof InvalidPayloadError) throw withProperty(err, propertyId);
      throw err;
    }
    const parsed = parseBookingsPage(res.body);
    if (!parsed.ok) {
      throw new InvalidPayloadError({ rawBody: res.rawBody, reason: parsed.reason, propertyId }, { status: res.status, path });
    }
    return { page: parsed.value, rawBody: res.rawBody };
  }

  /** Details of one booking. Throws NotFoundError (404) or InvalidPayloadError (schema). */
  async getBooking(
    propertyId: string,
    number: string,
    signal: AbortSignal,
    priority?: number,
  ): Promise<{ booking: Booking; raw: unknown; fetchedAt: Date }> {
    const path = `/api/read-reservation/v1/properties/${encodeURIComponent(propertyId)}/bookings/${encodeURIComponent(number)}`;
    let res: JsonResponse;
    try {
      res = await this.requestJson('bookingDetails', 'provider', path, {}, signal, priority);
    } catch (err) {
      if (err instanceof InvalidPayloadError) throw withProperty(err, propertyId, number);
      throw err;
    }
    const parsed = parseGetBookingResponse(res.body);
    if (!parsed.ok) {
      throw new InvalidPayloadError(
        { rawBody: res.rawBody, reason: parsed.reason, propertyId, bookingNumber: number },
        { status: res.status, path },
      );
    }
    return { booking: parsed.value, raw: res.body, fetchedAt: res.fetchedAt };
  }

  /**
   * Generic GET with budget, token and retries, for the content, reference-data and PMS
   * streams. `path` is appended to the base URL (`provider.url` or `provider.referenceDataUrl`);
   * undefined query values are left out. A 2xx body that is not JSON is an InvalidPayloadError
   * (propertyId null); an empty body gives `body: null`.
   */
  async requestJson(
    scope: RateLimitScope,
    base: 'provider' | 'referenceData',
    path: string,
    query: QueryParams,
    signal: AbortSignal,
    priority = 0,
  ): Promise<JsonResponse> {
    const baseUrl = base === 'provider' ? this.config.provider.url : this.config.provider.referenceDataUrl;
    const url = new URL(baseUrl.replace(/\/+$/, '') + path);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, String(v));
    const res = await this.send(scope, url, signal, priority);
    let body: unknown = null;
    if (res.rawBody.trim() !== '') {
      try {
        body = JSON.parse(res.rawBody);
      } catch (err) {
        throw new InvalidPayloadError(
          { rawBody: res.rawBody, reason: `body is not JSON (${(err as Error).message})`, propertyId: null },
          { status: res.status, path: url.pathname },
        );
      }
    }
    return { status: res.status, body, rawBody: res.rawBody, headers: res.headers, fetchedAt: fetchedAtOf(res.headers, res.sentAt, res.receivedAt) };
  }

  /** Counters for metrics and the bench. A snapshot: later requests do not change it. */
  stats(): ProviderStats {
    return {
      requests: { ...this.requestsByScope, token: this.requestsByScope.token + this.tokens.requestCount },
      ...this.counters,
    };
  }

  /** Aborts an in-flight token request and closes the client's own connection pool. */
  async close(): Promise<void> {
    this.tokens.close();
    if (this.ownsDispatcher) await this.dispatcher.close();
  }

  /** The retry loop around one logical GET. Returns only 2xx responses. */
  private async send(scope: RateLimitScope, url: URL, signal: AbortSignal, priority: number): Promise<TimedResponse> {
    const { maxAttempts, requestTimeoutMs } = this.config.provider;
    const budget = this.budgets.get(scope);
    const path = url.pathname;
    let failures = 0;
    let previousWas401 = false;
    for (let attempt = 1; ; attempt++) {
      if (attempt > 1) this.counters.retries++;
      // Token first: never hold a budget slot while waiting for the token endpoint.
      const token = await this.tokens.getToken(signal);
      const permit = await budget.acquire(signal, priority);
      this.requestsByScope[scope]++;
      let res: RawResponse;
      const sentAt = this.clock.now();
      try {
        res = await sendOnce(
          this.dispatcher,
          url,
          { method: 'GET', headers: { authorization: `Bearer ${token}`, accept: 'application/json' }, timeoutMs: requestTimeoutMs },
          signal,
        );
      } catch (err) {
        // No response: the request may still have reached the provider, so it keeps its slot.
        permit.release();
        if (signal.aborted) throw signal.reason;
        const timedOut = err instanceof RequestTimeoutError;
        if (!timedOut && (err as { code?: unknown }).code === 'UND_ERR_INVALID_ARG') throw err;
        if (timedOut) this.counters.timeouts++;
        else this.counters.networkErrors++;
        failures++;
        const reason = timedOut ? 'timeout' : describeNetworkError(err);
        if (failures >= maxAttempts) {
          throw new ProviderUnavailableError(`${scope} ${path}: gave up after ${failures} attempts (last: ${reason})`, failures, { path, cause: err });
        }
        const delay = backoffMs(failures, this.random);
        this.logger.warn({ scope, path, error: reason, attempt, delayMs: delay }, 'provider request failed, retrying');
        await this.clock.sleep(delay, signal);
        previousWas401 = false;
        continue;
      }
      permit.release(res.headers);
      const { status } = res;

      if (status >= 200 && status < 300) return { ...res, sentAt, receivedAt: this.clock.now() };

      if (status === 401) {
        this.counters.responses401++;
        if (previousWas401) {
          throw new ProviderError(`${scope} ${path}: HTTP 401 twice in a row, even with a fresh access token`, { status, path });
        }
        previousWas401 = true;
        this.tokens.invalidate(token);
        this.logger.warn({ scope, path, status, attempt }, 'access token rejected, renewing it and retrying once');
        continue;
      }
      previousWas401 = false;

      if (status === 429 || isRetryableStatus(status)) {
        if (status === 429) this.counters.responses429++;
        else this.counters.responses5xx++;
        failures++;
        if (failures >= maxAttempts) {
          throw new ProviderUnavailableError(`${scope} ${path}: gave up after ${failures} attempts (last: HTTP ${status})`, failures, { status, path });
        }
        const ra = retryAfterMs(res.headers, this.clock.now());
        if (status === 429 || (status === 503 && ra !== undefined)) {
          // The whole scope is throttled, not just this request: pause the shared budget.
          const pause = ra ?? 1000;
          budget.pauseFor(pause);
          this.logger.warn({ scope, path, status, attempt, delayMs: pause }, 'provider throttled the request, pausing the budget and retrying');
        } else {
          const delay = backoffMs(failures, this.random);
          this.logger.warn({ scope, path, status, attempt, delayMs: delay }, 'provider request failed, retrying');
          await this.clock.sleep(delay, signal);
        }
        continue;
      }

      if (status === 404) {
        throw new NotFoundError(`${scope} ${path}: HTTP 404 (not found at the provider)`, { status, path });
      }
      throw new ClientStatusError(`${scope} ${path}: HTTP ${status}: ${bodyExcerpt(res.rawBody)}`, { status, path });
    }
  }
}

function withProperty(err: InvalidPayloadError, propertyId: string, bookingNumber?: string): InvalidPayloadError {
  return new InvalidPayloadError(
    { rawBody: err.rawBody, reason: err.reason, propertyId, bookingNumber },
    { status: err.status, path: err.path, cause: err.cause },
  );
}
