/**
 * The database for tests: DATABASE_URL when set (CI and developer machines with a local
 * PostgreSQL), otherwise one PostgreSQL container per test run via testcontainers. Every
 * test gets a schema of its own, so test files run in parallel without seeing each other.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { exactTypes } from '../../src/db/database.js';

let containerUrl: Promise<string> | undefined;

async function startContainer(): Promise<string> {
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  const container = await new PostgreSqlContainer('postgres:15-alpine').start();
  return container.getConnectionUri();
}

/** URL of the PostgreSQL server the tests use. */
export async function testDatabaseUrl(): Promise<string> {
  if (process.env.DATABASE_URL) return process.env.DATABASE_URL;
  containerUrl ??= startContainer();
  return containerUrl;
}

/** A fresh, unique schema name; dropped by `dropSchema`. */
export function uniqueSchema(prefix = 't'): string {
  return `${prefix}_${randomBytes(5).toString('hex')}`;
}

export async function dropSchema(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

/** Runs one query against the test server in `schema` (for assertions). */
export async function query<T extends pg.QueryResultRow = Record<string, unknown>>(
  url: string,
  schema: string,
  text: string,
  params: unknown[] = [],
): Promise<T[]> {
  const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema},public`, types: exactTypes });
  await client.connect();
  try {
    return (await client.query<T>(text, params)).rows;
  } finally {
    await client.end();
  }
}
