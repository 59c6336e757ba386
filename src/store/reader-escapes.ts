/**
 * Who cannot be a reader: a role that could lift itself over whatever a reader is granted
 * (issue 35, point 1). The grants and row-level security of src/store/reader-role.ts and
 * reader-policy.ts hold a role that can only use what it is given; these roles can take more:
 *
 * - a superuser reads everything; BYPASSRLS skips every row policy;
 * - CREATEROLE makes and changes roles: on PostgreSQL 15 it grants itself any role that is not a
 *   superuser (pg_read_all_data, the daemon's own) and changes another reader's password;
 * - REPLICATION streams the data files (pg_basebackup), past every grant;
 * - the owner's role reads and writes everything and is exempt from row-level security;
 * - pg_read_all_data, pg_write_all_data, pg_read_server_files, pg_write_server_files and
 *   pg_execute_server_program read or write every table, or the server's files (the database's
 *   own, its configuration), or run programs on the server;
 * - ADMIN OPTION over a reader or over the owner hands that role out, to itself first;
 * - owning a table, view, function or schema of the mirror: an owner is exempt from the
 *   table's row-level security and grants it to anyone.
 *
 * Each holds whether the role has it itself or through a role it is a member of (directly or not:
 * it can SET ROLE to it). Checked by grant-reader before it grants, and at every migration for
 * the readers already enrolled (an attribute can be added later): such a reader loses its grants.
 */
import { sql } from 'kysely';
import type { Executor } from './types.js';
import { readableSchemaOf, secretSchemaOf } from '../config/schema-names.js';
import { quoteIdent } from './sql-text.js';

/** The predefined roles whose members read or write more than any grant of a reader allows, and what each does. */
const ESCAPING_PREDEFINED_ROLES: Readonly<Record<string, string>> = {
  pg_read_all_data: 'reads every table and column',
  pg_write_all_data: 'writes every table',
  pg_read_server_files: 'reads the server’s files, the database’s own included',
  pg_write_server_files: 'writes the server’s files, its configuration included',
  pg_execute_server_program: 'runs programs on the server as its operating-system user',
};

/** One way out of the policy: what the role can do, and the command that closes it. */
export interface Escape {
  /** What it can do that a reader may not, as the end of a sentence about the role. */
  why: string;
  /** The SQL that ends it (identifiers quoted). */
  fix: string;
}

type Kind = 'superuser' | 'createrole' | 'bypassrls' | 'replication' | 'owner' | 'predefined' | 'admin' | 'owns';

interface EscapeRow {
  role: string;
  kind: Kind;
  /** The role that has the attribute, membership or option: the role itself or one it is a member of. */
  via: string;
  /** The object it owns (kind owns); for kind admin, objectName is the role that holds the option. */
  objectKind: string | null;
  objectSchema: string | null;
  objectName: string | null;
  objectArgs: string | null;
  /** The role's direct memberships through which it reaches `via` (empty when `via` is itself). */
  through: string[];
  /** The role that owns the mirror. */
  owner: string;
}

/**
 * The ways out of the policy of each of `roles` (those that exist), keyed by role; a role
 * without one is absent. `readers` are the enrolled readers (reader_grants), whose ADMIN OPTION
 * counts; `schema` is the mirror's (its owner and the four schemas come from it).
 */
