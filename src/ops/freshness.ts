/**
 * The freshness part of `staysync status`: per property, the last poll of the booking list,
 * the newest mirrored change, "data as of", and the lag of the fresh changes of the last hour
 * (src/store/repositories/freshness.ts, the same definitions as reporting.freshness).
 */
import type { PropertyFreshness } from '../store/repositories/freshness.js';
import { formatDuration } from '../sync/runtime/progress.js';

/** As in `status --json`: times in ISO 8601 (UTC), ages and lags in seconds by the database's clock. */
export interface FreshnessStatus {
  lastPollAt: string | null;
  lastPollAgeSeconds: number | null;
  newestChangeAt: string | null;
  newestChangeAgeSeconds: number | null;
  /** Every change made before this moment is in `bookings`. */
  dataAsOf: string | null;
  dataAsOfAgeSeconds: number | null;
  /** Lag from a fresh change at the provider to its details written, over the changes written in the last hour. */
  lagP50Seconds: number | null;
  lagP95Seconds: number | null;
  changesLastHour: number;
}

const round = (x: number | null): number | null => (x === null ? null : Math.round(x * 1000) / 1000);

export function toFreshnessStatus(f: PropertyFreshness | undefined): FreshnessStatus | null {
  if (!f) return null;
  return {
    lastPollAt: f.lastPollAt?.toISOString() ?? null,
    lastPollAgeSeconds: round(f.lastPollAgeSeconds),
    newestChangeAt: f.newestChangeAt?.toISOString() ?? null,
    newestChangeAgeSeconds: round(f.newestChangeAgeSeconds),
    dataAsOf: f.dataAsOf?.toISOString() ?? null,
    dataAsOfAgeSeconds: round(f.dataAsOfAgeSeconds),
    lagP50Seconds: round(f.lagP50Seconds),
    lagP95Seconds: round(f.lagP95Seconds),
    changesLastHour: f.changesLastHour,
  };
}

/** Seconds as a short duration: tenths below 10 s (a lag of 1.4 s is not "1s"), else formatDuration. */
export function shortDuration(seconds: number): string {
  return seconds < 10 ? `${seconds.toFixed(1)}s` : formatDuration(Math.round(seconds));
}

const ago = (s: number | null): string => (s === null ? '' : ` (${shortDuration(s)} ago)`);

/** One line per property: `property 500100 freshness: last poll … (1.2s ago), newest change …, data as of …, lag p50 …, p95 … (n changes in the last hour)`. */
export function freshnessLines(properties: readonly { propertyId: string; freshness: FreshnessStatus | null }[]): string[] {
  const out: string[] = [];
  for (const p of properties) {
    const f = p.freshness;
    if (!f) continue;
    const lag =
      f.changesLastHour === 0 || f.lagP50Seconds === null
        ? 'no fresh change in the last hour'
        : `lag p50 ${shortDuration(f.lagP50Seconds)}, p95 ${shortDuration(f.lagP95Seconds ?? f.lagP50Seconds)} (${f.changesLastHour} fresh change${f.changesLastHour === 1 ? '' : 's'} in the last hour)`;
    out.push(
      `property ${p.propertyId} freshness: last poll ${f.lastPollAt ?? 'never'}${ago(f.lastPollAgeSeconds)}, ` +
        `newest change ${f.newestChangeAgeSeconds === null ? 'none mirrored' : `${shortDuration(f.newestChangeAgeSeconds)} old`}, ` +
        `data as of ${f.dataAsOf ?? 'unknown'}${ago(f.dataAsOfAgeSeconds)}, ${lag}`,
    );
  }
  return out;
}
