/**
 * A read-only role for reporting tools (`staysync grant-reader <role>`): reporting tools need
 * neither the daemon's role nor any write right. The role gets CONNECT on the database, USAGE
 * on the mirror and reporting schemas, SELECT on every table and view in them, and default
 * privileges so that tables and views created later (by later migrations, by the reporting
 * layer recreating its views) are readable too. Nothing else: it cannot insert, update,
 * delete, truncate or create in those schemas.
 *
 * Never the erasure key (SECRET_TABLES). Not the personal columns (src/store/personal-columns.ts), unless granted with
 * `--personal-data`: a table that has some is granted column by column, the others. Column
 * privileges do not cover a column a later migration adds, so the roles are recorded
 * (reader_grants) and their grants applied again after every migration
 * (reapplyReaderGrants).
 *
 * Default privileges apply to objects created by a given role: the one that owns each schema
 * (the daemon's role, which runs the migrations).
 *
 * The password goes to the server as a SCRAM verifier computed here, not as text: a server
 * that logs DDL (log_statement = ddl) or a failed statement keeps no usable password.
 */
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Db, Executor } from './types.js';
import { PERSONAL_COLUMNS } from './personal-columns.js';
import { DatabaseConfigurationError } from './errors.js';

export interface GrantReaderOptions {
  role: string;
  /** Sets (or changes) the role's password; when absent a new role gets a generated one. */
  password?: string | undefined;
  /** The schemas to read: the mirror's and the reporting layer's. */
  schemas: string[];
  /**
   * Also takes from an existing role every attribute beyond LOGIN (SUPERUSER, CREATEDB,
   * CREATEROLE, REPLICATION, BYPASSRLS): for the role staysync keeps itself, which must stay a
   * reader whatever was done to it meanwhile. A role the operator names keeps its attributes.
   */
  onlyLogin?: boolean;
  /** Also the personal columns (PERSONAL_COLUMNS): `grant-reader --personal-data`. */
  personalData?: boolean;
}

export interface GrantReaderResult {
  created: boolean;
  /** The password generated for a new role without STAYSYNC_READER_PASSWORD (shown once). */
  generatedPassword?: string;
  /** The schemas the role can read (those that exist). */
  schemas: string[];
}

const INSUFFICIENT_PRIVILEGE = '42501';

/** Tables no reader may read, --personal-data or not (migrations/0016_erasure.sql). */
export const SECRET_TABLES: readonly string[] = ['erasure_key'];

export async function grantReader(db: Db, opts: GrantReaderOptions): Promise<GrantReaderResult> {
  const { role } = opts;
  try {
    return await db.transaction().execute(async (trx) => {
      const exists = await sql<{ n: number }>`SELECT 1 AS n FROM pg_roles WHERE rolname = ${role}`.execute(trx);
      const created = exists.rows.length === 0;
      const generatedPassword = created && opts.password === undefined ? randomBytes(18).toString('base64url') : undefined;
      const password = opts.password ?? generatedPassword;
      if (created) await sql`CREATE ROLE ${sql.id(role)} LOGIN`.execute(trx);
      if (opts.onlyLogin) await sql`ALTER ROLE ${sql.id(role)} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS`.execute(trx);
      // PASSWORD takes a literal, not a parameter.
      if (password !== undefined) await sql`ALTER ROLE ${sql.id(role)} PASSWORD ${sql.lit(storedPassword(password))}`.execute(trx);
      await sql`GRANT CONNECT ON DATABASE ${sql.id(await currentDatabase(trx))} TO ${sql.id(role)}`.execute(trx);
      const owners = await sql<{ schema: string; owner: string }>`
        SELECT n.nspname AS schema, pg_get_userbyid(n.nspowner) AS owner
          FROM pg_namespace n WHERE n.nspname = ANY(${opts.schemas})`.execute(trx);
      for (const { schema, owner } of owners.rows) {
        await sql`GRANT USAGE ON SCHEMA ${sql.id(schema)} TO ${sql.id(role)}`.execute(trx);
        await sql`ALTER DEFAULT PRIVILEGES FOR ROLE ${sql.id(owner)} IN SCHEMA ${sql.id(schema)} GRANT SELECT ON TABLES TO ${sql.id(role)}`.execute(trx);
      }
      const schemas = opts.schemas.filter((s) => owners.rows.some((r) => r.schema === s));
      await grantSelect(trx, role, schemas, opts.personalData === true);
      await sql`INSERT INTO reader_grants (role, personal_data) VALUES (${role}, ${opts.personalData === true})
                ON CONFLICT (role) DO UPDATE SET personal_data = excluded.personal_data, granted_at = now()`.execute(trx);
      return { created, schemas, ...(generatedPassword ? { generatedPassword } : {}) };
    });
  } catch (err) {
    if ((err as { code?: string }).code === INSUFFICIENT_PRIVILEGE) {
      throw new DatabaseConfigurationError(
        `the database role of DATABASE_URL may not create or grant the role ${role} (${(err as Error).message}): run grant-reader with a role that has CREATEROLE and owns the staysync schemas (the one the daemon uses), or a superuser`,
        { cause: err },
      );
    }
    throw err;
  }
}