export async function readerEscapes(
  db: Executor,
  s: { schema: string; reportingSchema: string },
  roles: readonly string[],
  readers: readonly string[],
): Promise<Map<string, Escape[]>> {
  const schemas = [s.schema, readableSchemaOf(s.schema), secretSchemaOf(s.schema), s.reportingSchema];
  const r = await sql<EscapeRow>`
    WITH owner AS (SELECT nspowner AS oid FROM pg_namespace WHERE nspname = ${s.schema}),
    guarded AS (SELECT oid FROM owner UNION SELECT oid FROM pg_roles WHERE rolname = ANY (${[...readers]}::text[])),
    objects AS (${mirrorObjects(schemas)}),
    candidate AS (SELECT oid, rolname, rolsuper, rolreplication FROM pg_roles WHERE rolname = ANY (${[...roles]}::text[])),
    -- Every role a candidate can act as: itself and each role it is a member of, directly or not.
    -- A superuser is a member of every role: it is named as a superuser only.
    reach AS (
      SELECT c.oid AS candidate, a.oid, a.rolname, a.rolsuper, a.rolcreaterole, a.rolbypassrls
        FROM candidate c JOIN pg_roles a ON pg_has_role(c.oid, a.oid, 'MEMBER')
       WHERE NOT c.rolsuper
    ),
    found AS (
      SELECT c.oid AS candidate, 'superuser' AS kind, c.oid AS via, NULL::text AS object_kind, NULL::text AS object_schema, NULL::text AS object_name, NULL::text AS object_args
        FROM candidate c WHERE c.rolsuper
      UNION ALL
      SELECT c.oid, 'replication', c.oid, NULL, NULL, NULL, NULL FROM candidate c WHERE c.rolreplication AND NOT c.rolsuper
      UNION ALL
      -- The owner's attributes are the owner's membership, named once as that.
      SELECT x.candidate, k.kind, x.oid, NULL, NULL, NULL, NULL FROM reach x
        CROSS JOIN LATERAL (VALUES ('superuser', x.rolsuper), ('createrole', x.rolcreaterole), ('bypassrls', x.rolbypassrls)) AS k(kind, has)
       WHERE k.has AND x.oid <> (SELECT oid FROM owner)
      UNION ALL
      SELECT x.candidate, 'owner', x.oid, NULL, NULL, NULL, NULL FROM reach x WHERE x.oid = (SELECT oid FROM owner)
      UNION ALL
      SELECT x.candidate, 'predefined', x.oid, NULL, NULL, NULL, NULL FROM reach x WHERE x.rolname = ANY (${Object.keys(ESCAPING_PREDEFINED_ROLES)}::text[])
      UNION ALL
      SELECT x.candidate, 'admin', m.roleid, NULL, NULL, pg_get_userbyid(m.member), NULL FROM reach x JOIN pg_auth_members m ON m.member = x.oid
       WHERE m.admin_option AND m.roleid IN (SELECT oid FROM guarded) AND m.roleid <> x.candidate AND x.oid <> (SELECT oid FROM owner)
      UNION ALL
      SELECT x.candidate, 'owns', x.oid, o.kind, o.schema, o.name, o.args FROM reach x JOIN objects o ON o.by = x.oid
       WHERE x.oid <> (SELECT oid FROM owner)
    )
    SELECT c.rolname::text AS role, f.kind, pg_get_userbyid(f.via)::text AS via, pg_get_userbyid((SELECT oid FROM owner))::text AS owner,
           f.object_kind AS "objectKind", f.object_schema AS "objectSchema", f.object_name AS "objectName", f.object_args AS "objectArgs",
           ARRAY(SELECT pg_get_userbyid(m.roleid)::text FROM pg_auth_members m
                  WHERE m.member = c.oid AND f.via <> c.oid AND pg_has_role(m.roleid, f.via, 'MEMBER') ORDER BY 1) AS through
      FROM found f JOIN candidate c ON c.oid = f.candidate
     ORDER BY 1, array_position(ARRAY['superuser', 'owner', 'bypassrls', 'createrole', 'replication', 'predefined', 'admin', 'owns'], f.kind), 3, 5, 6, 7`.execute(
    db,
  );
  const byRole = new Map<string, Escape[]>();
  for (const row of r.rows) {
    const escapes = byRole.get(row.role) ?? [];
    escapes.push(escapeOf(row));
    byRole.set(row.role, escapes);
  }
  return byRole;
}

const WHY: Record<'superuser' | 'createrole' | 'bypassrls' | 'replication', string> = {
  superuser: 'is a superuser: it reads every table, column and property whatever it is granted',
  bypassrls: 'has BYPASSRLS: it sees the rows of every property',
  createrole:
    'has CREATEROLE: it can grant itself other roles (on PostgreSQL 15 any but a superuser: pg_read_all_data, the daemon’s own) and change other readers’ passwords',
  replication: 'has REPLICATION: it can stream the database’s files (pg_basebackup), past every grant',
};

const ATTRIBUTE: Record<keyof typeof WHY, string> = {
  superuser: 'NOSUPERUSER',
  createrole: 'NOCREATEROLE',
  bypassrls: 'NOBYPASSRLS',
  replication: 'NOREPLICATION',
};

