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
import type { HistoryPlan, HistoryRederived, NightFact, NightRow, OpenNight, StoredHistory, VersionFacts } from '../schema.js';
import type { Executor } from '../types.js';

/** The booking a statement is about. */
export interface BookingKey {
  property_id: string;
  number: string;
}

/** The stored history as the statement that deletes the children returns it (JSON columns). */
export interface StoredHistoryColumns {
  current_version: (VersionFacts & { version: number; content_hash: string | null }) | null;
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
    (SELECT ${versionJson(sql`v`)} FROM booking_versions v
      WHERE v.property_id = ${p} AND v.number = ${n} AND v.valid_to IS NULL
      ORDER BY v.version DESC LIMIT 1) AS current_version,
    (SELECT json_agg(json_build_object(
        'stay_index', r.stay_index, 'stay_date', r.stay_date, 'net_amount', r.price_before_tax::text,
        'gross_amount', r.gross_amount::text, 'room_type_id', s.room_type_id))
       FROM ${sql.id(deletedRates)} r LEFT JOIN ${sql.id(deletedStays)} s ON s.stay_index = r.stay_index) AS current_nights,
    ${openNightsJson(sql`${p}::text`, sql`${n}::text`)} AS open_nights`;
}

/** A booking_versions row (alias `v`) as the JSON storedHistoryOf reads (amounts as text: exact). */
function versionJson(v: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`json_build_object(
    'version', ${v}.version, 'content_hash', ${v}.content_hash, 'status', ${v}.status,
    'created_at', ${v}.created_at, 'cancelled_at', ${v}.cancelled_at, 'modified_at', ${v}.modified_at,
    'currency_code', ${v}.currency_code, 'arrival_date', ${v}.arrival_date, 'departure_date', ${v}.departure_date,
    'rooms', ${v}.rooms, 'room_nights', ${v}.room_nights, 'room_type_ids', ${v}.room_type_ids,
    'room_revenue_net', ${v}.room_revenue_net::text, 'room_revenue_gross', ${v}.room_revenue_gross::text,
    'total_net', ${v}.total_net::text, 'total_gross', ${v}.total_gross::text)`;
}

/** The open nights of a booking, as a JSON array (a scalar subquery). */
function openNightsJson(propertyId: RawBuilder<unknown>, number: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`(SELECT json_agg(json_build_object(
      'stay_index', h.stay_index, 'stay_date', h.stay_date, 'currency_code', h.currency_code,
      'room_type_id', h.room_type_id, 'net_amount', h.net_amount::text, 'gross_amount', h.gross_amount::text,
      'valid_from', h.valid_from, 'reconstructed_until', h.reconstructed_until))
     FROM booking_night_history h
    WHERE h.property_id = ${propertyId} AND h.number = ${number} AND h.valid_to IS NULL)`;
}

/** The stored history from those columns; null when the booking has none. */
export function storedHistoryOf(row: StoredHistoryColumns): StoredHistory | null {
  const v = row.current_version;
  if (!v) return null;
  // The JSON of versionJson: the version's facts, and its number and hash.
  const { version, content_hash: contentHash, ...facts } = v;
  const nights: NightFact[] = (row.current_nights ?? []).map((r) => ({ ...r, currency_code: v.currency_code }));
  return { version, facts, contentHash, nights, open: row.open_nights ?? [] };
}

const json = (value: unknown) => sql`${JSON.stringify(value)}::jsonb`;

/**
 * The writes of plans, as named CTEs (`h_…`) for the statement that writes the bookings'
 * children: each current version closed, the new versions inserted, the nights that leave the
 * books closed (deleted when they would end where they start: replaced within their second),
 * the nights that join them inserted, and nightly_facts moved by the difference (unless
 * `withFacts` is false: a rebuild counts them again at its end). Every CTE is there, with no rows
 * when the plans have none of its kind: the booking write runs one text, prepared
 * (src/store/prepared.ts).
 */
export function historyWrites(plans: readonly { key: BookingKey; plan: HistoryPlan }[], withFacts = true): RawBuilder<unknown>[] {
  const ctes: RawBuilder<unknown>[] = [];
  const closing = plans.flatMap(({ key, plan }) => (plan.closeCurrentAt === null ? [] : [{ ...key, at: plan.closeCurrentAt }]));
  ctes.push(sql`h_version_closed AS (
      UPDATE booking_versions v SET valid_to = x.at, synced_at = now()
        FROM jsonb_to_recordset(${json(closing)}) AS x(property_id text, number text, at timestamptz)
       WHERE v.property_id = x.property_id AND v.number = x.number AND v.valid_to IS NULL)`);
  const versions = plans.flatMap(({ key, plan }) =>
    plan.versions.map((v) => ({
      ...key,
      version: v.version,
      valid_from: v.validFrom,
      valid_to: v.validTo,
      reconstructed: v.reconstructed,
      fetched: v.fetched,
      content_hash: v.contentHash,
      ...v.facts,
      changes: v.changes,
    })),
  );
  ctes.push(sql`h_versions AS (
      INSERT INTO booking_versions (property_id, number, version, valid_from, valid_to, modified_at, reconstructed, fetched_at,
        content_hash, status, created_at, cancelled_at, currency_code, arrival_date, departure_date, rooms, room_nights,
        room_type_ids, room_revenue_net, room_revenue_gross, total_net, total_gross, changes)
      SELECT x.property_id, x.number, x.version, x.valid_from, x.valid_to, x.modified_at, x.reconstructed,
             CASE WHEN x.fetched THEN (SELECT b.fetched_at FROM bookings b WHERE b.property_id = x.property_id AND b.number = x.number) END,
             x.content_hash, x.status, x.created_at, x.cancelled_at, x.currency_code, x.arrival_date, x.departure_date,
             x.rooms, x.room_nights, x.room_type_ids, x.room_revenue_net, x.room_revenue_gross, x.total_net, x.total_gross, x.changes
        FROM jsonb_to_recordset(${json(versions)}) AS x(property_id text, number text, version integer, valid_from timestamptz,
             valid_to timestamptz, modified_at timestamptz, reconstructed boolean, fetched boolean, content_hash text, status text,
             created_at timestamptz, cancelled_at timestamptz, currency_code text, arrival_date date, departure_date date,
             rooms integer, room_nights integer, room_type_ids text[], room_revenue_net numeric, room_revenue_gross numeric,
             total_net numeric, total_gross numeric, changes text[]))`);
  const closingNights = plans.flatMap(({ key, plan }) =>
    plan.close.map((c) => ({ ...key, stay_index: c.night.stay_index, stay_date: c.night.stay_date, valid_from: c.night.valid_from, at: c.at })),
  );
  const rows = sql`jsonb_to_recordset(${json(closingNights)})
      AS x(property_id text, number text, stay_index integer, stay_date date, valid_from timestamptz, at timestamptz)`;
  const match = sql`h.property_id = x.property_id AND h.number = x.number AND h.valid_to IS NULL
       AND h.stay_index = x.stay_index AND h.stay_date = x.stay_date AND h.valid_from = x.valid_from`;
  ctes.push(
    sql`h_nights_closed AS (UPDATE booking_night_history h SET valid_to = x.at, synced_at = now() FROM ${rows} WHERE ${match} AND h.valid_from < x.at)`,
  );
  ctes.push(sql`h_nights_dropped AS (DELETE FROM booking_night_history h USING ${rows} WHERE ${match} AND h.valid_from >= x.at)`);
  const nights = plans.flatMap(({ key, plan }) => plan.insert.map((n) => ({ ...key, ...n })));
  ctes.push(sql`h_nights AS (${insertNights(nights)})`);
  if (withFacts) {
    const facts = plans.flatMap(({ key, plan }) => plan.facts.map((f) => ({ ...key, ...f })));
    ctes.push(sql`h_facts AS (
      INSERT INTO nightly_facts AS f (property_id, stay_date, currency_code, rooms_sold, complimentary_rooms, room_revenue_net, room_revenue_gross)
      SELECT x.property_id, x.stay_date, x.currency_code, sum(x.rooms_sold), sum(x.complimentary_rooms), sum(x.room_revenue_net), sum(x.room_revenue_gross)
        FROM jsonb_to_recordset(${json(facts)}) AS x(property_id text, stay_date date, currency_code text, rooms_sold bigint,
             complimentary_rooms bigint, room_revenue_net numeric, room_revenue_gross numeric)
       GROUP BY x.property_id, x.stay_date, x.currency_code
       ORDER BY x.property_id, x.stay_date, x.currency_code COLLATE "C" NULLS FIRST
      ON CONFLICT (property_id, stay_date, currency_code) DO UPDATE SET
        rooms_sold = f.rooms_sold + excluded.rooms_sold,
        complimentary_rooms = f.complimentary_rooms + excluded.complimentary_rooms,
        room_revenue_net = f.room_revenue_net + excluded.room_revenue_net,
        room_revenue_gross = f.room_revenue_gross + excluded.room_revenue_gross,
        synced_at = now())`);
  }
  return ctes;
}

/** INSERT of night rows (each with its booking's key). */
function insertNights(nights: readonly (BookingKey & NightRow)[]): RawBuilder<unknown> {
  return sql`
    INSERT INTO booking_night_history (property_id, number, stay_index, stay_date, currency_code, room_type_id,
      net_amount, gross_amount, valid_from, valid_to, reconstructed_until)
    SELECT x.property_id, x.number, x.stay_index, x.stay_date, x.currency_code, x.room_type_id, x.net_amount, x.gross_amount,
           x.valid_from, x.valid_to, x.reconstructed_until
      FROM jsonb_to_recordset(${json(nights)}) AS x(property_id text, number text, stay_index integer, stay_date date,
           currency_code text, room_type_id text, net_amount numeric, gross_amount numeric, valid_from timestamptz,
           valid_to timestamptz, reconstructed_until timestamptz)`;
}

// ------------------------------------------------------------------ rebuild

/**
 * What a rebuild needs of bookings, by `property_id/number`: the history of each (current
 * version with its valid_from, open nights), null when it has none.
 */
export async function readHistories(db: Executor, keys: readonly BookingKey[]): Promise<Map<string, (StoredHistory & { validFrom: string }) | null>> {
  if (keys.length === 0) return new Map();
  const r = await sql<{ property_id: string; number: string; valid_from: string | null } & StoredHistoryColumns>`
    SELECT b.property_id, b.number, to_json(v.valid_from) #>> '{}' AS valid_from,
           CASE WHEN v.version IS NOT NULL THEN ${versionJson(sql`v`)} END AS current_version,
           ${openNightsJson(sql`b.property_id`, sql`b.number`)} AS open_nights
      FROM unnest(${keys.map((k) => k.property_id)}::text[], ${keys.map((k) => k.number)}::text[]) AS k(property_id, number)
      JOIN bookings b ON b.property_id = k.property_id AND b.number = k.number
      LEFT JOIN booking_versions v ON v.property_id = b.property_id AND v.number = b.number AND v.valid_to IS NULL`.execute(db);
  return new Map(
    r.rows.map((row) => {
      const stored = storedHistoryOf({ ...row, current_nights: [] });
      return [`${row.property_id}/${row.number}`, stored && { ...stored, validFrom: row.valid_from! }];
    }),
  );
}

/** Writes what a rebuild re-derived: whole histories of bookings that had none, current versions corrected in place. */
export async function writeRederivedHistories(trx: Executor, items: readonly { key: BookingKey; rederived: HistoryRederived }[]): Promise<void> {
  if (items.length === 0) return;
  const started = items.flatMap(({ key, rederived: r }) => (r.kind === 'started' ? [{ key, plan: r.plan }] : []));
  const corrected = items.flatMap(({ key, rederived: r }) => (r.kind === 'corrected' ? [{ key, r }] : []));
  const ctes = historyWrites(started, false);
  if (corrected.length > 0) {
    const keys = json(corrected.map(({ key }) => key));
    ctes.push(sql`h_open_dropped AS (
      DELETE FROM booking_night_history h USING jsonb_to_recordset(${keys}) AS x(property_id text, number text)
       WHERE h.property_id = x.property_id AND h.number = x.number AND h.valid_to IS NULL)`);
    const nights = corrected.flatMap(({ key, r }) => r.open.map((n) => ({ ...key, ...n })));
    if (nights.length > 0) ctes.push(sql`h_open_rederived AS (${insertNights(nights)})`);
    const figures = corrected.map(({ key, r }) => ({ ...key, ...r.facts, content_hash: r.contentHash }));
    ctes.push(sql`h_current_rederived AS (
      UPDATE booking_versions v SET content_hash = x.content_hash, status = x.status, created_at = x.created_at, cancelled_at = x.cancelled_at,
             currency_code = x.currency_code, arrival_date = x.arrival_date, departure_date = x.departure_date, rooms = x.rooms,
             room_nights = x.room_nights, room_type_ids = x.room_type_ids, room_revenue_net = x.room_revenue_net,
             room_revenue_gross = x.room_revenue_gross, total_net = x.total_net, total_gross = x.total_gross, synced_at = now()
        FROM jsonb_to_recordset(${json(figures)}) AS x(property_id text, number text, content_hash text, status text,
             created_at timestamptz, cancelled_at timestamptz, currency_code text, arrival_date date, departure_date date,
             rooms integer, room_nights integer, room_type_ids text[], room_revenue_net numeric, room_revenue_gross numeric,
             total_net numeric, total_gross numeric)
       WHERE v.property_id = x.property_id AND v.number = x.number AND v.valid_to IS NULL)`);
  }
  await sql`WITH ${sql.join(ctes)} SELECT 1`.execute(trx);
}

/**
 * nightly_facts counted again from the open nights (what they are kept equal to, write by
 * write): the end of a rebuild. Only the nights whose figures differ are written (their
 * synced_at moves; the others keep theirs). Returns the rows written or removed.
 */
export async function recountNightlyFacts(trx: Executor): Promise<number> {
  const r = await sql<{ n: number }>`
    WITH counted AS (
      SELECT h.property_id, h.stay_date, h.currency_code, count(*) AS rooms_sold, count(*) FILTER (WHERE h.net_amount = 0) AS complimentary_rooms,
             COALESCE(sum(h.net_amount), 0) AS room_revenue_net, COALESCE(sum(h.gross_amount), 0) AS room_revenue_gross
        FROM booking_night_history h
       WHERE h.valid_to IS NULL
       GROUP BY h.property_id, h.stay_date, h.currency_code
    ), gone AS (
      -- A night whose rooms fell to zero keeps its row of zeros (daily_kpis leaves it out).
      DELETE FROM nightly_facts f
       WHERE (f.rooms_sold, f.complimentary_rooms, f.room_revenue_net, f.room_revenue_gross) IS DISTINCT FROM (0, 0, 0, 0)
         AND NOT EXISTS (SELECT 1 FROM counted c
                          WHERE c.property_id = f.property_id AND c.stay_date = f.stay_date AND c.currency_code IS NOT DISTINCT FROM f.currency_code)
      RETURNING 1
    ), written AS (
      INSERT INTO nightly_facts AS f (property_id, stay_date, currency_code, rooms_sold, complimentary_rooms, room_revenue_net, room_revenue_gross)
      SELECT * FROM counted
      ON CONFLICT (property_id, stay_date, currency_code) DO UPDATE SET
        rooms_sold = excluded.rooms_sold, complimentary_rooms = excluded.complimentary_rooms,
        room_revenue_net = excluded.room_revenue_net, room_revenue_gross = excluded.room_revenue_gross, synced_at = now()
      WHERE (f.rooms_sold, f.complimentary_rooms, f.room_revenue_net, f.room_revenue_gross)
            IS DISTINCT FROM (excluded.rooms_sold, excluded.complimentary_rooms, excluded.room_revenue_net, excluded.room_revenue_gross)
      RETURNING 1
    )
    SELECT ((SELECT count(*) FROM gone) + (SELECT count(*) FROM written))::int AS n`.execute(trx);
  return r.rows[0]!.n;
}
