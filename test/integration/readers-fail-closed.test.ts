/**
 * The readers' policy at every migration, run as a deployment runs the daemon: a role that owns
 * the mirror's schemas, with CREATEROLE and nothing more (not a superuser). It fails closed:
 * when it cannot be applied (an object of the mirror another role owns), every role but the
 * daemon's is shut out of the mirror's schemas, and when even that cannot be done the daemon
 * stops (exit 1). A reader given a way out of the policy after it was granted (CREATEROLE, …)
 * loses its grants until that is undone; what it can still do meanwhile is contained. The fix-it
 * commands quote every name, and the reporting schema may be no other schema's.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { readableSchemaOf, secretSchemaOf } from '../../src/config/schema-names.js';
import { daemonEnv, logRecords, runCli } from '../helpers/cli.js';
import { dropSchema, reportingSchemaOf } from '../helpers/database.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { closeWithRoles, connectAs, errorCode } from '../helpers/readers.js';

let h: Harness | undefined;
const roles: string[] = [];
afterEach(async () => {
  // The schemas first: a role's DROP OWNED refuses to drop a schema that holds another role's table.
  if (h) await dropSchema(h.dbUrl, h.schema);
  await closeWithRoles(h, roles);
  h = undefined;
});

const q = (name: string) => `"${name.replaceAll('"', '""')}"`;
const PASSWORD = 'role-secret';
const role = (prefix = 'reader') => {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  roles.push(name);
  return name;
};

/** A schema of its own in the shared database, and the daemon's environment as `owner`: CREATEROLE and CREATE on the database, no more. */
async function deployment(bookingCount = 3): Promise<{ harness: Harness; owner: string; env: Record<string, string> }> {
  const harness = await startHarness({
    sim: {
      properties: [
        { id: '500100', bookingCount },
        { id: '500200', bookingCount },
      ],
    },
    emptySchema: true,
  });
  h = harness;
  const owner = role('owner');
  await harness.sql(`CREATE ROLE ${owner} LOGIN CREATEROLE PASSWORD '${PASSWORD}'`);
  await harness.sql(`GRANT CREATE ON DATABASE ${q((await harness.sql<{ d: string }>('SELECT current_database() AS d'))[0]!.d)} TO ${owner}`);
  const url = new URL(harness.dbUrl);
  url.username = owner;
  url.password = PASSWORD;
  const env = { ...daemonEnv(harness), DATABASE_URL: url.toString(), STAYSYNC_READER_PASSWORD: PASSWORD, STAYSYNC_LOG_LEVEL: 'info' };
  const migrated = await runCli(['migrate'], env);
  expect(migrated.code, migrated.stdout + migrated.stderr).toBe(0);
  return { harness, owner, env };
}

/** Runs statements as `who` (a role of the test, with PASSWORD). */
async function as(harness: Harness, who: string, ...statements: string[]): Promise<void> {
  const client = await connectAs(harness.dbUrl, who, PASSWORD);
  try {
    for (const s of statements) await client.query(s);
  } finally {
    await client.end();
  }
}

const said = (run: { stdout: string; stderr: string }, level: string) =>
  logRecords(run.stdout + run.stderr)
    .filter((r) => r.level === level)
    .map((r) => r.msg)
    .join('\n');

