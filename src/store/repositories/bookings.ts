/**
 * Bookings: one booking version (header and children, mapped by src/mapping/bookings.ts)
 * written under the version guard, and what the recovery asks of the mirrored bookings.
 */
import { sql, type RawBuilder, type Transaction } from 'kysely';
import type { BookingHistory, BookingRows } from '../schema.js';
import type { Database } from '../schema.js';
import type { Executor } from '../types.js';
import { prepared } from '../prepared.js';
import { historyWrites, storedHistoryColumns, storedHistoryOf, type StoredHistoryColumns } from './history.js';

/** Each child of a booking: its rows in BookingRows and its table (replaced whole by a write). */
export const BOOKING_CHILDREN = [
  ['roomStays', 'booking_room_stays'],
  ['dailyRates', 'booking_daily_rates'],
  ['services', 'booking_services'],
  ['guests', 'booking_guests'],
  ['taxes', 'booking_taxes'],
  ['discounts', 'booking_discounts'],
  ['taxAmounts', 'booking_tax_amounts'],
  ['ratePlans', 'booking_room_stay_rate_plans'],
  ['loyaltyCards', 'booking_loyalty_cards'],
] as const;
const childTables = BOOKING_CHILDREN.map(([, table]) => table);

/**
 * What a write made of the details it was given:
 * - `changed`: written, and new (a booking not stored yet, or content other than the stored);
 * - `unchanged`: written over stored details with the same content (the same version again);
 * - `older`: not written, the stored version is of a later modification;
 * - `earlier-copy`: not written, the details are a version the booking already left within the
 *   same modification second (a lagging replica serving the version before a same-second
 *   change), unless `acceptEarlierCopy`;
 * - `unlike-list`: written, but the booking list shows this modification second with another
 *   status: the details are the version before a same-second change (a cancellation, say) the
 *   list has already seen.
 */
export type VersionOutcome = 'changed' | 'unchanged' | 'older' | 'earlier-copy' | 'unlike-list';

export interface SaveVersionOptions {
  /**
   * A statement (e.g. completing the queue row) run after the header, as part of the children's
   * statement (one round trip less per booking on a full sync), chosen by the outcome; null for
   * none.
   */
  alongside?: (outcome: VersionOutcome) => RawBuilder<unknown> | null;
  /**
   * Write details equal to a version the booking left within the same second: asked again
   * several times, the provider means it (the booking changed back within that second).
   */
  acceptEarlierCopy?: boolean;
}

/**
 * Writes one booking version: the header only if it is not older than the stored one
 * (version guard), then its children replaced whole, and what the version adds to history
 * (src/store/repositories/history.ts). `history`: the version as history (src/mapping/history.ts
 * bookingHistoryOf). `alongsideRows`: how many rows the alongside statement returned (0 without
 * one).
 */
