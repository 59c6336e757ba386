/**
 * What reader roles are shown, and which rows they see (issue 25, point 2). Applied after every
 * migration, with the readers' grants (src/store/reader-role.ts), in their transaction.
 *
 * Shown only what they can read in full. A BI tool (Superset, pandas, Metabase) lists the
 * schemas a role may use, their relations and every column the catalog gives, and then reads
 * them; a column withheld by a column privilege fails the whole read. So a schema a reader may
 * use holds only relations it can read in full:
 * - `<mirror>_readable` (readableSchemaOf): for every table and view of the mirror, a view of
 *   the same name with the same columns, the personal ones (src/store/personal-columns.ts)
 *   left out. Generated here from the catalog, so a column a migration adds appears; replaced
 *   whole when the catalog changes (hash-marked in the schema's comment, as the reporting
 *   layer is). Every reader may use it;
 * - the mirror's schema, only for readers granted --personal-data (they read every column);
 * - the reporting schema, whose views read no personal column;
 * - `<mirror>_secret` (secretSchemaOf, migrations/0018_readers.sql): the erasure key, for no
 *   role but the owner; its tables have row-level security and no policy, so that even a role
 *   that reads every table (pg_read_all_data) sees no row of it.
 *
 * Which rows: row-level security on the mirror's tables, a policy for each reader (named as
 * the role, FOR SELECT TO it) with its properties written in: a table with a property_id shows a
 * reader scoped to properties (reader_grants.properties, `grant-reader --properties`) their rows,
 * and a reader of every property all of them; the daemon's bookkeeping tables (which name
 * connections, hosts and erasures of every property) show their rows to readers of every
 * property only; the lists every property shares (SHARED_TABLES) have no row-level security;
 * reader_grants shows each role its own row. A role without a policy sees no row: one that
 * reader_grants does not list. A policy applies to the members of its role too, as the role's
 * privileges do. The owner (the daemon, which runs the migrations and writes every row) is
 * exempt: ENABLE, not FORCE, so its writes pay nothing.
 *
 * Why a policy per reader with the properties written in, rather than one policy that looks the
 * reader's properties up in reader_grants: a lookup is a subquery for each table a query reads
 * (two initplans, planned and run every time), and daily_kpis of one property reads ten tables;
 * that cost the scoped reader 40 % over the owner's time, where the written-in list costs it
 * nothing measurable, with 200 other readers' policies on every table too (docs/benchmarks.md,
 * scenario H). The price: making or changing a reader's policies takes each table's lock for a
 * moment (grant-reader waits at most 10 s for a query on it, src/store/reader-role.ts).
 *
 * One filter for every path: the readable views, the mirror's own views and the reporting
 * views and functions all read as the role that queries them (views with security_invoker,
 * SQL functions, which run as their caller), so the policies of the tables they read apply.
 * A view run with its owner's rights would read as the owner, whom row-level security exempts.
 * Row-level security also orders the policies before any function of the query that is not
 * leakproof, so a function of the reader's own in a WHERE (one that would print what it is
 * given) sees only the rows the policy lets through.
 */
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { Executor } from './types.js';
import { PERSONAL_COLUMNS } from './personal-columns.js';
import { quoteIdent, quoteLiteral } from './sql-text.js';
import { readableSchemaOf, secretSchemaOf } from '../config/schema-names.js';

/** Tables without a property that every reader reads in full: lists every property shares. */
export const SHARED_TABLES: readonly string[] = [
  'meal_plans',
  'payment_methods',
  'property_amenity_types',
  'property_kinds',
  'room_amenities',
  'room_type_categories',
  'reference_lists',
  'pos_codes',
  'mirror_settings',
  'kysely_migration',
  'kysely_migration_lock',
];

const MARK = /\((?:layer|policy) ([0-9a-f]{64})\)/;
const hash = (text: string) => createHash('sha256').update(text).digest('hex');

/** The policy of reader_grants: every role sees its own row (of no other role's properties). */
export const OWN_ROW_POLICY = 'staysync_own_row';

