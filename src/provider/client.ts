/**
 * The provider client: every HTTP request to the Partner API goes through here.
 *
 * Per request: token → budget permit → send (timeout ∧ caller's signal) → release the permit
 * with the response's `x-ratelimit-remaining-*` headers → classify:
 * - 2xx with a JSON body: success (the schema is checked by the typed calls); its
 *   `warnings` are counted and each kind logged once (envelope.ts);
 * - 2xx whose `errors` is not empty (the PMS envelope): a failed request, retried like a 5xx
 *   and given up as unavailable, never an empty answer; each kind is logged once;
 * - 2xx whose body is not JSON (cut short by a gateway, an HTML error page): a transport
 *   fault, retried like a 5xx: the data is not bad, the delivery was;
 * - 429: pause the scope's budget for retry-after (default 1 s), retry;
 * - 500/502/503/504, network errors, timeouts (including a body that never ends):
 *   full-jitter backoff (503 with retry-after pauses the budget instead), retry, up to
 *   maxAttempts, then ProviderUnavailableError naming the host and the last error;
 * - 401: drop the token and retry once; a second 401 in a row is an error;
 * - 404: NotFoundError; other 4xx: RequestRejectedError (no retry).
 * An abort of the caller's signal rethrows its reason at once, without retry, and no request
 * starts after the client's own stop signal (process shutdown).
 *
 * Every attempt is reported to ProviderHealth (causes, retries, outages, last success), which
 * logs an outage once when it starts and once when it ends; single retries are debug lines.
 * Logs carry scope, path (never the query: it holds continue tokens), status and attempt;
 * never the Authorization header, a token or the secret.
 */
import { Agent, type Dispatcher } from 'undici';
import type { Config, RateLimitScope } from '../config/config.js';
import { rateLimitScopes } from '../config/config.js';
import type { Logger } from '../util/log.js';
import { systemClock, type Clock } from '../util/clock.js';
import { Budgets, type RateBudget, type ResponseHeaders } from './budget.js';
import {
  ContinueTokenRejectedError,
  InvalidPayloadError,
  NotFoundError,
  ProviderError,
  ProviderErrorsError,
  ProviderUnavailableError,
  RequestRejectedError,
  RequestTimeoutError,
  TOO_LARGE_REASON,
} from './errors.js';
import { causeOfNetworkError, ProviderHealth, type FailureCause } from './health.js';
import { bodyExcerpt, ResponseTooLargeError, sendOnce, type RawResponse } from './http.js';
import { backoffMs, isRetryableStatus, retryAfterMs } from './retry.js';
import { parseBookingsPage, parseGetBookingResponse, type Booking, type BookingsPage } from './schemas/bookings.js';
import { describeNetworkError, TokenManager } from './token.js';
import { parseJsonLossless } from './json.js';
import { describeItems, envelopeItems } from './envelope.js';
import type { ApiAccess } from './api-access.js';

/** Kinds of errors and warnings a client logs at most: the rest are counted only. */
const MAX_KINDS_SAID = 100;

/** Sent with every request: who is asking (the provider's logs, and tests telling processes apart). */
export const userAgent = `staysync (pid ${process.pid})`;

export interface ProviderClientOptions {
  config: Config;
  logger: Logger;
  clock?: Clock;
  /** A dispatcher to use instead of the client's own keep-alive Agent (not closed by close()). */
  dispatcher?: Dispatcher;
  /** Source of jitter, [0, 1); tests pin it. */
  random?: () => number;
  /** The process is stopping: no request (token requests included) starts after it aborts. */
  stopSignal?: AbortSignal;
  /**
   * The token endpoint's budget, when shared: its limit is per IP address, so all the
   * connections of a process take their token requests from one budget.
   */
  tokenBudget?: RateBudget;
  /** Token requests wait for the replicas sharing this IP address (TokenGate.admit). */
  tokenAdmission?: (signal: AbortSignal) => Promise<void>;
  /**
   * The budgets of the API client, when another connection of the process uses the same client
   * id: the provider counts its limits per API client, so its connections share one budget.
   */
  budgets?: Budgets;
}

