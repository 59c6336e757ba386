/** One HTTP exchange through undici, with a timeout combined with the caller's signal. */
import type { Dispatcher } from 'undici';
import type { ResponseHeaders } from './budget.js';
import { RequestTimeoutError } from './errors.js';

export interface RawResponse {
  status: number;
  headers: ResponseHeaders;
  rawBody: string;
}

export interface SendOptions {
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  timeoutMs: number;
}

/**
 * Sends one request and reads the whole body. Rejects with the caller's abort reason when
 * `signal` aborts, with RequestTimeoutError when `timeoutMs` passes first, and with undici's
 * error on network failures.
 */
export async function sendOnce(dispatcher: Dispatcher, url: URL, opts: SendOptions, signal: AbortSignal): Promise<RawResponse> {
  const timeout = AbortSignal.timeout(opts.timeoutMs);
  const combined = AbortSignal.any([signal, timeout]);
  try {
    const res = await dispatcher.request({
      origin: url.origin,
      path: url.pathname + url.search,
      method: opts.method,
      headers: opts.headers,
      body: opts.body ?? null,
      signal: combined,
    });
    const rawBody = await res.body.text();
    return { status: res.statusCode, headers: res.headers, rawBody };
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    if (timeout.aborted) throw new RequestTimeoutError(`no complete response within ${opts.timeoutMs} ms`, { cause: err });
    throw err;
  }
}

/** A short, single-line excerpt of a response body for error messages. */
export function bodyExcerpt(rawBody: string, max = 200): string {
  const s = rawBody.replace(/\s+/g, ' ').trim();
  return s.length > max ? `${s.slice(0, max)}…` : s;
}
