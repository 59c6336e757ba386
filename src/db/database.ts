/**
 * The database handle: kysely over a pg pool when DATABASE_URL is configured, over embedded
 * PGlite otherwise. Every connection works in the configured schema (search_path), so
 * repositories and migrations use unqualified table names.
 */
import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { packageRoot, type Config } from '../config.js';
import type { Logger } from '../log.js';
import { migrateToLatest } from './migrator.js';
import type { Database } from './schema.js';

export type Db = Kysely<Database>;

export interface DatabaseHandle {
  readonly db: Db;
  readonly kind: 'postgres' | 'pglite';
  readonly schema: string;
  /** Applies pending migrations; returns their names. */
  migrate(): Promise<string[]>;
  /**
   * Takes the schema's advisory lock on a dedicated session, so that two daemons never sync
   * into one schema at once. Returns false when another process holds it. The lock is freed
   * when the handle closes or the process dies (the server ends the session).
   */
  tryLease(): Promise<boolean>;
  close(): Promise<void>;
}

/** Parsers that keep exact values: numeric and int8 as text, local dates and times as text. */
export const exactTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    switch (oid) {
      case pg.types.builtins.NUMERIC:
      case pg.types.builtins.INT8:
      case pg.types.builtins.DATE:
      case pg.types.builtins.TIMESTAMP:
        return (v: string) => v;
      default:
        return pg.types.getTypeParser(oid, format as 'text');
    }
  },
};

export async function openDatabase(config: Config, logger: Logger): Promise<DatabaseHandle> {
  const { schema, url } = config.database;
  const migrationsFolder = resolve(packageRoot, 'migrations');
  if (url) {
    const connection = {
      connectionString: url,
      options: `-c search_path=${schema},public`,
      types: exactTypes,
      application_name: 'staysync',
    };
    const pool = new pg.Pool({ ...connection, max: config.database.poolSize });
    pool.on('error', (err) => logger.warn({ err: err.message }, 'idle database connection failed'));
    const dialect = new PostgresDialect({ pool });
    const db = new Kysely<Database>({ dialect });
    let leaseClient: pg.Client | undefined;
    return {
      db,
      kind: 'postgres',
      schema,
      migrate: () => migrateToLatest(dialect, schema, migrationsFolder),
      async tryLease() {
        if (leaseClient) return true;
        const client = new pg.Client(connection);
        client.on('error', (err) => logger.error({ err: err.message }, 'lease connection lost'));
        await client.connect();
        const r = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS ok', [`staysync:${schema}`]);
        if (r.rows[0]?.ok) {
          leaseClient = client;
          return true;
        }
        await client.end();
        return false;
      },
      async close() {
        await db.destroy();
        await leaseClient?.end().catch(() => undefined);
        leaseClient = undefined;
      },
    };
  }

  const dataDir = resolve(config.database.dataDir);
  await mkdir(dataDir, { recursive: true });
  logger.info({ dataDir }, 'no DATABASE_URL: using the embedded database');
  // Loaded only when used: the embedded engine is large, and a daemon on PostgreSQL never needs it.
  const { openPglite, pgliteDialect } = await import('./pglite-dialect.js');
  const pglite = await openPglite(dataDir);
  await pglite.exec(`CREATE SCHEMA IF NOT EXISTS "${schema}"; SET search_path TO "${schema}", public;`);
  const dialect = pgliteDialect(pglite);
  const db = new Kysely<Database>({ dialect });
  return {
    db,
    kind: 'pglite',
    schema,
    migrate: () => migrateToLatest(dialect, schema, migrationsFolder),
    // One process owns an embedded data directory; there is no second session to exclude.
    tryLease: async () => true,
    async close() {
      await db.destroy();
      await pglite.close();
    },
  };
}

/** Runs `SELECT 1` — for readiness checks. */
export async function ping(db: Db): Promise<void> {
  await sql`SELECT 1`.execute(db);
}

/** Runs one SQL text as it is (the demo's example reports). */
export async function rawQuery(db: Db, text: string): Promise<Record<string, unknown>[]> {
  return (await sql.raw<Record<string, unknown>>(text).execute(db)).rows;
}