export interface ProviderStats {
  /** HTTP exchanges attempted, by scope (token requests under 'token'). */
  requests: Record<RateLimitScope, number>;
  responses429: number;
  responses5xx: number;
  responses401: number;
  networkErrors: number;
  timeouts: number;
  /** 2xx answers whose body was not JSON (cut short, an HTML page), retried. */
  invalidBodies: number;
  /** Warnings of the answers used (`warnings` of the PMS envelope), each counted. */
  warnings: number;
  /** Requests sent again after a 429, 5xx, 401, network error, timeout or unusable body (token requests included). */
  retries: number;
  /** Attempts without a usable answer, by cause (token requests included). */
  failures: Record<FailureCause, number>;
}

export type QueryParams = Record<string, string | number | undefined>;

export interface JsonResponse {
  status: number;
  body: unknown;
  rawBody: string;
  headers: ResponseHeaders;
  /** See {@link fetchedAtOf}: a lower bound of when the provider read the data, on its clock. */
  fetchedAt: Date;
  /** See {@link readByOf}: an upper bound of the same. */
  readBy: Date;
}

/**
 * When the provider read the data, as a LOWER bound on the provider's own clock (the clock
 * of `modifiedDateTime`): the response's `Date` header (truncated to the second, so at most
 * the true response time) minus the measured round trip (the read happened after the request
 * left). Falls back to the local send time when the header is missing. Booking versions
 * compare this with the end of a modification second: erring early only causes a repeat
 * fetch, erring late could keep stale details.
 */
export function fetchedAtOf(headers: ResponseHeaders, sentAt: number, receivedAt: number): Date {
  const providerNow = providerDateOf(headers);
  return new Date(providerNow === null ? sentAt : providerNow - Math.max(0, receivedAt - sentAt));
}

/**
 * When the provider had read the data at the latest, on its clock: the response's `Date`
 * header plus the second it is truncated by (the data was read before the answer was dated).
 * Falls back to the local time the answer arrived. The booking list compares it with when
 * details were read (booking_detail_queue.expect_change): erring late only causes a repeat
 * fetch of a booking that changed twice in one second.
 */
export function readByOf(headers: ResponseHeaders, receivedAt: number): Date {
  const providerNow = providerDateOf(headers);
  return new Date(providerNow === null ? receivedAt : providerNow + 1_000);
}

/** The response's `Date` header in milliseconds; null when it is missing or does not parse. */
function providerDateOf(headers: ResponseHeaders): number | null {
  const d = Array.isArray(headers.date) ? headers.date[0] : headers.date;
  const ms = d === undefined ? Number.NaN : Date.parse(d);
  return Number.isNaN(ms) ? null : ms;
}

/** The property a request is about, from its path (`…/properties/{id}/…`), for the quarantine. */
function propertyIdOfPath(path: string): string | null {
  const m = /\/properties\/([^/]+)/.exec(path);
  return m ? decodeURIComponent(m[1]!) : null;
}

/** One failed attempt, as the retry loop sees it. */
interface Failure {
  cause: FailureCause;
  description: string;
  status?: number;
}

export class ProviderClient {
  readonly budgets: Budgets;
  readonly health: ProviderHealth;
  private readonly config: Config;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly dispatcher: Dispatcher;
  private readonly ownsDispatcher: boolean;
  private readonly tokens: TokenManager;
  private readonly stopSignal: AbortSignal | undefined;
  private readonly counters = {
    responses429: 0,
    responses5xx: 0,
    responses401: 0,
    networkErrors: 0,
    timeouts: 0,
    invalidBodies: 0,
    warnings: 0,
  };
  /** The kinds of errors and warnings logged so far (each once), up to MAX_KINDS_SAID. */
  private readonly kindsSaid = new Set<string>();
  private readonly requestsByScope = Object.fromEntries(rateLimitScopes.map((s) => [s, 0])) as Record<RateLimitScope, number>;

