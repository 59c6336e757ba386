/**
 * The statements the replay (src/replay: rebuild and quarantine retry) reads and writes with,
 * inside the lease-fenced transactions of the database handle (DatabaseHandle.write, like
 * every write of the sync). Rows come from the mapping (src/mapping/), already in the form the
 * sync binds them (jsonb as text, PostgreSQL arrays as arrays, instants as Date), so a value
 * reaches its column through the same input function whichever path wrote it.
 *
 * The writers' statement texts are built here with numbered parameters rather than as kysely
 * query trees: a rebuild binds millions of values, and a tree node per value made building the
 * statements (and collecting them) cost more than running them.
 */
import { CompiledQuery, sql } from 'kysely';
import type { Trx } from '../types.js';

// ------------------------------------------------------------------ derived rows, written back

export type Row = Record<string, unknown>;

/** PostgreSQL takes at most 65,535 parameters in one statement; multi-row statements stay well below. */
const MAX_PARAMS = 30_000;

const id = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** Every column of `rows`, in first-seen order (the mapping gives each row of a table the same keys). */
function columnsOf(rows: readonly Row[]): string[] {
  const seen = new Set<string>();
  for (const r of rows) for (const k of Object.keys(r)) seen.add(k);
  return [...seen];
}

function chunked<T>(rows: readonly T[], columns: number): T[][] {
  const size = Math.max(1, Math.floor(MAX_PARAMS / Math.max(1, columns)));
  const out: T[][] = [];
  for (let i = 0; i < rows.length; i += size) out.push(rows.slice(i, i + size));
  return out;
}

/** `($1, $2), ($3, $4)` for `rows`, appending their values to `params`; with `casts`, each placeholder typed. */
function valuesList(rows: readonly Row[], columns: readonly string[], params: unknown[], casts?: readonly string[]): string {
  const tuples: string[] = [];
  for (const r of rows) {
    const cells: string[] = [];
    for (let i = 0; i < columns.length; i++) {
      params.push(r[columns[i]!] ?? null);
      cells.push(casts ? `$${params.length}::${casts[i]}` : `$${params.length}`);
    }
    tuples.push(`(${cells.join(', ')})`);
  }
  return tuples.join(', ');
}

async function run(trx: Trx, text: string, params: unknown[]): Promise<number> {
  const r = await trx.executeQuery(CompiledQuery.raw(text, params));
  return r.rows.length;
}

/** Dedupes by key, the last occurrence winning as in the sync's writes. */
function lastByKey(rows: readonly Row[], keys: readonly string[]): Row[] {
  const byKey = new Map<string, Row>();
  for (const r of rows) byKey.set(keys.map((k) => String(r[k])).join('\u0000'), r);
  return [...byKey.values()];
}

/** The SQL type of each column (placeholders of a VALUES list in FROM get no type from a target column). */
async function columnTypes(trx: Trx, table: string, columns: readonly string[]): Promise<string[]> {
  const r = await trx.executeQuery<{ name: string; type: string }>(
    CompiledQuery.raw(
      `SELECT attname AS name, format_type(atttypid, atttypmod) AS type FROM pg_attribute
       WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped`,
      [table],
    ),
  );
  const types = new Map(r.rows.map((x) => [x.name, x.type]));
  return columns.map((c) => {
    const t = types.get(c);
    if (t === undefined) throw new Error(`${table} has no column ${c}`);
    return t;
  });
}

/**
 * Writes rows derived from `raw` over the stored rows they were derived from: every derived
 * column is set, the `keep` columns (bookkeeping that raw does not give: fetched_at,
 * synced_at, content_hash, raw itself where it is kept as received…) and every column not
 * given keep their stored values, and nothing is inserted. A row is rewritten only when the
 * text of one of its derived columns differs: text, because `28.00` and `28.0000` are equal
 * numbers (and equal in jsonb) yet not the same bytes, and a mapping fix may be exactly about
 * that. Returns how many rows changed.
 */
export async function updateDerived(trx: Trx, table: string, keys: readonly string[], input: readonly Row[], keep: readonly string[]): Promise<number> {
  if (input.length === 0) return 0;
  const rows = lastByKey(input, keys);
  const derived = columnsOf(rows).filter((c) => !keys.includes(c) && !keep.includes(c));
  if (derived.length === 0) return 0;
  const columns = [...keys, ...derived];
  const casts = await columnTypes(trx, table, columns);
  let changed = 0;
  for (const part of chunked(rows, columns.length)) {
    const params: unknown[] = [];
    const list = valuesList(part, columns, params, casts);
    changed += await run(
      trx,
      `UPDATE ${id(table)} AS t SET ${derived.map((c) => `${id(c)} = v.${id(c)}`).join(', ')}
       FROM (VALUES ${list}) AS v (${columns.map(id).join(', ')})
       WHERE ${keys.map((k) => `t.${id(k)} = v.${id(k)}`).join(' AND ')}
         AND ROW(${derived.map((c) => `t.${id(c)}`).join(', ')})::text IS DISTINCT FROM ROW(${derived.map((c) => `v.${id(c)}`).join(', ')})::text
       RETURNING 1`,
      params,
    );
  }
  return changed;
}

