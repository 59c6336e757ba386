/**
 * Content and reference-data mirror. Every entity table has a natural key (within a property
 * where it belongs to one) and `removed_at`: a refresh upserts what it saw, writes a row only
 * when it changed (no updated_at churn), revives a row that comes back, and marks the rows it
 * no longer sees as removed instead of deleting them.
 */
import { sql } from 'kysely';
import type { RefreshOutcome } from '../states.js';
import type { Executor } from '../types.js';

/** Tables with removal semantics: their key column and, where it belongs to one, the property column. */
const removable = {
  properties: { key: 'property_id', scope: null },
  room_types: { key: 'room_type_id', scope: 'property_id' },
  rate_plans: { key: 'rate_plan_id', scope: 'property_id' },
  services: { key: 'service_id', scope: 'property_id' },
  cancellation_rules: { key: 'rule_id', scope: 'property_id' },
  extra_stay_rules: { key: 'rule_id', scope: 'property_id' },
  meal_plans: { key: 'code', scope: null },
  room_type_categories: { key: 'code', scope: null },
  room_amenities: { key: 'code', scope: null },
  payment_methods: { key: 'code', scope: null },
  property_amenity_types: { key: 'code', scope: null },
  property_kinds: { key: 'property_kind_id', scope: null },
  pms_rooms: { key: 'room_id', scope: 'property_id' },
  pms_companies: { key: 'company_id', scope: 'property_id' },
} as const;
export type RemovableTable = keyof typeof removable;

/** Child tables replaced whole when their parent changed. */
export type ChildTable =
  'room_type_amenities' | 'property_amenities' | 'cancellation_rule_terms' | 'cancellation_rule_arrival_dates' | 'extra_stay_rule_periods';

type Row = Record<string, unknown>;

const keyColumns = (table: RemovableTable): string[] => {
  const t = removable[table];
  return t.scope ? [t.scope, t.key] : [t.key];
};

/** JSON values go to jsonb columns as text (also for the replay's writes, src/replay). */
export function prepare(row: Row): Row {
  const out: Row = {};
  for (const [k, v] of Object.entries(row)) out[k] = v !== null && typeof v === 'object' && !(v instanceof Date) ? JSON.stringify(v) : v;
  return out;
}

/**
 * Upserts `input` into `table`, writing a row only when one of its data columns differs or it
 * was removed (then it is revived); a row written gets the transaction's time as updated_at and
 * synced_at. Returns the keys (last key column) of the rows written.
 */
export async function upsertChanged(trx: Executor, table: RemovableTable, input: Row[]): Promise<Set<string>> {
  if (input.length === 0) return new Set();
  const keys = keyColumns(table);
  // A page may list one id twice; one INSERT ... ON CONFLICT must not touch a row twice
  // (SQLSTATE 21000), so the last occurrence wins, as a second write would.
  const byKey = new Map<string, Row>();
  for (const r of input) byKey.set(keys.map((k) => String(r[k])).join('\u0000'), r);
  const rows = [...byKey.values()];
  const columns = Object.keys(rows[0]!);
  const data = columns.filter((c) => !keys.includes(c));
  const values = rows.map((r) => sql`(${sql.join(columns.map((c) => sql`${prepare(r)[c] ?? null}`))})`);
  const col = (c: string) => sql.id(c);
  // jsonb and numeric columns compare by value, which is what "changed" means here.
  const changed = sql.join(
    data.map((c) => sql`t.${col(c)} IS DISTINCT FROM excluded.${col(c)}`),
    sql` OR `,
  );
  const result = await sql<{ k: string }>`
    INSERT INTO ${sql.table(table)} AS t (${sql.join(columns.map(col))})
    VALUES ${sql.join(values)}
    ON CONFLICT (${sql.join(keys.map(col))}) DO UPDATE SET
      ${sql.join(data.map((c) => sql`${col(c)} = excluded.${col(c)}`))},
      updated_at = now(), removed_at = NULL, synced_at = now()
    WHERE ${changed} OR t.removed_at IS NOT NULL
    RETURNING t.${col(removable[table].key)}::text AS k`.execute(trx);
  return new Set(result.rows.map((r) => r.k));
}

/**
 * Marks removed the rows of `table` (within `propertyId` where the table belongs to a
 * property) whose key is not in `present`, a write that moves their synced_at like any other
 * (a freshness check sees removals too). Returns how many rows were marked. `properties`
 * are scoped by `connection` instead: a connection's content lists its own properties only.
 */
