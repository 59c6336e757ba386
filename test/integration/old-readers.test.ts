/**
 * Reader roles of a release before `reader_grants` (migrations up to 0014): grant-reader then
 * gave SELECT on every table of the schemas and default privileges for tables made later, and
 * recorded nothing. After an upgrade such a role would read every personal column and, through
 * the default privileges, the erasure key made by a later migration. The migration brings every
 * role that can read the mirror under the readers' policy (recorded as a reader without personal
 * data, named in a warning with the fix), PUBLIC included, and no role but the owner can read
 * the erasure key.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { daemonEnv, logRecords, runCli } from '../helpers/cli.js';
import { reportingSchemaOf } from '../helpers/database.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { migrateUpTo } from '../helpers/migrations.js';
import { closeWithRoles, connectAs, errorCode, reflect } from '../helpers/readers.js';

let h: Harness | undefined;
const roles: string[] = [];
afterEach(async () => {
  await closeWithRoles(h, roles);
  h = undefined;
});

describe('readers of an earlier release', () => {
  it('are brought under the policy at migration: no erasure key, no personal column, recorded, named with the fix; PUBLIC too', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 3 }] }, emptySchema: true });
    await migrateUpTo(h, '0014_relisted_versions.sql');
    const old = `reader_${randomBytes(4).toString('hex')}`;
    roles.push(old);
    const M = `"${h.schema}"`;
    // What grant-reader of that release ran (as the schemas' owner), and a grant to every role.
    for (const s of [
      `CREATE ROLE ${old} LOGIN PASSWORD 'old-secret'`,
      `GRANT USAGE ON SCHEMA ${M} TO ${old}`,
      `GRANT SELECT ON ALL TABLES IN SCHEMA ${M} TO ${old}`,
      `ALTER DEFAULT PRIVILEGES IN SCHEMA ${M} GRANT SELECT ON TABLES TO ${old}`,
      `GRANT USAGE ON SCHEMA ${M} TO PUBLIC`,
      `ALTER DEFAULT PRIVILEGES IN SCHEMA ${M} GRANT SELECT ON TABLES TO PUBLIC`,
    ])
      await h.sql(s);

    const migrated = await runCli(['migrate'], { ...daemonEnv(h), STAYSYNC_LOG_LEVEL: 'info' });
    expect(migrated.code, migrated.stdout + migrated.stderr).toBe(0);
    // Named, with the fix.
    const warnings = logRecords(migrated.stdout + migrated.stderr).filter((r) => r.level === 'warn' || r.level === 'error');
    expect(warnings.map((w) => w.msg).join('\n')).toContain(old);
    expect(warnings.map((w) => w.msg).join('\n')).toContain(`grant-reader ${old} --personal-data`);
    expect(warnings.map((w) => w.msg).join('\n')).toContain('PUBLIC');

    // Recorded as a reader without personal data.
    expect(await h.sql(`SELECT role, personal_data FROM reader_grants WHERE role = $1`, [old])).toEqual([{ role: old, personal_data: false }]);
    // No role but the owner may read the erasure key, wherever it is (superusers and
    // pg_read_all_data read every table whatever is granted).
    const key = await h.sql<{ relation: string; readers: string[] }>(
      `SELECT c.oid::regclass::text AS relation,
              ARRAY(SELECT r.rolname::text FROM pg_roles r
                     WHERE NOT r.rolsuper AND r.oid <> c.relowner AND NOT pg_has_role(r.oid, 'pg_read_all_data', 'MEMBER')
                       AND has_table_privilege(r.oid, c.oid, 'SELECT') ORDER BY 1) AS readers
         FROM pg_class c WHERE c.relname = 'erasure_key' AND c.relnamespace::regnamespace::text LIKE $1`,
      [`${h.schema}%`],
    );
    expect(key).toHaveLength(1);
    expect(key[0]!.readers).toEqual([]);

    const reader = await connectAs(h.dbUrl, old, 'old-secret', h.schema);
    try {
      // Out of reach: permission denied, or, as PostgreSQL says to some roles of a schema they may not use, no such relation.
      expect(await errorCode(reader.query(`SELECT key FROM ${key[0]!.relation}`))).toMatch(/^(42501|42P01)$/);
      for (const [table, column] of [
        ['bookings', 'customer_last_name'],
        ['bookings', 'raw'],
        ['pms_guests', 'email'],
        ['quarantine', 'raw_body'],
      ] as const) {
        expect(await errorCode(reader.query(`SELECT ${column} FROM ${M}.${table}`)), `${table}.${column}`).toBe('42501');
      }
      // What it is shown, it reads.
      const seen = await reflect(reader);
      expect(seen.unreadable).toEqual([]);
      expect(seen.relations).toContain(`${reportingSchemaOf(h.schema)}.daily_kpis`);
    } finally {
      await reader.end();
    }
    // PUBLIC keeps nothing on the mirror's schemas and their tables.
    const publicGrants = await h.sql<{ what: string }>(
      `SELECT n.nspname AS what FROM pg_namespace n WHERE n.nspname LIKE $1 AND has_schema_privilege('public', n.oid, 'USAGE')
       UNION ALL
       SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname LIKE $1 AND c.relkind IN ('r', 'v', 'p') AND has_table_privilege('public', c.oid, 'SELECT')
       UNION ALL
       SELECT 'default privileges in ' || n.nspname FROM pg_default_acl d JOIN pg_namespace n ON n.oid = d.defaclnamespace
        WHERE n.nspname LIKE $1 AND EXISTS (SELECT 1 FROM aclexplode(d.defaclacl) x WHERE x.grantee = 0)`,
      [`${h.schema}%`],
    );
    expect(publicGrants).toEqual([]);
  });

  it('names, at migration, the readers that read more than they were granted, with what to run', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 2 }] } });
    await h.migrate();
    const [personal, plain, superuser] = [0, 1, 2].map(() => `reader_${randomBytes(4).toString('hex')}`) as [string, string, string];
    roles.push(plain, personal, superuser);
    const env = { ...daemonEnv(h), STAYSYNC_READER_PASSWORD: 'reader-secret' };
    for (const [role, flags] of [
      [personal, ['--personal-data']],
      [plain, []],
      [superuser, []],
    ] as const) {
      const granted = await runCli(['grant-reader', role, ...flags], env);
      expect(granted.code, granted.stderr).toBe(0);
    }
    // Afterwards, by hand: a reader without personal data made a member of one with them, another a superuser.
    await h.sql(`GRANT ${personal} TO ${plain}`);
    await h.sql(`ALTER ROLE ${superuser} SUPERUSER`);
    // And a grant by hand to a reader, which the next migration takes back (a reader writes nothing).
    await h.sql(`GRANT INSERT ON pos_codes TO ${plain}`);
    const migrated = await runCli(['migrate'], { ...env, STAYSYNC_LOG_LEVEL: 'info' });
    expect(migrated.code, migrated.stderr).toBe(0);
    const warned = logRecords(migrated.stdout + migrated.stderr)
      .filter((r) => r.level === 'warn')
      .map((r) => r.msg)
      .join('\n');
    expect(warned).toContain(
      `reader ${plain} is a member of the reader ${personal}: it sees the rows and columns that reader sees too; REVOKE "${personal}" FROM "${plain}"`,
    );
    expect(warned).toContain(`reader ${plain} reads personal columns (`);
    expect(warned).toContain(
      `reader ${superuser} is a superuser: it reads every table, column and property whatever it is granted (ALTER ROLE "${superuser}" NOSUPERUSER)`,
    );
    expect(warned).not.toContain(`reader ${personal} `);
    expect(await h.sql(`SELECT has_table_privilege($1, 'pos_codes', 'INSERT') AS insert`, [plain])).toEqual([{ insert: false }]);
  });
});
