/**
 * History of bookings: what a booking write adds to booking_versions, booking_night_history
 * and nightly_facts (migrations/0012_history.sql), as the plan of src/mapping/history.ts says.
 *
 * No round trip of its own: the stored history is read by the statement that deletes the
 * replaced version's children (whose RETURNING gives that version's nights), and the writes
 * are CTEs of the statement that inserts the new children. The booking's row, locked by the
 * header's upsert, keeps one writer per booking; nightly_facts rows shared by bookings are
 * locked in one order (the plan's), so concurrent writers wait instead of deadlocking.
 */
import { sql, type RawBuilder } from 'kysely';
import type { HistoryPlan, NightFact, OpenNight, StoredHistory, VersionFacts } from '../schema.js';

/** The booking a statement is about. */
export interface BookingKey {
  property_id: string;
  number: string;
}

/** The stored history as the statement that deletes the children returns it (JSON columns). */
export interface StoredHistoryColumns {
  current_version: {
    version: number;
    content_hash: string | null;
    status: string;
    created_at: string | null;
    cancelled_at: string | null;
    modified_at: string;
    currency_code: string | null;
    arrival_date: string | null;
    departure_date: string | null;
    rooms: number;
    room_nights: number;
    room_type_ids: (string | null)[];
    room_revenue_net: string | null;
    room_revenue_gross: string | null;
    total_net: string | null;
    total_gross: string | null;
  } | null;
  current_nights: { stay_index: number; stay_date: string; net_amount: string | null; gross_amount: string | null; room_type_id: string | null }[] | null;
  open_nights: OpenNight[] | null;
}

/**
 * The SELECT list that reads a booking's stored history, for a statement whose CTEs
 * `deletedStays` and `deletedRates` are the DELETEs of its room stays and daily rates
 * (RETURNING stay_index, room_type_id; and stay_index, stay_date, price_before_tax,
 * gross_amount). The CTEs see the rows as they were before the statement.
 */
export function storedHistoryColumns(key: BookingKey, deletedStays: string, deletedRates: string): RawBuilder<StoredHistoryColumns> {
  const { property_id: p, number: n } = key;
  return sql<StoredHistoryColumns>`
    (SELECT json_build_object(
        'version', v.version, 'content_hash', v.content_hash, 'status', v.status,
        'created_at', v.created_at, 'cancelled_at', v.cancelled_at, 'modified_at', v.modified_at,
        'currency_code', v.currency_code, 'arrival_date', v.arrival_date, 'departure_date', v.departure_date,
        'rooms', v.rooms, 'room_nights', v.room_nights, 'room_type_ids', v.room_type_ids,
        'room_revenue_net', v.room_revenue_net::text, 'room_revenue_gross', v.room_revenue_gross::text,
        'total_net', v.total_net::text, 'total_gross', v.total_gross::text)
       FROM booking_versions v
      WHERE v.property_id = ${p} AND v.number = ${n} AND v.valid_to IS NULL
      ORDER BY v.version DESC LIMIT 1) AS current_version,
    (SELECT json_agg(json_build_object(
        'stay_index', r.stay_index, 'stay_date', r.stay_date, 'net_amount', r.price_before_tax::text,
        'gross_amount', r.gross_amount::text, 'room_type_id', s.room_type_id))
       FROM ${sql.id(deletedRates)} r LEFT JOIN ${sql.id(deletedStays)} s ON s.stay_index = r.stay_index) AS current_nights,
    (SELECT json_agg(json_build_object(
        'stay_index', h.stay_index, 'stay_date', h.stay_date, 'currency_code', h.currency_code,
        'room_type_id', h.room_type_id, 'net_amount', h.net_amount::text, 'gross_amount', h.gross_amount::text,
        'valid_from', h.valid_from, 'reconstructed_until', h.reconstructed_until))
       FROM booking_night_history h
      WHERE h.property_id = ${p} AND h.number = ${n} AND h.valid_to IS NULL) AS open_nights`;
}

/** The stored history from those columns; null when the booking has none. */
export function storedHistoryOf(row: StoredHistoryColumns): StoredHistory | null {
  const v = row.current_version;
  if (!v) return null;
  const facts: VersionFacts = {
    status: v.status,
    created_at: v.created_at,
    cancelled_at: v.cancelled_at,
    modified_at: v.modified_at,
    currency_code: v.currency_code,
    arrival_date: v.arrival_date,
    departure_date: v.departure_date,
    rooms: v.rooms,
    room_nights: v.room_nights,
    room_type_ids: v.room_type_ids,
    room_revenue_net: v.room_revenue_net,
    room_revenue_gross: v.room_revenue_gross,
    total_net: v.total_net,
    total_gross: v.total_gross,
  };
  const nights: NightFact[] = (row.current_nights ?? []).map((r) => ({ ...r, currency_code: v.currency_code }));
  return { version: v.version, facts, contentHash: v.content_hash, nights, open: row.open_nights ?? [] };
}

const json = (value: unknown) => sql`${JSON.stringify(value)}::jsonb`;

/**
 * The writes of a plan, as named CTEs (`h_…`) for the statement that writes the booking's
 * children: the current version closed, the new versions inserted, the nights that leave the
 * books closed (deleted when they would end where they start: replaced within their second),
 * the nights that join them inserted, and nightly_facts moved by the difference.
 */