/** What the rows of a table of the mirror are to readers. */
export type TableRows = 'per property' | 'shared' | 'readers of every property' | 'own row';

export function tableRows(table: string, hasPropertyId: boolean): TableRows {
  if (table === 'reader_grants') return 'own row';
  if (hasPropertyId) return 'per property';
  return SHARED_TABLES.includes(table) ? 'shared' : 'readers of every property';
}

/**
 * The USING expression of a reader's policy on a table whose rows are `rows`, for a reader of
 * `properties` (null: every property); null when the reader gets no policy there (no row).
 */
export function readerPolicyExpression(rows: TableRows, properties: readonly string[] | null): string | null {
  if (rows === 'shared' || rows === 'own row') return null;
  if (properties === null) return 'true';
  if (rows === 'readers of every property') return null;
  // One property as an equality: the planner takes it and a query's own `property_id = …` as one
  // condition, where it would test `= ANY` on every row again.
  if (properties.length === 1) return `property_id = ${quoteLiteral(properties[0]!)}`;
  return `property_id = ANY (${quoteLiteral(`{${properties.join(',')}}`)}::text[])`;
}

interface Relation {
  name: string;
  kind: string;
  comment: string | null;
  rowSecurity: boolean;
  invoker: boolean;
  policy: string | null;
  columns: { name: string; comment: string | null }[];
}

async function relationsOf(db: Executor, schema: string): Promise<Relation[]> {
  const r = await sql<Relation>`
    SELECT c.relname AS name, c.relkind::text AS kind, obj_description(c.oid, 'pg_class') AS comment, c.relrowsecurity AS "rowSecurity",
           COALESCE('security_invoker=true' = ANY (c.reloptions) OR 'security_invoker=on' = ANY (c.reloptions), false) AS invoker,
           (SELECT obj_description(p.oid, 'pg_policy') FROM pg_policy p WHERE p.polrelid = c.oid AND p.polname = ${OWN_ROW_POLICY}) AS policy,
           (SELECT json_agg(json_build_object('name', a.attname, 'comment', col_description(c.oid, a.attnum)) ORDER BY a.attnum)
              FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) AS columns
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = ${schema} AND c.relkind IN ('r', 'p', 'v', 'm')
     ORDER BY c.relname`.execute(db);
  return r.rows;
}

/**
 * Applies what readers are shown and which rows they see, but for each reader's own policies
 * (applyReaderRows): the mirror's views run as their caller, row-level security on every table
 * of the mirror but the shared lists, reader_grants's own-row policy, the readable schema's
 * views. Changes only what differs (DDL takes locks that a long report would make every write
 * wait behind). Returns what it changed, for the log.
 */