function escapeOf(row: EscapeRow): Escape {
  const self = row.via === row.role;
  // Through another role: the fix is to end the memberships that lead there.
  const endMemberships = `REVOKE ${row.through.map(quoteIdent).join(', ')} FROM ${quoteIdent(row.role)}`;
  const member = (via: string) => `is a member of ${via}${row.through.length === 1 && row.through[0] === via ? '' : ` (through ${row.through.join(', ')})`}`;
  const actsAs = (what: string) => (self ? what : `${member(row.via)}, which ${what}`);
  switch (row.kind) {
    case 'superuser':
    case 'createrole':
    case 'bypassrls':
    case 'replication':
      return { why: actsAs(WHY[row.kind]), fix: self ? `ALTER ROLE ${quoteIdent(row.role)} ${ATTRIBUTE[row.kind]}` : endMemberships };
    case 'owner':
      return { why: `${member(row.via)}, the role that owns the mirror: it reads and writes everything, exempt from row-level security`, fix: endMemberships };
    case 'predefined':
      return { why: `${member(row.via)}: it ${ESCAPING_PREDEFINED_ROLES[row.via] ?? 'reads more than a reader'}`, fix: endMemberships };
    case 'admin': {
      const holder = row.objectName ?? row.role;
      return {
        why: `holds ADMIN OPTION over ${row.via}${holder === row.role ? '' : ` (as ${holder})`}: it can grant itself ${row.via} and read what ${row.via} reads`,
        fix: `REVOKE ADMIN OPTION FOR ${quoteIdent(row.via)} FROM ${quoteIdent(holder)}`,
      };
    }
    case 'owns': {
      const o = ownedObject({ kind: row.objectKind!, schema: row.objectSchema!, name: row.objectName, args: row.objectArgs ?? '' }, row.owner);
      return {
        why: `owns ${o.object}${self ? '' : ` (as ${row.via})`}: an owner is exempt from its row-level security and can grant it to anyone`,
        fix: o.fix,
      };
    }
  }
}

/** An object of the mirror's schemas, as mirrorObjects lists it. */
export interface MirrorObject {
  /** SCHEMA, TABLE, VIEW, MATERIALIZED VIEW, FOREIGN TABLE or FUNCTION: as ALTER names it. */
  kind: string;
  schema: string;
  /** Absent for a schema. */
  name: string | null;
  /** A function's argument types, in parentheses; empty for any other object. */
  args: string;
}

/**
 * Every schema, relation and function of `schemas` with its owner (by), for a query's WITH: the
 * objects whose owner reads past row-level security and grants them.
 */
export function mirrorObjects(schemas: readonly string[]) {
  return sql`
    SELECT 'SCHEMA' AS kind, n.nspname::text AS schema, NULL::text AS name, '' AS args, n.nspowner AS by
      FROM pg_namespace n WHERE n.nspname = ANY (${[...schemas]}::text[])
    UNION ALL
    SELECT CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW' WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END,
           n.nspname::text, c.relname::text, '', c.relowner
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = ANY (${[...schemas]}::text[]) AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
    UNION ALL
    SELECT 'FUNCTION', n.nspname::text, p.proname::text, '(' || pg_get_function_identity_arguments(p.oid) || ')', p.proowner
      FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = ANY (${[...schemas]}::text[])`;
}

/** An object as a sentence names it, and the statement that gives it to `owner`. */
export function ownedObject(o: MirrorObject, owner: string): { object: string; fix: string } {
  const name = `${o.schema}${o.name === null ? '' : `.${o.name}`}${o.args}`;
  const quoted = `${quoteIdent(o.schema)}${o.name === null ? '' : `.${quoteIdent(o.name)}`}${o.args}`;
  return { object: `${o.kind.toLowerCase()} ${name}`, fix: `ALTER ${o.kind} ${quoted} OWNER TO ${quoteIdent(owner)}` };
}

/** The escapes of one role as one sentence: what each lets it do, and what to run. */
export function escapeSentence(role: string, escapes: readonly Escape[]): string {
  return `${role} ${escapes.map((e) => `${e.why} (${e.fix})`).join('; it ')}`;
}