/**
 * As updateDerived, for rows that a new mapping may add besides those stored (the room types
 * of a property, the entries of a reference list): a missing row is inserted (its bookkeeping
 * columns take their defaults or the values given). Returns how many rows changed or were added.
 */
export async function upsertDerived(trx: Trx, table: string, keys: readonly string[], input: readonly Row[], keep: readonly string[]): Promise<number> {
  if (input.length === 0) return 0;
  const rows = lastByKey(input, keys);
  const columns = columnsOf(rows);
  const derived = columns.filter((c) => !keys.includes(c) && !keep.includes(c));
  const onConflict =
    derived.length === 0
      ? 'DO NOTHING'
      : `DO UPDATE SET ${derived.map((c) => `${id(c)} = excluded.${id(c)}`).join(', ')}
         WHERE ROW(${derived.map((c) => `t.${id(c)}`).join(', ')})::text IS DISTINCT FROM ROW(${derived.map((c) => `excluded.${id(c)}`).join(', ')})::text`;
  let changed = 0;
  for (const part of chunked(rows, columns.length)) {
    const params: unknown[] = [];
    changed += await run(
      trx,
      `INSERT INTO ${id(table)} AS t (${columns.map(id).join(', ')}) VALUES ${valuesList(part, columns, params)}
       ON CONFLICT (${keys.map(id).join(', ')}) ${onConflict}
       RETURNING 1`,
      params,
    );
  }
  return changed;
}

/**
 * Writes the children derived from their parents' raw over the stored ones, as upsertDerived
 * does (keyed by `keys`), and deletes the stored children of `parents` (the values of
 * `parentKeys` of every parent rebuilt, with children or without) that the derived rows no
 * longer have. So a stored child equal to its derived row is left alone, and one that differs
 * gets the derived columns: both keep their synced_at. A child that is missing (deleted by
 * hand, or one that a new mapping adds) is inserted with the synced_at its row carries: the
 * parent's, which every child written with it in a sync shares. Returns how many children
 * changed, were added or were deleted.
 */
export async function mergeChildren(
  trx: Trx,
  table: string,
  keys: readonly string[],
  parentKeys: readonly string[],
  parents: readonly (readonly unknown[])[],
  rows: readonly Row[],
): Promise<number> {
  const written = await upsertDerived(trx, table, keys, rows, ['synced_at']);
  if (parents.length === 0) return written;
  // One array per key column (unnest zips them into rows), typed as the column.
  const types = await columnTypes(trx, table, [...parentKeys, ...keys]);
  const kept = lastByKey(rows, keys);
  const params = [...parentKeys.map((_, i) => parents.map((p) => p[i])), ...keys.map((k) => kept.map((r) => r[k]))];
  const arrays = (from: number, count: number) => Array.from({ length: count }, (_, i) => `$${from + i + 1}::${types[from + i]}[]`).join(', ');
  const r = await trx.executeQuery(
    CompiledQuery.raw(
      `DELETE FROM ${id(table)}
       WHERE (${parentKeys.map(id).join(', ')}) IN (SELECT * FROM unnest(${arrays(0, parentKeys.length)}))
         AND (${keys.map(id).join(', ')}) NOT IN (SELECT * FROM unnest(${arrays(parentKeys.length, keys.length)}))`,
      params,
    ),
  );
  return written + Number(r.numAffectedRows ?? 0);
}

// ------------------------------------------------------------------ stored raw, read back

/** A stored row as the rebuild reads it: its key columns, the columns asked for, and raw as text. */
export type RawRow = Record<string, any> & { raw_text: string | null };

/**
 * The next `limit` rows of `table` in key order (keyset pagination), after the key `after` or
 * from the start when it is null: the `keys` and `extra` columns, the `extraText` columns as
 * their text (a timestamptz to the microsecond, which a Date would round to the millisecond),
 * and raw as its text (`raw::text`), for the caller to parse keeping every digit of its numbers.
 */
export async function readRawBatch(
  trx: Trx,
  table: string,
  keys: readonly string[],
  extra: readonly string[],
  after: readonly unknown[] | null,
  limit: number,
  extraText: readonly string[] = [],
): Promise<RawRow[]> {
  const keyList = sql.join(keys.map((k) => sql.id(k)));
  const select = sql.join([...[...keys, ...extra].map((c) => sql.id(c)), ...extraText.map((c) => sql`${sql.id(c)}::text AS ${sql.id(c)}`)]);
  const where = after === null ? sql`true` : sql`(${keyList}) > (${sql.join(after.map((v: unknown) => sql`${v}`))})`;
  const r = await sql<RawRow>`
    SELECT ${select}, raw::text AS raw_text FROM ${sql.table(table)}
    WHERE ${where} ORDER BY ${keyList} LIMIT ${limit}`.execute(trx);
  return r.rows;
}

