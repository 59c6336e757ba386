/**
 * The page tokens of one paged PMS read (rooms, companies, invoices, loyalty cards). A read
 * asks for the next page for as long as the provider says there is one: a provider that names
 * a page it has already given (a token seen before) would be asked the same pages for ever,
 * spending the shared `standard` budget of every stream. So a token seen twice, or more pages
 * than any real list has, ends the read with PageLoopError, which the reader treats as an
 * answer it cannot use (the property's refresh fails with the reason; invoices are read again
 * with the reservation's next version).
 */

/** 100 items a page: a million items. No list of one property or reservation comes near. */
export const MAX_PAGES = 10_000;

/** The provider's pages of one read went round in a circle, or on past MAX_PAGES. */
export class PageLoopError extends Error {
  override name = 'PageLoopError';
}

export class PageTokens {
  private readonly seen = new Set<string>();
  private pages = 0;

  constructor(private readonly maxPages = MAX_PAGES) {}

  /** The token of the page after `page`; null after the last page. Throws PageLoopError on a token given before. */
  next(page: { hasNextPage: boolean; nextPageToken: string | null }): string | null {
    this.pages += 1;
    if (!page.hasNextPage || !page.nextPageToken) return null;
    const token = page.nextPageToken;
    if (this.seen.has(token))
      throw new PageLoopError(
        `the provider gave the page token ${JSON.stringify(token.slice(0, 40))} a second time, after ${this.pages} pages: the read stops there`,
      );
    if (this.pages >= this.maxPages) throw new PageLoopError(`the provider announced more than ${this.maxPages} pages: the read stops there`);
    this.seen.add(token);
    return token;
  }
}
