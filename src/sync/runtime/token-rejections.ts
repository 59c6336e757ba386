/**
 * 400 answers to a property's stored continueToken, counted in a row per token: when a token
 * is lost rather than refused once.
 *
 * The specification says the continueToken does not expire and that 400 is a faulty request.
 * A request that is faulty because of its token is faulty every time it is sent; one that was
 * spoiled on its way (a gateway, a deploy at the provider) is not. So a 400 is asked again
 * with the stream's backoff (1, 2, 4, 8 s), and only the fifth in a row for the same token,
 * some 8 to 15 s after the first, makes the token lost; and only if the provider answers the
 * same list without the token (a list it refuses whatever is sent is a faulty request, which
 * no recovery mends: the property is `failing` instead).
 *
 * Why five: each retry costs one request of the list budget (3,000 an hour), nothing; a token
 * declared lost wrongly costs a recovery (the operator's command, and two days of the list
 * read again). Fewer would take a passing fault of a few seconds for a loss; more would only
 * keep a property whose token is really gone waiting, since the answer without the token
 * decides what a count cannot: the token or the provider.
 *
 * In memory, per API connection: a restart counts from zero, which only delays the verdict.
 * One entry per property whose token was refused, gone with its next page.
 */
export const TOKEN_LOST_AFTER_REJECTIONS = 5;

export interface Rejections {
  /** 400s in a row for the token. */
  count: number;
  /** When the first of them came (ms). */
  since: number;
}

export class TokenRejections {
  private readonly byProperty = new Map<string, Rejections & { token: string }>();

  /** Counts a 400 to `token`; another token than the last refused one starts again at one. */
  add(propertyId: string, token: string, now: number): Rejections {
    const last = this.byProperty.get(propertyId);
    const next = last?.token === token ? { ...last, count: last.count + 1 } : { token, count: 1, since: now };
    this.byProperty.set(propertyId, next);
    return { count: next.count, since: next.since };
  }

  /** A page was read (or the list restarts without a token): the count starts again. */
  clear(propertyId: string): void {
    this.byProperty.delete(propertyId);
  }
}
