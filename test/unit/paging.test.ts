import { describe, expect, it } from 'vitest';
import { PagingError, PageTokens } from '../../src/provider/paging.js';

const page = (hasNextPage: boolean | null, nextPageToken: string | null, items = 1) => ({ hasNextPage, nextPageToken, items });

describe('PageTokens', () => {
  it('gives each next token, null after the last page', () => {
    const t = new PageTokens();
    expect(t.next(page(true, 'a'))).toBe('a');
    expect(t.next(page(true, 'b'))).toBe('b');
    expect(t.next(page(false, 'c'))).toBeNull();
  });

  it('reads on from a page with a token and no hasNextPage; an empty one or one without a token is the last', () => {
    const t = new PageTokens();
    expect(t.next(page(null, 'a'))).toBe('a');
    expect(t.next(page(null, 'b', 100))).toBe('b');
    // The token a last page may carry (the search's, kept for a later poll): nothing came with it.
    expect(t.next(page(null, 'c', 0))).toBeNull();
    expect(new PageTokens().next(page(null, null, 5))).toBeNull();
  });

  it('refuses a page that announces a next one without its token: the read is not complete', () => {
    expect(() => new PageTokens().next(page(true, null))).toThrow(PagingError);
    expect(() => new PageTokens().next(page(true, ''))).toThrow(/next page without its token/);
  });

  it('ends a read whose pages go round in a circle', () => {
    const t = new PageTokens();
    t.next(page(true, 'a'));
    t.next(page(true, 'b'));
    expect(() => t.next(page(true, 'a'))).toThrow(PagingError);
    expect(() => new PageTokens().next(page(true, 'x'))).not.toThrow();
  });

  it('ends a read that goes on past its page limit', () => {
    const t = new PageTokens(3);
    t.next(page(true, '1'));
    t.next(page(true, '2'));
    expect(() => t.next(page(true, '3'))).toThrow(/more than 3 pages/);
  });
});
