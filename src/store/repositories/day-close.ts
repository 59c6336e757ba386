/**
 * The day close of each property: the books recorded as they stood at its local midnight
 * (otb_snapshot_days, otb_snapshot_nights); and the gaps between the mirror's rooms sold and the
 * provider's own statistics over the nights before it (reporting.reconciliation, for /metrics).
 */
import { sql, type RawBuilder } from 'kysely';
import type { Executor } from '../types.js';

/** Days back a day close is still recorded when it was missed (the daemon was down). */
export const DAY_CLOSE_CATCH_UP_DAYS = 7;

/**
 * Each property with the time zone its local days are counted in: its content's when
 * PostgreSQL knows it, else UTC (as reporting.property_clock does).
 */
function propertyZones(propertyIds: readonly string[]): RawBuilder<unknown> {
  return sql`
    zones AS MATERIALIZED (SELECT name FROM pg_timezone_names),
    props AS (
      SELECT ids.property_id, COALESCE((SELECT z.name FROM zones z WHERE z.name = p.time_zone), 'UTC') AS zone
        FROM unnest(${[...propertyIds]}::text[]) AS ids(property_id)
        LEFT JOIN properties p ON p.property_id = ids.property_id)`;
}

/**
 * Records the day closes of the properties that passed since the last one (up to
 * DAY_CLOSE_CATCH_UP_DAYS back), each from booking_night_history as of the close, for the 365
 * nights from that day on. A close is recorded only once the property's mirror is complete up to
 * it: its booking list caught up and polled after the close, and no detail fetch of a change made
 * before the close still waiting. Returns the days and night rows written.
 */
export async function recordDayCloses(
  trx: Executor,
  propertyIds: readonly string[],
  now: Date,
): Promise<{ days: number; nights: number; nextCloseAt: Date | null }> {
  if (propertyIds.length === 0) return { days: 0, nights: 0, nextCloseAt: null };
  const r = await sql<{ days: number; nights: number; next_close_at: Date | null }>`
    WITH ${propertyZones(propertyIds)},
    due AS (
      SELECT pr.property_id, d.day, ((d.day + 1)::timestamp AT TIME ZONE pr.zone) AS as_of
        FROM props pr
        JOIN sync_cursors c ON c.property_id = pr.property_id AND c.stream = 'booking_summaries'
        CROSS JOIN LATERAL (
          SELECT g::date AS day
            FROM generate_series((${now}::timestamptz AT TIME ZONE pr.zone)::date - ${DAY_CLOSE_CATCH_UP_DAYS}::int,
                                 (${now}::timestamptz AT TIME ZONE pr.zone)::date - 1, interval '1 day') AS g) d
       WHERE c.caught_up AND c.last_poll_at >= ((d.day + 1)::timestamp AT TIME ZONE pr.zone)
         AND NOT EXISTS (SELECT 1 FROM otb_snapshot_days s WHERE s.property_id = pr.property_id AND s.snapshot_date = d.day)
         AND NOT EXISTS (
               SELECT 1 FROM booking_detail_queue q
                WHERE q.property_id = pr.property_id AND q.state = 'pending'
                  AND COALESCE(q.wanted_modified_at, q.enqueued_at) < ((d.day + 1)::timestamp AT TIME ZONE pr.zone))
    ),
    days AS (
      INSERT INTO otb_snapshot_days (property_id, snapshot_date, as_of, taken_at)
      SELECT property_id, day, as_of, ${now} FROM due
      ON CONFLICT DO NOTHING
      RETURNING property_id, snapshot_date, as_of
    ),
    nights AS (
      INSERT INTO otb_snapshot_nights (property_id, snapshot_date, stay_date, currency_code, room_nights, room_revenue_net,
                                       room_revenue_gross, reconstructed_room_nights)
      SELECT d.property_id, d.snapshot_date, h.stay_date, h.currency_code, count(*), COALESCE(sum(h.net_amount), 0),
             COALESCE(sum(h.gross_amount), 0), count(*) FILTER (WHERE d.as_of < h.reconstructed_until)
        FROM days d
        JOIN booking_night_history h
          ON h.property_id = d.property_id AND h.stay_date BETWEEN d.snapshot_date AND d.snapshot_date + 364
         AND h.valid_from <= d.as_of AND (h.valid_to IS NULL OR h.valid_to > d.as_of)
       GROUP BY d.property_id, d.snapshot_date, h.stay_date, h.currency_code
      RETURNING 1
    )
    SELECT (SELECT count(*)::int FROM days) AS days, (SELECT count(*)::int FROM nights) AS nights,
           -- When to look again: now, when a followed property has a close of the last days that
           -- could not be recorded yet (not caught up, a fetch waiting); else its next local midnight.
           CASE WHEN EXISTS (
                  SELECT 1 FROM props pr
                    JOIN sync_cursors c ON c.property_id = pr.property_id AND c.stream = 'booking_summaries'
                   CROSS JOIN LATERAL generate_series((${now}::timestamptz AT TIME ZONE pr.zone)::date - ${DAY_CLOSE_CATCH_UP_DAYS}::int,
                                                      (${now}::timestamptz AT TIME ZONE pr.zone)::date - 1, interval '1 day') AS g
                   WHERE NOT EXISTS (SELECT 1 FROM otb_snapshot_days s WHERE s.property_id = pr.property_id AND s.snapshot_date = g::date)
                     AND NOT EXISTS (SELECT 1 FROM due x WHERE x.property_id = pr.property_id AND x.day = g::date))
                THEN ${now}::timestamptz
                ELSE (SELECT min((((${now}::timestamptz AT TIME ZONE pr.zone)::date + 1)::timestamp AT TIME ZONE pr.zone)) FROM props pr) END AS next_close_at`.execute(
    trx,
  );
  const row = r.rows[0]!;
  return { days: row.days, nights: row.nights, nextCloseAt: row.next_close_at };
}

