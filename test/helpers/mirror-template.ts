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
 * A server where the tests' login may not create databases gets no template: the global setup
 * says so, and each harness migrates a schema of its own in the test database, as before.
 */
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { databaseUrlOf, onServer, reportingSchemaOf } from './database.js';

/** The mirror schema of every copy (its reporting schema: reportingSchemaOf(MIRROR_SCHEMA)). */
export const MIRROR_SCHEMA = 't_mirror';

/** How the global setup tells the test workers the template's name. */
const TEMPLATE_VARIABLE = 'STAYSYNC_TEST_MIRROR_TEMPLATE';

/**
 * For the global setup: a database with a mirror migrated by the built CLI (`staysync migrate`,
 * dist/cli/main.js, which the setup has just built), named in the workers' environment; and how
 * to drop it. `refused`, with the reason, when the server refuses a new database.
 */
export async function createMirrorTemplate(serverUrl: string): Promise<{ drop: () => Promise<void> } | { refused: string }> {
  const name = `staysync_template_${randomBytes(4).toString('hex')}`;
  try {
    await onServer(serverUrl, `CREATE DATABASE "${name}"`);
  } catch (err) {
    return { refused: (err as Error).message };
  }
  const drop = () => onServer(serverUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
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
 * A copy of the template for one test, and how to drop it (with whatever is still connected);
 * undefined when there is no template (see above).
 */
export async function copyMirrorTemplate(serverUrl: string): Promise<{ url: string; drop: () => Promise<void> } | undefined> {
  const template = process.env[TEMPLATE_VARIABLE];
  if (!template) return undefined;
  const name = `t_${randomBytes(5).toString('hex')}`;
  await onServer(serverUrl, `CREATE DATABASE "${name}" TEMPLATE "${template}"`);
  return { url: databaseUrlOf(serverUrl, name), drop: () => onServer(serverUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`) };
}