describe('the readers’ policy fails closed', () => {
  it('shuts every role out of the mirror when an object another role owns keeps it from applying, stops when it cannot, and opens again once fixed', async () => {
    const { harness, owner, env } = await deployment();
    const M = q(harness.schema);
    const [legacy, passedOn, intruder] = [role(), role(), role('intruder')];
    await harness.sql(`CREATE ROLE ${passedOn} LOGIN PASSWORD '${PASSWORD}'`);
    await harness.sql(`CREATE ROLE ${intruder} LOGIN PASSWORD '${PASSWORD}'`);
    // A reader as the release before reader_grants made one, with GRANT OPTION, which it used.
    await as(
      harness,
      owner,
      `CREATE ROLE ${legacy} LOGIN PASSWORD '${PASSWORD}'`,
      `GRANT USAGE ON SCHEMA ${M} TO ${legacy}`,
      `GRANT SELECT ON ALL TABLES IN SCHEMA ${M} TO ${legacy} WITH GRANT OPTION`,
    );
    await as(harness, legacy, `GRANT SELECT ON ${M}.bookings TO ${passedOn}`);
    // A table of the mirror that another role owns (made by hand, or restored as another user).
    await harness.sql(`CREATE TABLE ${M}.notes (property_id text, note text)`);
    await harness.sql(`ALTER TABLE ${M}.notes OWNER TO ${intruder}`);
    await as(harness, owner, `GRANT USAGE ON SCHEMA ${M} TO ${intruder}`);
    await as(harness, intruder, `GRANT SELECT ON ${M}.notes TO ${legacy}`);

    const closed = await runCli(['migrate'], env);
    expect(closed.code, closed.stdout + closed.stderr).toBe(0);
    const error = said(closed, 'error');
    expect(error).toContain(
      `the readers' policy could not be applied: table ${harness.schema}.notes is owned by ${intruder}, not by the role that owns the mirror`,
    );
    expect(error).toContain(`ALTER TABLE "${harness.schema}"."notes" OWNER TO "${owner}"`);
    expect(error).toContain(`no role but the daemon's may use the mirror's schemas (${[intruder, legacy].sort().join(', ')} lost their access)`);
    for (const who of [legacy, passedOn])
      for (const table of ['bookings', 'notes']) expect(await errorCode(as(harness, who, `SELECT 1 FROM ${M}.${table}`)), `${who} ${table}`).toBe('42501');

    // A schema of the mirror another role owns, where a reader holds USAGE: the daemon can shut
    // nobody out of it, so it stops, and says why.
    const readable = q(readableSchemaOf(harness.schema));
    await harness.sql(`ALTER SCHEMA ${readable} OWNER TO ${intruder}`);
    await as(harness, intruder, `GRANT USAGE ON SCHEMA ${readable} TO ${legacy}`);
    const stopped = await runCli(['migrate'], env);
    expect(stopped.code, stopped.stdout + stopped.stderr).toBe(1);
    const sentence = logRecords(stopped.stdout + stopped.stderr)
      .map((r) => r.msg)
      .join('\n');
    expect(sentence).toContain(`ALTER SCHEMA "${readableSchemaOf(harness.schema)}" OWNER TO "${owner}"`);
    expect(sentence).toContain(`could not be shut out either (permission denied for schema ${readableSchemaOf(harness.schema)})`);
    expect(sentence).toContain('so staysync does not go on filling tables they would read past the policy');
    expect((await runCli(['sync', '--once'], env)).code).toBe(1);

    // Fixed as the sentences say: the legacy reader and the one it passed a grant on become readers without personal data.
    await harness.sql(`ALTER SCHEMA ${readable} OWNER TO ${owner}`);
    await harness.sql(`ALTER TABLE ${M}.notes OWNER TO ${owner}`);
    const opened = await runCli(['migrate'], env);
    expect(opened.code, opened.stdout + opened.stderr).toBe(0);
    expect(said(opened, 'error')).toBe('');
    expect(await harness.sql(`SELECT role, personal_data FROM reader_grants ORDER BY role`)).toEqual(
      [legacy, passedOn].sort().map((r) => ({ role: r, personal_data: false })),
    );
    expect(await harness.sql(`SELECT has_table_privilege($1, 'bookings', 'SELECT WITH GRANT OPTION') AS passes`, [legacy])).toEqual([{ passes: false }]);
    const sync = await runCli(['sync', '--once'], env);
    expect(sync.code, sync.stdout + sync.stderr).toBe(0);
    for (const who of [legacy, passedOn]) {
      const client = await connectAs(harness.dbUrl, who, PASSWORD);
      try {
        expect(Number((await client.query(`SELECT count(*) AS n FROM ${readable}.bookings`)).rows[0].n), who).toBeGreaterThan(0);
        expect(await errorCode(client.query(`SELECT customer_last_name FROM ${M}.bookings`)), who).toBe('42501');
      } finally {
        await client.end();
      }
    }
  });

  it('takes its grants from a reader given a way out since, contains what it can still do, and grants it again once undone', async () => {
    const { harness, owner, env } = await deployment();
    const M = q(harness.schema);
    expect((await runCli(['sync', '--once'], env)).code).toBe(0);
    const reader = role();
    expect((await runCli(['grant-reader', reader, '--properties', '500100'], env)).code).toBe(0);
    const readable = q(readableSchemaOf(harness.schema));
    const own = `SELECT count(*)::int AS n FROM ${readable}.bookings`;
    const client = await connectAs(harness.dbUrl, reader, PASSWORD);
    const before = (await client.query<{ n: number }>(own)).rows[0]!.n;
    expect(before).toBeGreaterThan(0);

    // An administrator gives it CREATEROLE; the next start withdraws its grants and says so.
    await harness.sql(`ALTER ROLE ${reader} CREATEROLE`);
    const withdrawn = await runCli(['migrate'], env);
    expect(withdrawn.code, withdrawn.stderr).toBe(0);
    expect(said(withdrawn, 'warn')).toContain(
      `reader ${reader} has CREATEROLE: it can grant itself other roles (on PostgreSQL 15 any but a superuser: pg_read_all_data, the daemon’s own) and change other readers’ passwords (ALTER ROLE "${reader}" NOCREATEROLE). It could lift itself over its grants, so it has lost them`,
    );
    try {
      expect(await errorCode(client.query(own))).toBe('42501');
      // PostgreSQL 15 lets it grant itself pg_read_all_data; 16 and later refuse. Either way it
      // sees no booking and no erasure key: without a policy of its own, row-level security shows it no row.
      const version = Number((await client.query<{ v: string }>(`SELECT current_setting('server_version_num') AS v`)).rows[0]!.v);
      const lifted = await errorCode(client.query(`GRANT pg_read_all_data TO ${reader}`));
      expect(lifted).toBe(version < 160000 ? undefined : '42501');
      if (lifted === undefined) {
        expect((await client.query(`SELECT count(*)::int AS n FROM ${M}.bookings`)).rows[0].n).toBe(0);
        expect((await client.query(`SELECT count(*)::int AS n FROM ${q(secretSchemaOf(harness.schema))}.erasure_key`)).rows[0].n).toBe(0);
      }
      // Undone as the sentence says (and the membership it took too): granted again at the next start.
      await harness.sql(`ALTER ROLE ${reader} NOCREATEROLE`);
      await harness.sql(`REVOKE pg_read_all_data FROM ${reader}`);
      const regranted = await runCli(['migrate'], env);
      expect(regranted.code, regranted.stderr).toBe(0);
      expect(said(regranted, 'warn')).not.toContain(reader);
      expect((await client.query<{ n: number }>(own)).rows[0]!.n).toBe(before);
    } finally {
      await client.end();
    }

    // A role with a name made to be run, granted by hand and with a way out: not made a reader,
    // its grants revoked, and the command printed quotes its name, so running it runs nothing else.
    const odd = `bi"; DROP TABLE ${harness.schema}.bookings; --`;
    roles.push(odd);
    await harness.sql(`CREATE ROLE ${q(odd)} LOGIN CREATEROLE`);
    await as(harness, owner, `GRANT USAGE ON SCHEMA ${M} TO ${q(odd)}`, `GRANT SELECT ON ${M}.bookings TO ${q(odd)}`);
    const named = await runCli(['migrate'], env);
    expect(named.code, named.stderr).toBe(0);
    const warned = said(named, 'warn');
    const fix = `ALTER ROLE ${q(odd)} NOCREATEROLE`;
    expect(warned).toContain(`its grants are revoked and it is not made a reader`);
    expect(warned).toContain(`(${fix})`);
    expect(await harness.sql(`SELECT has_schema_privilege($1, $2, 'USAGE') AS usage`, [odd, harness.schema])).toEqual([{ usage: false }]);
    await harness.sql(fix);
    expect(await harness.sql(`SELECT rolcreaterole FROM pg_roles WHERE rolname = $1`, [odd])).toEqual([{ rolcreaterole: false }]);
    expect(await harness.sql(`SELECT to_regclass($1) IS NOT NULL AS kept`, [`${M}.bookings`])).toEqual([{ kept: true }]);
  });
});

