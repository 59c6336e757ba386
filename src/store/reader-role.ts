/**
 * Read-only roles for reporting tools (`staysync grant-reader <role>`): reporting tools need
 * neither the daemon's role nor any write right. What a reader is shown and which rows it sees
 * is src/store/reader-policy.ts; here, who may be a reader and what it is granted:
 * - every reader: CONNECT on the database, USAGE on the readable schema (the mirror's tables as
 *   views without the personal columns) and on the reporting schema, SELECT on their views,
 *   and default privileges there, so views staysync makes again later are readable too;
 *   SELECT on the mirror's tables (column by column without their personal columns, src/store/personal-columns.ts),
 *   which those views read as the reader, but no USAGE on the mirror's schema;
 * - a reader granted `--personal-data`: USAGE on the mirror's schema and SELECT on every column;
 * - a reader scoped to properties (`--properties`): the same, and its row-level security
 *   policies show it those properties' rows only (reader_grants.properties; a reader of every
 *   property gets policies that show it every row);
 * - no reader: the erasure key's schema, any write, any default privilege in the mirror's schema
 *   (a table a later migration adds is granted after that migration, as the policy says).
 *
 * The readers are recorded (reader_grants) and granted again after every migration
 * (applyReaders): column privileges do not cover a column added later. That pass also brings
 * every other role that can read the mirror under the policy, such as the readers of a release
 * before reader_grants, which kept SELECT on every table through default privileges: each is
 * recorded as a reader without personal data, with a warning naming it and the fix; PUBLIC
 * loses every privilege there. Then it checks what no grant can fix (a reader that is a
 * superuser, or a member of a role that reads more) and says so.
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
import { escapeSentence, mirrorObjects, ownedObject, readerEscapes, type Escape, type MirrorObject } from './reader-escapes.js';
import { quoteIdent } from './sql-text.js';
import { applyReaderPolicy, applyReaderRows, dropReaderRows, readerRowsState, type ReaderRowsState } from './reader-policy.js';
import { readableSchemaOf, secretSchemaOf } from '../config/schema-names.js';

export interface ReaderSchemas {
  /** The mirror's schema (config database.schema). */
  schema: string;
  /** The reporting views' schema (config database.reportingSchema). */
  reportingSchema: string;
}

export interface GrantReaderOptions extends ReaderSchemas {
  role: string;
  /** Sets (or changes) the role's password; when absent a new role gets a generated one. */
  password?: string | undefined;
  /**
   * Also takes from an existing role every attribute beyond LOGIN (SUPERUSER, CREATEDB,
   * CREATEROLE, REPLICATION, BYPASSRLS): for the role staysync keeps itself, which must stay a
   * reader whatever was done to it meanwhile. A role the operator names keeps its attributes,
   * and is refused when they would let it read more than a reader.
   */
  onlyLogin?: boolean;
  /** Also the personal columns (PERSONAL_COLUMNS): `grant-reader --personal-data`. */
  personalData?: boolean;
  /**
   * The properties whose rows it sees (`--properties`); null: every property
   * (`--all-properties`); absent: as recorded (every property for a new role).
   */
  properties?: readonly string[] | null | undefined;
  /** The properties the configuration follows, known before the mirror has synced them. */
  configuredProperties?: readonly string[];
}

export interface GrantReaderResult {
  created: boolean;
  /** The password generated for a new role without STAYSYNC_READER_PASSWORD (shown once). */
  generatedPassword?: string;
  /** The schemas the role may use. */
  schemas: string[];
  /** The properties whose rows it sees; null: every property. */
  properties: string[] | null;
}

/** What grant-reader will not do, said in a sentence (exit status 2: the role named is the wrong one). */
export class ReaderRefusedError extends Error {
  override name = 'ReaderRefusedError';
}

/** grant-reader could not take a table's lock in time: nothing changed (exit status 1). */
export class ReaderBusyError extends Error {
  override name = 'ReaderBusyError';
}

const INSUFFICIENT_PRIVILEGE = '42501';
const LOCK_NOT_AVAILABLE = '55P03';
/** How long grant-reader waits for a table's lock (its policies) before it gives up, in seconds. */
const GRANT_LOCK_TIMEOUT_S = 10;

/** Readers and grant-reader, one at a time per mirror (catalog rows updated concurrently fail). */
async function lockReaders(db: Executor, schema: string): Promise<void> {
  await sql`SELECT pg_advisory_xact_lock(hashtext('staysync readers'), hashtext(${schema}))`.execute(db);
}