export async function applyReaderPolicy(db: Executor, schema: string): Promise<string[]> {
  const invoker: string[] = [];
  const enabled: string[] = [];
  const relations = await relationsOf(db, schema);
  const M = quoteIdent(schema);
  let ownRow = false;
  for (const rel of relations) {
    const target = `${M}.${quoteIdent(rel.name)}`;
    if (rel.kind === 'v' && !rel.invoker) {
      // A migration's CREATE OR REPLACE VIEW resets the option: set again after every migration.
      await sql.raw(`ALTER VIEW ${target} SET (security_invoker = true)`).execute(db);
      invoker.push(rel.name);
    }
    if (rel.kind !== 'r' && rel.kind !== 'p') continue;
    const rows = tableRows(
      rel.name,
      rel.columns.some((c) => c.name === 'property_id'),
    );
    if (rows === 'shared') continue;
    if (rows === 'own row' && rel.policy === null) {
      await sql
        .raw(`CREATE POLICY ${quoteIdent(OWN_ROW_POLICY)} ON ${target} AS PERMISSIVE FOR SELECT TO PUBLIC USING (role = current_user::text)`)
        .execute(db);
      await sql.raw(`COMMENT ON POLICY ${quoteIdent(OWN_ROW_POLICY)} ON ${target} IS 'Every role sees its own row. Made by staysync.'`).execute(db);
      ownRow = true;
    }
    if (!rel.rowSecurity) {
      await sql.raw(`ALTER TABLE ${target} ENABLE ROW LEVEL SECURITY`).execute(db);
      enabled.push(rel.name);
    }
  }
  // The erasure key's tables: row-level security and no policy, so that a role that reads every
  // table (pg_read_all_data, which a CREATEROLE role on PostgreSQL 15 can grant itself) still
  // sees no row of the key, as it sees none of the mirror's without a policy of its own.
  const secrets = await sql<{ name: string }>`
    SELECT format('%I.%I', n.nspname, c.relname) AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = ${secretSchemaOf(schema)} AND c.relkind IN ('r', 'p') AND NOT c.relrowsecurity`.execute(db);
  for (const t of secrets.rows) {
    await sql.raw(`ALTER TABLE ${t.name} ENABLE ROW LEVEL SECURITY`).execute(db);
    enabled.push(t.name);
  }
  const changed: string[] = [];
  if (invoker.length > 0) changed.push(`the mirror's views ${invoker.join(', ')} run as their caller`);
  if (enabled.length > 0) changed.push(`row-level security enabled on ${enabled.length > 6 ? `${enabled.length} tables` : enabled.join(', ')}`);
  if (ownRow) changed.push('reader_grants shows each role its own row');
  if (await applyReadableViews(db, schema, relations)) changed.push(`the views of ${readableSchemaOf(schema)} made again`);
  return changed;
}

/** The mirror's tables and the readers' policies on them (by policy name, with its comment): what applyReaderRows compares with. */
export interface ReaderRowsState {
  tables: { name: string; hasPropertyId: boolean; policies: Record<string, string | null> }[];
}

export async function readerRowsState(db: Executor, schema: string): Promise<ReaderRowsState> {
  const r = await sql<{ name: string; hasPropertyId: boolean; policies: Record<string, string | null> | null }>`
    SELECT c.relname AS name,
           EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'property_id' AND NOT a.attisdropped) AS "hasPropertyId",
           (SELECT json_object_agg(p.polname, obj_description(p.oid, 'pg_policy')) FROM pg_policy p WHERE p.polrelid = c.oid) AS policies
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = ${schema} AND c.relkind IN ('r', 'p')
     ORDER BY c.relname`.execute(db);
  return { tables: r.rows.map((t) => ({ ...t, policies: t.policies ?? {} })) };
}

/**
 * One reader's policies: on every table with row-level security, the one its properties call
 * for (named as the role, FOR SELECT TO it), made, changed or dropped where it differs (its
 * comment holds the hash of its expression). `state` is read when absent (applyReaders reads it
 * once for every reader). Returns how many it changed.
 */
export async function applyReaderRows(
  db: Executor,
  schema: string,
  role: string,
  properties: readonly string[] | null,
  state?: ReaderRowsState,
): Promise<number> {
  const { tables } = state ?? (await readerRowsState(db, schema));
  let changes = 0;
  for (const t of tables) {
    const target = `${quoteIdent(schema)}.${quoteIdent(t.name)}`;
    const rows = tableRows(t.name, t.hasPropertyId);
    // reader_grants has one policy of its own (OWN_ROW_POLICY), for every role: never a reader's.
    if (rows === 'own row') continue;
    const expression = readerPolicyExpression(rows, properties);
    const mark = expression === null ? null : hash(expression);
    const exists = role in t.policies;
    if (exists && MARK.exec(t.policies[role] ?? '')?.[1] === mark) continue;
    if (!exists && mark === null) continue;
    if (exists) await sql.raw(`DROP POLICY ${quoteIdent(role)} ON ${target}`).execute(db);
    if (expression !== null) {
      await sql.raw(`CREATE POLICY ${quoteIdent(role)} ON ${target} AS PERMISSIVE FOR SELECT TO ${quoteIdent(role)} USING (${expression})`).execute(db);
      const what = properties === null ? 'every row' : `the rows of ${properties.length === 1 ? 'property' : 'properties'} ${properties.join(', ')}`;
      await sql
        .raw(
          `COMMENT ON POLICY ${quoteIdent(role)} ON ${target} IS ${quoteLiteral(`The reader ${role} sees ${what} (staysync grant-reader). (policy ${mark})`)}`,
        )
        .execute(db);
    }
    changes++;
  }
  return changes;
}

