/**
 * Connecting as a reader role, and looking at the mirror as a BI tool does (Superset, pandas,
 * Metabase): list the schemas the role may use, the relations in them and their columns from
 * the catalog, then read every column listed.
 */
import pg from 'pg';
import type { Harness } from './harness.js';

/** A client connected as `role` with its password (the test server may also trust local connections). */
export async function connectAs(url: string, role: string, password: string, searchPath?: string): Promise<pg.Client> {
  const u = new URL(url);
  u.username = role;
  u.password = password;
  const client = new pg.Client({ connectionString: u.toString(), ...(searchPath ? { options: `-c search_path=${searchPath}` } : {}) });
  await client.connect();
  return client;
}

/** The SQL state of the error `p` ends with (or its message), undefined when it succeeds. */
export async function errorCode(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    return (err as { code?: string }).code ?? (err as Error).message;
  }
}

export interface Reflection {
  /** The schemas the role has USAGE on (system schemas and `public` aside). */
  schemas: string[];
  /** Every table, view, materialized view, partitioned or foreign table in them, as schema.name. */
  relations: string[];
  /** Each relation whose listed columns could not all be read, with the error. */
  unreadable: string[];
}

const q = (name: string) => `"${name.replaceAll('"', '""')}"`;

/**
 * What a BI tool's reflection finds and reads as the connected role. `public` is left out: the
 * test database is shared, and staysync creates nothing there.
 */
export async function reflect(client: pg.Client): Promise<Reflection> {
  const schemas = (
    await client.query<{ name: string }>(
      `SELECT n.nspname AS name FROM pg_namespace n
        WHERE has_schema_privilege(n.oid, 'USAGE')
          AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'public')
          AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp\\_%'
        ORDER BY 1`,
    )
  ).rows.map((r) => r.name);
  const listed = (
    await client.query<{ schema: string; name: string; columns: string[] }>(
      `SELECT n.nspname AS schema, c.relname AS name, array_agg(a.attname::text ORDER BY a.attnum) AS columns
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
        WHERE n.nspname = ANY($1) AND c.relkind IN ('r', 'v', 'm', 'p', 'f')
        GROUP BY 1, 2 ORDER BY 1, 2`,
      [schemas],
    )
  ).rows;
  const unreadable: string[] = [];
  for (const r of listed) {
    const text = `SELECT ${r.columns.map(q).join(', ')} FROM ${q(r.schema)}.${q(r.name)} LIMIT 1`;
    const error = await errorCode(client.query(text));
    if (error !== undefined) unreadable.push(`${r.schema}.${r.name}: ${error}`);
  }
  return { schemas, relations: listed.map((r) => `${r.schema}.${r.name}`), unreadable };
}

/** Drops reader roles a test made, with what they own or were granted in the test's database. */
export async function dropRoles(sql: (text: string) => Promise<unknown>, roles: string[]): Promise<void> {
  for (const role of roles.splice(0)) {
    await sql(`DROP OWNED BY ${q(role)}`).catch(() => undefined);
    await sql(`DROP ROLE IF EXISTS ${q(role)}`);
  }
}

/** After a test: the reader roles it made dropped (roles are the server's, not the schema's), then its harness closed. */
export async function closeWithRoles(h: Harness | undefined, roles: string[]): Promise<void> {
  if (!h) return;
  await dropRoles((text) => h.sql(text), roles);
  await h.close();
}