  constructor(opts: ProviderClientOptions) {
    this.config = opts.config;
    this.logger = opts.logger.child({ component: 'provider' });
    this.clock = opts.clock ?? systemClock;
    this.random = opts.random ?? Math.random;
    this.stopSignal = opts.stopSignal;
    // An Agent keeps one keep-alive pool per origin (provider host, reference-data host).
    this.dispatcher = opts.dispatcher ?? new Agent({ keepAliveTimeout: 30_000, connections: 32 });
    this.ownsDispatcher = opts.dispatcher === undefined;
    this.budgets =
      opts.budgets ??
      new Budgets(opts.config.rateLimits, this.clock, opts.config.provider.requestTimeoutMs, opts.tokenBudget ? { token: opts.tokenBudget } : {});
    const p = opts.config.provider;
    const referenceHost = new URL(p.referenceDataUrl).host;
    const providerHost = new URL(p.url).host;
    this.health = new ProviderHealth(this.logger, this.clock, (host) =>
      host === providerHost ? 'STAYSYNC_PROVIDER_URL' : host === referenceHost ? 'STAYSYNC_REFERENCE_DATA_URL' : 'the provider URLs',
    );
    this.tokens = new TokenManager({
      providerUrl: p.url,
      clientId: p.clientId,
      clientSecret: p.clientSecret,
      renewBeforeExpiryMs: p.tokenRenewBeforeExpiryMs,
      requestTimeoutMs: p.requestTimeoutMs,
      maxAttempts: p.maxAttempts,
      budget: this.budgets.get('token'),
      admit: opts.tokenAdmission,
      dispatcher: this.dispatcher,
      clock: this.clock,
      logger: this.logger,
      random: this.random,
      health: this.health,
      stopSignal: opts.stopSignal,
      userAgent,
    });
  }

