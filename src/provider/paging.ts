/**
 * The pages of one paged PMS read (rooms, companies, invoices, loyalty cards, the reservation
 * search): what a page says of the next one, and the tokens a read has followed.
 *
 * A read that ends early would be taken as the whole list, and a whole list marks what it does
 * not hold removed. So a page is the last only when it says so (`hasNextPage` false), or when
 * it gives nothing to read on with (no token) or nothing at all (no item) and no
 * `hasNextPage`: the document gives the token "when more items exist", and its samples leave
 * the key out or name it `pageToken`. A page that announces a next one without its token
 * cannot be followed: the read is not complete, and PagingError says so.
 *
 * A provider that names a page it has already given (a token seen before) would be asked the
 * same pages for ever, spending the shared `standard` budget of every stream. So a token seen
 * twice, or more pages than any real list has, ends the read with PagingError too, which the
 * reader treats as an answer it cannot use (the property's refresh fails with the reason;
 * invoices are read again later).
 */

/** 100 items a page: a million items. No list of one property or reservation comes near. */
export const MAX_PAGES = 10_000;

/** What a page says of the next: `hasNextPage` (null when absent), its token (either key), and how many items it held. */
export interface PageLinks {
  hasNextPage: boolean | null;
  nextPageToken: string | null;
  items: number;
}

/** The pages of one read cannot be followed to their end: a next page without a token, a circle, or past MAX_PAGES. */
export class PagingError extends Error {
  override name = 'PagingError';
}

/** The token of the page after `page`, or null when `page` is the last; PagingError when the next page cannot be asked for. */
export function nextPageTokenOf(page: PageLinks): string | null {
  const token = page.nextPageToken || null;
  if (page.hasNextPage === true) {
    if (token === null) throw new PagingError('the provider announced a next page without its token: the read is not complete and stops there');
    return token;
  }
  if (page.hasNextPage === false) return null;
  return token !== null && page.items > 0 ? token : null;
}

export class PageTokens {
  private readonly seen = new Set<string>();
  private pages = 0;

  constructor(private readonly maxPages = MAX_PAGES) {}

  /** The token of the page after `page`; null after the last page. Throws PagingError (nextPageTokenOf), and on a token given before. */
  next(page: PageLinks): string | null {
    this.pages += 1;
    const token = nextPageTokenOf(page);
    if (token === null) return null;
    if (this.seen.has(token))
      throw new PagingError(
        `the provider gave the page token ${JSON.stringify(token.slice(0, 40))} a second time, after ${this.pages} pages: the read stops there`,
      );
    if (this.pages >= this.maxPages) throw new PagingError(`the provider announced more than ${this.maxPages} pages: the read stops there`);
    this.seen.add(token);
    return token;
  }
}
