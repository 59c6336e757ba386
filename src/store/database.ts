/**
 * The database handle: kysely over a pg pool, to the server of DATABASE_URL, or without it to
 * the local server that staysync runs itself (given as `server`: src/local-pg/open-database.ts).
 * Every connection works in the configured schema (search_path), so repositories and
 * migrations use unqualified table names.
 *
 * Besides the query pool the handle owns:
 * - `availability`: whether the server answers (streams wait on it during an outage);
 * - `schemaLock`: the schema's lock on a session of its own, and `write()`, the only way the sync
 *   writes: a transaction whose first statement is its fence;
 * - `control`: a second, tiny pool for the process's own bookkeeping (sync_runs), the replicas'
 *   heartbeat and status reads, so that closing a run never waits behind the sync's busy
 *   connections;
 * - `metrics`: one connection of its own for /metrics' reads of the bookkeeping tables, so that
 *   a slow read (a lock, a busy server) holds no connection that the heartbeat or the sync needs.
 */
import { CompiledQuery, Kysely, PostgresDialect, sql } from 'kysely';
import type { Db, Trx } from './types.js';
import pg from 'pg';
import type { Config } from '../config/config.js';
import { migrationsFolder } from './migration-files.js';
import type { Logger } from '../util/log.js';
import { systemClock, type Clock } from '../util/clock.js';
import { DatabaseAvailability } from './availability.js';
import { DatabaseConfigurationError, describeDatabaseUrl, FenceLostError, LocalServerError } from './errors.js';
import { SchemaLock, processIdentity, type LockSession, type WriteFence } from './schema-lock.js';
import { migrateToLatest, pendingMigrations } from './migrator.js';
import { applyReaders, closeToReaders, ReaderPolicyError, type ReaderSchemas } from './reader-role.js';
import { erasureKeyPresent } from './repositories/erasures.js';
import { secretSchemaOf } from '../config/schema-names.js';
import { applyReportingLayer } from './reporting.js';
import { preparedText, preparingPool } from './prepared.js';
import { TransactionCount } from './transaction-count.js';
import type { Database } from './schema.js';

export interface ShownLogin {
  readonly role: string;
  /** postgres://ROLE@127.0.0.1:PORT/postgres */
  readonly url: string;
  readonly passwordFile: string;
}

export interface LocalLogins {
  /** The daemon's login, for administration only (a superuser can run programs on the host). */
  readonly superuser: ShownLogin;
  /** The read-only login for reporting tools, created by `run` and `sync --once` (reader-login.ts). */
  readonly reader: ShownLogin;
}

/**
 * A PostgreSQL server the handle connects to and closes with it: the local server that
 * staysync runs itself without DATABASE_URL (src/local-pg/open-database.ts opens it first).
 */
export interface OwnServer {
  /** With the password: for this process's own connections, never for output. */
  readonly url: string;
  /** For messages: where the data lives and which settings chose it. */
  readonly description: string;
  readonly logins: LocalLogins;
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  clock?: Clock;
  /** The server to use when DATABASE_URL is not set. */
  server?: OwnServer;
}

export interface DatabaseHandle {
  /** Reads (and the migrator). Writes of the sync go through `write`. */
  readonly db: Db;
  /** A separate small pool: run bookkeeping, the replicas' heartbeat and status reads. */
  readonly control: Db;
  /**
   * One connection of its own for /metrics' table reads, opened at the first read: read-only,
   * each statement given up after METRICS_STATEMENT_TIMEOUT_MS. Never the control pool: a
   * scrape must never make the lease heartbeat wait.
   */
  readonly metrics: Db;
  /**
   * The connection URL, with its password (for the local server, the superuser's): for this
   * process's connections only, never for output. Messages use `description`; the local
   * server's logins are shown from `localServer`.
   */
  readonly url: string;
  /** Whether this is the local server staysync runs itself (no DATABASE_URL). */
  readonly local: boolean;
  /** The local server's logins, as they may be shown (no password); undefined with DATABASE_URL. */
  readonly localServer: LocalLogins | undefined;
  readonly schema: string;
  /** The database for messages: redacted URL and the setting it comes from. */
  readonly description: string;
  readonly availability: DatabaseAvailability;
  readonly schemaLock: SchemaLock;
  /** Transactions this process ended in the database so far, on all its connections (transaction-count.ts). */
  readonly transactions: TransactionCount;
  /** Applies pending migrations; returns their names. */
  migrate(): Promise<string[]>;
  /** Names of migration files not applied yet (read-only; [] when up to date). Null when the schema does not exist. */
  pending(): Promise<string[] | null>;
  /**
   * Runs `fn` in a transaction fenced by the schema's lock: FenceLostError (and nothing
   * written) when this process no longer holds it. `connection` is the API connection the
   * transaction writes for: the default of the bookkeeping tables' `connection` column.
   */
  write<T>(fn: (trx: Trx) => Promise<T>, connection?: string): Promise<T>;
  /** The same, fenced by `lease` instead (a connection's lease, replicas.ts). */
  writeFenced<T>(lease: WriteFence, fn: (trx: Trx) => Promise<T>, connection?: string): Promise<T>;
  close(): Promise<void>;
}

