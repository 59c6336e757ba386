/**
 * Access tokens (OAuth 2.0 client credentials, the provider's token endpoint). One token is cached and
 * shared by every request; it is renewed `renewBeforeExpiryMs` before `expires_in` says it
 * ends. At most one token request is in flight: concurrent callers share its promise, and
 * a burst of 401s for the same token causes one refresh (invalidate drops a token only if it
 * is still the current one). Token requests go through the 'token' budget (per IP: 3/s,
 * 15/min, 300/h), so a 401 storm cannot exhaust the token endpoint.
 *
 * The client secret and the tokens never appear in an error message or a log line.
 */
import type { Dispatcher } from 'undici';
import { z } from 'zod';
import type { Logger } from '../util/log.js';
import type { Clock } from '../util/clock.js';
import type { RateBudget } from './budget.js';
import { AuthenticationError, ProviderError, ProviderUnavailableError, RequestTimeoutError } from './errors.js';
import { causeOfNetworkError, type FailureCause, type ProviderHealth } from './health.js';
import { bodyExcerpt, ResponseTooLargeError, sendOnce } from './http.js';
import { backoffMs, isRetryableStatus, retryAfterMs } from './retry.js';
import { ApiAccess, apiAreaNames, apiAreas } from './api-access.js';
import { WaitList } from '../util/wait-list.js';

/**
 * The api_accesses values the process has said it does not know: said once each, not once per
 * connection and token (a fleet's thousand connections share the provider's names).
 */
const unknownClaimsSaid = new Set<string>();
/** At most this many values are remembered as said: a provider that sent a new value with every token would grow the set for ever. */
const MAX_UNKNOWN_CLAIMS_SAID = 100;

/** Claim values as the log shows them: at most 20, each cut to 64 characters (the token's own size is bounded only by its reply's 64 KB). */
function shownClaims(values: readonly string[]): string[] {
  const shown = values.slice(0, 20).map((v) => (v.length > 64 ? `${v.slice(0, 64)}…` : v));
  return values.length > 20 ? [...shown, `(${values.length - 20} more)`] : shown;
}

/** A token response is a few hundred bytes (a JWT and some numbers); anything much longer is not one. */
const MAX_TOKEN_RESPONSE_BYTES = 65_536;

export interface TokenManagerOptions {
  /** Provider base URL; the token endpoint is `{providerUrl}/auth/token`. */
  providerUrl: string;
  clientId: string | undefined;
  clientSecret: string | undefined;
  renewBeforeExpiryMs: number;
  requestTimeoutMs: number;
  maxAttempts: number;
  /** The 'token' scope budget. */
  budget: RateBudget;
  /** Waits until the replicas that share this IP address leave room for one more token request (TokenGate). */
  admit?: ((signal: AbortSignal) => Promise<void>) | undefined;
  dispatcher: Dispatcher;
  clock: Clock;
  logger: Logger;
  random?: () => number;
  /** Where every attempt is reported (failures by cause, retries, outages). */
  health: ProviderHealth;
  /** The process is stopping: no token request starts after it aborts. */
  stopSignal?: AbortSignal | undefined;
  userAgent: string;
}

const tokenResponseSchema = z.looseObject({
  access_token: z.string().min(1),
  expires_in: z.number().positive().nullish(),
  token_type: z.string().nullish(),
});

/** The narrative lifetime (15 min), used only when a response lacks `expires_in`. */
const defaultLifetimeMs = 15 * 60_000;

const credentialsHint = 'check STAYSYNC_CLIENT_ID / STAYSYNC_CLIENT_SECRET (or their _FILE variants)';

interface CachedToken {
  token: string;
  /** When callers stop using it and a new one is fetched. */
  renewAt: number;
  expiresAt: number;
  /** What it grants (its api_accesses claim). */
  access: ApiAccess;
}

export class TokenManager {
  private readonly opts: TokenManagerOptions;
  private readonly url: URL;
  private current: CachedToken | undefined;
  private inFlight: Promise<CachedToken> | undefined;
  /** Aborts an in-flight token request on close(); callers' signals only stop their own wait. */
  private readonly closing = new AbortController();
  /** close() or the process's stop signal. */
  private readonly stopped: AbortSignal;
  private requests = 0;
  /** Callers of renewedAccess, woken by each new token. */
  private readonly renewed = new WaitList();

  constructor(opts: TokenManagerOptions) {
    this.opts = opts;
    this.url = new URL(`${opts.providerUrl.replace(/\/+$/, '')}/auth/token`);
    this.stopped = opts.stopSignal ? AbortSignal.any([this.closing.signal, opts.stopSignal]) : this.closing.signal;
  }

  /** Number of token requests sent (metrics, tests). */
  get requestCount(): number {
    return this.requests;
  }

  /** A valid access token: the cached one, or a fresh one (shared with concurrent callers). */
  async getToken(signal: AbortSignal): Promise<string> {
    return (await this.cached(signal)).token;
  }