export async function grantReader(db: Db, opts: GrantReaderOptions): Promise<GrantReaderResult> {
  const { role, schema } = opts;
  try {
    return await db.transaction().execute(async (trx) => {
      await lockReaders(trx, schema);
      // A reader's policies take each table's lock for a moment: behind a long report, that
      // would hold up the daemon's writes while it waits. It waits so long, then says so.
      await sql`SET LOCAL lock_timeout = ${sql.lit(`${GRANT_LOCK_TIMEOUT_S}s`)}`.execute(trx);
      const exists = await sql<{ n: number }>`SELECT 1 AS n FROM pg_roles WHERE rolname = ${role}`.execute(trx);
      const created = exists.rows.length === 0;
      if (!created && opts.onlyLogin) await sql`ALTER ROLE ${sql.id(role)} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS`.execute(trx);
      if (!created) await refuseUnfit(trx, opts, role);
      const properties = await scopeOf(trx, opts);
      const generatedPassword = created && opts.password === undefined ? randomBytes(18).toString('base64url') : undefined;
      const password = opts.password ?? generatedPassword;
      if (created) await sql`CREATE ROLE ${sql.id(role)} LOGIN`.execute(trx);
      // PASSWORD takes a literal, not a parameter.
      if (password !== undefined) await sql`ALTER ROLE ${sql.id(role)} PASSWORD ${sql.lit(storedPassword(password))}`.execute(trx);
      await refuseForeignOwners(trx, opts);
      await applyReaderPolicy(trx, schema);
      const personalData = opts.personalData === true;
      await sql`INSERT INTO ${sql.id(schema, 'reader_grants')} (role, personal_data, properties) VALUES (${role}, ${personalData}, ${properties})
                ON CONFLICT (role) DO UPDATE SET personal_data = excluded.personal_data, properties = excluded.properties, granted_at = now()`.execute(trx);
      const schemas = await grantRole(trx, opts, role, personalData, properties);
      return { created, schemas, properties, ...(generatedPassword ? { generatedPassword } : {}) };
    });
  } catch (err) {
    if ((err as { code?: string }).code === LOCK_NOT_AVAILABLE) {
      throw new ReaderBusyError(
        `grant-reader waited ${GRANT_LOCK_TIMEOUT_S} s for a query on a table of the mirror to end (the role's row-level security policies need each table for a moment, and the daemon's writes would wait behind it): nothing was changed; run it again when the long query is done`,
        { cause: err },
      );
    }
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
 * A role that must not be a reader: the daemon's own (a grant would take its rights), or one
 * that can lift itself over a reader's grants (src/store/reader-escapes.ts). Refused, with what
 * to do.
 */
async function refuseUnfit(db: Executor, s: ReaderSchemas, role: string): Promise<void> {
  const r = await sql<{ owner: string; is_owner: boolean; is_self: boolean }>`
    SELECT pg_get_userbyid(n.nspowner) AS owner, r.oid = n.nspowner AS is_owner, r.rolname = current_user AS is_self
      FROM pg_roles r, pg_namespace n WHERE r.rolname = ${role} AND n.nspname = ${s.schema}`.execute(db);
  const x = r.rows[0];
  if (!x) return;
  const own = 'Give the reporting tool a role of its own: staysync grant-reader <new role>.';
  if (x.is_owner || x.is_self)
    throw new ReaderRefusedError(
      `${role} is the daemon’s own role (${x.is_owner ? `it owns the schema ${s.schema}` : 'DATABASE_URL connects as it'}): made a reader, it would lose its rights to write the mirror. ${own}`,
    );
  const escapes = (await readerEscapes(db, s, [role], await enrolledReaders(db, s.schema))).get(role);
  if (escapes)
    throw new ReaderRefusedError(
      `${escapeSentence(role, escapes)}. It could lift itself over any grant, so it cannot be a reader: run what the parentheses say first, or: ${own}`,
    );
}

/** The roles reader_grants lists. */
async function enrolledReaders(db: Executor, schema: string): Promise<string[]> {
  return (await sql<{ role: string }>`SELECT role FROM ${sql.id(schema, 'reader_grants')}`.execute(db)).rows.map((r) => r.role);
}

/** The properties the role will see: those asked for (each known to the mirror or the configuration), else as recorded. */
async function scopeOf(db: Executor, opts: GrantReaderOptions): Promise<string[] | null> {
  if (opts.properties === undefined) {
    const recorded = await sql<{
      properties: string[] | null;
    }>`SELECT properties FROM ${sql.id(opts.schema, 'reader_grants')} WHERE role = ${opts.role}`.execute(db);
    return recorded.rows[0]?.properties ?? null;
  }
  if (opts.properties === null) return null;
  const asked = [...new Set(opts.properties)];
  const unknown = await sql<{ id: string }>`
    SELECT p.id FROM unnest(${asked}::text[]) WITH ORDINALITY AS p(id, i)
     WHERE NOT EXISTS (SELECT 1 FROM ${sql.id(opts.schema, 'properties')} x WHERE x.property_id = p.id)
       AND NOT EXISTS (SELECT 1 FROM ${sql.id(opts.schema, 'sync_cursors')} x WHERE x.property_id = p.id)
       AND NOT (p.id = ANY (${[...(opts.configuredProperties ?? [])]}::text[]))
     ORDER BY p.i`.execute(db);
  if (unknown.rows.length > 0) {
    const held = await sql<{ id: string }>`
      SELECT property_id AS id FROM ${sql.id(opts.schema, 'properties')} UNION SELECT property_id FROM ${sql.id(opts.schema, 'sync_cursors')} ORDER BY 1 LIMIT 21`.execute(
      db,
    );
    const ids = held.rows.map((r) => r.id);
    const list = ids.length === 0 ? 'none yet' : ids.slice(0, 20).join(', ') + (ids.length > 20 ? ', …' : '');
    const first = unknown.rows[0]!.id;
    throw new ReaderRefusedError(
      `property ${first} is not in the mirror${unknown.rows.length > 1 ? ` (nor ${unknown.rows.length - 1} other of those given)` : ''}: ` +
        `neither its content nor the sync names it, and the configuration does not list it (a typo?). The mirror holds: ${list}`,
    );
  }
  return asked;
}

/** The relations and columns of the schemas readers are granted on, and their owner. */
interface ReaderCatalog {
  owner: string;
  /** Those of the four schemas (mirror, readable, reporting, secret) that exist. */
  present: string[];
  relations: { schema: string; name: string; columns: string[] }[];
}

async function readerCatalog(db: Executor, s: ReaderSchemas): Promise<ReaderCatalog> {
  const names = [s.schema, readableSchemaOf(s.schema), s.reportingSchema, secretSchemaOf(s.schema)];
  const schemas = await sql<{ name: string; owner: string }>`
    SELECT nspname AS name, pg_get_userbyid(nspowner) AS owner FROM pg_namespace WHERE nspname = ANY(${names}::text[])`.execute(db);
  const owner = schemas.rows.find((r) => r.name === s.schema)?.owner;
  if (!owner) throw new Error(`the schema ${s.schema} does not exist: migrate first`);
  // The relations GRANT … ON ALL TABLES covers (sequences aside).
  const relations = await sql<{ schema: string; name: string; columns: string[] }>`
    SELECT n.nspname AS schema, c.relname AS name,
           ARRAY(SELECT a.attname::text FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum) AS columns
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = ANY(${[s.schema, readableSchemaOf(s.schema), s.reportingSchema]}::text[]) AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
     ORDER BY 1, 2`.execute(db);
  return { owner, present: names.filter((n) => schemas.rows.some((r) => r.name === n)), relations: relations.rows };
}

/**
 * What the policy grants a reader (see the top of this file): USAGE on the schemas it is
 * shown, SELECT on their relations and on the mirror's tables (column by column where a table
 * has personal columns and the reader is not granted them), default privileges where staysync
 * makes its views again. Nothing else, and nothing in the secret schema.
 */
interface PlannedGrants {
  usage: string[];
  /** [schema, relation] read in full. */
  tables: [string, string][];
  /** [schema, relation, columns]: these columns only. */
  columns: [string, string, string[]][];
  /** Schemas whose tables made later by the owner the reader may read at once. */
  defaults: string[];
}

function plannedGrants(cat: ReaderCatalog, s: ReaderSchemas, personalData: boolean): PlannedGrants {
  const readable = readableSchemaOf(s.schema);
  const has = (x: string) => cat.present.includes(x);
  const plan: PlannedGrants = {
    usage: [personalData ? s.schema : null, readable, s.reportingSchema].filter((x): x is string => x !== null && has(x)),
    tables: [],
    columns: [],
    defaults: [readable, s.reportingSchema].filter(has),
  };
  for (const r of cat.relations) {
    const personal = r.schema === s.schema && !personalData ? (PERSONAL_COLUMNS[r.name] ?? []).filter((c) => r.columns.includes(c)) : [];
    if (personal.length === 0) plan.tables.push([r.schema, r.name]);
    else plan.columns.push([r.schema, r.name, r.columns.filter((c) => !personal.includes(c))]);
  }
  return plan;
}

/** The planned grants as lines, in the form heldPrivileges gives the privileges a role holds. */
function plannedLines(plan: PlannedGrants): string[] {
  return [
    ...plan.usage.map((x) => `schema ${x} USAGE`),
    ...plan.tables.map(([x, t]) => `table ${x}.${t} SELECT`),
    ...plan.columns.flatMap(([x, t, cs]) => cs.map((c) => `column ${x}.${t}.${c} SELECT`)),
    ...plan.defaults.map((x) => `default ${x} SELECT`),
  ].sort();
}

/**
 * Every privilege each role holds itself on the four schemas, their relations and columns, and
 * default privileges there, as lines by role. One query for every reader: pg_attribute is read
 * whole (column privileges are not indexed), which takes tens of milliseconds in a database of
 * many schemas.
 */
async function heldPrivileges(db: Executor, cat: ReaderCatalog): Promise<Map<string, string[]>> {
  const r = await sql<{ role: string; line: string }>`
    WITH ns AS (SELECT oid, nspname FROM pg_namespace WHERE nspname = ANY(${cat.present}::text[])),
    held AS (
      SELECT x.grantee, 'schema ' || n.nspname AS what, x.privilege_type, x.is_grantable
        FROM pg_namespace p JOIN ns n ON n.oid = p.oid, aclexplode(p.nspacl) x
      UNION ALL
      SELECT x.grantee, 'table ' || n.nspname || '.' || c.relname, x.privilege_type, x.is_grantable
        FROM pg_class c JOIN ns n ON n.oid = c.relnamespace, aclexplode(c.relacl) x
       WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
      UNION ALL
      SELECT x.grantee, 'column ' || n.nspname || '.' || c.relname || '.' || a.attname, x.privilege_type, x.is_grantable
        FROM pg_class c JOIN ns n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid, aclexplode(a.attacl) x
       WHERE a.attacl IS NOT NULL
      UNION ALL
      SELECT x.grantee, 'default ' || n.nspname || CASE WHEN d.defaclobjtype = 'r' THEN '' ELSE ' ' || d.defaclobjtype::text END, x.privilege_type, x.is_grantable
        FROM pg_default_acl d JOIN ns n ON n.oid = d.defaclnamespace, aclexplode(d.defaclacl) x
       WHERE d.defaclrole = (SELECT oid FROM pg_roles WHERE rolname = ${cat.owner})
    )
    SELECT r.rolname::text AS role, h.what || ' ' || h.privilege_type || CASE WHEN h.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END AS line
      FROM held h JOIN pg_roles r ON r.oid = h.grantee`.execute(db);
  const byRole = new Map<string, string[]>();
  for (const x of r.rows) {
    const lines = byRole.get(x.role);
    if (lines) lines.push(x.line);
    else byRole.set(x.role, [x.line]);
  }
  for (const lines of byRole.values()) lines.sort();
  return byRole;
}

/**
 * CONNECT on the database, where the role has it not (PUBLIC has it by default). The
 * database's privileges are one catalog row for every mirror in it: granted under a lock of the
 * database, so that readers of two mirrors granted at once do not fail with "tuple
 * concurrently updated".
 */
async function ensureConnect(db: Executor, role: string): Promise<void> {
  const connect = await sql<{ ok: boolean }>`SELECT has_database_privilege(${role}, current_database(), 'CONNECT') AS ok`.execute(db);
  if (connect.rows[0]?.ok) return;
  await sql`SELECT pg_advisory_xact_lock(hashtext('staysync readers'), hashtext(current_database()))`.execute(db);
  await sql`GRANT CONNECT ON DATABASE ${sql.id(await currentDatabase(db))} TO ${sql.id(role)}`.execute(db);
}

/**
 * Every privilege `role` holds on the four schemas, their relations and columns (revoking a
 * table's privilege revokes its column privileges too), and the owner's default privileges for
 * it there. CASCADE: a privilege it was given WITH GRANT OPTION (a grant by hand, or by an
 * earlier release) goes with those it passed on, which a plain REVOKE refuses to leave behind.
 */
async function revokeEverything(db: Executor, catalog: ReaderCatalog, role: string): Promise<void> {
  const id = sql.id(role);
  for (const x of catalog.present) {
    await sql`REVOKE ALL ON SCHEMA ${sql.id(x)} FROM ${id} CASCADE`.execute(db);
    await sql`REVOKE ALL ON ALL TABLES IN SCHEMA ${sql.id(x)} FROM ${id} CASCADE`.execute(db);
    await sql`ALTER DEFAULT PRIVILEGES FOR ROLE ${sql.id(catalog.owner)} IN SCHEMA ${sql.id(x)} REVOKE ALL ON TABLES FROM ${id} CASCADE`.execute(db);
  }
}

/**
 * The grants of one reader, from nothing, as the policy plans them, and its row-level security
 * policies. Returns the schemas it may use. `cat` is read again when absent.
 */
async function grantRole(
  db: Executor,
  s: ReaderSchemas,
  role: string,
  personalData: boolean,
  properties: readonly string[] | null,
  cat?: ReaderCatalog,
): Promise<string[]> {
  const catalog = cat ?? (await readerCatalog(db, s));
  const plan = plannedGrants(catalog, s, personalData);
  const id = sql.id(role);
  await ensureConnect(db, role);
  await revokeEverything(db, catalog, role);
  for (const x of plan.usage) await sql`GRANT USAGE ON SCHEMA ${sql.id(x)} TO ${id}`.execute(db);
  // The mirror's tables too: the readable and reporting views read them as the reader (they run
  // as their caller); with --personal-data it reads them itself.
  for (const x of [s.schema, ...plan.defaults]) await sql`GRANT SELECT ON ALL TABLES IN SCHEMA ${sql.id(x)} TO ${id}`.execute(db);
  for (const [x, t, cs] of plan.columns) {
    await sql`REVOKE SELECT ON ${sql.id(x, t)} FROM ${id}`.execute(db);
    if (cs.length > 0) await sql`GRANT SELECT (${sql.join(cs.map((c) => sql.id(c)))}) ON ${sql.id(x, t)} TO ${id}`.execute(db);
  }
  // The views staysync makes again (readable, reporting) are readable at once; nothing made
  // later in the mirror's schema is, until the grants after its migration.
  for (const x of plan.defaults)
    await sql`ALTER DEFAULT PRIVILEGES FOR ROLE ${sql.id(catalog.owner)} IN SCHEMA ${sql.id(x)} GRANT SELECT ON TABLES TO ${id}`.execute(db);
  await applyReaderRows(db, s.schema, role, properties);
  return plan.usage;
}

/**
 * A recorded reader after a migration: granted again from nothing only where what it holds
 * differs from the plan (a migration added a table or a column, a grant by hand, the
 * personal-data flag changed), since each GRANT and REVOKE rewrites catalog rows of every table
 * (0.35 s a reader: 17 s at every start with 50 readers); its policies made where they differ.
 * `now` is what the catalog holds, read once for every reader.
 */
async function regrantRole(
  db: Executor,
  s: ReaderSchemas,
  now: { cat: ReaderCatalog; held: Map<string, string[]>; rows: ReaderRowsState },
  role: string,
  personalData: boolean,
  properties: readonly string[] | null,
): Promise<void> {
  const wanted = plannedLines(plannedGrants(now.cat, s, personalData));
  const held = now.held.get(role) ?? [];
  if (wanted.length !== held.length || wanted.some((line, i) => line !== held[i])) {
    await grantRole(db, s, role, personalData, properties, now.cat);
    return;
  }
  await ensureConnect(db, role);
  await applyReaderRows(db, s.schema, role, properties, now.rows);
}

export interface ReadersApplied {
  /** The readers granted again. */
  granted: string[];
  /** What the policy changed (views, row-level security), for the log. */
  changed: string[];
  /** Each a sentence for the log: roles brought under the policy, and what no grant can fix. */
  warnings: string[];
}

/**
 * After every migration: the policy applied (src/store/reader-policy.ts), every role that can
 * read the mirror brought under it, every recorded reader granted again (a role dropped
 * meanwhile is forgotten), and what grants cannot fix named.
 */
export async function applyReaders(db: Db, s: ReaderSchemas): Promise<ReadersApplied> {
  return db.transaction().execute(async (trx) => {
    await lockReaders(trx, s.schema);
    await refuseForeignOwners(trx, s);
    const changed = await applyReaderPolicy(trx, s.schema);
    const warnings = await bringUnderPolicy(trx, s);
    const recorded = await sql<{ role: string; personal_data: boolean; properties: string[] | null; exists: boolean }>`
      SELECT g.role, g.personal_data, g.properties, EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = g.role) AS exists
        FROM ${sql.id(s.schema, 'reader_grants')} g ORDER BY g.role`.execute(trx);
    const granted: string[] = [];
    const cat = await readerCatalog(trx, s);
    const now = { cat, held: await heldPrivileges(trx, cat), rows: await readerRowsState(trx, s.schema) };
    const present = recorded.rows.filter((g) => g.exists).map((g) => g.role);
    // A reader given an attribute or a membership since it was granted (grant-reader refuses
    // such a role) could lift itself over its grants: it loses them until that is undone.
    const escapes = await readerEscapes(trx, s, present, present);
    for (const g of recorded.rows) {
      if (!g.exists) {
        await sql`DELETE FROM ${sql.id(s.schema, 'reader_grants')} WHERE role = ${g.role}`.execute(trx);
        continue;
      }
      const out = escapes.get(g.role);
      if (out) {
        await revokeEverything(trx, cat, g.role);
        await dropReaderRows(trx, s.schema, g.role, now.rows);
        warnings.push(
          `reader ${escapeSentence(g.role, out)}. It could lift itself over its grants, so it has lost them: once that is undone, ` +
            `the next start (or staysync grant-reader ${shellWord(g.role)}) grants it again`,
        );
        continue;
      }
      await regrantRole(trx, s, now, g.role, g.personal_data, g.properties);
      granted.push(g.role);
    }
    warnings.push(...(await readerProblems(trx, s)));
    // The daemon reads and writes every row only as the tables' owner (or a member of it), whom
    // row-level security exempts; any other role would see no row and write none.
    const subject = await sql<{ active: boolean }>`SELECT row_security_active(${`${s.schema}.bookings`}::regclass) AS active`.execute(trx);
    if (subject.rows[0]?.active)
      warnings.push(
        `the role of DATABASE_URL (${(await sql<{ u: string }>`SELECT current_user AS u`.execute(trx)).rows[0]!.u}) does not own the mirror's tables: row-level security shows it no row. Run staysync as the role that owns the schema ${s.schema}`,
      );
    return { granted, changed, warnings };
  });
}

/** The readers' policy cannot be applied as it stands: said in a sentence with the fix. */
export class ReaderPolicyError extends Error {
  override name = 'ReaderPolicyError';
}

/**
 * An object of the four schemas that another role owns is out of the policy's reach: its owner
 * reads it past row-level security and grants it to anyone, and the daemon can neither enable
 * row-level security on it nor revoke what that owner granted. Refused before anything changes.
 */
async function refuseForeignOwners(db: Executor, s: ReaderSchemas): Promise<void> {
  const names = [s.schema, readableSchemaOf(s.schema), secretSchemaOf(s.schema), s.reportingSchema];
  const r = await sql<MirrorObject & { by: string; owner: string }>`
    WITH owner AS (SELECT nspowner AS oid FROM pg_namespace WHERE nspname = ${s.schema})
    SELECT o.kind, o.schema, o.name, o.args, pg_get_userbyid(o.by)::text AS by, pg_get_userbyid((SELECT oid FROM owner))::text AS owner
      FROM (${mirrorObjects(names)}) o WHERE o.by <> (SELECT oid FROM owner) ORDER BY o.schema, o.name NULLS FIRST, o.args`.execute(db);
  if (r.rows.length === 0) return;
  const objects = r.rows.map((x) => ({ ...ownedObject(x, x.owner), by: x.by }));
  const first = objects[0]!;
  const others = objects.length - 1;
  throw new ReaderPolicyError(
    `${first.object} is owned by ${first.by}, not by the role that owns the mirror${others > 0 ? ` (and ${others} other object${others > 1 ? 's' : ''} of its schemas)` : ''}: ` +
      `its owner reads it past row-level security and grants it to anyone, and staysync can neither put it under the readers' policy nor revoke what was granted on it. ` +
      `As that owner or a superuser: ${objects
        .slice(0, 5)
        .map((x) => x.fix)
        .join('; ')}${objects.length > 5 ? '; …' : ''}`,
  );
}

/**
 * When the readers' policy cannot be applied (ReaderPolicyError, a catalog the daemon may not
 * change), the mirror is closed to every role but its owner rather than left to the grants of
 * before: USAGE on the four schemas is revoked from every role that holds it (with what it
 * passed on), so no table, view or function there can be named. The next migration that applies
 * the policy grants the readers again. Returns the roles that lost it; throws when even that
 * cannot be done (a schema another role owns): the daemon then stops.
 */
export async function closeToReaders(db: Db, s: ReaderSchemas): Promise<string[]> {
  return db.transaction().execute(async (trx) => {
    await lockReaders(trx, s.schema);
    const names = [s.schema, readableSchemaOf(s.schema), secretSchemaOf(s.schema), s.reportingSchema];
    const holders = await sql<{ schema: string; grantee: string | null }>`
      SELECT DISTINCT n.nspname AS schema, CASE WHEN x.grantee = 0 THEN NULL ELSE pg_get_userbyid(x.grantee)::text END AS grantee
        FROM pg_namespace n, aclexplode(n.nspacl) x
       WHERE n.nspname = ANY (${names}::text[]) AND x.grantee <> n.nspowner
       ORDER BY 1, 2`.execute(trx);
    for (const h of holders.rows)
      await sql`REVOKE ALL ON SCHEMA ${sql.id(h.schema)} FROM ${h.grantee === null ? sql.raw('PUBLIC') : sql.id(h.grantee)} CASCADE`.execute(trx);
    return [...new Set(holders.rows.map((h) => h.grantee ?? 'PUBLIC'))];
  });
}

/** A role's name as one word for a shell command line (grant-reader's names need no quotes). */
function shellWord(name: string): string {
  return /^[a-z_][a-z0-9_]*$/.test(name) ? name : `'${name.replaceAll("'", `'\\''`)}'`;
}

/**
 * Every role but the owner that holds a privilege on the mirror's, readable, secret or
 * reporting schemas, their tables or columns, or default privileges there (or the owner's for
 * every schema): PUBLIC loses them all; another role that can read a table and is not recorded
 * becomes a reader without personal data, of every property (then granted as one). Returns
 * the warnings naming each.
 */
async function bringUnderPolicy(db: Executor, s: ReaderSchemas): Promise<string[]> {
  const names = [s.schema, readableSchemaOf(s.schema), secretSchemaOf(s.schema), s.reportingSchema];
  const holders = await sql<{
    grantee: number;
    name: string;
    reads: boolean;
    here: boolean;
    everywhere: boolean;
    recorded: boolean;
    owner: string;
  }>`
    WITH ns AS (SELECT oid FROM pg_namespace WHERE nspname = ANY(${names}::text[])),
    owner AS (SELECT nspowner AS oid FROM pg_namespace WHERE nspname = ${s.schema}),
    acl AS (
      SELECT x.grantee, x.privilege_type, false AS everywhere FROM pg_namespace n, aclexplode(n.nspacl) x WHERE n.oid IN (SELECT oid FROM ns)
      UNION ALL
      SELECT x.grantee, x.privilege_type, false FROM pg_class c, aclexplode(c.relacl) x
       WHERE c.relnamespace IN (SELECT oid FROM ns) AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
      UNION ALL
      SELECT x.grantee, x.privilege_type, false FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid, aclexplode(a.attacl) x
       WHERE c.relnamespace IN (SELECT oid FROM ns) AND a.attacl IS NOT NULL
      UNION ALL
      -- Default privileges of the owner here, or for every schema (defaclnamespace 0).
      SELECT x.grantee, x.privilege_type, d.defaclnamespace = 0 FROM pg_default_acl d, aclexplode(d.defaclacl) x
       WHERE d.defaclobjtype = 'r' AND d.defaclrole = (SELECT oid FROM owner)
         AND (d.defaclnamespace IN (SELECT oid FROM ns) OR d.defaclnamespace = 0)
    )
    SELECT a.grantee::int AS grantee, COALESCE(r.rolname::text, 'PUBLIC') AS name, bool_or(a.privilege_type = 'SELECT') AS reads,
           bool_or(NOT a.everywhere) AS here, bool_or(a.everywhere) AS everywhere,
           EXISTS (SELECT 1 FROM ${sql.id(s.schema, 'reader_grants')} g WHERE g.role = r.rolname) AS recorded,
           pg_get_userbyid((SELECT oid FROM owner)) AS owner
      FROM acl a LEFT JOIN pg_roles r ON r.oid = a.grantee
     WHERE a.grantee <> (SELECT oid FROM owner)
     GROUP BY a.grantee, r.rolname, r.oid
     ORDER BY 2`.execute(db);
  const warnings: string[] = [];
  const candidates = holders.rows.filter((h) => h.grantee !== 0 && !h.recorded && h.reads).map((h) => h.name);
  const escapes = candidates.length === 0 ? new Map<string, Escape[]>() : await readerEscapes(db, s, candidates, await enrolledReaders(db, s.schema));
  const present = (await sql<{ name: string }>`SELECT nspname AS name FROM pg_namespace WHERE nspname = ANY(${names}::text[])`.execute(db)).rows.map(
    (r) => r.name,
  );
  for (const h of holders.rows) {
    // Default privileges for every schema are the owner's for other schemas of the database
    // too: not revoked here (a table a migration adds is granted as the policy says right after
    // it), but named with the command that ends them.
    const everywhere = `default privileges of ${h.owner} give ${h.name} SELECT on every table ${h.owner} creates in any schema: end them with ALTER DEFAULT PRIVILEGES FOR ROLE ${quoteIdent(h.owner)} REVOKE SELECT ON TABLES FROM ${h.grantee === 0 ? 'PUBLIC' : quoteIdent(h.name)}`;
    if (h.grantee === 0) {
      if (h.here) {
        for (const x of present) {
          await sql`REVOKE ALL ON SCHEMA ${sql.id(x)} FROM PUBLIC`.execute(db);
          await sql`REVOKE ALL ON ALL TABLES IN SCHEMA ${sql.id(x)} FROM PUBLIC`.execute(db);
          await sql`ALTER DEFAULT PRIVILEGES FOR ROLE ${sql.id(h.owner)} IN SCHEMA ${sql.id(x)} REVOKE ALL ON TABLES FROM PUBLIC`.execute(db);
        }
        warnings.push(
          `PUBLIC (every role of the server) had privileges on the schemas ${present.join(', ')}: revoked. Give each reporting tool a login of its own: staysync grant-reader <role>`,
        );
      }
      if (h.everywhere) warnings.push(everywhere);
      continue;
    }
    if (h.everywhere && h.reads) warnings.push(everywhere);
    if (h.recorded || !h.reads) continue;
    const out = escapes.get(h.name);
    if (out) {
      await revokeEverything(db, await readerCatalog(db, s), h.name);
      warnings.push(
        `role ${h.name} held grants on the mirror, and ${escapeSentence(h.name, out).slice(h.name.length + 1)}: it could lift itself over any grant, so its grants are revoked and it is not made a reader. ` +
          'Give the tool a role of its own: staysync grant-reader <new role>',
      );
      continue;
    }
    await sql`INSERT INTO ${sql.id(s.schema, 'reader_grants')} (role, personal_data, properties) VALUES (${h.name}, false, NULL) ON CONFLICT (role) DO NOTHING`.execute(
      db,
    );
    warnings.push(
      `role ${h.name} could read the mirror without being a reader of grant-reader (granted by an earlier release or by hand, it read every column and the erasure key): ` +
        `it is now a reader without personal data, of every property. If it needs the personal columns: staysync grant-reader ${shellWord(h.name)} --personal-data; ` +
        `to limit it to properties: staysync grant-reader ${shellWord(h.name)} --properties <ids>`,
    );
  }
  return warnings;
}

/**
 * What no grant fixes and no escape covers (src/store/reader-escapes.ts): readers that read more
 * than they were granted through a role they are a member of, each named with the fix.
 */
async function readerProblems(db: Executor, s: ReaderSchemas): Promise<string[]> {
  const secret = secretSchemaOf(s.schema);
  const tables = Object.keys(PERSONAL_COLUMNS);
  const columns = Object.values(PERSONAL_COLUMNS);
  const r = await sql<{ role: string; kind: 'secret' | 'member' | 'personal'; other: string | null }>`
    WITH personal AS (
      SELECT c.oid AS table_oid, c.relname AS t, a.attname AS col
        FROM unnest(${tables}::text[], ${columns.map((c) => `{${c.join(',')}}`)}::text[]) AS p(t, cols)
        JOIN pg_class c ON c.relname = p.t AND c.relnamespace = ${s.schema}::regnamespace
        JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = ANY (p.cols::text[]) AND NOT a.attisdropped
    )
    SELECT g.role, x.kind, x.other FROM ${sql.id(s.schema, 'reader_grants')} g JOIN pg_roles r ON r.rolname = g.role
    CROSS JOIN LATERAL (
      SELECT 'secret' AS kind, NULL::text AS other
       WHERE NOT r.rolsuper AND CASE WHEN to_regnamespace(${secret}) IS NULL THEN false ELSE has_schema_privilege(r.oid, ${secret}, 'USAGE') END
      UNION ALL
      SELECT 'member', o.role FROM ${sql.id(s.schema, 'reader_grants')} o JOIN pg_roles orr ON orr.rolname = o.role
       WHERE o.role <> g.role AND NOT r.rolsuper AND pg_has_role(r.oid, orr.oid, 'MEMBER')
      UNION ALL
      SELECT 'personal', string_agg(p.t || '.' || p.col, ', ' ORDER BY p.t, p.col)
        FROM personal p WHERE NOT g.personal_data AND NOT r.rolsuper AND has_column_privilege(r.oid, p.table_oid, p.col, 'SELECT')
      HAVING count(*) > 0
    ) x
    ORDER BY 1, 2, 3`.execute(db);
  return r.rows.map((x) => {
    switch (x.kind) {
      case 'secret':
        return `reader ${x.role} can read the erasure key's schema ${secret} through another role it is a member of: revoke that membership`;
      case 'member':
        return `reader ${x.role} is a member of the reader ${x.other}: it sees the rows and columns that reader sees too; REVOKE ${quoteIdent(x.other ?? '')} FROM ${quoteIdent(x.role)}`;
      case 'personal':
        return (
          `reader ${x.role} reads personal columns (${x.other}) without --personal-data, through another role it is a member of: ` +
          `revoke that membership, or staysync grant-reader ${shellWord(x.role)} --personal-data`
        );
    }
  });
}