/** Parsers that keep exact values: numeric and int8 as text, local dates and times as text. */
export const exactTypes = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    switch (oid) {
      case pg.types.builtins.NUMERIC:
      case pg.types.builtins.INT8:
      case pg.types.builtins.DATE:
      case pg.types.builtins.TIMESTAMP:
        return (v: string) => v;
      default:
        return pg.types.getTypeParser(oid, format);
    }
  },
};

/** How long a new connection may take before it counts as a failure (a black-holed network never answers). */
const CONNECT_TIMEOUT_MS = 10_000;
/** A statement of /metrics' table reads is given up after this (they take milliseconds; a lock can hold one for ever). */
export const METRICS_STATEMENT_TIMEOUT_MS = 5_000;
/** The metrics connection is closed after this long unused (longer than a scrape interval, so it is not opened at each). */
const METRICS_IDLE_MS = 120_000;

export async function openDatabase(config: Config, logger: Logger, opts: OpenDatabaseOptions = {}): Promise<DatabaseHandle> {
  const { schema } = config.database;
  const clock = opts.clock ?? systemClock;
  const log = logger.child({ component: 'database' });
  let url = config.database.url;
  let description: string;
  const local = url ? undefined : opts.server;
  if (url) {
    description = `${describeDatabaseUrl(url)} (DATABASE_URL)`;
  } else if (local) {
    url = local.url;
    description = local.description;
  } else {
    throw new LocalServerError(
      'DATABASE_URL is not set, and no local server was started for this process: open the database with openConfiguredDatabase (src/local-pg/open-database.ts)',
    );
  }
  const identity = `${processIdentity.host} pid ${processIdentity.pid}`.slice(0, 40);
  const connection = (role: string, settings = ''): pg.ClientConfig => ({
    connectionString: url,
    // The secret schema after the mirror's: the erasure code names its table as it did when it
    // lived in the mirror's schema (migrations/0018_readers.sql).
    options: `-c search_path=${schema},${secretSchemaOf(schema)},public${settings}`,
    types: exactTypes,
    application_name: `staysync ${role} ${identity}`,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    keepAlive: true,
  });
  const transactions = new TransactionCount();
  const pool = watched(new pg.Pool({ ...connection('sync'), max: config.database.poolSize }), log, transactions);
  const controlPool = watched(new pg.Pool({ ...connection('control'), max: 2 }), log, transactions);
  const metricsPool = watched(
    new pg.Pool({
      ...connection('metrics', ` -c statement_timeout=${METRICS_STATEMENT_TIMEOUT_MS} -c default_transaction_read_only=on`),
      max: 1,
      idleTimeoutMillis: METRICS_IDLE_MS,
    }),
    log,
    transactions,
  );
  const dialect = new PostgresDialect({ pool: preparingPool(pool) });
  const db = new Kysely<Database>({ dialect });
  const control = new Kysely<Database>({ dialect: new PostgresDialect({ pool: controlPool }) });
  const metrics = new Kysely<Database>({ dialect: new PostgresDialect({ pool: metricsPool }) });
  const openSession = async (): Promise<LockSession> => {
    const client = new pg.Client(connection('lease'));
    transactions.watch(client);
    const lostCallbacks: ((reason: string) => void)[] = [];
    const lost = (reason: string) => {
      for (const cb of lostCallbacks.splice(0)) cb(reason);
    };
    client.on('error', (err) => lost(err.message));
    client.on('end', () => lost('connection closed'));
    await client.connect();
    return {
      query: async <R extends Record<string, unknown>>(text: string, params?: unknown[]) => (await client.query<R>(text, params)).rows,
      onLost: (cb) => lostCallbacks.push(cb),
      end: async () => {
        lostCallbacks.length = 0;
        await client.end();
      },
    };
  };
  return handle(config, logger, clock, {
    db,
    control,
    metrics,
    url,
    localServer: local?.logins,
    description,
    openSession,
    migrationsFolder,
    dialect,
    transactions,
    async destroy() {
      try {
        await db.destroy();
        await control.destroy();
        await metrics.destroy();
      } finally {
        await local?.close();
      }
    },
  });
}

/**
 * A connection that the server closes (restart, pg_terminate_backend) emits 'error' when no
 * query is running on it. The pool listens on idle connections only; a connection checked out
 * between two statements of a transaction would crash the process with an unhandled 'error'
 * event. Every connection gets a listener: the next statement on it fails instead, and that
 * failure reports the outage (if there is one) where it happens.
 */
function watched(pool: pg.Pool, log: Logger, transactions: TransactionCount): pg.Pool {
  const quiet = (err: Error) => log.debug({ err: err.message }, 'database connection closed by the server');
  pool.on('error', quiet);
  pool.on('connect', (client) => {
    client.on('error', quiet);
    transactions.watch(client);
  });
  return pool;
}

