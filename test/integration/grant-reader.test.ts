/**
 * `staysync grant-reader <role>`: a role that reporting tools use instead of the daemon's. It
 * reads the mirror's tables without the columns of guests' personal data (as views of the same
 * names in the readable schema) and the reporting views, including what a later migration adds,
 * the personal columns in the mirror's own schema with --personal-data only, never the erasure
 * key, and writes nothing. Run through the real CLI, checked by connecting as that role.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { readableSchemaOf, secretSchemaOf } from '../../src/config/schema-names.js';
import { storedPassword } from '../../src/store/reader-role.js';
import { daemonEnv, logRecords, runCli } from '../helpers/cli.js';
import { reportingSchemaOf } from '../helpers/database.js';
import { startHarness, syncOnce, type Harness } from '../helpers/harness.js';
import { closeWithRoles, connectAs, errorCode, reflect } from '../helpers/readers.js';

let h: Harness | undefined;
const roles: string[] = [];
afterEach(async () => {
  await closeWithRoles(h, roles);
  h = undefined;
});

const q = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** A schema the role may not use: PostgreSQL answers "permission denied" or, for some roles, "does not exist". */
const OUT_OF_REACH = /^(42501|42P01)$/;

describe('grant-reader', () => {
  it('gives a role the mirror without personal columns and the reporting views, also those made later, and no write', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 10 }] } });
    await syncOnce(await h.context());
    const role = `reader_${randomBytes(4).toString('hex')}`;
    roles.push(role);
    const env = daemonEnv(h);
    const readable = readableSchemaOf(h.schema);
    const reporting = reportingSchemaOf(h.schema);

    const first = await runCli(['grant-reader', role], env);
    expect(first.code, first.stdout + first.stderr).toBe(0);
    expect(first.stdout).toContain(`Created role ${role}`);
    expect(first.stdout).toContain(`without the columns of guests’ personal data (names, contact data, raw payloads) in the schema ${readable}`);
    expect(first.stdout).toContain('It sees the rows of every property');
    const password = /Its password \(shown once\): (\S+)/.exec(first.stdout)?.[1];
    expect(password).toBeDefined();
    // Shown once: the URL carries no password.
    expect(first.stdout.split(password!).length - 1).toBe(1);
    expect(first.stdout).toMatch(new RegExp(`Reporting tools connect with postgres://${role}@\\S+ and the password above`));
    // Running it again changes nothing and says so; a password from the environment is set.
    const again = await runCli(['grant-reader', role], { ...env, STAYSYNC_READER_PASSWORD: 'chosen-secret' });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain(`Updated role ${role}`);
    expect(again.stdout).not.toContain('shown once');
    expect(again.stdout).toMatch(new RegExp(`Reporting tools connect with postgres://${role}@\\S+ and the password of STAYSYNC_READER_PASSWORD`));
    expect(again.stdout + again.stderr).not.toContain('chosen-secret');
    const [stored] = await h.sql<{ ok: boolean }>(`SELECT rolpassword LIKE 'SCRAM-SHA-256$%' AS ok FROM pg_authid WHERE rolname = '${role}'`);
    expect(stored?.ok).toBe(true);

    const reader = await connectAs(h.dbUrl, role, 'chosen-secret', readable);
    try {
      // It may use the readable and reporting schemas, and reads all they hold.
      const seen = await reflect(reader);
      expect(seen.schemas).toEqual([readable, reporting].sort());
      expect(seen.unreadable).toEqual([]);
      expect(seen.relations).toEqual(expect.arrayContaining([`${readable}.bookings`, `${readable}.pms_guests`, `${reporting}.daily_kpis`]));
      expect(Number((await reader.query('SELECT count(*) AS n FROM bookings')).rows[0].n)).toBe(10);
      expect((await reader.query('SELECT number, price_after_tax FROM bookings')).rows).toHaveLength(10);
      expect(await errorCode(reader.query('SELECT customer_last_name FROM bookings'))).toBe('42703');
      // Not the mirror's schema, nor the erasure key's.
      expect(await errorCode(reader.query(`SELECT number FROM ${q(h.schema)}.bookings`))).toMatch(OUT_OF_REACH);
      expect(await errorCode(reader.query(`SELECT key FROM ${q(secretSchemaOf(h.schema))}.erasure_key`))).toMatch(OUT_OF_REACH);
      expect(
        await h.sql(`SELECT has_schema_privilege($1, $2, 'USAGE') AS schema, has_table_privilege($1, $3, 'SELECT') AS key`, [
          role,
          secretSchemaOf(h.schema),
          `${q(secretSchemaOf(h.schema))}.erasure_key`,
        ]),
      ).toEqual([{ schema: false, key: false }]);

      // A table and a column a later migration adds: readable (without personal data) after it.
      await h.sql('CREATE TABLE added_later (id int PRIMARY KEY)');
      await h.sql('INSERT INTO added_later VALUES (1)');
      await h.sql('ALTER TABLE bookings ADD COLUMN added_later integer');
      const migrated = await runCli(['migrate'], env);
      expect(migrated.code, migrated.stderr).toBe(0);
      expect((await reader.query('SELECT id FROM added_later')).rows).toEqual([{ id: 1 }]);
      expect((await reader.query('SELECT added_later FROM bookings')).rows).toHaveLength(10);
      expect((await reflect(reader)).unreadable).toEqual([]);

      // No write anywhere: no privilege to write any relation of the four schemas, and every write refused.
      const writable = await h.sql<{ relation: string }>(
        `SELECT c.oid::regclass::text AS relation FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = ANY($2) AND c.relkind IN ('r', 'p', 'v', 'm')
            AND has_table_privilege($1, c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')`,
        [role, [h.schema, readable, reporting, secretSchemaOf(h.schema)]],
      );
      expect(writable).toEqual([]);
      const targets = [
        ...(await reflect(reader)).relations.map((r) => r.split('.').map(q).join('.')),
        ...['bookings', 'reader_grants', 'pos_codes'].map((t) => `${q(h!.schema)}.${t}`),
      ];
      // 42501 no privilege, 42P01 a schema it may not use, 55000 a view that cannot be written at all, 42809 TRUNCATE of a view.
      for (const target of targets) {
        expect(await errorCode(reader.query(`DELETE FROM ${target}`)), `DELETE ${target}`).toMatch(/^(42501|42P01|55000)$/);
        expect(await errorCode(reader.query(`UPDATE ${target} SET property_id = property_id`)), `UPDATE ${target}`).toMatch(/^(42501|42P01|42703|55000)$/);
        expect(await errorCode(reader.query(`TRUNCATE ${target}`)), `TRUNCATE ${target}`).toMatch(/^(42501|42P01|42809)$/);
        expect(await errorCode(reader.query(`INSERT INTO ${target} DEFAULT VALUES`)), `INSERT ${target}`).toMatch(/^(42501|42P01|55000)$/);
      }
      for (const schema of [h.schema, readable, reporting, secretSchemaOf(h.schema)])
        expect(await errorCode(reader.query(`CREATE TABLE ${q(schema)}.mine (id int)`)), schema).toMatch(/^(42501|3F000)$/);
    } finally {
      await reader.end();
    }
  });

  it('grants the mirror’s schema with its personal columns with --personal-data only, never the erasure key', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 5 }] } });
    await syncOnce(await h.context());
    const role = `reader_${randomBytes(4).toString('hex')}`;
    roles.push(role);
    const env = { ...daemonEnv(h), STAYSYNC_READER_PASSWORD: 'reader-secret' };
    const granted = await runCli(['grant-reader', role, '--personal-data'], env);
    expect(granted.code, granted.stderr).toBe(0);
    expect(granted.stdout).toContain('with the columns of guests’ personal data');
    const reader = await connectAs(h.dbUrl, role, 'reader-secret', h.schema);
    try {
      const names = await reader.query('SELECT customer_last_name, raw FROM bookings');
      expect(names.rows).toHaveLength(5);
      expect(names.rows.some((r: { customer_last_name: string | null }) => r.customer_last_name !== null)).toBe(true);
      expect(await errorCode(reader.query('SELECT * FROM pms_guests'))).toBeUndefined();
      expect((await reflect(reader)).unreadable).toEqual([]);
      // The erasure key, never: it would let the erasure list's hashes be tested against guesses.
      expect(await errorCode(reader.query(`SELECT key FROM ${q(secretSchemaOf(h.schema))}.erasure_key`))).toMatch(OUT_OF_REACH);
      expect(await h.sql(`SELECT has_table_privilege($1, $2, 'SELECT') AS key`, [role, `${q(secretSchemaOf(h.schema))}.erasure_key`])).toEqual([
        { key: false },
      ]);
      expect(await errorCode(reader.query('SELECT kind FROM erased_identities'))).toBeUndefined();

      // Granted again without the flag: the mirror's schema is taken away, the figures stay.
      const narrowed = await runCli(['grant-reader', role], env);
      expect(narrowed.code, narrowed.stderr).toBe(0);
      expect(narrowed.stdout).toContain('without the columns of guests’ personal data');
      expect(await errorCode(reader.query('SELECT number FROM bookings'))).toMatch(OUT_OF_REACH);
      const readable = q(readableSchemaOf(h.schema));
      expect(await errorCode(reader.query(`SELECT customer_last_name FROM ${readable}.bookings`))).toBe('42703');
      expect(await errorCode(reader.query(`SELECT raw FROM ${readable}.pms_reservations`))).toBe('42703');
      expect((await reader.query(`SELECT number, status FROM ${readable}.bookings`)).rows).toHaveLength(5);

      // Granting again fails (the record of the roles is gone): the migration still succeeds and
      // says what to do, and the policy fails closed: the reader loses its access until then.
      await h.sql('DROP TABLE reader_grants CASCADE');
      const unrecorded = await runCli(['migrate'], env);
      expect(unrecorded.code, unrecorded.stderr).toBe(0);
      const said = logRecords(unrecorded.stdout + unrecorded.stderr).find((r) => r.level === 'error')?.msg;
      expect(said).toContain(`the readers' policy could not be applied: relation "${h.schema}.reader_grants" does not exist`);
      expect(said).toContain(`no role but the daemon's may use the mirror's schemas (${role} lost their access)`);
      expect(await errorCode(reader.query(`SELECT number FROM ${readable}.bookings`))).toBe('42501');
    } finally {
      await reader.end();
    }
  });

  it('lets a role without --personal-data read the guests’ pseudonyms and guests_by_pseudonym, not the e-mails', async () => {
    h = await startHarness({
      sim: { properties: [{ id: '500100', bookingCount: 10 }] },
      config: { pms: { personalData: true }, privacy: { pseudonymKey: 'a-test-pseudonym-key-0123456789abcdef' } },
    });
    await syncOnce(await h.context(), { streams: 'pms' });
    const role = `reader_${randomBytes(4).toString('hex')}`;
    roles.push(role);
    const granted = await runCli(['grant-reader', role], { ...daemonEnv(h), STAYSYNC_READER_PASSWORD: 'reader-secret' });
    expect(granted.code, granted.stderr).toBe(0);
    const reader = await connectAs(h.dbUrl, role, 'reader-secret', readableSchemaOf(h.schema));
    try {
      const reservations = await reader.query('SELECT number, customer_email_hash, customer_phone_hash FROM pms_reservations');
      expect(reservations.rows.some((r: { customer_email_hash: string | null }) => /^[0-9a-f]{64}$/.test(r.customer_email_hash ?? ''))).toBe(true);
      const guests = await reader.query('SELECT pms_person_id, email_hash, phone_hash FROM pms_guests');
      expect(guests.rows.some((r: { email_hash: string | null }) => r.email_hash !== null)).toBe(true);
      const view = await reader.query(`SELECT * FROM "${reportingSchemaOf(h.schema)}".guests_by_pseudonym`);
      expect(view.rows.length).toBeGreaterThan(0);
      // The values themselves stay out of reach: not shown, and not readable in the mirror's schema.
      expect(await errorCode(reader.query('SELECT customer_email FROM pms_reservations'))).toBe('42703');
      expect(await errorCode(reader.query('SELECT email, phone FROM pms_guests'))).toBe('42703');
      expect(await errorCode(reader.query(`SELECT customer_email FROM ${q(h.schema)}.pms_reservations`))).toMatch(OUT_OF_REACH);
    } finally {
      await reader.end();
    }
  });

  it('refuses every role that could lift itself over its grant, with why and the quoted command that ends it, and changes nothing', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 1 }] } });
    await h.migrate();
    const env = { ...daemonEnv(h), STAYSYNC_READER_PASSWORD: 'reader-secret' };
    const [{ owner } = { owner: '' }] = await h.sql<{ owner: string }>(`SELECT pg_get_userbyid(nspowner) AS owner FROM pg_namespace WHERE nspname = $1`, [
      h.schema,
    ]);
    const name = () => {
      const role = `reader_${randomBytes(4).toString('hex')}`;
      roles.push(role);
      return role;
    };
    // An enrolled reader, whose ADMIN OPTION would hand it out.
    const enrolled = name();
    expect((await runCli(['grant-reader', enrolled, '--properties', '500100'], env)).code).toBe(0);
    const [superuser, createrole, replication, bypass, member, middle, indirect, viaCreaterole, admin, owns] = [
      name(),
      name(),
      name(),
      name(),
      name(),
      name(),
      name(),
      name(),
      name(),
      name(),
    ];
    const predefined = ['pg_read_all_data', 'pg_write_all_data', 'pg_read_server_files', 'pg_write_server_files', 'pg_execute_server_program'];
    const members = predefined.map(name);
    for (const statement of [
      `CREATE ROLE ${superuser} LOGIN SUPERUSER`,
      `CREATE ROLE ${createrole} LOGIN CREATEROLE`,
      `CREATE ROLE ${replication} LOGIN REPLICATION`,
      `CREATE ROLE ${bypass} LOGIN BYPASSRLS`,
      `CREATE ROLE ${member} LOGIN IN ROLE ${q(owner)}`,
      `CREATE ROLE ${middle} NOLOGIN IN ROLE ${q(owner)}`,
      `CREATE ROLE ${indirect} LOGIN IN ROLE ${middle}`,
      `CREATE ROLE ${viaCreaterole} LOGIN IN ROLE ${createrole}`,
      `CREATE ROLE ${admin} LOGIN`,
      `GRANT ${enrolled} TO ${admin} WITH ADMIN OPTION`,
      `CREATE ROLE ${owns} LOGIN`,
      `CREATE VIEW ${q(h.schema)}.owned_by_hand AS SELECT 1 AS one`,
      `ALTER VIEW ${q(h.schema)}.owned_by_hand OWNER TO ${owns}`,
      ...members.map((m, i) => `CREATE ROLE ${m} LOGIN IN ROLE ${predefined[i]}`),
    ])
      await h.sql(statement);
    const cases: [string, string][] = [
      [owner, `${owner} is the daemon’s own role`],
      [superuser, `${superuser} is a superuser: it reads every table, column and property whatever it is granted (ALTER ROLE "${superuser}" NOSUPERUSER)`],
      [createrole, `${createrole} has CREATEROLE: it can grant itself other roles`],
      [createrole, `(ALTER ROLE "${createrole}" NOCREATEROLE)`],
      [
        replication,
        `${replication} has REPLICATION: it can stream the database’s files (pg_basebackup), past every grant (ALTER ROLE "${replication}" NOREPLICATION)`,
      ],
      [bypass, `${bypass} has BYPASSRLS: it sees the rows of every property (ALTER ROLE "${bypass}" NOBYPASSRLS)`],
      [
        member,
        `${member} is a member of ${owner}, the role that owns the mirror: it reads and writes everything, exempt from row-level security (REVOKE "${owner}" FROM "${member}")`,
      ],
      [indirect, `${indirect} is a member of ${owner} (through ${middle}), the role that owns the mirror`],
      [indirect, `(REVOKE "${middle}" FROM "${indirect}")`],
      [viaCreaterole, `${viaCreaterole} is a member of ${createrole}, which has CREATEROLE`],
      [viaCreaterole, `(REVOKE "${createrole}" FROM "${viaCreaterole}")`],
      [
        admin,
        `${admin} holds ADMIN OPTION over ${enrolled}: it can grant itself ${enrolled} and read what ${enrolled} reads (REVOKE ADMIN OPTION FOR "${enrolled}" FROM "${admin}")`,
      ],
      [owns, `${owns} owns view ${h.schema}.owned_by_hand: an owner is exempt from its row-level security and can grant it to anyone`],
      [owns, `(ALTER VIEW "${h.schema}"."owned_by_hand" OWNER TO "${owner}")`],
      ...members.map((m, i): [string, string] => [m, `${m} is a member of ${predefined[i]}: it `]),
      ...members.map((m, i): [string, string] => [m, `(REVOKE "${predefined[i]}" FROM "${m}")`]),
    ];
    for (const [role, sentence] of cases) {
      const run = await runCli(['grant-reader', role], env);
      expect(run.code, `${role}: ${run.stdout}${run.stderr}`).toBe(2);
      expect(run.stderr, role).toContain(sentence);
      if (role !== owner) expect(run.stderr, role).toContain('It could lift itself over any grant, so it cannot be a reader');
      expect(run.stdout, role).not.toContain('without the columns');
    }
    // Nothing was recorded or changed: no refused role was granted anything, and the owner still reads its own tables in full.
    expect(await h.sql('SELECT role FROM reader_grants')).toEqual([{ role: enrolled }]);
    const refused = cases.map(([role]) => role).filter((role) => role !== owner);
    const schemas = [h.schema, readableSchemaOf(h.schema), reportingSchemaOf(h.schema)];
    expect(
      await h.sql(
        `SELECT DISTINCT pg_get_userbyid(x.grantee) AS granted FROM pg_namespace n, aclexplode(n.nspacl) x WHERE n.nspname = ANY ($2) AND pg_get_userbyid(x.grantee) = ANY ($1)
         UNION SELECT DISTINCT pg_get_userbyid(x.grantee) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace, aclexplode(c.relacl) x
          WHERE n.nspname = ANY ($2) AND pg_get_userbyid(x.grantee) = ANY ($1)`,
        [refused, schemas],
      ),
    ).toEqual([]);
    const [still] = await h.sql<{ ok: boolean }>(`SELECT has_column_privilege($1, 'bookings', 'customer_last_name', 'SELECT') AS ok`, [owner]);
    expect(still?.ok).toBe(true);
    // A view of the mirror another role owns keeps any reader from being granted (exit 1, the sentence).
    await h.sql(`ALTER ROLE ${createrole} NOCREATEROLE`);
    const blocked = await runCli(['grant-reader', createrole], env);
    expect(blocked.code).toBe(1);
    expect(blocked.stdout + blocked.stderr).toContain(`view ${h.schema}.owned_by_hand is owned by ${owns}, not by the role that owns the mirror`);
    // Undone, the same role is accepted.
    await h.sql(`DROP VIEW ${q(h.schema)}.owned_by_hand`);
    const accepted = await runCli(['grant-reader', createrole], env);
    expect(accepted.code, accepted.stdout + accepted.stderr).toBe(0);
  });

  it('leaves a reader no way to lift itself: every attempt is refused by the server, on any version', async () => {
    h = await startHarness({
      sim: {
        properties: [
          { id: '500100', bookingCount: 3 },
          { id: '500200', bookingCount: 3 },
        ],
      },
    });
    await syncOnce(await h.context());
    const env = { ...daemonEnv(h), STAYSYNC_READER_PASSWORD: 'reader-secret' };
    const [reader, other] = [`reader_${randomBytes(4).toString('hex')}`, `reader_${randomBytes(4).toString('hex')}`];
    roles.push(reader, other);
    for (const role of [reader, other]) expect((await runCli(['grant-reader', role, '--properties', '500100', '--personal-data'], env)).code).toBe(0);
    const [{ owner } = { owner: '' }] = await h.sql<{ owner: string }>(`SELECT pg_get_userbyid(nspowner) AS owner FROM pg_namespace WHERE nspname = $1`, [
      h.schema,
    ]);
    const M = q(h.schema);
    const client = await connectAs(h.dbUrl, reader, 'reader-secret');
    try {
      for (const attempt of [
        `GRANT pg_read_all_data TO ${reader}`,
        `GRANT pg_read_server_files TO ${reader}`,
        `GRANT ${q(owner)} TO ${reader}`,
        `GRANT ${other} TO ${reader}`,
        `SET ROLE ${q(owner)}`,
        `SET ROLE ${other}`,
        `ALTER ROLE ${reader} CREATEROLE`,
        `ALTER ROLE ${reader} BYPASSRLS`,
        `ALTER ROLE ${other} PASSWORD 'taken-over'`,
        `CREATE ROLE helper_${randomBytes(3).toString('hex')} LOGIN`,
        `ALTER TABLE ${M}.bookings DISABLE ROW LEVEL SECURITY`,
        `DROP POLICY ${reader} ON ${M}.bookings`,
        `CREATE POLICY mine ON ${M}.bookings FOR SELECT TO ${reader} USING (true)`,
        `ALTER TABLE ${M}.bookings OWNER TO ${reader}`,
        `SELECT pg_read_file('PG_VERSION')`,
        `COPY (SELECT 1) TO PROGRAM 'true'`,
        `SELECT key FROM ${q(secretSchemaOf(h.schema))}.erasure_key`,
        `CREATE FUNCTION ${q(reportingSchemaOf(h.schema))}.mine() RETURNS int LANGUAGE sql AS 'SELECT 1'`,
      ])
        expect(await errorCode(client.query(attempt)), attempt).toMatch(/^(42501|42P01)$/);
      // What it holds it cannot pass on: the server grants nothing (a warning, not an error).
      await client.query(`GRANT SELECT ON ${M}.bookings TO PUBLIC`);
      expect(await h.sql(`SELECT has_table_privilege('public', $1, 'SELECT') AS public`, [`${M}.bookings`])).toEqual([{ public: false }]);
      // Row-level security cannot be switched off either: the query is refused rather than shown every row.
      await client.query('SET row_security = off');
      expect(await errorCode(client.query(`SELECT count(*) FROM ${M}.bookings`))).toBe('42501');
      await client.query('RESET row_security');
      const seen = await client.query<{ property_id: string }>(`SELECT DISTINCT property_id FROM ${M}.bookings`);
      expect(seen.rows).toEqual([{ property_id: '500100' }]);
    } finally {
      await client.end();
    }
    const [stored] = await h.sql<{ ok: boolean }>(`SELECT rolpassword LIKE 'SCRAM-SHA-256$%' AND NOT rolcreaterole AS ok FROM pg_authid WHERE rolname = $1`, [
      other,
    ]);
    expect(stored?.ok).toBe(true);
  });

  it('stores a password of accents or other scripts as the verifier the server itself would compute', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 1 }] } });
    await h.migrate();
    const env = daemonEnv(h);
    const role = `reader_${randomBytes(4).toString('hex')}`;
    const probe = `probe_${randomBytes(4).toString('hex')}`;
    roles.push(role, probe);
    await h.sql(`CREATE ROLE ${probe}`);
    for (const password of ['mot de passe é', 'пароль-Ω', '密码パスワード', 'tab\tand\u0007bell']) {
      // The server's own verifier for the password (sent in clear here, in the test only), and ours with its salt.
      await h.sql(`ALTER ROLE ${probe} PASSWORD ${"'" + password.replaceAll("'", "''") + "'"}`);
      const [server] = await h.sql<{ v: string }>(`SELECT rolpassword AS v FROM pg_authid WHERE rolname = $1`, [probe]);
      const salt = Buffer.from(/^SCRAM-SHA-256\$\d+:([^$]+)\$/.exec(server!.v)![1]!, 'base64');
      expect(storedPassword(password, salt), JSON.stringify(password)).toBe(server!.v);
      // And grant-reader, given it, stores a verifier (never the text) with which the role logs in.
      const run = await runCli(['grant-reader', role], { ...env, STAYSYNC_READER_PASSWORD: password });
      expect(run.code, run.stderr).toBe(0);
      const client = await connectAs(h.dbUrl, role, password);
      await client.end();
    }
    // One SASLprep would change is refused, and nothing is stored.
    const refused = await runCli(['grant-reader', role], { ...env, STAYSYNC_READER_PASSWORD: 'pass\u00a0word' });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('the password holds characters that PostgreSQL’s clients change before they use it');
  });

  it('scopes a role to properties with --properties: ids checked for shape, count and that the mirror knows them; kept until --all-properties', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 2 }] } });
    await syncOnce(await h.context());
    const env = { ...daemonEnv(h), STAYSYNC_READER_PASSWORD: 'reader-secret' };
    const role = `reader_${randomBytes(4).toString('hex')}`;
    roles.push(role);
    const many = Array.from({ length: 1001 }, (_, i) => String(100000 + i)).join(',');
    for (const [args, code, sentence] of [
      [['--properties'], 2, '--properties needs a value'],
      [['--properties', ''], 2, '--properties needs a value'],
      [['--properties', '500100;DROP'], 2, 'property ids of letters, digits, - or _'],
      [['--properties', '500100,,500200'], 2, 'property ids of letters, digits, - or _'],
      [['--properties', 'x'.repeat(65)], 2, 'at most 64 characters'],
      [['--properties', many], 2, 'at most 1000 properties'],
      [['--properties', '500100', '--all-properties'], 2, '--properties and --all-properties'],
      [['--properties', '999999'], 2, 'property 999999 is not in the mirror'],
    ] as const) {
      const run = await runCli(['grant-reader', role, ...args], env);
      expect(run.code, `${args.join(' ')}: ${run.stdout}${run.stderr}`).toBe(code);
      expect(run.stdout + run.stderr, args.join(' ')).toContain(sentence);
    }
    expect(await runCli(['status', '--properties', '500100'], env)).toMatchObject({ code: 2 });
    // Nothing was made by the refused runs.
    expect((await h.sql(`SELECT 1 FROM pg_roles WHERE rolname = $1`, [role])).length).toBe(0);

    const scoped = await runCli(['grant-reader', role, '--properties', '500100'], env);
    expect(scoped.code, scoped.stderr).toBe(0);
    expect(scoped.stdout).toContain('the rows of property 500100 only');
    expect(await h.sql('SELECT properties FROM reader_grants WHERE role = $1', [role])).toEqual([{ properties: ['500100'] }]);
    // Run again without it (a new password, say): the scope stays, and it says so.
    const again = await runCli(['grant-reader', role], env);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('the rows of property 500100 only');
    expect(await h.sql('SELECT properties FROM reader_grants WHERE role = $1', [role])).toEqual([{ properties: ['500100'] }]);
    const widened = await runCli(['grant-reader', role, '--all-properties'], env);
    expect(widened.code, widened.stderr).toBe(0);
    expect(widened.stdout).toContain('the rows of every property');
    expect(await h.sql('SELECT properties FROM reader_grants WHERE role = $1', [role])).toEqual([{ properties: null }]);
  });

  it('gives up after 10 s when a long query holds a table its policies need, changes nothing and says so (exit 1)', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 2 }] } });
    await syncOnce(await h.context());
    const role = `reader_${randomBytes(4).toString('hex')}`;
    roles.push(role);
    // A report in progress: a transaction that has read bookings and holds it.
    const report = new pg.Client({ connectionString: h.dbUrl });
    await report.connect();
    try {
      await report.query('BEGIN');
      await report.query(`SELECT count(*) FROM ${q(h.schema)}.bookings`);
      const started = Date.now();
      const run = await runCli(['grant-reader', role, '--properties', '500100'], { ...daemonEnv(h), STAYSYNC_READER_PASSWORD: 'reader-secret' });
      expect(run.code, run.stdout + run.stderr).toBe(1);
      expect(run.stdout + run.stderr).toContain('grant-reader waited 10 s for a query on a table of the mirror to end');
      expect(Date.now() - started).toBeGreaterThanOrEqual(10_000);
    } finally {
      await report.query('ROLLBACK').catch(() => undefined);
      await report.end();
    }
    expect((await h.sql(`SELECT 1 FROM pg_roles WHERE rolname = $1`, [role])).length).toBe(0);
    expect(await h.sql('SELECT role FROM reader_grants')).toEqual([]);
    // Once the report is done, the same command goes through.
    const again = await runCli(['grant-reader', role, '--properties', '500100'], { ...daemonEnv(h), STAYSYNC_READER_PASSWORD: 'reader-secret' });
    expect(again.code, again.stderr).toBe(0);
  }, 60_000);

  it('refuses a role name that is not an identifier, and a schema that does not exist yet', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 1 }] }, emptySchema: true });
    const bad = await runCli(['grant-reader', 'Robert"; DROP'], daemonEnv(h));
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('expected a lower-case SQL identifier');
    const role = `reader_${randomBytes(4).toString('hex')}`;
    const early = await runCli(['grant-reader', role], daemonEnv(h));
    expect(early.code).toBe(1);
    expect(early.stdout + early.stderr).toContain('run `staysync migrate` first');
    expect((await h.sql(`SELECT 1 FROM pg_roles WHERE rolname = '${role}'`)).length).toBe(0);
  });
});
