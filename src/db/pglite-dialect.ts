/**
 * Kysely over embedded PGlite (the default when no DATABASE_URL is configured). PGlite is a
 * single-connection, in-process Postgres, so this adapter hands kysely's PostgresDriver a
 * "pool" of exactly one connection: callers queue for it, and a transaction holds it until
 * commit. Type parsing is aligned with the pg pool in database.ts (numeric, int8, date and
 * timestamp as text), so repositories see the same values on both.
 */
import { PGlite, types } from '@electric-sql/pglite';
import { PostgresDialect } from 'kysely';

type QueryResult = { command: string; rowCount: number; rows: unknown[] };

interface SingleConnection {
  query(sql: string, params?: readonly unknown[]): Promise<QueryResult>;
  release(): void;
}

const textParsers = {
  [types.NUMERIC]: (v: string) => v,
  [types.INT8]: (v: string) => v,
  [types.DATE]: (v: string) => v,
  [types.TIMESTAMP]: (v: string) => v,
};

export async function openPglite(dataDir: string): Promise<PGlite> {
  return PGlite.create(dataDir, { parsers: textParsers });
}

/** A kysely dialect whose single connection is `pglite`. */
export function pgliteDialect(pglite: PGlite): PostgresDialect {
  let tail: Promise<void> = Promise.resolve();
  const pool = {
    async connect(): Promise<SingleConnection> {
      let release!: () => void;
      const previous = tail;
      tail = new Promise<void>((resolve) => (release = resolve));
      await previous;
      return {
        async query(sql, params) {
          // Without parameters use the simple protocol, which (unlike a prepared statement)
          // accepts several statements: migration files are run this way.
          const r = params && params.length > 0 ? await pglite.query(sql, params as unknown[]) : (await pglite.exec(sql)).at(-1) ?? { rows: [] as unknown[] };
          const result = r as { rows: unknown[]; command?: string; affectedRows?: number };
          const command = (result.command ?? sql.trimStart().split(/\s/, 1)[0] ?? '').toUpperCase();
          return { command, rowCount: result.affectedRows ?? result.rows.length, rows: result.rows };
        },
        release,
      };
    },
    async end() {
      /* the PGlite instance is closed by its owner */
    },
  };
  // PostgresDialect only needs connect()/release()/query()/end() of a pg-like pool.
  return new PostgresDialect({ pool: pool as never });
}
