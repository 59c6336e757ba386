/**
 * Errors of the sync layer: what ends a property's stream or a whole run, each with the
 * sentence an operator reads (what happened, what to do).
 */

import type { ApiArea } from '../../provider/api-access.js';

/** What to do after a lost token: said once, here, wherever a token is reported lost. */
export const TOKEN_LOST_ADVICE =
  'Restart with --recover to resume from the last mirrored modification minus two days ' + '(or --recover=<ISO time> to choose the point).';

/** The provider rejected the stored cursor of a property, or it vanished: restart with --recover. */
export class ContinueTokenLostError extends Error {
  override name = 'ContinueTokenLostError';
  constructor(
    readonly propertyId: string,
    /** What happened, e.g. "the provider rejected the stored continueToken (HTTP 400)". */
    readonly detail: string,
    options?: ErrorOptions,
  ) {
    super(`property ${propertyId}: token lost: ${detail}. The bookings of this property are not followed any more. ${TOKEN_LOST_ADVICE}`, options);
  }
}

/**
 * A property's stream stopped for a reason that retrying does not fix soon (the provider
 * refuses the request, the envelope is not the documented shape, or `sync --once` gave up on
 * it). The others go on.
 */
export class PropertyFailedError extends Error {
  override name = 'PropertyFailedError';
  constructor(
    readonly propertyId: string,
    readonly stream: string,
    readonly reason: string,
    options?: ErrorOptions,
  ) {
    super(`property ${propertyId}: ${stream} failing: ${reason}`, options);
  }
}

/** `sync --once` stopped waiting for a provider that gives no usable answer. */
export class ProviderGaveUpError extends Error {
  override name = 'ProviderGaveUpError';
  constructor(host: string, setting: string, waitedMs: number, lastError: string) {
    super(
      `sync --once gave up: the provider ${host} has given no usable answer for ${Math.round(waitedMs / 1000)} s ` +
        `(last error: ${lastError}). Check ${setting} and the network; nothing committed was lost, ` +
        `run it again when the provider answers (or raise provider.giveUpAfterMs).`,
    );
  }
}

/** `sync --once` stopped waiting for the database. */
export class DatabaseGaveUpError extends Error {
  override name = 'DatabaseGaveUpError';
  constructor(description: string, waitedMs: number, lastError: string) {
    super(
      `sync --once gave up: the database ${description} has been unreachable for ${Math.round(waitedMs / 1000)} s ` +
        `(last error: ${lastError}). Nothing committed was lost; run it again when the database is back ` +
        `(or raise database.giveUpAfterMs).`,
    );
  }
}

/** No property to follow: none configured, and the content API listed none (or could not be read). */
export class NothingToFollowError extends Error {
  override name = 'NothingToFollowError';
}

/**
 * A refresh that goes property by property (occupancy, PMS rooms) could not refresh some of
 * them; the others were refreshed. `transient` when every failure may pass by itself.
 */
export class RefreshIncompleteError extends Error {
  override name = 'RefreshIncompleteError';
  constructor(
    readonly what: string,
    readonly failures: { propertyId: string; reason: string }[],
    readonly transient: boolean,
  ) {
    super(
      `${what} of ${failures.length} propert${failures.length === 1 ? 'y' : 'ies'} failed: ${failures.map((f) => `${f.propertyId}: ${f.reason}`).join('; ')}`,
    );
  }
}

/**
 * The access token does not grant the API area a stream reads (api-access.ts): the stream does
 * not start, shows `not_granted`, and (daemon) waits for a token that grants it.
 */
export class NotGrantedError extends Error {
  override name = 'NotGrantedError';
  constructor(
    readonly area: ApiArea,
    reason: string,
  ) {
    super(reason);
  }
}
