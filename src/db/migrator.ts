/**
 * Forward-only migrations: the `.sql` files in `migrations/`, in name order, run by kysely's
 * Migrator (which records them in kysely_migration and holds a lock while it runs). Each
 * file runs with search_path set to the configured schema, so files use unqualified names.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Migrator, sql, type Kysely, type Migration, type MigrationProvider, type MigrationResultSet } from 'kysely';

class SqlFileMigrationProvider implements MigrationProvider {
  constructor(
    private readonly folder: string,
    private readonly schema: string,
  ) {}

  async getMigrations(): Promise<Record<string, Migration>> {
    const files = (await readdir(this.folder)).filter((f) => f.endsWith('.sql')).sort();
    const migrations: Record<string, Migration> = {};
    for (const file of files) {
      const text = await readFile(join(this.folder, file), 'utf8');
      migrations[file.replace(/\.sql$/, '')] = {
        up: async (db) => {
          await sql`SET LOCAL search_path TO ${sql.id(this.schema)}, public`.execute(db);
          await sql.raw(text).execute(db);
        },
      };
    }
    return migrations;
  }
}

export class MigrationError extends Error {
  override name = 'MigrationError';
}

/** Creates the schema if needed and applies every pending migration. Returns the names applied. */
export async function migrateToLatest(db: Kysely<any>, schema: string, folder: string): Promise<string[]> {
  await sql`CREATE SCHEMA IF NOT EXISTS ${sql.id(schema)}`.execute(db);
  const migrator = new Migrator({
    db,
    provider: new SqlFileMigrationProvider(folder, schema),
    migrationTableSchema: schema,
  });
  const { error, results }: MigrationResultSet = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error) {
    const which = failed ? ` in ${failed.migrationName}` : '';
    throw new MigrationError(`database migration failed${which}: ${(error as Error).message ?? String(error)}`, { cause: error });
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