  /** What the current access token grants (a token is fetched when there is none). */
  async access(signal: AbortSignal): Promise<ApiAccess> {
    return (await this.cached(signal)).access;
  }

  /**
   * What the next access token grants: waits until the current one is due for renewal (then
   * gets the new one) or until another caller got a new one, whichever comes first. An area
   * granted in the extranet shows in it.
   */
  async renewedAccess(signal: AbortSignal): Promise<ApiAccess> {
    const cur = this.current;
    if (cur) {
      const local = new AbortController();
      const both = AbortSignal.any([signal, local.signal]);
      try {
        // A millisecond past renewAt: a timer may fire a little early, and the token is renewed only from then.
        await Promise.race([this.opts.clock.sleep(Math.max(0, cur.renewAt + 1 - this.opts.clock.now()), both), this.renewed.wait(both)]);
      } finally {
        local.abort();
      }
    }
    return this.access(signal);
  }

  /** What the current token grants, without asking for one: every area before the first token. */
  get currentAccess(): ApiAccess {
    return this.current?.access ?? ApiAccess.everything;
  }

  private async cached(signal: AbortSignal): Promise<CachedToken> {
    if (signal.aborted) throw signal.reason;
    const cur = this.current;
    if (cur && this.opts.clock.now() < cur.renewAt) return cur;
    if (!this.inFlight) {
      const p = this.fetchToken().then((t) => {
        this.announceAccess(this.current?.access, t.access);
        this.current = t;
        this.renewed.wakeAll();
        return t;
      });
      this.inFlight = p;
      // Clear the slot however it ends; the catch keeps this bookkeeping chain from being an
      // unhandled rejection (callers get the rejection through `p`).
      p.finally(() => {
        if (this.inFlight === p) this.inFlight = undefined;
      }).catch(() => undefined);
    }
    return raceAbort(this.inFlight, signal);
  }

  /**
   * One log line when a token grants other areas than the one before (the first token
   * included), and one warning for each claim value the process has not said yet.
   */
  private announceAccess(before: ApiAccess | undefined, now: ApiAccess): void {
    const unknown = now.unknownClaims().filter((c) => !unknownClaimsSaid.has(c));
    if (unknown.length > 0 && unknownClaimsSaid.size < MAX_UNKNOWN_CLAIMS_SAID) {
      for (const c of unknown.slice(0, MAX_UNKNOWN_CLAIMS_SAID - unknownClaimsSaid.size)) unknownClaimsSaid.add(c);
      this.opts.logger.warn(
        { scope: 'token', unknown: shownClaims(unknown) },
        `the access token's api_accesses holds values staysync does not know: ${shownClaims(unknown).join(', ')}; ` +
          'they may be the names of the APIs it only assumes, which it tries all the same (a 403 decides, per request)',
      );
    }
    if (before && before.sameClaims(now)) return;
    if (now.claims === undefined) {
      if (before) this.opts.logger.info({ scope: 'token' }, 'the access token has no api_accesses claim: every API area is tried');
      return;
    }
    const tried = now.triedUnnamed();
    const granted = apiAreaNames.filter((a) => now.grants(a) && !tried.includes(a));
    const notGranted = apiAreaNames.filter((a) => !now.grants(a));
    this.opts.logger.info(
      { scope: 'token', apiAccesses: shownClaims(now.claims), granted, notGranted, tried },
      `the access token grants ${granted.map((a) => apiAreas[a].title).join(', ') || 'no API the daemon reads'}` +
        (notGranted.length > 0 ? `; not granted: ${notGranted.map((a) => apiAreas[a].title).join(', ')} (their streams do not run)` : '') +
        (tried.length > 0 ? `; tried although the claim does not name them: ${tried.map((a) => apiAreas[a].title).join(', ')} (a 403 decides)` : ''),
    );
  }

  /**
   * After a 401 with `token`: forget it, but only if it is still the current token, so that
   * several concurrent 401s for one token cause one refresh, not one each.
   */
  invalidate(token: string): void {
    if (this.current?.token === token) this.current = undefined;
  }

  /** Aborts an in-flight token request. */
  close(): void {
    this.closing.abort(new Error('token manager closed'));
  }