export function historyWrites(key: BookingKey, plan: HistoryPlan): RawBuilder<unknown>[] {
  const { property_id: p, number: n } = key;
  const ctes: RawBuilder<unknown>[] = [];
  if (plan.closeCurrentAt !== null) {
    ctes.push(sql`h_version_closed AS (
      UPDATE booking_versions SET valid_to = ${plan.closeCurrentAt}::timestamptz
       WHERE property_id = ${p} AND number = ${n} AND valid_to IS NULL)`);
  }
  const versions = plan.versions.map((v) => ({
    version: v.version,
    valid_from: v.validFrom,
    valid_to: v.validTo,
    modified_at: v.facts.modified_at,
    reconstructed: v.reconstructed,
    fetched: v.fetched,
    content_hash: v.contentHash,
    status: v.facts.status,
    created_at: v.facts.created_at,
    cancelled_at: v.facts.cancelled_at,
    currency_code: v.facts.currency_code,
    arrival_date: v.facts.arrival_date,
    departure_date: v.facts.departure_date,
    rooms: v.facts.rooms,
    room_nights: v.facts.room_nights,
    room_type_ids: v.facts.room_type_ids,
    room_revenue_net: v.facts.room_revenue_net,
    room_revenue_gross: v.facts.room_revenue_gross,
    total_net: v.facts.total_net,
    total_gross: v.facts.total_gross,
    changes: v.changes,
  }));
  ctes.push(sql`h_versions AS (
    INSERT INTO booking_versions (property_id, number, version, valid_from, valid_to, modified_at, reconstructed, fetched_at,
      content_hash, status, created_at, cancelled_at, currency_code, arrival_date, departure_date, rooms, room_nights,
      room_type_ids, room_revenue_net, room_revenue_gross, total_net, total_gross, changes)
    SELECT ${p}, ${n}, x.version, x.valid_from, x.valid_to, x.modified_at, x.reconstructed,
           CASE WHEN x.fetched THEN (SELECT b.fetched_at FROM bookings b WHERE b.property_id = ${p} AND b.number = ${n}) END,
           x.content_hash, x.status, x.created_at, x.cancelled_at, x.currency_code, x.arrival_date, x.departure_date,
           x.rooms, x.room_nights, x.room_type_ids, x.room_revenue_net, x.room_revenue_gross, x.total_net, x.total_gross, x.changes
      FROM jsonb_to_recordset(${json(versions)}) AS x(version integer, valid_from timestamptz, valid_to timestamptz,
           modified_at timestamptz, reconstructed boolean, fetched boolean, content_hash text, status text,
           created_at timestamptz, cancelled_at timestamptz, currency_code text, arrival_date date, departure_date date,
           rooms integer, room_nights integer, room_type_ids text[], room_revenue_net numeric, room_revenue_gross numeric,
           total_net numeric, total_gross numeric, changes text[]))`);
  if (plan.close.length > 0) {
    const closing = plan.close.map((c) => ({ stay_index: c.night.stay_index, stay_date: c.night.stay_date, valid_from: c.night.valid_from, at: c.at }));
    const rows = sql`jsonb_to_recordset(${json(closing)}) AS x(stay_index integer, stay_date date, valid_from timestamptz, at timestamptz)`;
    const match = sql`h.property_id = ${p} AND h.number = ${n} AND h.valid_to IS NULL
       AND h.stay_index = x.stay_index AND h.stay_date = x.stay_date AND h.valid_from = x.valid_from`;
    ctes.push(sql`h_nights_closed AS (UPDATE booking_night_history h SET valid_to = x.at FROM ${rows} WHERE ${match} AND h.valid_from < x.at)`);
    ctes.push(sql`h_nights_dropped AS (DELETE FROM booking_night_history h USING ${rows} WHERE ${match} AND h.valid_from >= x.at)`);
  }
  if (plan.insert.length > 0) {
    ctes.push(sql`h_nights AS (
      INSERT INTO booking_night_history (property_id, number, stay_index, stay_date, currency_code, room_type_id,
        net_amount, gross_amount, valid_from, valid_to, reconstructed_until)
      SELECT ${p}, ${n}, x.stay_index, x.stay_date, x.currency_code, x.room_type_id, x.net_amount, x.gross_amount,
             x.valid_from, x.valid_to, x.reconstructed_until
        FROM jsonb_to_recordset(${json(plan.insert)}) AS x(stay_index integer, stay_date date, currency_code text,
             room_type_id text, net_amount numeric, gross_amount numeric, valid_from timestamptz, valid_to timestamptz,
             reconstructed_until timestamptz))`);
  }
  if (plan.facts.length > 0) {
    ctes.push(sql`h_facts AS (
      INSERT INTO nightly_facts AS f (property_id, stay_date, currency_code, rooms_sold, complimentary_rooms, room_revenue_net, room_revenue_gross)
      SELECT ${p}, x.stay_date, x.currency_code, x.rooms_sold, x.complimentary_rooms, x.room_revenue_net, x.room_revenue_gross
        FROM jsonb_to_recordset(${json(plan.facts)}) AS x(stay_date date, currency_code text, rooms_sold bigint,
             complimentary_rooms bigint, room_revenue_net numeric, room_revenue_gross numeric)
       ORDER BY x.stay_date, x.currency_code COLLATE "C" NULLS FIRST
      ON CONFLICT (property_id, stay_date, currency_code) DO UPDATE SET
        rooms_sold = f.rooms_sold + excluded.rooms_sold,
        complimentary_rooms = f.complimentary_rooms + excluded.complimentary_rooms,
        room_revenue_net = f.room_revenue_net + excluded.room_revenue_net,
        room_revenue_gross = f.room_revenue_gross + excluded.room_revenue_gross,
        synced_at = now())`);
  }
  return ctes;
}
