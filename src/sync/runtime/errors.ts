/**
 * Errors of the sync layer: what ends a property's stream or a whole run, each with the
 * sentence an operator reads (what happened, what to do).
 */

import type { ApiArea } from '../../provider/api-access.js';

/** The command that recovers one property's lost token: the log and `status` give it as it is. */
export function recoverCommand(propertyId: string): string {
  return `staysync run --recover --property ${propertyId}`;
}

/**
 * The provider refuses a property's stored continueToken (token-rejections.ts says when), or
 * it vanished while the mirror holds the property's bookings: that property's booking list
 * stops until it is recovered. The other properties and streams go on.
 */
export class ContinueTokenLostError extends Error {
  override name = 'ContinueTokenLostError';
  constructor(
    readonly propertyId: string,
    /** What happened, e.g. "the provider answered HTTP 400 to its stored continueToken 5 times in a row …". */
    readonly detail: string,
    options?: ErrorOptions,
  ) {
    super(
      `property ${propertyId}: token lost: ${detail}. Its booking list stops until it is recovered; the other properties and streams go on. ` +
        `To resume it from its last mirrored modification minus two days: ${recoverCommand(propertyId)} ` +
        `(or sync --once --recover --property ${propertyId}; --recover=<ISO time> chooses the point; sync.autoRecover does it by itself)`,
      options,
    );
  }
}

/**
 * The provider answered 400 to a property's stored continueToken fewer times in a row than
 * make it lost (token-rejections.ts): a faulty request, asked again with the stream's backoff.
 */
export class ContinueTokenRetryError extends Error {
  override name = 'ContinueTokenRetryError';
  constructor(rejections: number, lostAfter: number, options?: ErrorOptions) {
    super(
      `the provider answered HTTP 400 to the stored continueToken (${rejections} of ${lostAfter} in a row before it is declared lost); asked again with backoff`,
      options,
    );
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