interface HandleParts {
  db: Db;
  control: Db;
  metrics: Db;
  url: string;
  localServer: LocalLogins | undefined;
  description: string;
  /** A session of its own for the schema's lock. */
  openSession: () => Promise<LockSession>;
  migrationsFolder: string;
  dialect: PostgresDialect;
  transactions: TransactionCount;
  destroy(): Promise<void>;
}

function handle(config: Config, logger: Logger, clock: Clock, p: HandleParts): DatabaseHandle {
  const { schema } = config.database;
  const availability = new DatabaseAvailability(() => ping(p.db), p.description, logger.child({ component: 'database' }), clock);
  const lease = new SchemaLock({ schema, openSession: p.openSession, availability, logger, clock, retryMs: config.database.leaseRetryMs });
  let closed = false;
  return {
    db: p.db,
    control: p.control,
    metrics: p.metrics,
    url: p.url,
    local: p.localServer !== undefined,
    localServer: p.localServer,
    schema,
    description: p.description,
    availability,
    schemaLock: lease,
    transactions: p.transactions,
    async migrate() {
      const applied = await migrateToLatest(p.dialect, schema, p.migrationsFolder);
      if (!(await erasureKeyPresent(p.db, secretSchemaOf(schema)))) {
        throw new DatabaseConfigurationError(
          `the erasure key is missing: ${secretSchemaOf(schema)}.erasure_key is not in ${p.description}, as after a restore that left out the schema ${secretSchemaOf(schema)}. ` +
            'Restore that schema from the same backup (docs/operations.md, "Back up the mirror"): without the key no write of guest data can be checked against the erasure list, so nothing is written',
        );
      }
      await applyReportingLayer(p.db, { schema, reportingSchema: config.database.reportingSchema });
      // What readers are shown and which rows they see, for the tables and columns as they are
      // now (column privileges do not cover a column a migration added), every role that can
      // read the mirror brought under it: src/store/reader-role.ts.
      const schemas = { schema, reportingSchema: config.database.reportingSchema };
      const readers = await applyReaders(p.db, schemas).catch((err: unknown) => readersClosed(p.db, schemas, err, logger));
      if (readers && readers.changed.length > 0) logger.info(`readers' policy applied: ${readers.changed.join('; ')}`);
      for (const w of readers?.warnings ?? []) logger.warn(w);
      return applied;
    },
    pending: () => pendingMigrations(p.db, schema, p.migrationsFolder),
    async write(fn, connection) {
      if (!lease.held) throw new FenceLostError(`this process does not hold the lock of schema ${schema}`);
      return p.db.transaction().execute(async (trx) => {
        // The fence is one text for every write: prepared (src/store/prepared.ts).
        await lease.fence(async (text, params) => (await trx.executeQuery(CompiledQuery.raw(preparedText(text), params))).rows, connection);
        return fn(trx);
      });
    },
    async writeFenced(by, fn, connection) {
      if (!by.held)
        throw new FenceLostError(
          connection
            ? `this process does not hold the lease of connection ${connection} in schema ${schema}`
            : `this process does not hold the lock of schema ${schema}`,
        );
      return p.db.transaction().execute(async (trx) => {
        await by.fence(async (text, params) => (await trx.executeQuery(CompiledQuery.raw(preparedText(text), params))).rows, connection);
        return fn(trx);
      });
    },
    async close() {
      if (closed) return;
      closed = true;
      availability.close();
      await lease.close();
      await p.destroy();
    },
  };
}

/**
 * The readers' policy could not be applied: it fails closed. Every role but the owner loses its
 * access to the mirror's schemas (closeToReaders), so that no reader of before goes on reading
 * tables the daemon goes on filling, and the log says why and what to do; when even that cannot
 * be done, the daemon stops (exit 1) with the sentence.
 */
async function readersClosed(db: Db, schemas: ReaderSchemas, err: unknown, logger: Logger): Promise<undefined> {
  // A ReaderPolicyError says what to run; any other failure is the catalog refusing a change.
  const why =
    err instanceof ReaderPolicyError
      ? err.message
      : `${(err as Error).message}. Run staysync migrate as the role that owns the mirror's schemas once the cause is gone`;
  const closed = await closeToReaders(db, schemas).catch((closing: unknown) => {
    throw new DatabaseConfigurationError(
      `the readers' policy could not be applied: ${why}. The roles that read the mirror could not be shut out either (${(closing as Error).message}), ` +
        'so staysync does not go on filling tables they would read past the policy',
      { cause: err },
    );
  });
  logger.error(
    { err: (err as Error).message, shutOut: closed },
    `the readers' policy could not be applied: ${why}. Until it is, no role but the daemon's may use the mirror's schemas` +
      (closed.length > 0 ? ` (${closed.join(', ')} lost their access)` : '') +
      '; the migration that applies it grants the readers again',
  );
  return undefined;
}

/** Runs `SELECT 1` — for readiness checks and the outage probe. */
async function ping(db: Db): Promise<void> {
  await sql`SELECT 1`.execute(db);
}
