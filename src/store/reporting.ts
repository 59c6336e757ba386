/**
 * The reporting layer: views in a schema of their own (config database.reportingSchema,
 * default `reporting`) over the mirror. Applied after the migrations by whoever migrates
 * (the writer, holding the lease); read-only commands never run it.
 *
 * Why views in their own schema, and not migrations: the views hold no data, so they can be
 * replaced whole whenever their definition changes (a new column, a fixed formula) without a
 * forward-only migration per change; and a reporting tool gets one schema of stable, documented
 * names, without the mirror's bookkeeping tables.
 *
 * How: the views are one SQL file, migrations/reporting/views.sql (the migrator reads only the
 * top-level files of migrations/). In one transaction, under a transaction-scoped advisory lock:
 * create the schema if needed; if its comment carries the hash of this file (and of both schema
 * names) and every view of the file exists, do nothing; otherwise drop the views and functions
 * of the reporting schema (DROP ... CASCADE, so column changes work, which CREATE OR REPLACE
 * VIEW refuses), run the file with search_path = reporting schema, mirror schema, public, set
 * every view to run as its caller (security_invoker: the row-level security of the tables it
 * reads applies to the reader who queries it, src/store/reader-policy.ts), and write the new
 * hash into the schema's comment. The schema itself is never dropped: the
 * privileges a reader role was given on it (and its default privileges) stay. Nor is its one
 * table, time_zone_names (the zones the server knows, for known_time_zone), filled again with
 * each new layer; the server's version is part of the hash, so an upgraded server refills it.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { sql } from 'kysely';
import { ConfigError, packageRoot } from '../config/config.js';
import type { Db, Executor } from './types.js';
import { quoteIdent, quoteLiteral } from './sql-text.js';

export interface ReportingLayerOptions {
  /** The mirror's schema (config database.schema). */
  schema: string;
  /** The schema that holds the reporting views (config database.reportingSchema). */
  reportingSchema: string;
  /** The views' SQL to apply instead of migrations/reporting/views.sql (tests). */
  viewsSql?: string;
}

/** The file of the reporting views. */
export const reportingViewsFile = resolve(packageRoot, 'migrations', 'reporting', 'views.sql');

/** The views and functions a views file creates, by name. */
export function reportingObjects(text: string): { views: string[]; functions: string[] } {
  const views: string[] = [];
  const functions: string[] = [];
  for (const m of text.matchAll(/^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(VIEW|FUNCTION)\s+([a-z_][a-z0-9_]*)/gim)) {
    (m[1]!.toUpperCase() === 'VIEW' ? views : functions).push(m[2]!.toLowerCase());
  }
  return { views, functions };
}

/** The version of the layer: the file, the schemas it binds and the server it was applied on. */
export function reportingLayerHash(text: string, schema: string, reportingSchema: string, serverVersion: string): string {
  return createHash('sha256').update(`${schema}\n${reportingSchema}\n${serverVersion}\n${text}`).digest('hex');
}

const MARK = /\(layer ([0-9a-f]{64})\)/;

/**
 * The reporting schema is emptied of its views and functions whenever the layer changes: it must
 * be this mirror's, or new. Refused (exit 2) when it is another mirror's reporting schema (the two
 * would replace each other's views at every start), or holds what staysync did not make: tables
 * (another mirror's schema, or data of the database's own) or views and functions without the
 * layer's mark. The configuration has already refused the mirror's own schemas (src/config/config.ts).
 */
async function refuseOthersSchema(db: Executor, schema: string, reportingSchema: string): Promise<void> {
  const r = await sql<{ comment: string | null; tables: number; made: number }>`
    SELECT obj_description(n.oid, 'pg_namespace') AS comment,
           (SELECT count(*)::int FROM pg_class c WHERE c.relnamespace = n.oid AND c.relkind IN ('r', 'p', 'f') AND c.relname <> 'time_zone_names') AS tables,
           (SELECT count(*)::int FROM pg_class c WHERE c.relnamespace = n.oid AND c.relkind IN ('v', 'm'))
             + (SELECT count(*)::int FROM pg_proc p WHERE p.pronamespace = n.oid) AS made
      FROM pg_namespace n WHERE n.nspname = ${reportingSchema}`.execute(db);
  const x = r.rows[0];
  if (!x) return;
  const owner = OWNER.exec(x.comment ?? '')?.[1];
  const why =
    owner !== undefined && owner !== schema
      ? `the reporting schema of the mirror in schema ${owner}: the two mirrors would replace each other's views at every start`
      : x.tables > 0
        ? `a schema that holds ${x.tables} table${x.tables === 1 ? '' : 's'} (another mirror's schema, or data of the database's own)`
        : owner === undefined && x.made > 0
          ? `a schema that holds ${x.made} ${x.made === 1 ? 'view or function' : 'views or functions'} staysync did not make: they would be dropped`
          : undefined;
  if (why !== undefined)
    throw new ConfigError(
      `database.reportingSchema (STAYSYNC_REPORTING_SCHEMA) is ${reportingSchema}, ${why}. Give this mirror's reporting views a schema of their own (the default: reporting)`,
    );
}

/** Which mirror's reporting schema a schema is, by the comment applyReportingLayer writes on it. */
const OWNER = /^Reporting views of staysync over the mirror in schema "([^"]*)"/;

