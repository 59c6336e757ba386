/**
 * Forward-only migrations: the `.sql` files in `migrations/`, in name order, run by kysely's
 * Migrator (which records them in kysely_migration and holds a lock while it runs). Each
 * file runs with search_path set to the configured schema, so files use unqualified names.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  Kysely,
  Migrator,
  sql,
  type DatabaseIntrospector,
  type DatabaseMetadata,
  type Dialect,
  type Migration,
  type MigrationProvider,
  type MigrationResultSet,
  type SchemaMetadata,
  type TableMetadata,
} from 'kysely';
import { MigrationError } from './errors.js';
import { migrationNames } from './migration-files.js';

class SqlFileMigrationProvider implements MigrationProvider {
  constructor(
    private readonly folder: string,
    private readonly schema: string,
  ) {}

  async getMigrations(): Promise<Record<string, Migration>> {
    const migrations: Record<string, Migration> = {};
    for (const name of await migrationNames(this.folder)) {
      const text = await readFile(join(this.folder, `${name}.sql`), 'utf8');
      migrations[name] = {
        up: async (db) => {
          await sql`SET LOCAL search_path TO ${sql.id(this.schema)}, public`.execute(db);
          await sql.raw(text).execute(db);
        },
      };
    }
    return migrations;
  }
}

/**
 * Kysely's Postgres introspector lists the tables of every schema, checking privileges by
 * schema name; a schema dropped by someone else meanwhile makes that query fail (3F000).
 * The migrator only asks whether its own tables exist, so it looks at its own schema only.
 */
class SchemaScopedIntrospector implements DatabaseIntrospector {
  constructor(
    private readonly db: Kysely<any>,
    private readonly schema: string,
  ) {}

  async getSchemas(): Promise<SchemaMetadata[]> {
    const r = await sql<{ name: string }>`SELECT nspname AS name FROM pg_namespace WHERE nspname = ${this.schema}`.execute(this.db);
    return r.rows.map((row) => ({ name: row.name }));
  }

  async getTables(): Promise<TableMetadata[]> {
    const r = await sql<{ name: string; is_view: boolean }>`
      SELECT c.relname AS name, c.relkind = 'v' AS is_view
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = ${this.schema} AND c.relkind IN ('r', 'p', 'v')`.execute(this.db);
    return r.rows.map((row) => ({ name: row.name, schema: this.schema, isView: row.is_view, columns: [] }));
  }

  async getMetadata(): Promise<DatabaseMetadata> {
    return { tables: await this.getTables() };
  }
}

/** The same dialect (and so the same connection pool), with the schema-scoped introspector. */
function scopedDialect(inner: Dialect, schema: string): Dialect {
  return {
    createDriver: () => inner.createDriver(),
    createQueryCompiler: () => inner.createQueryCompiler(),
    createAdapter: () => inner.createAdapter(),
    createIntrospector: (db) => new SchemaScopedIntrospector(db, schema),
  };
}

/**
 * Creates the schema if needed and applies every pending migration. Returns the names applied.
 * `dialect` is the one the application's kysely instance uses: the migrator shares its pool
 * (the instance built here owns nothing and needs no destroy).
 */
export async function migrateToLatest(dialect: Dialect, schema: string, folder: string): Promise<string[]> {
  const db = new Kysely<any>({ dialect: scopedDialect(dialect, schema) });
  await sql`CREATE SCHEMA IF NOT EXISTS ${sql.id(schema)}`.execute(db);
  await refuseNewerSchema(db, schema, folder);
  const migrator = new Migrator({
    db,
    provider: new SqlFileMigrationProvider(folder, schema),
    migrationTableSchema: schema,
  });
  const { error, results }: MigrationResultSet = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error) {
    const which = failed ? ` in ${failed.migrationName}` : '';
    throw new MigrationError(`database migration failed${which}: ${error instanceof Error ? error.message : JSON.stringify(error)}`, { cause: error });
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/**
 * Migration files not applied yet in `schema`, read-only (no DDL, no lock): for commands such
 * as `status` that must not change the database. Null when the schema does not exist.
 */
export async function pendingMigrations(db: Kysely<any>, schema: string, folder: string): Promise<string[] | null> {
  const exists = await sql<{ n: string }>`SELECT count(*) AS n FROM pg_namespace WHERE nspname = ${schema}`.execute(db);
  if (Number(exists.rows[0]?.n ?? 0) === 0) return null;
  const files = await migrationNames(folder);
  const done = new Set(await appliedMigrations(db, schema));
  return files.filter((f) => !done.has(f));
}

/** The migrations recorded as applied in `schema` (none before its first migration). */
async function appliedMigrations(db: Kysely<any>, schema: string): Promise<string[]> {
  const table = await sql<{ n: string }>`
    SELECT count(*) AS n FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = ${schema} AND c.relname = 'kysely_migration'`.execute(db);
  if (Number(table.rows[0]?.n ?? 0) === 0) return [];
  const applied = await sql<{ name: string }>`SELECT name FROM ${sql.table(`${schema}.kysely_migration`)} ORDER BY name`.execute(db);
  return applied.rows.map((r) => r.name);
}

/**
 * Refuses a schema that a newer release migrated (it has migrations this release does not
 * know), with what to do instead: an older release cannot undo a newer one's migrations, so
 * going back is a restore of the backup made before the upgrade.
 */
async function refuseNewerSchema(db: Kysely<any>, schema: string, folder: string): Promise<void> {
  const known = await migrationNames(folder);
  const unknown = (await appliedMigrations(db, schema)).filter((m) => !known.includes(m));
  if (unknown.length === 0) return;
  throw new MigrationError(
    `the schema "${schema}" was migrated by a newer staysync (it has ${unknown.join(', ')}; this one knows migrations up to ${known.at(-1) ?? 'none'}): ` +
      'run that release or a newer one. Going back to an older release is a restore of the backup made before the upgrade (docs/operations.md, "Upgrade")',
  );
}