/**
 * SELECT on every table and view of `schemas`; without `personalData`, on the tables that have
 * personal columns only their other columns (a SELECT naming a personal column, or `*`, is
 * refused with "permission denied").
 */
async function grantSelect(trx: Executor, role: string, schemas: readonly string[], personalData: boolean): Promise<void> {
  for (const schema of schemas) {
    await sql`GRANT SELECT ON ALL TABLES IN SCHEMA ${sql.id(schema)} TO ${sql.id(role)}`.execute(trx);
    // The secrets of the mirror, never: with the erasure key, the erasure list's hashes could be tested against guesses.
    const secrets = await sql<{ table: string }>`SELECT c.relname AS table FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = ${schema} AND c.relname = ANY(${SECRET_TABLES})`.execute(trx);
    for (const { table } of secrets.rows) await sql`REVOKE ALL ON ${sql.id(schema, table)} FROM ${sql.id(role)}`.execute(trx);
    if (personalData) continue;
    const tables = await sql<{ table: string; columns: string[] }>`
      SELECT c.relname AS table, array_agg(a.attname::text ORDER BY a.attnum) AS columns
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
       WHERE n.nspname = ${schema} AND c.relkind IN ('r', 'p') AND c.relname = ANY(${Object.keys(PERSONAL_COLUMNS)})
       GROUP BY c.relname`.execute(trx);
    for (const { table, columns } of tables.rows) {
      const personal = PERSONAL_COLUMNS[table]!;
      const others = columns.filter((c) => !personal.includes(c));
      await sql`REVOKE SELECT ON ${sql.id(schema, table)} FROM ${sql.id(role)}`.execute(trx);
      await sql`GRANT SELECT (${sql.join(others.map((c) => sql.id(c)))}) ON ${sql.id(schema, table)} TO ${sql.id(role)}`.execute(trx);
    }
  }
}

/**
 * The grants of every role grant-reader recorded, applied again (after a migration, which may
 * have added columns that column privileges do not cover yet). A role dropped meanwhile is
 * forgotten. Returns the roles granted.
 */
export async function reapplyReaderGrants(db: Db, schemas: readonly string[]): Promise<string[]> {
  return db.transaction().execute(async (trx) => {
    const recorded = await sql<{ role: string; personal_data: boolean; exists: boolean }>`
      SELECT g.role, g.personal_data, EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = g.role) AS exists
        FROM reader_grants g ORDER BY g.role`.execute(trx);
    const existing = await sql<{ schema: string }>`SELECT nspname AS schema FROM pg_namespace WHERE nspname = ANY(${schemas})`.execute(trx);
    const present = schemas.filter((s) => existing.rows.some((r) => r.schema === s));
    const granted: string[] = [];
    for (const g of recorded.rows) {
      if (!g.exists) {
        await sql`DELETE FROM reader_grants WHERE role = ${g.role}`.execute(trx);
        continue;
      }
      await grantSelect(trx, g.role, present, g.personal_data);
      granted.push(g.role);
    }
    return granted;
  });
}

export async function roleExists(db: Db, role: string): Promise<boolean> {
  const r = await sql<{ n: number }>`SELECT 1 AS n FROM pg_roles WHERE rolname = ${role}`.execute(db);
  return r.rows.length > 0;
}

async function currentDatabase(db: Db): Promise<string> {
  return (await sql<{ name: string }>`SELECT current_database() AS name`.execute(db)).rows[0]!.name;
}

/**
 * The database URL with the reader's name and without any password (neither the daemon's nor
 * the reader's): what may be printed. Other parameters (sslmode) stay, as tools need them.
 */
export function readerUrl(url: string, role: string): string {
  try {
    const u = new URL(url);
    u.username = role;
    u.password = '';
    u.searchParams.delete('password');
    u.searchParams.delete('sslpassword');
    return u.toString();
  } catch {
    return `(the URL of DATABASE_URL with user ${role} and without password)`;
  }
}

/** PostgreSQL's default for a new verifier (scram_iterations). */
const SCRAM_ITERATIONS = 4096;

/**
 * What ALTER ROLE … PASSWORD receives: a SCRAM-SHA-256 verifier (RFC 5802, as PostgreSQL
 * stores it) for a password of printable ASCII, on which SASLprep changes nothing; any other
 * password as text, for the server to normalise as its clients will.
 */
export function storedPassword(password: string): string {
  if (!/^[\x20-\x7e]+$/.test(password)) return password;
  const salt = randomBytes(16);
  const salted = pbkdf2Sync(password, salt, SCRAM_ITERATIONS, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${SCRAM_ITERATIONS}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}