describe('the reporting schema', () => {
  it('is refused at start (exit 2, a sentence) when it is a schema of the mirror, another mirror’s, or holds what staysync did not make; nothing is dropped', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 1 }] } });
    await h.migrate();
    const env = daemonEnv(h);
    const other = `rep_${randomBytes(4).toString('hex')}`;
    const cases: [string, string, string][] = [
      [secretSchemaOf(h.schema), '', 'the schema of the erasure key: every reader would be granted it'],
      [readableSchemaOf(h.schema), '', 'the schema of the mirror’s tables without personal data'],
      [
        other,
        `CREATE SCHEMA ${other}; COMMENT ON SCHEMA ${other} IS 'Reporting views of staysync over the mirror in schema "another_mirror" (see docs). (layer ${'0'.repeat(64)})'`,
        'the reporting schema of the mirror in schema another_mirror: the two mirrors would replace each other',
      ],
      [other, `COMMENT ON SCHEMA ${other} IS NULL; CREATE TABLE ${other}.orders (id int)`, 'a schema that holds 1 table'],
      [
        other,
        `DROP TABLE ${other}.orders; CREATE VIEW ${other}.mine AS SELECT 1 AS one`,
        'a schema that holds 1 view or function staysync did not make: they would be dropped',
      ],
    ];
    try {
      for (const [schema, setup, sentence] of cases) {
        if (setup) await h.sql(setup);
        const run = await runCli(['migrate'], { ...env, STAYSYNC_REPORTING_SCHEMA: schema });
        expect(run.code, `${schema}: ${run.stdout}${run.stderr}`).toBe(2);
        expect(run.stdout + run.stderr, schema).toContain(`database.reportingSchema (STAYSYNC_REPORTING_SCHEMA) is ${schema}, ${sentence}`);
      }
      expect(await h.sql(`SELECT to_regclass($1) IS NOT NULL AS kept`, [`${other}.mine`])).toEqual([{ kept: true }]);
      expect(
        await h.sql(`SELECT count(*)::int AS n FROM pg_class WHERE relnamespace = $1::regnamespace AND relkind = 'v'`, [readableSchemaOf(h.schema)]),
      ).not.toEqual([{ n: 0 }]);
      // Its own reporting schema is still accepted.
      expect((await runCli(['migrate'], { ...env, STAYSYNC_REPORTING_SCHEMA: reportingSchemaOf(h.schema) })).code).toBe(0);
    } finally {
      await h.sql(`DROP SCHEMA IF EXISTS ${other} CASCADE`);
    }
  });
});
