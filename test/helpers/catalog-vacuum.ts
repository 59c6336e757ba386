/**
 * Keeps the test server's system catalogs small while the suite runs.
 *
 * Every database test makes a schema of its own (about a hundred tables, views and functions)
 * and drops it at the end: a run leaves about a million dead rows in pg_attribute, pg_depend
 * and pg_description. Where autovacuum is off (the CI machine's server has it off) nothing
 * reclaims them, and every catalog query slows down with them: measured, the readers' policy
 * that each migration and each daemon start applies took 500 ms on a bloated catalog and 40 ms
 * after a VACUUM; a fresh mirror's migration 1.0 s and 0.5 s. So the global setup vacuums the
 * churned catalogs once at the start and then every few seconds, as autovacuum would.
 *
 * A plain VACUUM takes no lock that DDL waits for; SKIP_LOCKED passes over a catalog another
 * VACUUM holds. A role that does not own the catalogs gets a warning per table and nothing
 * done: the tests then run as before, only slower.
 */
import pg from 'pg';

/** The catalogs that creating and dropping a schema of tables, views and functions churns. */
const CHURNED_CATALOGS = [
  'pg_attribute',
  'pg_depend',
  'pg_description',
  'pg_class',
  'pg_type',
  'pg_rewrite',
  'pg_constraint',
  'pg_index',
  'pg_attrdef',
  'pg_proc',
  'pg_policy',
  'pg_trigger',
  'pg_sequence',
  'pg_namespace',
  'pg_statistic',
  'pg_init_privs',
  'pg_shdepend',
];

const VACUUM = `VACUUM (SKIP_LOCKED) ${CHURNED_CATALOGS.map((c) => `pg_catalog.${c}`).join(', ')}`;

/** Between two passes: a test schema is made and dropped every second or two. */
const INTERVAL_MS = 20_000;

/** Vacuums the catalogs of `url`'s database now and every INTERVAL_MS until stopped. */
export async function startCatalogVacuum(url: string): Promise<() => Promise<void>> {
  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  const pass = async (): Promise<void> => {
    const client = new pg.Client({ connectionString: url, application_name: 'test suite catalog vacuum' });
    // A warning (not the owner) is no error; a server that went away (a test restarting it) is not this loop's to report.
    client.on('notice', () => undefined);
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query(VACUUM);
    } catch {
      // The next pass tries again.
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  await pass();
  const timer = setInterval(() => {
    if (stopped) return;
    running = running.then(pass);
  }, INTERVAL_MS);
  timer.unref();
  return async () => {
    stopped = true;
    clearInterval(timer);
    await running;
  };
}
