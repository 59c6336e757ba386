/**
 * Errors of the provider client. Every error carries the HTTP status (when there was a
 * response) and the request path WITHOUT its query string: queries carry continue tokens
 * and the token request carries the client secret, neither belongs in a message or a log.
 */

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
 * A summaries request with a stored continueToken was answered 400: the provider rejects the
 * token. This is "token lost" (DESIGN.md, Recovery after token loss): the property stops
 * and waits for `--recover`, it must not silently start a full re-sync.
 */
export class ContinueTokenRejectedError extends ProviderError {
  override name = 'ContinueTokenRejectedError';
  readonly propertyId: string;

  constructor(propertyId: string, opts: ProviderErrorOptions) {
    super(
      `property ${propertyId}: the provider rejected the stored continueToken (HTTP ${opts.status ?? '?'}); ` +
        'the summaries cursor is lost: restart with --recover to resume from the last mirrored modification',
      opts,
    );
    this.propertyId = propertyId;
  }
}

/** 404: the resource does not exist (or is outdated) at the provider. */
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
}

/** A 200 answer whose body is not JSON or does not match the schema: quarantine it. */
export class InvalidPayloadError extends ProviderError {
  override name = 'InvalidPayloadError';
  readonly rawBody: string;
  readonly reason: string;
  readonly propertyId: string | null;
  readonly bookingNumber: string | undefined;

  constructor(details: InvalidPayloadDetails, opts: ProviderErrorOptions) {
    const what = details.bookingNumber !== undefined
      ? `booking ${details.bookingNumber} of property ${details.propertyId ?? '?'}`
      : details.propertyId !== null
        ? `response for property ${details.propertyId}`
        : `response of ${opts.path}`;
    super(`invalid payload: ${what}: ${details.reason}`, opts);
    this.rawBody = details.rawBody;
    this.reason = details.reason;
    this.propertyId = details.propertyId;
    this.bookingNumber = details.bookingNumber;
  }
}

/** Gave up after maxAttempts of 429 / 5xx / network errors / timeouts. Retry later. */
export class ProviderUnavailableError extends ProviderError {
  override name = 'ProviderUnavailableError';
  readonly attempts: number;

  constructor(message: string, attempts: number, opts: ProviderErrorOptions) {
    super(message, opts);
    this.attempts = attempts;
  }
}
