/**
 * A migrated mirror for every test without migrating one per test: the global setup migrates a
 * mirror once into a database of its own (the template), and each harness gets a copy of it,
 * `CREATE DATABASE … TEMPLATE`, in about 150 ms where the migrations, the reporting layer and
 * the readers' policy take 600 ms of the server's CPU (and more on a busy machine).
 *
 * The copy is the migrated mirror byte for byte, in a database of the test's own, so its schemas
 * have the template's names (MIRROR_SCHEMA and the schemas named after it); advisory locks, the
 * schema lock among them, are per database, so tests still do not see each other.
 *
 * The copies are dropped at the end of the run, with the template, not after each test:
 * PostgreSQL 15 makes every DROP DATABASE wait for an immediate checkpoint, which wrote out every
 * other test's changed pages (about 180 checkpoints and 1.9 GB of writes a run). A run that was
 * killed leaves its copies; the next run's setup drops them, as the copies of a template that no
 * longer exists.
 *
 * A server where the tests' login may not create databases gets no template: the global setup
 * says so, and each harness migrates a schema of its own in the test database, as before.
 */
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import pg from 'pg';
import { databaseUrlOf, onServer, reportingSchemaOf } from './database.js';

/** The mirror schema of every copy (its reporting schema: reportingSchemaOf(MIRROR_SCHEMA)). */
export const MIRROR_SCHEMA = 't_mirror';

/** How the global setup tells the test workers the template's name. */
const TEMPLATE_VARIABLE = 'STAYSYNC_TEST_MIRROR_TEMPLATE';

/** The template is `staysync_template_<id>`; its copies are `t_<id>_<their own id>`. */
const TEMPLATE_PREFIX = 'staysync_template_';
const copyPrefixOf = (template: string) => `t_${template.slice(TEMPLATE_PREFIX.length)}_`;

/**
 * For the global setup: a database with a mirror migrated by the built CLI (`staysync migrate`,
 * dist/cli/main.js, which the setup has just built), named in the workers' environment; and how
 * to drop it. `refused`, with the reason, when the server refuses a new database.
 */
export async function createMirrorTemplate(serverUrl: string): Promise<{ drop: () => Promise<void> } | { refused: string }> {
  const name = `${TEMPLATE_PREFIX}${randomBytes(4).toString('hex')}`;
  try {
    await onServer(serverUrl, `CREATE DATABASE "${name}"`);
  } catch (err) {
    return { refused: (err as Error).message };
  }
  await dropOrphanCopies(serverUrl);
  const drop = async () => {
    await dropDatabases(serverUrl, (n) => n.startsWith(copyPrefixOf(name)));
    await onServer(serverUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  };
  try {
    execFileSync(process.execPath, ['dist/cli/main.js', 'migrate'], {
      env: {
        PATH: process.env.PATH ?? '',
        DATABASE_URL: databaseUrlOf(serverUrl, name),
        STAYSYNC_DB_SCHEMA: MIRROR_SCHEMA,
        STAYSYNC_REPORTING_SCHEMA: reportingSchemaOf(MIRROR_SCHEMA),
        STAYSYNC_LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  } catch (err) {
    await drop();
    throw err;
  }
  process.env[TEMPLATE_VARIABLE] = name;
  return { drop };
}

/**
 * A copy of the template for one test (the global teardown drops it); undefined when there is no
 * template (see above).
 */
export async function copyMirrorTemplate(serverUrl: string): Promise<{ url: string } | undefined> {
  const template = process.env[TEMPLATE_VARIABLE];
  if (!template) return undefined;
  const name = `${copyPrefixOf(template)}${randomBytes(5).toString('hex')}`;
  await onServer(serverUrl, `CREATE DATABASE "${name}" TEMPLATE "${template}"`);
  return { url: databaseUrlOf(serverUrl, name) };
}

/** Drops the copies a run that was killed left: those whose template is gone. */
export async function dropOrphanCopies(serverUrl: string): Promise<void> {
  await dropDatabases(
    serverUrl,
    (n) => /^t_[0-9a-f]{8}_[0-9a-f]{10}$/.test(n),
    (n, all) => !all.has(`${TEMPLATE_PREFIX}${n.slice(2, 10)}`),
  );
}

/**
 * Drops the server's databases whose name `matches` (and, given `also`, for which it holds over
 * all the names), a few at a time: each drop mostly waits for its checkpoint and for the removal
 * of its files.
 */
async function dropDatabases(serverUrl: string, matches: (name: string) => boolean, also?: (name: string, all: Set<string>) => boolean): Promise<void> {
  const pool = new pg.Pool({ connectionString: serverUrl, max: 8 });
  try {
    const all = new Set((await pool.query<{ datname: string }>('SELECT datname FROM pg_database')).rows.map((r) => r.datname));
    const doomed = [...all].filter((name) => matches(name) && (!also || also(name, all)));
    await Promise.all(doomed.map((name) => pool.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)));
  } finally {
    await pool.end();
  }
}
