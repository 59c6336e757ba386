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
  if (signal.aborted) throw signal.reason;
  // One controller per request, its timer cleared when the exchange ends. (AbortSignal.any
  // over AbortSignal.timeout keeps every timeout signal reachable until its timer fires: with
  // a 30 s timeout and hundreds of requests a second, that held megabytes for nothing.)
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new RequestTimeoutError(`no complete response within ${opts.timeoutMs} ms`));
  }, opts.timeoutMs);
  const onAbort = () => controller.abort(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    const res = await dispatcher.request({
      origin: url.origin,
      path: url.pathname + url.search,
      method: opts.method,
      headers: opts.headers,
      body: opts.body ?? null,
      signal: controller.signal,
    });
    const rawBody = await res.body.text();
    return { status: res.statusCode, headers: res.headers, rawBody };
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    if (timedOut) throw new RequestTimeoutError(`no complete response within ${opts.timeoutMs} ms`, { cause: err });
    throw err;
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', onAbort);
  }
}

/** A short, single-line excerpt of a response body for error messages. */
export function bodyExcerpt(rawBody: string, max = 200): string {
  const s = rawBody.replace(/\s+/g, ' ').trim();
  return s.length > max ? `${s.slice(0, max)}…` : s;
}