/**
 * Creates or updates the reporting views. Returns true when it (re)created them, false when
 * they were up to date.
 */
export async function applyReportingLayer(db: Db, opts: ReportingLayerOptions): Promise<boolean> {
  const { schema, reportingSchema } = opts;
  const text = opts.viewsSql ?? (await readFile(reportingViewsFile, 'utf8'));
  const { views } = reportingObjects(text);
  return db.transaction().execute(async (trx) => {
    // Two-key form: a key space apart from the schema lock's single-key lock.
    await sql`SELECT pg_advisory_xact_lock(hashtext('staysync reporting'), hashtext(${reportingSchema}))`.execute(trx);
    await refuseOthersSchema(trx, schema, reportingSchema);
    await sql`CREATE SCHEMA IF NOT EXISTS ${sql.id(reportingSchema)}`.execute(trx);
    // The server's version is part of the layer's: an upgraded server may know other time zones.
    const server = (await sql<{ v: string }>`SELECT current_setting('server_version_num') AS v`.execute(trx)).rows[0]!.v;
    const hash = reportingLayerHash(text, schema, reportingSchema, server);
    const zones = sql`${sql.id(reportingSchema)}.time_zone_names`;
    await sql`CREATE TABLE IF NOT EXISTS ${zones} (name text PRIMARY KEY)`.execute(trx);
    // A view missing, or run with its owner's rights (made by an earlier release), is the layer to make again.
    const state = await sql<{ comment: string | null; missing: number }>`
      SELECT obj_description(n.oid, 'pg_namespace') AS comment,
             (SELECT count(*)::int FROM unnest(${views}::text[]) AS v(name)
               WHERE NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.relnamespace = n.oid AND c.relname = v.name AND c.relkind = 'v'
                                    AND 'security_invoker=true' = ANY (c.reloptions))) AS missing
      FROM pg_namespace n WHERE n.nspname = ${reportingSchema}`.execute(trx);
    const row = state.rows[0];
    if (row && row.missing === 0 && MARK.exec(row.comment ?? '')?.[1] === hash) return false;

    // The time zones this server knows, as a table: known_time_zone looks a zone up here rather
    // than trying it in an exception block, which no query in parallel mode may run (reading
    // pg_timezone_names itself takes some 50 ms a query). Filled again with every new layer.
    await sql`
      WITH known AS MATERIALIZED (SELECT DISTINCT name FROM pg_timezone_names),
      gone AS (DELETE FROM ${zones} t WHERE NOT EXISTS (SELECT 1 FROM known k WHERE k.name = t.name))
      INSERT INTO ${zones} (name) SELECT name FROM known ON CONFLICT (name) DO NOTHING`.execute(trx);
    const zonesComment =
      "The time zones this PostgreSQL server knows (pg_timezone_names), filled by staysync when it applies the reporting layer: what known_time_zone looks a property's zone up in.";
    await sql.raw(`COMMENT ON TABLE ${quoteIdent(reportingSchema)}.time_zone_names IS ${quoteLiteral(zonesComment)}`).execute(trx);

    await sql`SET LOCAL search_path TO ${sql.id(reportingSchema)}, ${sql.id(schema)}, public`.execute(trx);
    const old = await sql<{ kind: string; name: string }>`
      SELECT 'view' AS kind, format('%I.%I', n.nspname, c.relname) AS name
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = ${reportingSchema} AND c.relkind = 'v'
      UNION ALL
      SELECT 'function', format('%I.%I(%s)', n.nspname, p.proname, pg_get_function_identity_arguments(p.oid))
        FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
       WHERE n.nspname = ${reportingSchema} AND p.prokind = 'f'`.execute(trx);
    const oldViews = old.rows.filter((r) => r.kind === 'view').map((r) => r.name);
    const oldFunctions = old.rows.filter((r) => r.kind === 'function').map((r) => r.name);
    if (oldViews.length > 0) await sql.raw(`DROP VIEW IF EXISTS ${oldViews.join(', ')} CASCADE`).execute(trx);
    if (oldFunctions.length > 0) await sql.raw(`DROP FUNCTION IF EXISTS ${oldFunctions.join(', ')} CASCADE`).execute(trx);
    await sql.raw(text).execute(trx);
    // Every view reads as the role that queries it, so that the row-level security of the tables
    // it reads applies to that role (src/store/reader-policy.ts): a view run with its owner's
    // rights reads as the owner, whom row-level security exempts. Set here, for every view the
    // file makes, rather than in each CREATE VIEW, so that no view can be added without it.
    const made = await sql<{ name: string }>`
      SELECT format('%I.%I', n.nspname, c.relname) AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = ${reportingSchema} AND c.relkind = 'v'`.execute(trx);
    for (const v of made.rows) await sql.raw(`ALTER VIEW ${v.name} SET (security_invoker = true)`).execute(trx);
    const comment =
      `Reporting views of staysync over the mirror in schema "${schema}" (see docs/tables-and-reporting.md). ` +
      `staysync replaces the views and functions of this schema when their definition changes: keep your own objects elsewhere. (layer ${hash})`;
    await sql.raw(`COMMENT ON SCHEMA ${quoteIdent(reportingSchema)} IS ${quoteLiteral(comment)}`).execute(trx);
    return true;
  });
}