/** The text of `column` (a timestamptz to the microsecond) of the rows of `table` that match `match`, by the text of their `key`. */
export async function columnTextByKey(trx: Trx, table: string, match: Row, key: string, column: string): Promise<Map<string, string>> {
  const where = sql.join(
    Object.entries(match).map(([k, v]) => sql`${sql.id(k)} = ${v}`),
    sql` AND `,
  );
  const r = await sql<{ k: string; v: string }>`SELECT ${sql.id(key)}::text AS k, ${sql.id(column)}::text AS v FROM ${sql.table(table)} WHERE ${where}`.execute(
    trx,
  );
  return new Map(r.rows.map((x) => [x.k, x.v]));
}

// ------------------------------------------------------------------ since a payload was quarantined
// Has the mirror moved past a quarantined payload? Each compares with the quarantine row's own
// last_seen_at, in the database, to the microsecond.

/** True when a content refresh that started after the quarantine row was last seen finished: the provider has since sent a newer version. */
export async function contentRefreshedSince(trx: Trx, quarantineId: string): Promise<boolean> {
  const r = await sql<{ e: boolean }>`
    SELECT EXISTS (SELECT 1 FROM content_refreshes r, quarantine q
                   WHERE q.id = ${quarantineId} AND r.outcome = 'ok' AND r.started_at > q.last_seen_at) AS e`.execute(trx);
  return r.rows[0]?.e === true;
}

/**
 * True when the stored summary of the booking was listed after the quarantine row was last
 * seen, or is of a later modification than `modifiedAt` (the list is ordered by modification).
 */
export async function newerSummaryStored(trx: Trx, quarantineId: string, propertyId: string, number: string, modifiedAt: Date | null): Promise<boolean> {
  const r = await sql<{ e: boolean }>`
    SELECT EXISTS (SELECT 1 FROM booking_summaries s, quarantine q
                   WHERE q.id = ${quarantineId} AND s.property_id = ${propertyId} AND s.number = ${number}
                     AND (s.listed_at > q.last_seen_at OR s.modified_at > ${modifiedAt})) AS e`.execute(trx);
  return r.rows[0]?.e === true;
}

/** True when the reference list was fetched again after the quarantine row was last seen. */
export async function referenceListFetchedSince(trx: Trx, quarantineId: string, listName: string): Promise<boolean> {
  const r = await sql<{ e: boolean }>`
    SELECT EXISTS (SELECT 1 FROM reference_lists l, quarantine q WHERE q.id = ${quarantineId} AND l.list_name = ${listName} AND l.fetched_at > q.last_seen_at) AS e`.execute(
    trx,
  );
  return r.rows[0]?.e === true;
}

/** True when the guest profile was fetched after the quarantine row was last seen: the mirror holds a newer profile than its body. */
export async function pmsGuestFetchedSince(trx: Trx, quarantineId: string, propertyId: string, personId: string): Promise<boolean> {
  const r = await sql<{ e: boolean }>`
    SELECT EXISTS (SELECT 1 FROM pms_guests g, quarantine q
                   WHERE q.id = ${quarantineId} AND g.property_id = ${propertyId} AND g.pms_person_id = ${personId} AND g.fetched_at > q.last_seen_at) AS e`.execute(
    trx,
  );
  return r.rows[0]?.e === true;
}

/** True when the PMS room was written after the quarantine row was last seen. */
export async function pmsRoomUpdatedSince(trx: Trx, quarantineId: string, propertyId: string, roomId: string): Promise<boolean> {
  const r = await sql<{ e: boolean }>`
    SELECT EXISTS (SELECT 1 FROM pms_rooms r, quarantine q WHERE q.id = ${quarantineId} AND r.property_id = ${propertyId} AND r.room_id = ${roomId} AND r.updated_at > q.last_seen_at) AS e`.execute(
    trx,
  );
  return r.rows[0]?.e === true;
}

/** Whether the company was written (by a refresh) after the quarantine row was last seen. */
export async function pmsCompanyUpdatedSince(trx: Trx, quarantineId: string, propertyId: string, companyId: string): Promise<boolean> {
  const r = await sql<{ e: boolean }>`
    SELECT EXISTS (SELECT 1 FROM pms_companies c, quarantine q WHERE q.id = ${quarantineId} AND c.property_id = ${propertyId} AND c.company_id = ${companyId} AND c.updated_at > q.last_seen_at) AS e`.execute(
    trx,
  );
  return r.rows[0]?.e === true;
}
