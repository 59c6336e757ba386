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
  /** The body is read up to this many bytes and not one more (ResponseTooLargeError). */
  maxBodyBytes: number;
}

/** A response body longer than the limit: reading stopped there, the rest was never read. */
export class ResponseTooLargeError extends Error {
  override name = 'ResponseTooLargeError';

  constructor(
    readonly limit: number,
    /** The first bytes of the body, as text (for the quarantine: what it was). */
    readonly excerpt: string,
  ) {
    super(`the response body is larger than ${limit} bytes`);
  }
}

/** How much of an oversized body is kept to show what it was. */
const EXCERPT_BYTES = 4096;

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
    const rawBody = await readLimited(res, opts.maxBodyBytes);
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

/**
 * The body as text, read chunk by chunk and abandoned as soon as it passes `max` bytes (or
 * announces more in content-length): memory holds at most `max` bytes of it, whatever the
 * sender has.
 */
async function readLimited(res: Dispatcher.ResponseData, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  const tooLarge = () => {
    res.body.destroy();
    let head = Buffer.alloc(0);
    for (const c of chunks) {
      if (head.length >= EXCERPT_BYTES) break;
      head = Buffer.concat([head, c.subarray(0, EXCERPT_BYTES - head.length)]);
    }
    return new ResponseTooLargeError(max, head.toString('utf8'));
  };
  const announced = Number(res.headers['content-length']);
  if (Number.isFinite(announced) && announced > max) throw tooLarge();
  let size = 0;
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    size += chunk.length;
    chunks.push(chunk);
    if (size > max) throw tooLarge();
  }
  return Buffer.concat(chunks, size).toString('utf8');
}

/** A short, single-line excerpt of a response body for error messages. */
export function bodyExcerpt(rawBody: string, max = 200): string {
  const s = rawBody.replace(/\s+/g, ' ').trim();
  return s.length > max ? `${s.slice(0, max)}…` : s;
}