export async function roleExists(db: Db, role: string): Promise<boolean> {
  const r = await sql<{ n: number }>`SELECT 1 AS n FROM pg_roles WHERE rolname = ${role}`.execute(db);
  return r.rows.length > 0;
}

async function currentDatabase(db: Executor): Promise<string> {
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

/** RFC 3454 table C.1.2: spaces other than U+0020, which SASLprep turns into one. */
const NON_ASCII_SPACES = new Set([0x00a0, 0x1680, ...range(0x2000, 0x200b), 0x202f, 0x205f, 0x3000]);
/** RFC 3454 table B.1: characters SASLprep drops (soft hyphen, joiners, variation selectors, …). */
const MAPPED_TO_NOTHING = new Set([0x00ad, 0x034f, 0x1806, 0x180b, 0x180c, 0x180d, 0x200b, 0x200c, 0x200d, 0x2060, ...range(0xfe00, 0xfe0f), 0xfeff]);

function range(first: number, last: number): number[] {
  return Array.from({ length: last - first + 1 }, (_, i) => first + i);
}

/** What SASLprep's mapping and normalisation (RFC 4013 §2.1, §2.2) make of a password. */
function saslMapped(password: string): string {
  let out = '';
  for (const ch of password) {
    const code = ch.codePointAt(0)!;
    if (MAPPED_TO_NOTHING.has(code)) continue;
    out += NON_ASCII_SPACES.has(code) ? ' ' : ch;
  }
  return out.normalize('NFKC');
}

/**
 * What ALTER ROLE … PASSWORD receives: a SCRAM-SHA-256 verifier (RFC 5802, as PostgreSQL stores
 * it), never the password, which a server that logs DDL (log_statement = ddl) or a failed
 * statement would keep. SCRAM hashes the password as SASLprep (RFC 4013) prepares it, and
 * PostgreSQL and its clients hash the password as given when SASLprep refuses it (a control
 * character, an unassigned code point, mixed directions). A password that SASLprep's mapping and
 * NFKC leave as they are is hashed the same both ways, so its verifier is exact whatever the
 * outcome: any printable password as typed, accents, other scripts. One they would change (a
 * non-breaking space, a soft hyphen, a full-width letter) could be hashed either way, and is
 * refused rather than stored with a verifier its clients might not match.
 */
export function storedPassword(password: string, salt: Buffer = randomBytes(16)): string {
  if (saslMapped(password) !== password)
    throw new ReaderRefusedError(
      'the password holds characters that PostgreSQL’s clients change before they use it (SASLprep, RFC 4013: a non-breaking or other special space, ' +
        'a soft hyphen or an invisible joiner, a full-width or other compatibility form of a letter), so a login could fail with the password given. ' +
        'Write it with plain spaces and ordinary letters',
    );
  const salted = pbkdf2Sync(Buffer.from(password, 'utf8'), salt, SCRAM_ITERATIONS, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  return `SCRAM-SHA-256$${SCRAM_ITERATIONS}:${salt.toString('base64')}$${storedKey.toString('base64')}:${serverKey.toString('base64')}`;
}
