import { describe, expect, it } from 'vitest';
import { PageLoopError, PageTokens } from '../../src/provider/paging.js';

describe('PageTokens', () => {
  it('gives each next token, null after the last page', () => {
    const t = new PageTokens();
    expect(t.next({ hasNextPage: true, nextPageToken: 'a' })).toBe('a');
    expect(t.next({ hasNextPage: true, nextPageToken: 'b' })).toBe('b');
    expect(t.next({ hasNextPage: false, nextPageToken: 'c' })).toBeNull();
  });

  it('ends a read whose pages go round in a circle', () => {
    const t = new PageTokens();
    t.next({ hasNextPage: true, nextPageToken: 'a' });
    t.next({ hasNextPage: true, nextPageToken: 'b' });
    expect(() => t.next({ hasNextPage: true, nextPageToken: 'a' })).toThrow(PageLoopError);
    expect(() => new PageTokens().next({ hasNextPage: true, nextPageToken: 'x' })).not.toThrow();
  });

  it('ends a read that goes on past its page limit', () => {
    const t = new PageTokens(3);
    t.next({ hasNextPage: true, nextPageToken: '1' });
    t.next({ hasNextPage: true, nextPageToken: '2' });
    expect(() => t.next({ hasNextPage: true, nextPageToken: '3' })).toThrow(/more than 3 pages/);
  });
});