  /**
   * One page of booking summaries. Send either `continueToken` or `lastModification` (or
   * neither: full sync from 2009). A 400 for a request with a continueToken is a
   * ContinueTokenRejectedError (the sync layer decides when the token is lost). The summaries
   * stay raw in the page: parse each with `parseBookingSummary` so one bad summary can be
   * quarantined.
   * A page whose envelope is not the documented shape is an InvalidPayloadError.
   */
  async getBookingSummaries(
    propertyId: string,
    params: { continueToken?: string | undefined; lastModification?: string | undefined; count?: number | undefined },
    signal: AbortSignal,
    priority?: number,
  ): Promise<{ page: BookingsPage; rawBody: string; readBy: Date }> {
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
      if (err instanceof RequestRejectedError && err.status === 400 && params.continueToken) {
        throw new ContinueTokenRejectedError(propertyId, { status: 400, path, cause: err });
      }
      throw err;
    }
    const parsed = parseBookingsPage(res.body);
    if (!parsed.ok) {
      throw new InvalidPayloadError({ rawBody: res.rawBody, reason: parsed.reason, propertyId }, { status: res.status, path });
    }
    return { page: parsed.value, rawBody: res.rawBody, readBy: res.readBy };
  }

  /** Details of one booking. Throws NotFoundError (404) or InvalidPayloadError (schema). */
  async getBooking(propertyId: string, number: string, signal: AbortSignal, priority?: number): Promise<{ booking: Booking; raw: unknown; fetchedAt: Date }> {
    const path = `/api/read-reservation/v1/properties/${encodeURIComponent(propertyId)}/bookings/${encodeURIComponent(number)}`;
    const res = await this.requestJson('bookingDetails', 'provider', path, {}, signal, priority);
    const parsed = parseGetBookingResponse(res.body);
    if (!parsed.ok) {
      throw new InvalidPayloadError({ rawBody: res.rawBody, reason: parsed.reason, propertyId, bookingNumber: number }, { status: res.status, path });
    }
    return { booking: parsed.value, raw: res.body, fetchedAt: res.fetchedAt };
  }

  /**
   * Generic GET with budget, token and retries, for the content, reference-data and PMS
   * streams. `path` is appended to the base URL (`provider.url` or `provider.referenceDataUrl`);
   * undefined query values are left out. An empty body gives `body: null`.
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
    const { res, body } = await this.send(scope, url, signal, priority);
    return {
      status: res.status,
      body,
      rawBody: res.rawBody,
      headers: res.headers,
      fetchedAt: fetchedAtOf(res.headers, res.sentAt, res.receivedAt),
      readBy: readByOf(res.headers, res.receivedAt),
    };
  }

  /**
   * POST of a JSON body (the integration storage's inventory search, a read with its filters in
   * the body), with the same budget, token and retries as requestJson: the operation changes
   * nothing, so sending it again is safe.
   */
  async postJson(scope: RateLimitScope, path: string, json: unknown, signal: AbortSignal, priority = 0): Promise<JsonResponse> {
    const url = new URL(this.config.provider.url.replace(/\/+$/, '') + path);
    const { res, body } = await this.send(scope, url, signal, priority, JSON.stringify(json));
    return {
      status: res.status,
      body,
      rawBody: res.rawBody,
      headers: res.headers,
      fetchedAt: fetchedAtOf(res.headers, res.sentAt, res.receivedAt),
      readBy: readByOf(res.headers, res.receivedAt),
    };
  }

  /** What the current access token grants (a token is fetched when there is none): see api-access.ts. */
  access(signal: AbortSignal): Promise<ApiAccess> {
    return this.tokens.access(signal);
  }

  /** What the next access token grants, once the current one is due for renewal. */
  renewedAccess(signal: AbortSignal): Promise<ApiAccess> {
    return this.tokens.renewedAccess(signal);
  }

  /** What the current token grants, without asking for one (every area before the first token): /metrics, the change events. */
  get currentAccess(): ApiAccess {
    return this.tokens.currentAccess;
  }

  /** Counters for metrics and the bench. A snapshot: later requests do not change it. */
  stats(): ProviderStats {
    return {
      requests: { ...this.requestsByScope, token: this.requestsByScope.token + this.tokens.requestCount },
      ...this.counters,
      retries: this.health.retries,
      failures: { ...this.health.failures },
    };
  }

  /** Aborts an in-flight token request and closes the client's own connection pool. */
  async close(): Promise<void> {
    this.tokens.close();
    if (this.ownsDispatcher) await this.dispatcher.close();
  }

  /** Whether an error or warning of this kind is new to this client: the first is logged, the others counted (a bounded set: the provider's codes are not ours). */
  private firstOfKind(kind: string): boolean {
    if (this.kindsSaid.has(kind) || this.kindsSaid.size >= MAX_KINDS_SAID) return false;
    this.kindsSaid.add(kind);
    return true;
  }

  /** The retry loop around one logical read (a GET, or a POST of `jsonBody`). Returns only 2xx responses with a JSON (or empty) body. */
  private async send(
    scope: RateLimitScope,
    url: URL,
    callerSignal: AbortSignal,
    priority: number,
    jsonBody?: string,
  ): Promise<{ res: RawResponse & { sentAt: number; receivedAt: number }; body: unknown }> {
    const { maxAttempts, requestTimeoutMs, maxResponseBytes } = this.config.provider;
    const signal = this.stopSignal ? AbortSignal.any([callerSignal, this.stopSignal]) : callerSignal;
    const budget = this.budgets.get(scope);
    const { host, pathname: path } = url;
    let failures = 0;
    let previousWas401 = false;
    /** After a failed attempt: count it, give up after maxAttempts, else wait. */
    const failed = async (f: Failure, pause?: number): Promise<void> => {
      failures++;
      this.health.failure(host, f.cause, f.description);
      if (failures >= maxAttempts) {
        const gaveUp = { scope, path, status: f.status, attempts: failures, host, lastError: f.description };
        throw f.cause === 'provider_errors' ? new ProviderErrorsError(gaveUp) : new ProviderUnavailableError(gaveUp);
      }
      if (pause !== undefined) {
        // The whole scope is throttled, not just this request: pause the shared budget.
        budget.pauseFor(pause);
        this.logger.debug(
          { scope, path, status: f.status, error: f.description, attempt: failures, delayMs: pause },
          'provider throttled the request, pausing the budget and retrying',
        );
      } else {
        const delay = backoffMs(failures, this.random);
        this.logger.debug(
          { scope, path, status: f.status, cause: f.cause, error: f.description, attempt: failures, delayMs: delay },
          'provider request failed, retrying',
        );
        await this.clock.sleep(delay, signal);
      }
    };
    for (let attempt = 1; ; attempt++) {
      if (signal.aborted) throw signal.reason;
      if (attempt > 1) this.health.retried();
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
          jsonBody === undefined
            ? {
                method: 'GET',
                headers: { authorization: `Bearer ${token}`, accept: 'application/json', 'user-agent': userAgent },
                timeoutMs: requestTimeoutMs,
                maxBodyBytes: maxResponseBytes,
              }
            : {
                method: 'POST',
                headers: { authorization: `Bearer ${token}`, accept: 'application/json', 'content-type': 'application/json', 'user-agent': userAgent },
                body: jsonBody,
                timeoutMs: requestTimeoutMs,
                maxBodyBytes: maxResponseBytes,
              },
          signal,
        );
      } catch (err) {
        // No response: the request may still have reached the provider, so it keeps its slot.
        permit.release();
        if (signal.aborted) throw signal.reason;
        if (err instanceof ResponseTooLargeError) {
          // The data, not the delivery: the same request reads as much again, so it is not retried.
          this.health.exchanged({ scope, outcome: 'too_large', seconds: (this.clock.now() - sentAt) / 1000 });
          throw new InvalidPayloadError(
            {
              rawBody: err.excerpt,
              reason: `${TOO_LARGE_REASON}more than ${err.limit} bytes (provider.maxResponseBytes); not read further`,
              propertyId: propertyIdOfPath(path),
              tooLarge: true,
            },
            { path },
          );
        }
        const timedOut = err instanceof RequestTimeoutError;
        if (!timedOut && (err as { code?: unknown }).code === 'UND_ERR_INVALID_ARG') throw err;
        if (timedOut) this.counters.timeouts++;
        else this.counters.networkErrors++;
        const f: Failure = timedOut
          ? { cause: 'timeout', description: `no complete answer within ${requestTimeoutMs} ms` }
          : { cause: causeOfNetworkError(err), description: describeNetworkError(err) };
        this.health.exchanged({ scope, outcome: f.cause, seconds: (this.clock.now() - sentAt) / 1000 });
        await failed(f);
        previousWas401 = false;
        continue;
      }
      permit.release(res.headers);
      const { status } = res;
      this.health.exchanged({ scope, outcome: String(status), seconds: (this.clock.now() - sentAt) / 1000 });

      if (status >= 200 && status < 300) {
        let body: unknown = null;
        if (res.rawBody.trim() !== '') {
          try {
            body = parseJsonLossless(res.rawBody);
          } catch (err) {
            // Delivery, not data: a gateway cut the body short or answered with a page of its own.
            this.counters.invalidBodies++;
            const type = String(res.headers['content-type'] ?? 'no content-type');
            await failed({
              cause: 'invalid_body',
              status,
              description: `HTTP ${status} with a body that is not JSON (${type}, ${res.rawBody.length} bytes: ${(err as Error).message})`,
            });
            previousWas401 = false;
            continue;
          }
        }
        // The provider answered, whatever it says: it is there.
        this.health.success(host);
        const errors = envelopeItems(body, 'errors');
        if (errors.length > 0) {
          const text = describeItems(errors);
          for (const e of errors)
            if (this.firstOfKind(`errors ${e.kind}`))
              this.logger.warn(
                { scope, path, status, error: e.text },
                `${scope} ${path}: the provider answered HTTP ${status} with errors (${text}): a failed request, retried; each kind of error is logged once`,
              );
          await failed({ cause: 'provider_errors', status, description: `HTTP ${status} with errors: ${text}` });
          previousWas401 = false;
          continue;
        }
        const warnings = envelopeItems(body, 'warnings');
        this.counters.warnings += warnings.length;
        for (const w of warnings)
          if (this.firstOfKind(`warnings ${w.kind}`))
            this.logger.warn(
              { scope, path, warning: w.text },
              `${scope} ${path}: the provider answered with a warning (${w.text}); the answer is used. Each kind of warning is logged once`,
            );
        return { res: { ...res, sentAt, receivedAt: this.clock.now() }, body };
      }

      if (status === 401) {
        this.counters.responses401++;
        if (previousWas401) {
          throw new ProviderError(`${scope} ${path}: HTTP 401 twice in a row, even with a fresh access token`, { status, path });
        }
        previousWas401 = true;
        this.tokens.invalidate(token);
        this.logger.debug({ scope, path, status, attempt }, 'access token rejected, renewing it and retrying once');
        continue;
      }
      previousWas401 = false;

      if (status === 429 || isRetryableStatus(status)) {
        if (status === 429) this.counters.responses429++;
        else this.counters.responses5xx++;
        const ra = retryAfterMs(res.headers, this.clock.now());
        const throttled = status === 429 || (status === 503 && ra !== undefined);
        await failed(
          { cause: status === 429 ? 'throttled' : 'http_5xx', status, description: `HTTP ${status}: ${bodyExcerpt(res.rawBody, 120)}` },
          throttled ? (ra ?? 1000) : undefined,
        );
        continue;
      }

      // The provider answered: it is there, even if it refuses this request.
      this.health.success(host);
      if (status === 404) {
        // With the provider's answer: the PMS says in its envelope what it did not find.
        const answer = bodyExcerpt(res.rawBody);
        throw new NotFoundError(`${scope} ${path}: HTTP 404 (not found at the provider)${answer ? `: ${answer}` : ''}`, { status, path });
      }
      throw new RequestRejectedError(`${scope} ${path}: HTTP ${status}: ${bodyExcerpt(res.rawBody)}`, { status, path });
    }
  }
}
