/**
 * Errors of the provider client, one class per way a request can end badly, so that callers
 * decide by class: retry later (ProviderUnavailableError), stop this property
 * (RequestRejectedError, an InvalidPayloadError of an envelope), count towards a lost token
 * (ContinueTokenRejectedError), stop the process (AuthenticationError), or keep the data aside
 * (InvalidPayloadError, NotFoundError of a booking).
 *
 * Every error carries the HTTP status (when there was a response) and the request path
 * WITHOUT its query string: queries carry continue tokens and the token request carries the
 * client secret, neither belongs in a message or a log.
 */

import type { ApiArea } from './api-access.js';

export interface ProviderErrorOptions {
  /** HTTP status of the response, undefined when no response arrived (network, timeout). */
  status?: number | undefined;
  /** Request path without query, e.g. `/api/read-reservation/v1/properties/1/bookings`. */
  path: string;
  cause?: unknown;
}

/** Base class: a request to the provider failed in a way the caller has to handle. */
export class ProviderError extends Error {
  override name = 'ProviderError';
  readonly status: number | undefined;
  readonly path: string;

  constructor(message: string, opts: ProviderErrorOptions) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.status = opts.status;
    this.path = opts.path;
  }
}

/**
 * The provider refused the client credentials. Fatal: retrying cannot help. The message
 * names the settings to check and never contains the secret or a token.
 */
export class AuthenticationError extends ProviderError {
  override name = 'AuthenticationError';
}

/**
 * A 4xx answer other than 401, 404 and 429 (400, 403, 405, 409, 422, ...): the provider refuses
 * this request as it is, and sending it again will not change that. The property is marked
 * failing with this message.
 */
export class RequestRejectedError extends ProviderError {
  override name = 'RequestRejectedError';
}

/**
 * A 403 from an API area as a whole (the PMS search, the PMS rooms, the daily occupancy, a
 * reference list): the API connection lacks that area, whatever the token's claim said. The
 * stream shows the area as not granted until the next access token (api-access.ts), instead
 * of failing. A 403 of the booking list or of content concerns one property (a connection
 * that does not include it) and stays a RequestRejectedError.
 */
export class AccessRefusedError extends RequestRejectedError {
  override name = 'AccessRefusedError';
  constructor(
    readonly area: ApiArea,
    message: string,
    opts: ProviderErrorOptions,
  ) {
    super(message, opts);
  }
}

/**
 * A summaries request with a stored continueToken was answered 400: the provider refused the
 * request with that token, this once. Whether the token is lost is the sync layer's verdict
 * (sync/runtime/token-rejections.ts: five in a row, and the list answered without it).
 */
export class ContinueTokenRejectedError extends ProviderError {
  override name = 'ContinueTokenRejectedError';
  readonly propertyId: string;

  constructor(propertyId: string, opts: ProviderErrorOptions) {
    super(`the provider rejected the stored continueToken (HTTP ${opts.status ?? '?'})`, opts);
    this.propertyId = propertyId;
  }
}

/** 404: the resource does not exist (or not yet: a replica may lag behind the list). */
export class NotFoundError extends ProviderError {
  override name = 'NotFoundError';
}

export interface InvalidPayloadDetails {
  /** The body as received, for the quarantine table. */
  rawBody: string;
  /** Readable summary of the validation issues, each with its path. */
  reason: string;
  propertyId: string | null;
  bookingNumber?: string | undefined;
  /** The body was longer than provider.maxResponseBytes and was not read whole: fetching it again reads as much again. */
  tooLarge?: boolean;
}

/** How the reason of a body over provider.maxResponseBytes starts (the quarantine tells them apart by it). */
export const TOO_LARGE_REASON = 'body too large: ';

/** A 2xx answer in JSON that does not match the schema: quarantine it (or, for an envelope, stop the property). */
export class InvalidPayloadError extends ProviderError {
  override name = 'InvalidPayloadError';
  readonly rawBody: string;
  readonly reason: string;
  readonly propertyId: string | null;
  readonly bookingNumber: string | undefined;
  readonly tooLarge: boolean;

  constructor(details: InvalidPayloadDetails, opts: ProviderErrorOptions) {
    const what =
      details.bookingNumber !== undefined
        ? `booking ${details.bookingNumber} of property ${details.propertyId ?? '?'}`
        : details.propertyId !== null
          ? `response for property ${details.propertyId}`
          : `response of ${opts.path}`;
    super(`invalid payload: ${what}: ${details.reason}`, opts);
    this.rawBody = details.rawBody;
    this.reason = details.reason;
    this.propertyId = details.propertyId;
    this.bookingNumber = details.bookingNumber;
    this.tooLarge = details.tooLarge ?? false;
  }
}

/**
 * Gave up after maxAttempts of 429 / 5xx / network errors / timeouts / bodies that are not
 * JSON. Transient: try again later. `host` and `lastError` say where and what, for the
 * operator's sentence.
 */
export class ProviderUnavailableError extends ProviderError {
  override name = 'ProviderUnavailableError';
  readonly attempts: number;
  readonly host: string;
  readonly lastError: string;

  constructor(opts: ProviderErrorOptions & { attempts: number; host: string; lastError: string; scope: string }) {
    super(`${opts.scope} ${opts.path}: no usable answer from ${opts.host} after ${opts.attempts} attempts (last: ${opts.lastError})`, opts);
    this.attempts = opts.attempts;
    this.host = opts.host;
    this.lastError = opts.lastError;
  }
}

/**
 * Gave up after maxAttempts, the last of them a 2xx whose `errors` was not empty (the PMS
 * envelope): the provider answers, but could not do this request. Transient like its parent
 * (the request is asked again later); a read of one thing (an invoice list, a person's cards)
 * takes it as not read, and keeps what is mirrored.
 */
export class ProviderErrorsError extends ProviderUnavailableError {
  override name = 'ProviderErrorsError';
}

/** One exchange's own timeout fired (the caller's signal did not abort): retryable. Internal to the client. */
export class RequestTimeoutError extends Error {
  override name = 'RequestTimeoutError';
}