/** Every policy of one role on the mirror's tables dropped: it sees no row of them (a reader that lost its grants). */
export async function dropReaderRows(db: Executor, schema: string, role: string, state: ReaderRowsState): Promise<void> {
  for (const t of state.tables)
    if (role in t.policies && t.name !== 'reader_grants')
      await sql.raw(`DROP POLICY ${quoteIdent(role)} ON ${quoteIdent(schema)}.${quoteIdent(t.name)}`).execute(db);
}

/** The readable schema's views: one per relation of the mirror, same name, without the personal columns. */
export function readableViewsSql(schema: string, relations: readonly Pick<Relation, 'name' | 'comment' | 'columns'>[]): string {
  const R = quoteIdent(readableSchemaOf(schema));
  const out: string[] = [];
  for (const rel of relations) {
    const personal = PERSONAL_COLUMNS[rel.name] ?? [];
    const columns = rel.columns.filter((c) => !personal.includes(c.name));
    if (columns.length === 0) continue;
    const view = `${R}.${quoteIdent(rel.name)}`;
    out.push(
      `CREATE VIEW ${view} WITH (security_invoker = true) AS SELECT ${columns.map((c) => quoteIdent(c.name)).join(', ')} FROM ${quoteIdent(schema)}.${quoteIdent(rel.name)};`,
    );
    const left = personal.filter((p) => rel.columns.some((c) => c.name === p));
    const note = left.length > 0 ? ` (Without the columns of guests' personal data: ${left.join(', ')}.)` : '';
    out.push(`COMMENT ON VIEW ${view} IS ${quoteLiteral(`${rel.comment ?? `${rel.name} of the mirror.`}${note}`)};`);
    for (const c of columns) if (c.comment !== null) out.push(`COMMENT ON COLUMN ${view}.${quoteIdent(c.name)} IS ${quoteLiteral(c.comment)};`);
  }
  return out.join('\n');
}

async function applyReadableViews(db: Executor, schema: string, relations: readonly Relation[]): Promise<boolean> {
  const readable = readableSchemaOf(schema);
  const text = readableViewsSql(schema, relations);
  const mark = hash(text);
  await sql`CREATE SCHEMA IF NOT EXISTS ${sql.id(readable)}`.execute(db);
  const state = await sql<{ comment: string | null; views: number }>`
    SELECT obj_description(n.oid, 'pg_namespace') AS comment,
           (SELECT count(*)::int FROM pg_class c WHERE c.relnamespace = n.oid AND c.relkind = 'v') AS views
      FROM pg_namespace n WHERE n.nspname = ${readable}`.execute(db);
  const row = state.rows[0];
  const wanted = (text.match(/^CREATE VIEW /gm) ?? []).length;
  if (row && row.views === wanted && MARK.exec(row.comment ?? '')?.[1] === mark) return false;
  const old = await sql<{ name: string }>`
    SELECT format('%I.%I', n.nspname, c.relname) AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = ${readable} AND c.relkind = 'v'`.execute(db);
  if (old.rows.length > 0) await sql.raw(`DROP VIEW IF EXISTS ${old.rows.map((r) => r.name).join(', ')} CASCADE`).execute(db);
  await sql.raw(text).execute(db);
  const comment =
    `The tables of the staysync mirror in schema "${schema}" as views of the same names, without the columns of guests' personal data, ` +
    `for reader roles (staysync grant-reader). staysync replaces these views when the mirror's tables change: keep your own objects elsewhere. (layer ${mark})`;
  await sql.raw(`COMMENT ON SCHEMA ${quoteIdent(readable)} IS ${quoteLiteral(comment)}`).execute(db);
  return true;
}
