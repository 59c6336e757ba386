/**
 * `staysync grant-reader <role>`: a role that reporting tools use instead of the daemon's. It
 * can select every table and view of the mirror and reporting schemas, including tables a later
 * migration adds, but not the columns of guests' personal data unless granted with
 * --personal-data, and can write none of them. Run through the real CLI, checked by connecting
 * as that role.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { SECRET_TABLES } from '../../src/store/reader-role.js';
import { PERSONAL_COLUMNS } from '../../src/store/personal-columns.js';
import { daemonEnv, runCli } from '../helpers/cli.js';
import { reportingSchemaOf } from '../helpers/database.js';
import { startHarness, syncOnce, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
const roles: string[] = [];
afterEach(async () => {
  if (h) {
    for (const role of roles.splice(0)) {
      await h.sql(`DROP OWNED BY ${role}`).catch(() => undefined);
      await h.sql(`DROP ROLE IF EXISTS ${role}`);
    }
    await h.close();
  }
  h = undefined;
});

/** A client connected as `role` with its password (the test server may also trust local connections). */
async function connectAs(url: string, role: string, password: string, schema: string): Promise<pg.Client> {
  const u = new URL(url);
  u.username = role;
  u.password = password;
  const client = new pg.Client({ connectionString: u.toString(), options: `-c search_path=${schema}` });
  await client.connect();
  return client;
}

async function errorCode(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    return (err as { code?: string }).code ?? (err as Error).message;
  }
}

