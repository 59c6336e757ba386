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
 * killed leaves its template and its copies: the next run's setup drops them (dropLeftovers).
 *
 * A server where the tests' login may not create databases gets no template: the global setup
 * says so, and each harness migrates a schema of its own in the test database, as before.
 */
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { hostname } from 'node:os';
import pg from 'pg';
import { databaseUrlOf, onServer, query, reportingSchemaOf } from './database.js';

/** The mirror schema of every copy (its reporting schema: reportingSchemaOf(MIRROR_SCHEMA)). */
export const MIRROR_SCHEMA = 't_mirror';

/** How the global setup tells the test workers the template's name. */
const TEMPLATE_VARIABLE = 'STAYSYNC_TEST_MIRROR_TEMPLATE';

/** The template is `staysync_template_<id>`; its copies are `t_<id>_<their own id>`. */
const TEMPLATE_PREFIX = 'staysync_template_';
const TEMPLATE_NAME = /^staysync_template_([0-9a-f]{8})$/;
const COPY_NAME = /^t_([0-9a-f]{8})_[0-9a-f]{10}$/;
const copyPrefixOf = (template: string) => `t_${template.slice(TEMPLATE_PREFIX.length)}_`;
/** The template a copy was made from, by its name; undefined for a database that is no copy. */
const templateOfCopy = (name: string): string | undefined => {
  const id = COPY_NAME.exec(name)?.[1];
  return id === undefined ? undefined : `${TEMPLATE_PREFIX}${id}`;
};

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
  const owner: TemplateOwner = { host: hostname(), pid: process.pid, at: new Date().toISOString() };
  await onServer(serverUrl, `COMMENT ON DATABASE "${name}" IS '${JSON.stringify(owner)}'`);
  await dropLeftovers(serverUrl);
  const drop = async () => {
    await dropDatabases(
      serverUrl,
      [...(await databaseNotes(serverUrl)).keys()].filter((n) => n.startsWith(copyPrefixOf(name))),
    );
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

/** Who made a template, in its comment: a run's setup process on a machine, and when. */
interface TemplateOwner {
  host: string;
  pid: number;
  at: string;
}

/** No test run lasts this long: a template older than this is a killed run's, wherever it ran. */
const RUN_AT_MOST_MS = 12 * 3600_000;

/**
 * Drops what killed runs left: the templates of runs that are over (made on this machine by a
 * process that is gone, or more than RUN_AT_MOST_MS ago) with their copies, and the copies whose
 * template is gone. A template without an owner's comment is left alone.
 */
export async function dropLeftovers(serverUrl: string): Promise<void> {
  const notes = await databaseNotes(serverUrl);
  const over = [...notes].filter(([name, note]) => TEMPLATE_NAME.test(name) && runIsOver(note)).map(([name]) => name);
  const left = new Set([...notes.keys()].filter((n) => !over.includes(n)));
  const orphans = [...left].filter((n) => {
    const template = templateOfCopy(n);
    return template !== undefined && !left.has(template);
  });
  await dropDatabases(serverUrl, orphans);
  await dropDatabases(serverUrl, over);
}

function runIsOver(note: string | null): boolean {
  let owner: Partial<TemplateOwner>;
  try {
    owner = JSON.parse(note ?? '') as Partial<TemplateOwner>;
  } catch {
    return false;
  }
  if (typeof owner.at !== 'string' || typeof owner.pid !== 'number') return false;
  if (Date.now() - Date.parse(owner.at) > RUN_AT_MOST_MS) return true;
  if (owner.host !== hostname()) return false;
  try {
    process.kill(owner.pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/** The server's databases and their comments. */
async function databaseNotes(serverUrl: string): Promise<Map<string, string | null>> {
  const rows = await query<{ datname: string; note: string | null }>(
    serverUrl,
    'public',
    `SELECT datname, shobj_description(oid, 'pg_database') AS note FROM pg_database`,
  );
  return new Map(rows.map((r) => [r.datname, r.note]));
}

/** Drops `names`, a few at a time: each drop mostly waits for its checkpoint and for the removal of its files. */
async function dropDatabases(serverUrl: string, names: string[]): Promise<void> {
  if (names.length === 0) return;
  const pool = new pg.Pool({ connectionString: serverUrl, max: 8 });
  try {
    await Promise.all(names.map((name) => pool.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)));
  } finally {
    await pool.end();
  }
}