export async function saveBookingVersion(
  trx: Transaction<Database>,
  rows: BookingRows,
  history: BookingHistory,
  opts: SaveVersionOptions = {},
): Promise<{ outcome: VersionOutcome; written: boolean; alongsideRows: number }> {
  const key = { property_id: rows.booking.property_id, number: rows.booking.number };
  const earlierCopy = opts.acceptEarlierCopy
    ? sql<boolean>`false`
    : sql<boolean>`EXISTS (
            SELECT 1 FROM booking_versions v
             WHERE v.property_id = excluded.property_id AND v.number = excluded.number AND v.modified_at = excluded.modified_at
               AND v.valid_to IS NOT NULL AND v.content_hash = ${rows.contentHash})`;
  // Few statements instead of one per table: on a full sync the round trips to the database,
  // not the SQL, dominate the cost of a booking.
  const upsert = trx
    .insertInto('bookings')
    .values(rows.booking)
    .onConflict((oc) =>
      oc
        .columns(['property_id', 'number'])
        .doUpdateSet((eb) => {
          const set: Record<string, unknown> = {};
          for (const col of Object.keys(rows.booking)) {
            if (col !== 'property_id' && col !== 'number') set[col] = eb.ref(`excluded.${col}` as never);
          }
          return set;
        })
        .where(sql<boolean>`bookings.modified_at < excluded.modified_at OR (bookings.modified_at = excluded.modified_at AND NOT ${earlierCopy})`),
    )
    // xmax = 0 on the returned row means it was inserted: a new booking has no children to delete.
    .returning([
      sql<boolean>`(xmax = 0)`.as('inserted'),
      sql<boolean>`EXISTS (SELECT 1 FROM booking_summaries s WHERE s.property_id = bookings.property_id AND s.number = bookings.number
                      AND s.modified_at = bookings.modified_at AND s.status <> bookings.status)`.as('unlike_list'),
    ]);
  const header = (await prepared(sql<{ inserted: boolean; unlike_list: boolean }>`${upsert}`).execute(trx)).rows[0];
  const runAlongside = async (outcome: VersionOutcome) => {
    const statement = opts.alongside?.(outcome);
    return statement ? (await statement.execute(trx)).rows.length : 0;
  };
  // 1. The header, under the version guard: no row means the stored version is newer.
  if (!header) {
    // Not written: the stored version is newer, or (same second) this one is an earlier copy.
    const stored = await trx
      .selectFrom('bookings')
      .select('modified_at')
      .where('property_id', '=', key.property_id)
      .where('number', '=', key.number)
      .executeTakeFirst();
    const given = rows.booking.modified_at;
    const outcome = stored && given !== null && stored.modified_at.getTime() === new Date(given).getTime() ? 'earlier-copy' : 'older';
    return { outcome, written: false, alongsideRows: await runAlongside(outcome) };
  }
  let stored = null;
  if (!header.inserted) {
    // An update: the old version's children go, in one statement that also reads what history
    // holds of the booking (the deleted room stays and nights are the replaced version's).
    const deletes = childTables.map((table, i) => {
      const returning =
        table === 'booking_room_stays'
          ? sql` RETURNING stay_index, room_type_id`
          : table === 'booking_daily_rates'
            ? sql` RETURNING stay_index, stay_date, price_before_tax, gross_amount`
            : sql``;
      return sql`${sql.id(`d${i}`)} AS (DELETE FROM ${sql.table(table)} WHERE property_id = ${key.property_id} AND number = ${key.number}${returning})`;
    });
    const r = await prepared(
      sql<StoredHistoryColumns>`
      WITH ${sql.join(deletes)}
      SELECT ${storedHistoryColumns(key, `d${childTables.indexOf('booking_room_stays')}`, `d${childTables.indexOf('booking_daily_rates')}`)}`,
    ).execute(trx);
    stored = storedHistoryOf(r.rows[0]!);
  }
  const plan = history.plan(stored, rows.contentHash);
  const outcome: VersionOutcome = header.unlike_list ? 'unlike-list' : stored !== null && stored.contentHash === rows.contentHash ? 'unchanged' : 'changed';
  const alongside = opts.alongside?.(outcome) ?? null;
  // 2. The children of this version, its history and the alongside statement, in one statement
  // of a fixed text (every child table and every history write, with no rows where there are
  // none), so that it runs prepared: an empty CTE costs far less than planning a new shape.
  const inserts = BOOKING_CHILDREN.map(
    ([field, table], i) =>
      sql`${sql.id(`i${i}`)} AS (INSERT INTO ${sql.table(table)} SELECT * FROM jsonb_populate_recordset(${syncedNow(table)}, ${rowsJson(rows[field])}::jsonb))`,
  );
  const ctes = [...inserts, ...historyWrites(plan ? [{ key, plan }] : [])];
  const last = alongside ? sql`${sql.join(ctes)}, alongside AS (${alongside}) SELECT count(*)::int AS n FROM alongside` : sql`${sql.join(ctes)} SELECT 0 AS n`;
  const r = await prepared(sql<{ n: number }>`WITH ${last}`).execute(trx);
  return { outcome, written: true, alongsideRows: r.rows[0]!.n };
}

/**
 * A row of `table` with only synced_at set, to the transaction's time: the base of
 * jsonb_populate_recordset, which takes a column a row leaves out from it (as the column's
 * default would be taken by an INSERT that names its columns).
 */
const syncedNow = (table: string) => sql`jsonb_populate_record(NULL::${sql.table(table)}, jsonb_build_object('synced_at', now()))`;

/**
 * Child rows as one JSON array for jsonb_populate_recordset. Each value as JSON, except a
 * `raw` column, which the mapping gives as JSON text (jsonb as text, as everywhere in the
 * mapping): it is the value itself, not a string.
 */
function rowsJson(rows: readonly object[]): string {
  const out: string[] = [];
  for (const row of rows) {
    const cells: string[] = [];
    for (const [column, value] of Object.entries(row)) {
      if (value === undefined) continue;
      const json = column === 'raw' && typeof value === 'string' ? value : JSON.stringify(value);
      cells.push(`${JSON.stringify(column)}:${json}`);
    }
    out.push(`{${cells.join(',')}}`);
  }
  return `[${out.join(',')}]`;
}

/** Latest mirrored modification of a property (bookings or summaries), for --recover. */
export async function maxMirroredModification(db: Executor, propertyId: string): Promise<Date | null> {
  const r = await sql<{ m: Date | null }>`
    SELECT GREATEST(
      (SELECT max(modified_at) FROM bookings WHERE property_id = ${propertyId}),
      (SELECT max(modified_at) FROM booking_summaries WHERE property_id = ${propertyId})) AS m`.execute(db);
  return r.rows[0]?.m ?? null;
}

/** True when the mirror holds rows of the property (used to detect a vanished cursor). */
export async function hasMirroredRows(db: Executor, propertyId: string): Promise<boolean> {
  const r = await sql<{ e: boolean }>`
    SELECT EXISTS (SELECT 1 FROM booking_summaries WHERE property_id = ${propertyId})
        OR EXISTS (SELECT 1 FROM bookings WHERE property_id = ${propertyId}) AS e`.execute(db);
  return r.rows[0]?.e === true;
}
