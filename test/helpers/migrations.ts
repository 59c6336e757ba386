/** A schema migrated as an earlier release left it: the migrations up to one of them only. */
import { cpSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { PostgresDialect } from 'kysely';
import { migrateToLatest } from '../../src/store/migrator.js';
import type { Harness } from './harness.js';

/** Migrates the harness's schema with the migrations up to `last` (a file name) only, as that release did. */
export async function migrateUpTo(harness: Pick<Harness, 'dbUrl' | 'schema'>, last: string): Promise<void> {
  const folder = mkdtempSync(join(tmpdir(), 'staysync-migrations-'));
  for (const f of readdirSync(resolve('migrations')).filter((f) => f.endsWith('.sql') && f <= last)) cpSync(resolve('migrations', f), join(folder, f));
  const pool = new pg.Pool({ connectionString: harness.dbUrl, max: 1 });
  try {
    await migrateToLatest(new PostgresDialect({ pool }), harness.schema, folder);
  } finally {
    await pool.end();
  }
}
