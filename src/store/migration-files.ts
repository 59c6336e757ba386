/**
 * The release's migration files: where they are and their names. Apart from the migrator so
 * that `staysync --version` names the last one without loading the database libraries.
 */
import { readdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { packageRoot } from '../config/config.js';

/** The release's migrations (migrations/*.sql), applied in name order by `migrate()`. */
export const migrationsFolder = resolve(packageRoot, 'migrations');

/** The names of the migrations in `folder` (file names without `.sql`), in the order they apply. */
export async function migrationNames(folder: string): Promise<string[]> {
  return (await readdir(folder))
    .filter((f) => f.endsWith('.sql'))
    .map((f) => f.replace(/\.sql$/, ''))
    .sort();
}