describe('grant-reader', () => {
  it('gives a role SELECT on every table and view of both schemas, also later ones, and no write', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 10 }] } });
    await syncOnce(await h.context());
    const role = `reader_${randomBytes(4).toString('hex')}`;
    roles.push(role);
    const env = daemonEnv(h);

    const first = await runCli(['grant-reader', role], env);
    expect(first.code, first.stdout + first.stderr).toBe(0);
    expect(first.stdout).toContain(`Created role ${role}`);
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

    const reporting = reportingSchemaOf(h.schema);
    // A table that a later migration adds, created by the schema's owner after the grant.
    await h.sql('CREATE TABLE added_later (id int PRIMARY KEY)');
    await h.sql('INSERT INTO added_later VALUES (1)');

    const relations = await h.sql<{ schema: string; name: string; kind: string }>(
      `SELECT n.nspname AS schema, c.relname AS name, c.relkind::text AS kind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname IN ('${h.schema}', '${reporting}') AND c.relkind IN ('r', 'v', 'm', 'p') ORDER BY 1, 2`,
    );
    expect(relations.some((r) => r.name === 'bookings')).toBe(true);
    expect(relations.some((r) => r.name === 'added_later')).toBe(true);
    expect(relations.filter((r) => r.schema === reporting).map((r) => r.name)).toEqual(
      expect.arrayContaining(['room_nights', 'daily_kpis', 'mirror_completeness']),
    );

    const reader = await connectAs(h.dbUrl, role, 'chosen-secret', h.schema);
    try {
      for (const r of relations) {
        const q = `SELECT * FROM "${r.schema}"."${r.name}" LIMIT 1`;
        // The erasure key: never readable.
        if (r.schema === h.schema && SECRET_TABLES.includes(r.name)) {
          expect(await errorCode(reader.query(q)), q).toBe('42501');
          continue;
        }
        // A table with personal columns is readable column by column, without those.
        const personal = r.schema === h.schema ? PERSONAL_COLUMNS[r.name] : undefined;
        expect(await errorCode(reader.query(q)), q).toBe(personal ? '42501' : undefined);
        if (!personal) continue;
        const others = (await columnsOf(h, r.schema, r.name)).filter((c) => !personal.includes(c));
        const allowed = `SELECT ${others.map((c) => `"${c}"`).join(', ')} FROM "${r.schema}"."${r.name}" LIMIT 1`;
        expect(await errorCode(reader.query(allowed)), allowed).toBeUndefined();
        for (const c of personal) expect(await errorCode(reader.query(`SELECT "${c}" FROM "${r.schema}"."${r.name}"`)), `${r.name}.${c}`).toBe('42501');
      }
      expect(Number((await reader.query('SELECT count(*) AS n FROM bookings')).rows[0].n)).toBe(10);
      expect((await reader.query('SELECT number, price_after_tax FROM bookings')).rows).toHaveLength(10);
      for (const r of relations.filter((x) => x.kind === 'r')) {
        const target = `"${r.schema}"."${r.name}"`;
        expect(await errorCode(reader.query(`DELETE FROM ${target}`)), `DELETE ${target}`).toBe('42501');
        expect(
          await errorCode(reader.query(`UPDATE ${target} SET ${await firstColumn(h, r.schema, r.name)} = ${await firstColumn(h, r.schema, r.name)}`)),
          `UPDATE ${target}`,
        ).toBe('42501');
        expect(await errorCode(reader.query(`TRUNCATE ${target}`)), `TRUNCATE ${target}`).toBe('42501');
        expect(await errorCode(reader.query(`INSERT INTO ${target} DEFAULT VALUES`)), `INSERT ${target}`).toBe('42501');
      }
      expect(await errorCode(reader.query(`CREATE TABLE "${h.schema}".mine (id int)`))).toBe('42501');
      expect(await errorCode(reader.query(`CREATE VIEW "${reporting}".mine AS SELECT 1`))).toBe('42501');
    } finally {
      await reader.end();
    }
  });

  it('grants the personal columns with --personal-data only, and keeps the grants right after a migration adds a column', async () => {
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
      // The erasure key, never: it would let the erasure list's hashes be tested against guesses.
      expect(await errorCode(reader.query('SELECT key FROM erasure_key'))).toBe('42501');
      expect(await errorCode(reader.query('SELECT kind FROM erased_identities'))).toBeUndefined();

      // Granted again without the flag: the personal columns are taken away, the figures stay.
      const narrowed = await runCli(['grant-reader', role], env);
      expect(narrowed.code, narrowed.stderr).toBe(0);
      expect(narrowed.stdout).toContain('without the columns of guests’ personal data');
      expect(await errorCode(reader.query('SELECT customer_last_name FROM bookings'))).toBe('42501');
      expect(await errorCode(reader.query('SELECT raw FROM pms_reservations'))).toBe('42501');
      expect((await reader.query('SELECT number, status FROM bookings')).rows).toHaveLength(5);

      // A column a later migration adds to a table granted column by column: readable after migrate.
      await h.sql('ALTER TABLE bookings ADD COLUMN added_later integer');
      expect(await errorCode(reader.query('SELECT added_later FROM bookings'))).toBe('42501');
      const migrated = await runCli(['migrate'], env);
      expect(migrated.code, migrated.stderr).toBe(0);
      expect(await errorCode(reader.query('SELECT added_later FROM bookings'))).toBeUndefined();
      expect(await errorCode(reader.query('SELECT customer_last_name FROM bookings'))).toBe('42501');

      // Granting again fails (the record of the roles is gone): the migration still succeeds, and says what to do.
      await h.sql('DROP TABLE reader_grants');
      const unrecorded = await runCli(['migrate'], env);
      expect(unrecorded.code, unrecorded.stderr).toBe(0);
      expect(unrecorded.stdout + unrecorded.stderr).toContain('could not grant the reader roles again after the migrations: run staysync grant-reader');
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
    const reader = await connectAs(h.dbUrl, role, 'reader-secret', h.schema);
    try {
      const reservations = await reader.query('SELECT number, customer_email_hash, customer_phone_hash FROM pms_reservations');
      expect(reservations.rows.some((r: { customer_email_hash: string | null }) => /^[0-9a-f]{64}$/.test(r.customer_email_hash ?? ''))).toBe(true);
      const guests = await reader.query('SELECT pms_person_id, email_hash, phone_hash FROM pms_guests');
      expect(guests.rows.some((r: { email_hash: string | null }) => r.email_hash !== null)).toBe(true);
      const view = await reader.query(`SELECT * FROM "${reportingSchemaOf(h.schema)}".guests_by_pseudonym`);
      expect(view.rows.length).toBeGreaterThan(0);
      // The values themselves stay out of reach.
      expect(await errorCode(reader.query('SELECT customer_email FROM pms_reservations'))).toBe('42501');
      expect(await errorCode(reader.query('SELECT email, phone FROM pms_guests'))).toBe('42501');
    } finally {
      await reader.end();
    }
  });

  it('refuses a role name that is not an identifier, and a schema that does not exist yet', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 1 }] } });
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

async function columnsOf(harness: Harness, schema: string, table: string): Promise<string[]> {
  const rows = await harness.sql<{ name: string }>(
    `SELECT column_name AS name FROM information_schema.columns WHERE table_schema = '${schema}' AND table_name = '${table}' ORDER BY ordinal_position`,
  );
  return rows.map((r) => r.name);
}

async function firstColumn(harness: Harness, schema: string, table: string): Promise<string> {
  const [c] = await harness.sql<{ name: string }>(
    `SELECT column_name AS name FROM information_schema.columns WHERE table_schema = '${schema}' AND table_name = '${table}' ORDER BY ordinal_position LIMIT 1`,
  );
  return `"${c!.name}"`;
}
