/**
 * The database for tests: the server test/global-setup.ts chose (DATABASE_URL as given, or the
 * container or embedded server it started and exported as DATABASE_URL). Every test gets a
 * schema of its own, so test files run in parallel without seeing each other.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { exactTypes } from '../../src/store/database.js';
import { readableSchemaOf, secretSchemaOf } from '../../src/config/schema-names.js';

/** URL of the PostgreSQL server the tests use. */
export async function testDatabaseUrl(): Promise<string> {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is not set: the tests run under vitest, whose global setup (test/global-setup.ts) provides a server');
  return url;
}

/** A fresh, unique schema name; dropped by `dropSchema`. */
export function uniqueSchema(prefix = 't'): string {
  return `${prefix}_${randomBytes(5).toString('hex')}`;
}

/** The reporting schema that goes with a test's mirror schema (tests must not share `reporting`). */
export function reportingSchemaOf(schema: string): string {
  return `${schema}_reporting`;
}

/** Drops a test's mirror schema, its reporting schema and the schemas staysync names after it. */
export async function dropSchema(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${reportingSchemaOf(schema)}" CASCADE`);
    await client.query(`DROP SCHEMA IF EXISTS "${readableSchemaOf(schema)}" CASCADE`);
    await client.query(`DROP SCHEMA IF EXISTS "${secretSchemaOf(schema)}" CASCADE`);
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
}

/** Runs one statement on the server of `serverUrl` (in its database), on a connection of its own. */
export async function onServer(serverUrl: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

/** The URL of database `name` on the server of `serverUrl`. */
export function databaseUrlOf(serverUrl: string, name: string): string {
  const u = new URL(serverUrl);
  u.pathname = `/${name}`;
  return u.toString();
}

/**
 * A database of its own on the test server (for what a schema cannot hold: a restored dump, whose
 * schema names are its own), and how to drop it (connections still open to it are ended).
 */
export async function createScratchDatabase(serverUrl: string, prefix: string): Promise<{ name: string; url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${randomBytes(5).toString('hex')}`;
  await onServer(serverUrl, `CREATE DATABASE "${name}"`);
  return { name, url: databaseUrlOf(serverUrl, name), drop: () => onServer(serverUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`) };
}

/**
 * Connections for a test's assertions in `schema`, with the search path of the daemon's (its
 * secret schema too). A connection that breaks (a test restarts its server) is dropped and the
 * next query opens another.
 */
export function assertionPool(url: string, schema: string): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    options: `-c search_path=${schema},${secretSchemaOf(schema)},public`,
    types: exactTypes,
    max: 2,
    idleTimeoutMillis: 5_000,
  });
  // An idle connection the server ended: the pool drops it; nothing to report.
  pool.on('error', () => undefined);
  return pool;
}

/** Runs one query against the test server in `schema` (for assertions), as the daemon's connections do (its secret schema on the path). */
export async function query<T extends pg.QueryResultRow = Record<string, unknown>>(
  url: string,
  schema: string,
  text: string,
  params: unknown[] = [],
): Promise<T[]> {
  const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema},${secretSchemaOf(schema)},public`, types: exactTypes });
  await client.connect();
  try {
    return (await client.query<T>(text, params)).rows;
  } finally {
    await client.end();
  }
}