export async function markMissingRemoved(
  trx: Executor,
  table: RemovableTable,
  present: Iterable<string>,
  scopeTo: { propertyId?: string; connection?: string } = {},
): Promise<number> {
  const t = removable[table];
  const { propertyId, connection } = scopeTo;
  let scope = t.scope && propertyId !== undefined ? sql`AND ${sql.id(t.scope)} = ${propertyId}` : sql``;
  if (table === 'properties' && connection !== undefined) scope = sql`AND connection = ${connection}`;
  const r = await sql`
    UPDATE ${sql.table(table)} SET removed_at = now(), synced_at = now()
    WHERE removed_at IS NULL ${scope} AND NOT (${sql.id(t.key)}::text = ANY(${[...present]}::text[]))`.execute(trx);
  return Number(r.numAffectedRows ?? 0);
}

/** Replaces the child rows of one parent (`match` selects them) with `rows`. */
export async function replaceChildren(trx: Executor, table: ChildTable, match: Row, rows: Row[]): Promise<void> {
  let del = sql`DELETE FROM ${sql.table(table)} WHERE true`;
  for (const [k, v] of Object.entries(match)) del = sql`${del} AND ${sql.id(k)} = ${v}`;
  await del.execute(trx);
  if (rows.length === 0) return;
  const columns = Object.keys(rows[0]!);
  const values = rows.map((r) => sql`(${sql.join(columns.map((c) => sql`${prepare(r)[c] ?? null}`))})`);
  await sql`INSERT INTO ${sql.table(table)} (${sql.join(columns.map((c) => sql.id(c)))}) VALUES ${sql.join(values)}`.execute(trx);
}

/** Properties present in the content mirror (not removed), of one connection when given. */
export async function activePropertyIds(db: Executor, connection?: string): Promise<string[]> {
  let q = db.selectFrom('properties').select('property_id').where('removed_at', 'is', null);
  if (connection !== undefined) q = q.where('connection', '=', connection);
  const rows = await q.orderBy('property_id').execute();
  return rows.map((r) => r.property_id);
}

export async function startContentRefresh(db: Executor): Promise<string> {
  const r = await db.insertInto('content_refreshes').defaultValues().returning('id').executeTakeFirstOrThrow();
  return r.id;
}

export async function finishContentRefresh(
  db: Executor,
  id: string,
  r: { outcome: RefreshOutcome; properties: number; requests: number; changedRows: number; quarantined: number; error?: string },
): Promise<void> {
  await db
    .updateTable('content_refreshes')
    .set({
      finished_at: new Date(),
      outcome: r.outcome,
      properties: r.properties,
      requests: r.requests,
      changed_rows: r.changedRows,
      quarantined: r.quarantined,
      error: r.error ?? null,
    })
    .where('id', '=', id)
    .execute();
}

export interface ContentRefreshRow {
  startedAt: Date;
  finishedAt: Date | null;
  outcome: string | null;
  properties: number | null;
  changedRows: number | null;
}

export async function lastContentRefresh(db: Executor): Promise<ContentRefreshRow | undefined> {
  const r = await db.selectFrom('content_refreshes').selectAll().orderBy('id', 'desc').limit(1).executeTakeFirst();
  return (
    r && {
      startedAt: r.started_at,
      finishedAt: r.finished_at,
      outcome: r.outcome,
      properties: r.properties,
      changedRows: r.changed_rows,
    }
  );
}

/** The IANA time zone of a property as content gives it; null when content has none (yet). */
export async function propertyTimeZone(db: Executor, propertyId: string): Promise<string | null> {
  const r = await db.selectFrom('properties').select('time_zone').where('property_id', '=', propertyId).executeTakeFirst();
  return r?.time_zone ?? null;
}

/** Keeps a reference list exactly as received (entries without a code included). */
export async function saveReferenceList(trx: Executor, listName: string, body: unknown, contentHash: string, fetchedAt: Date): Promise<void> {
  await trx
    .insertInto('reference_lists')
    .values({ list_name: listName, raw: JSON.stringify(body), content_hash: contentHash, fetched_at: fetchedAt })
    .onConflict((oc) =>
      oc.column('list_name').doUpdateSet({
        raw: (eb) => eb.ref('excluded.raw'),
        content_hash: (eb) => eb.ref('excluded.content_hash'),
        fetched_at: (eb) => eb.ref('excluded.fetched_at'),
        synced_at: sql`now()`,
      }),
    )
    .execute();
}
