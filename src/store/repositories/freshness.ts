/**
 * Freshness of the mirror per property: when the booking list was last asked, the newest
 * change mirrored, the moment up to which the mirror is known complete, and the lag of fresh
 * changes (change_lags, migrations/0009_freshness.sql). The same definitions as the reporting
 * view `freshness` (migrations/reporting/views.sql), for `status` and /metrics, which must not
 * depend on the reporting layer being applied.
 */
import { sql } from 'kysely';
import type { Executor } from '../types.js';

/** change_lags keeps a day of changes: enough for any "last hour" and a day's dashboard. */
export const CHANGE_LAG_RETENTION = '24 hours';

/**
 * Records the lag of a fresh change, in the transaction that writes its details and before
 * the write (it compares with the version stored so far): `changedAt` (the version the summary
 * asked for, or the details' own when a change event asked) to now. Nothing is recorded when
 * the mirror already holds this version or a newer one (a refresh that changes nothing is no
 * change), when the details are older than the version asked for (fetched again later, and
 * recorded then), or when this version was recorded before. Removes the property's rows older
 * than a day on the way (one index range, usually empty). Returns the lag in seconds when a
 * row was recorded.
 */
export async function recordChangeLag(
  trx: Executor,
  c: { propertyId: string; number: string; changedAt: Date | string; version: Date | string },
): Promise<number | undefined> {
  const r = await sql<{ lag: number }>`
    WITH pruned AS (
      DELETE FROM change_lags
      WHERE property_id = ${c.propertyId} AND written_at < clock_timestamp() - ${CHANGE_LAG_RETENTION}::interval
    )
    INSERT INTO change_lags (property_id, number, modified_at, written_at)
    SELECT ${c.propertyId}, ${c.number}, ${c.changedAt}::timestamptz, clock_timestamp()
    WHERE ${c.version}::timestamptz >= ${c.changedAt}::timestamptz
      AND NOT EXISTS (SELECT 1 FROM bookings b WHERE b.property_id = ${c.propertyId} AND b.number = ${c.number} AND b.modified_at >= ${c.version}::timestamptz)
    ON CONFLICT (property_id, number, modified_at) DO NOTHING
    RETURNING GREATEST(0, extract(epoch FROM written_at - modified_at))::float8 AS lag`.execute(trx);
  const lag = r.rows[0]?.lag;
  return lag === undefined ? undefined : Number(lag);
}

export interface PropertyFreshness {
  propertyId: string;
  /** When the booking list was last asked successfully. */
  lastPollAt: Date | null;
  lastPollAgeSeconds: number | null;
  /** Newest modification among the mirrored bookings. */
  newestChangeAt: Date | null;
  newestChangeAgeSeconds: number | null;
  /**
   * Every change made before this moment is in `bookings`: the last poll of a caught-up list
   * (while the list is still being read, the modification it is read through), held back by
   * the oldest change still waiting for its details.
   */
  dataAsOf: Date | null;
  dataAsOfAgeSeconds: number | null;
  /** Lag (modification at the provider to details written) of the fresh changes written in the last hour. */
  lagP50Seconds: number | null;
  lagP95Seconds: number | null;
  changesLastHour: number;
}

const seconds = (v: unknown): number | null => (v === null || v === undefined ? null : Math.max(0, Number(v)));

/** Per property with a booking list cursor, in property order. Ages by the database's clock. */
export async function freshnessByProperty(db: Executor): Promise<PropertyFreshness[]> {
  const r = await sql<{
    property_id: string;
    last_poll_at: Date | null;
    last_poll_age: number | null;
    newest_change_at: Date | null;
    newest_change_age: number | null;
    data_as_of: Date | null;
    data_as_of_age: number | null;
    lag_p50: number | null;
    lag_p95: number | null;
    changes: string;
  }>`
    SELECT f.property_id,
           f.last_poll_at,
           extract(epoch FROM now() - f.last_poll_at)::float8 AS last_poll_age,
           f.newest_change_at,
           extract(epoch FROM now() - f.newest_change_at)::float8 AS newest_change_age,
           f.data_as_of,
           extract(epoch FROM now() - f.data_as_of)::float8 AS data_as_of_age,
           l.lag_p50, l.lag_p95, l.changes
    FROM (
      SELECT c.property_id,
             c.last_poll_at,
             (SELECT max(b.modified_at) FROM bookings b WHERE b.property_id = c.property_id) AS newest_change_at,
             CASE WHEN (CASE WHEN c.caught_up THEN c.last_poll_at ELSE c.position END) IS NULL THEN NULL
                  ELSE LEAST(CASE WHEN c.caught_up THEN c.last_poll_at ELSE c.position END,
                             (SELECT min(COALESCE(q.wanted_modified_at, q.enqueued_at)) FROM booking_detail_queue q
                               WHERE q.property_id = c.property_id AND q.state = 'pending')) END AS data_as_of
      FROM sync_cursors c WHERE c.stream = 'booking_summaries'
    ) f
    CROSS JOIN LATERAL (
      SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM x.written_at - x.modified_at))::float8 AS lag_p50,
             percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM x.written_at - x.modified_at))::float8 AS lag_p95,
             count(*) AS changes
      FROM change_lags x WHERE x.property_id = f.property_id AND x.written_at > now() - interval '1 hour'
    ) l
    ORDER BY f.property_id`.execute(db);
  return r.rows.map((row) => ({
    propertyId: row.property_id,
    lastPollAt: row.last_poll_at,
    lastPollAgeSeconds: seconds(row.last_poll_age),
    newestChangeAt: row.newest_change_at,
    newestChangeAgeSeconds: seconds(row.newest_change_age),
    dataAsOf: row.data_as_of,
    dataAsOfAgeSeconds: seconds(row.data_as_of_age),
    lagP50Seconds: seconds(row.lag_p50),
    lagP95Seconds: seconds(row.lag_p95),
    changesLastHour: Number(row.changes),
  }));
}

/** Newest mirrored modification per property with a booking list cursor (one index probe each: cheap enough for every scrape). */
export async function newestChangeByProperty(db: Executor): Promise<{ propertyId: string; newestChangeAt: Date | null }[]> {
  const r = await sql<{ property_id: string; newest: Date | null }>`
    SELECT c.property_id, (SELECT max(b.modified_at) FROM bookings b WHERE b.property_id = c.property_id) AS newest
    FROM sync_cursors c WHERE c.stream = 'booking_summaries' ORDER BY c.property_id`.execute(db);
  return r.rows.map((row) => ({ propertyId: row.property_id, newestChangeAt: row.newest }));
}
