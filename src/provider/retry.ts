/** Retry arithmetic shared by the API client and the token manager. */
import type { ResponseHeaders } from './budget.js';

export const backoffBaseMs = 500;
export const backoffCapMs = 30_000;

/**
 * Exponential backoff with full jitter: uniform in [0, min(cap, base·2^(failures-1))).
 * Full jitter spreads the retries of many concurrent requests after one provider hiccup.
 */
export function backoffMs(failures: number, random: () => number = Math.random): number {
  const ceiling = Math.min(backoffCapMs, backoffBaseMs * 2 ** Math.max(0, failures - 1));
  return Math.floor(random() * ceiling);
}

/**
 * `retry-after` in milliseconds: delta-seconds or an HTTP date (relative to `now`).
 * Undefined when absent or unreadable.
 */
export function retryAfterMs(headers: ResponseHeaders, now: number): number | undefined {
  let v = headers['retry-after'];
  if (Array.isArray(v)) v = v[0];
  if (v === undefined || v.trim() === '') return undefined;
  const s = v.trim();
  if (/^\d+(\.\d+)?$/.test(s)) return Math.round(Number(s) * 1000);
  const at = Date.parse(s);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** Status codes worth retrying with backoff (transient server trouble). */
export function isRetryableStatus(status: number): boolean {
  return status === 500 || status === 502 || status === 503 || status === 504;
}