/** Nights back the reconciliation gauge looks (yesterday and the 29 nights before it). */
export const RECONCILIATION_NIGHTS = 30;

/** Each mirrored property with its content's time zone (NULL when content has none). */
export async function propertyTimeZones(db: Executor): Promise<{ propertyId: string; timeZone: string | null }[]> {
  const r = await sql<{ property_id: string; time_zone: string | null }>`SELECT property_id, time_zone FROM properties ORDER BY property_id`.execute(db);
  return r.rows.map((row) => ({ propertyId: row.property_id, timeZone: row.time_zone }));
}

/**
 * For each property with PMS statistics over the RECONCILIATION_NIGHTS nights before its local
 * `today`: the largest difference, in rooms, between the rooms the mirror has on the books a
 * night and the rooms the statistics say were occupied (reporting.reconciliation's
 * rooms_difference, in absolute value).
 */
export async function largestReconciliationGaps(
  db: Executor,
  todays: readonly { propertyId: string; today: string }[],
): Promise<{ propertyId: string; rooms: number }[]> {
  if (todays.length === 0) return [];
  const r = await sql<{ property_id: string; rooms: number }>`
    SELECT d.property_id,
           max(abs(COALESCE(m.rooms_sold, 0) - (d.occupancy_room_count + d.complimentary_occupancy_room_count)))::int AS rooms
      FROM unnest(${todays.map((t) => t.propertyId)}::text[], ${todays.map((t) => t.today)}::date[]) AS p(property_id, today)
      JOIN daily_occupancy d
        ON d.property_id = p.property_id AND d.stay_date >= p.today - ${RECONCILIATION_NIGHTS}::int AND d.stay_date < p.today
      LEFT JOIN LATERAL (
        SELECT sum(f.rooms_sold) AS rooms_sold FROM nightly_facts f WHERE f.property_id = d.property_id AND f.stay_date = d.stay_date
      ) m ON true
     GROUP BY d.property_id
     ORDER BY d.property_id`.execute(db);
  return r.rows.map((row) => ({ propertyId: row.property_id, rooms: row.rooms }));
}