  private async fetchToken(): Promise<CachedToken> {
    const { clientId, clientSecret, clock, logger, maxAttempts, health } = this.opts;
    const { host, pathname: path } = this.url;
    if (!clientId || !clientSecret) {
      throw new AuthenticationError(`no API client credentials configured: ${credentialsHint}`, { path });
    }
    const signal = this.stopped;
    const body = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: clientId,
      client_secret: clientSecret,
    }).toString();
    let failures = 0;
    /** After a failed attempt: count it, give up after maxAttempts, else wait. */
    const failed = async (cause: FailureCause, description: string, status: number | undefined, pause?: number): Promise<void> => {
      failures++;
      health.failure(host, cause, description);
      if (failures >= maxAttempts) {
        throw new ProviderUnavailableError({ scope: 'token', path, status, attempts: failures, host, lastError: description });
      }
      if (pause !== undefined) {
        this.opts.budget.pauseFor(pause);
        logger.debug({ scope: 'token', path, error: description, attempt: failures, delayMs: pause }, 'token request throttled, retrying');
      } else {
        const delay = backoffMs(failures, this.opts.random);
        logger.debug({ scope: 'token', path, error: description, attempt: failures, delayMs: delay }, 'token request failed, retrying');
        await clock.sleep(delay, signal);
      }
    };
    for (let attempt = 1; ; attempt++) {
      if (signal.aborted) throw signal.reason;
      if (attempt > 1) health.retried();
      const permit = await this.opts.budget.acquire(signal, 0);
      try {
        await this.opts.admit?.(signal);
      } catch (err) {
        permit.release();
        throw err;
      }
      const sentAt = clock.now();
      this.requests++;
      let res;
      try {
        res = await sendOnce(
          this.opts.dispatcher,
          this.url,
          {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', 'user-agent': this.opts.userAgent },
            body,
            timeoutMs: this.opts.requestTimeoutMs,
            maxBodyBytes: MAX_TOKEN_RESPONSE_BYTES,
          },
          signal,
        );
      } catch (err) {
        permit.release();
        if (signal.aborted) throw signal.reason;
        const cause = err instanceof RequestTimeoutError ? 'timeout' : err instanceof ResponseTooLargeError ? 'invalid_body' : causeOfNetworkError(err);
        health.exchanged({ scope: 'token', outcome: cause, seconds: (clock.now() - sentAt) / 1000 });
        const description =
          cause === 'timeout'
            ? `no complete answer within ${this.opts.requestTimeoutMs} ms`
            : err instanceof ResponseTooLargeError
              ? err.message
              : describeNetworkError(err);
        await failed(cause, description, undefined);
        continue;
      }
      permit.release(res.headers);
      const { status } = res;
      health.exchanged({ scope: 'token', outcome: String(status), seconds: (clock.now() - sentAt) / 1000 });

      if (status >= 200 && status < 300) {
        let parsed: z.output<typeof tokenResponseSchema>;
        try {
          parsed = tokenResponseSchema.parse(JSON.parse(res.rawBody));
        } catch {
          // Never echo the body or the parse error: they would carry the token. A body that is
          // not the token JSON came from something between us and the provider: retry it.
          await failed('invalid_body', `token answer HTTP ${status} is not the expected JSON (access_token, expires_in)`, status);
          continue;
        }
        health.success(host);
        const lifetime = parsed.expires_in != null ? parsed.expires_in * 1000 : defaultLifetimeMs;
        // Renew early, but never so early that a short-lived token is renewed on every call.
        const renewBefore = Math.min(this.opts.renewBeforeExpiryMs, lifetime / 2);
        logger.debug({ scope: 'token', expiresInMs: lifetime }, 'obtained access token');
        return {
          token: parsed.access_token,
          expiresAt: sentAt + lifetime,
          renewAt: sentAt + lifetime - renewBefore,
          access: ApiAccess.ofToken(parsed.access_token),
        };
      }

      const errorCode = oauthErrorCode(res.rawBody);
      if (status === 429 || isRetryableStatus(status)) {
        const ra = retryAfterMs(res.headers, clock.now());
        const throttled = status === 429 || (status === 503 && ra !== undefined);
        await failed(
          status === 429 ? 'throttled' : 'http_5xx',
          `token request answered HTTP ${status}${errorCode ? ` (${errorCode})` : ''}`,
          status,
          throttled ? (ra ?? 1000) : undefined,
        );
        continue;
      }
      health.success(host);
      if (status === 401 || status === 403 || (status === 400 && (errorCode === 'unauthorized_client' || errorCode === 'invalid_client'))) {
        logger.error({ scope: 'token', path, status, error: errorCode }, 'provider refused the client credentials');
        throw new AuthenticationError(
          `the provider refused the API client credentials (HTTP ${status}${errorCode ? `, ${errorCode}` : ''}): ${credentialsHint}`,
          { status, path },
        );
      }
      throw new ProviderError(`token request answered HTTP ${status}${errorCode ? ` (${errorCode})` : ''}`, { status, path });
    }
  }
}

/** The OAuth `error` field of an error body, if it is a short identifier (never echo more). */
function oauthErrorCode(rawBody: string): string | undefined {
  try {
    const v: unknown = JSON.parse(rawBody);
    if (typeof v === 'object' && v !== null && 'error' in v) {
      const e = v.error;
      if (typeof e === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(e)) return e;
    }
  } catch {
    /* not JSON */
  }
  return undefined;
}

export function describeNetworkError(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return typeof code === 'string' ? `${code}: ${bodyExcerpt(err.message, 120)}` : bodyExcerpt(err.message, 120);
  }
  return String(err);
}

/** Waits for `p`, or rejects with the signal's reason as soon as it aborts (p keeps running). */
export function raceAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
