/**
 * The CLI's commands, free of process concerns (signals, argv, exit): each takes the parsed
 * configuration, a logger and the stop signals, and returns an exit status.
 */
import { ConfigError, type Config } from './config.js';
import { configForConnection, resolveConnections } from './connections.js';
import { openDatabase, type DatabaseHandle } from './db/database.js';
import { grantReader, readerUrl } from './db/reader-role.js';
import { DatabaseConfigurationError, DatabaseUnavailableError, describeDatabaseError, isDatabaseMisconfigured, isDatabaseUnavailable, LeaseBusyError, LocalServerError } from './db/errors.js';
import { processIdentity } from './db/lease.js';
import { leftoverFetches } from './db/repositories/fetch-queue.js';
import { closeAbandonedRuns, finishRun, startRun } from './db/repositories/runs.js';
import type { RunOutcome } from './db/states.js';
import type { Logger } from './log.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { OpsPortError, OpsServer } from './ops/http.js';
import { receiveWebhook } from './ops/webhooks.js';
import { insertWebhookEvents } from './db/repositories/pms.js';
import { createMetrics } from './ops/metrics.js';
import { formatStatus, gatherStatus } from './ops/status.js';
import { AuthenticationError } from './provider/errors.js';
import { ProviderClient } from './provider/client.js';
import { ONCE_MAX_ATTEMPTS } from './sync/fetch-drain.js';
import { createSyncContext } from './sync/context.js';
import { Engine, type EngineMode, type EngineResult } from './sync/engine.js';
import { DatabaseGaveUpError, NothingToFollowError, ProviderGaveUpError } from './sync/errors.js';
import type { Recovery } from './sync/recovery.js';
import { upgradeMapping } from './replay/mapping-version.js';
import { formatRetry, retryQuarantine } from './replay/quarantine-retry.js';
import { formatRebuild, rebuild } from './replay/rebuild.js';

export const ExitCode = {
  ok: 0,
  failure: 1,
  usage: 2,
  tokenLost: 3,
} as const;

export interface CommandEnv {
  config: Config;
  logger: Logger;
  /** Aborts on the first SIGTERM/SIGINT: stop starting work, finish what is in flight. */
  signal: AbortSignal;
  /** Aborts when the shutdown grace time is nearly over: stop waiting for in-flight work. */
  graceSignal: AbortSignal;
  /** Where human-readable output goes (status). */
  out: (line: string) => void;
}

export async function migrateCommand(env: CommandEnv): Promise<number> {
  const h = await openDatabase(env.config, env.logger);
  try {
    const applied = await h.migrate().catch((err: unknown) => rethrowDatabase(err, h));
    env.logger.info({ applied, schema: h.schema }, applied.length ? 'migrations applied' : 'database schema is up to date');
    return ExitCode.ok;
  } finally {
    await h.close();
  }
}

/**
 * `grant-reader <role>`: a read-only role for reporting tools. Needs the schemas (run or
 * migrate first) and a database role allowed to create roles; takes no lease (it writes no
 * mirror row).
 */
export async function grantReaderCommand(env: CommandEnv, role: string): Promise<number> {
  const h = await openDatabase(env.config, env.logger);
  try {
    const pending = await h.pending().catch((err: unknown) => rethrowDatabase(err, h));
    if (pending === null || pending.length > 0) {
      env.logger.error(`the schema "${h.schema}" in ${h.description} is missing or older than this staysync: start \`staysync run\` or run \`staysync migrate\` first`);
      return ExitCode.failure;
    }
    const password = process.env.STAYSYNC_READER_PASSWORD || undefined;
    const result = await grantReader(h.db, {
      role,
      password,
      schemas: [h.schema, env.config.database.reportingSchema],
    }).catch((err: unknown) => rethrowDatabase(err, h));
    const url = readerUrl(h.url, role, result.generatedPassword ?? (password ? '<STAYSYNC_READER_PASSWORD>' : '<its password>'));
    env.out(
      `${result.created ? 'Created' : 'Updated'} role ${role}: it can read (SELECT only) the schemas ${result.schemas.join(' and ')}, ` +
        'tables and views, including those added by later migrations.',
    );
    if (result.generatedPassword) env.out(`Its password (shown once): ${result.generatedPassword}`);
    env.out(`Reporting tools connect with ${url}`);
    return ExitCode.ok;
  } finally {
    await h.close();
  }
}

/** `status [--json]`: reads only; never takes the lease, never migrates. */
export async function statusCommand(env: CommandEnv, json: boolean): Promise<number> {
  const h = await openDatabase(env.config, env.logger);
  try {
    const pending = await h.pending().catch((err: unknown) => rethrowDatabase(err, h));
    if (pending === null || pending.length > 0) {
      const what =
        pending === null
          ? `the database ${h.description} has no staysync schema "${h.schema}" yet`
          : `the schema "${h.schema}" in ${h.description} is older than this staysync (pending migrations: ${pending.join(', ')})`;
      env.logger.error(`${what}: start \`staysync run\` or run \`staysync migrate\` first (status changes nothing)`);
      return ExitCode.failure;
    }
    const report = await gatherStatus(h.control, env.config);
    // The local server has a password of its own: say how to reach it (it answers only on 127.0.0.1).
    const database = h.local ? { localServerUrl: h.url } : {};
    if (json) env.out(JSON.stringify({ ...report, ...database }, null, 2));
    else {
      if (h.local) env.out(`Database: ${h.description}; reporting tools connect with ${h.url}`);
      for (const line of formatStatus(report)) env.out(line);
    }
    return ExitCode.ok;
  } finally {
    await h.close();
  }
}

/**
 * `rebuild` and `quarantine retry`: they write, so they take the writer lease (without
 * waiting: a running daemon is named and left alone) and apply pending migrations first, as
 * `run` does. A database that does not answer ends them at once with the usual sentence.
 */
async function openForReplay(env: CommandEnv, what: string): Promise<DatabaseHandle> {
  const h = await openDatabase(env.config, env.logger);
  try {
    // A first statement that fails fast: taking the lease would wait for an unreachable database.
    await h.pending().catch((err: unknown) => rethrowDatabase(err, h));
    try {
      await h.lease.acquire(env.signal, { wait: false });
    } catch (err) {
      if (err instanceof LeaseBusyError) {
        throw new LeaseBusyError(
          `cannot ${what}: ${err.message}. Stop it first (a daemon that starts with a newer mapping rebuilds and retries the quarantine by itself)`,
        );
      }
      return rethrowDatabase(err, h);
    }
    await h.migrate().catch((err: unknown) => rethrowDatabase(err, h));
    await h.lease.startFencing().catch((err: unknown) => rethrowDatabase(err, h));
    return h;
  } catch (err) {
    await h.close();
    throw err;
  }
}

/** `rebuild`: every typed table derived again from raw, without a provider request. */
export async function rebuildCommand(env: CommandEnv): Promise<number> {
  const h = await openForReplay(env, 'rebuild the typed tables');
  try {
    const result = await rebuild({ handle: h, config: env.config, logger: env.logger, signal: env.signal }).catch((err: unknown) => rethrowDatabase(err, h));
    for (const line of formatRebuild(result)) env.out(line);
    return ExitCode.ok;
  } finally {
    await h.close();
  }
}

/** `quarantine retry`: the quarantined payloads parsed again; those that pass are mirrored. */
export async function quarantineRetryCommand(env: CommandEnv): Promise<number> {
  const h = await openForReplay(env, 'retry the quarantine');
  try {
    const result = await retryQuarantine({ handle: h, config: env.config, logger: env.logger, signal: env.signal }).catch((err: unknown) => rethrowDatabase(err, h));
    for (const line of formatRetry(result)) env.out(line);
    return ExitCode.ok;
  } finally {
    await h.close();
  }
}

/**
 * `run` (daemon) and `sync --once`: one engine in either mode. Order: ops endpoint (so that
 * /healthz answers and /readyz says why it is not ready), writer lease (`run` waits for it,
 * `--once` does not), migrations, fencing, closing the runs a killed process left open, then
 * the engine. The run row is opened only when the engine is about to write.
 */
export async function syncCommand(env: CommandEnv, mode: EngineMode, recovery: Recovery): Promise<number> {
  const { logger } = env;
  const connections = resolveConnections(env.config);
  if (connections.length > 1) {
    throw new ConfigError(
      `connections: ${connections.length} are defined (${connections.map((c) => c.name).join(', ')}); this version follows one API connection per process: ` +
        'run one staysync per connection, each with its own STAYSYNC_DB_SCHEMA',
    );
  }
  // The one connection's credentials, properties and limits.
  const config = configForConnection(env.config, connections[0]!);
  if (config.propertyIds.length === 0 && !config.content.enabled) {
    throw new ConfigError(
      'propertyIds (STAYSYNC_PROPERTY_IDS): expected at least one property id, or content.enabled true so that the content API lists them',
    );
  }
  const h = await openDatabase(config, logger);
  const client = new ProviderClient({ config, logger, stopSignal: env.signal });
  const ctx = createSyncContext({ config, handle: h, client, logger });
  let engine: Engine | undefined;
  let stopping = false;
  env.signal.addEventListener('abort', () => (stopping = true), { once: true });
  const ready = (): { ready: boolean; reason?: string } => {
    if (stopping) return { ready: false, reason: 'stopping' };
    if (!h.availability.available) return { ready: false, reason: `database unreachable (${h.description})` };
    if (!h.lease.held) return { ready: false, reason: 'waiting for the writer lease (another process holds it, or the database session dropped)' };
    if (!engine?.running) return { ready: false, reason: 'starting' };
    return { ready: true };
  };
  const opsLog = logger.child({ component: 'ops' });
  const webhook = config.webhooks.enabled
    ? {
        path: config.webhooks.path,
        receive: (req: IncomingMessage, res: ServerResponse) =>
          receiveWebhook(req, res, {
            config: config.webhooks,
            store: (events) => h.write((trx) => insertWebhookEvents(trx, events)),
            onStored: (batch) => {
              ctx.counters.webhookBatches += 1;
              ctx.counters.webhookEventsStored += batch.stored;
              ctx.counters.webhookEventsDuplicate += batch.duplicates;
              ctx.onEnqueued?.();
            },
            logger: opsLog,
          }),
      }
    : undefined;
  const ops =
    mode === 'daemon'
      ? new OpsServer(
          {
            ready,
            metrics: createMetrics({ ctx, client, availability: h.availability, lease: h.lease, db: h.control, ready: () => ready().ready }),
            webhook,
          },
          opsLog,
        )
      : undefined;
  let runId: string | undefined;
  let abandonedGrace = false;
  try {
    await ops?.start(config.ops.host, config.ops.port);
    if (!(await prepare(env, h, mode))) return ExitCode.ok;

    engine = new Engine(ctx, { mode, recovery });
    const runPromise = engine.run(env.signal, {
      onStart: async () => {
        runId = await startRun(h.control, mode === 'once' ? 'sync --once' : 'run', processIdentity);
        logger.info({ mode, runId, properties: config.propertyIds.length ? config.propertyIds : 'from content' }, 'sync started');
      },
    });
    const result = await Promise.race([runPromise, graceOver(env.graceSignal)]);
    if (result === 'grace') {
      abandonedGrace = true;
      logger.warn(
        `the shutdown grace time (${config.shutdown.graceMs} ms, shutdown.graceMs) is over: leaving now; ` +
          'work in flight is rolled back by the database and done again at the next start',
      );
      if (runId) await finishRun(h.control, runId, 'stopped', statsOf(ctx, client), 'stopped at the end of the grace time').catch(() => undefined);
      return ExitCode.ok;
    }
    return await conclude(env, h, mode, result, runId, statsOf(ctx, client));
  } catch (err) {
    if (runId) await finishRun(h.control, runId, 'failed', statsOf(ctx, client), (err as Error).message).catch(() => undefined);
    if (err instanceof LeaseBusyError || err instanceof OpsPortError) {
      logger.error(err.message);
      return ExitCode.failure;
    }
    throw err;
  } finally {
    stopping = true;
    await ops?.stop();
    // After the grace time, closing must not wait for transactions stuck in the database.
    const closing = Promise.all([client.close(), h.close()]);
    if (abandonedGrace) await Promise.race([closing, new Promise((r) => setTimeout(r, 200).unref())]);
    else await closing;
  }
}

/**
 * Lease, migrations, fencing and the runs left open. Returns false when stopped meanwhile.
 * `--once` waits for an unreachable database up to database.giveUpAfterMs; `run` waits forever.
 */
async function prepare(env: CommandEnv, h: DatabaseHandle, mode: EngineMode): Promise<boolean> {
  const { config, logger } = env;
  const wait = mode === 'once' ? AbortSignal.any([env.signal, AbortSignal.timeout(config.database.giveUpAfterMs)]) : env.signal;
  try {
    await h.lease.acquire(wait, { wait: mode === 'daemon' });
    for (;;) {
      try {
        await h.migrate();
        await h.lease.startFencing();
        // A mapping newer than the one the typed tables were built with: rebuild them from
        // raw and retry the quarantine before any stream writes (idempotent, so an outage
        // in the middle just starts it again).
        if ((await upgradeMapping({ handle: h, config, logger, signal: env.signal })) === 'stopped') return false;
        break;
      } catch (err) {
        if (isDatabaseMisconfigured(err) || !h.availability.report(err)) throw err;
        await h.availability.waitUntilAvailable(wait);
      }
    }
    const closed = await closeAbandonedRuns(h.control);
    if (closed.length > 0) logger.warn({ runs: closed }, `closed ${closed.length} run(s) left open by a process that was killed (outcome killed)`);
    return true;
  } catch (err) {
    if (env.signal.aborted) return false;
    if (wait.aborted) {
      const outage = h.availability.current;
      throw new DatabaseGaveUpError(h.description, config.database.giveUpAfterMs, outage?.lastError ?? describeDatabaseError(err));
    }
    return rethrowDatabase(err, h);
  }
}

/** The exit status and the closing lines of a finished engine run. */
async function conclude(
  env: CommandEnv,
  h: DatabaseHandle,
  mode: EngineMode,
  result: EngineResult,
  runId: string | undefined,
  stats: Record<string, unknown>,
): Promise<number> {
  const { logger } = env;
  const close = async (outcome: RunOutcome, error?: string) => {
    if (runId) await finishRun(h.control, runId, outcome, stats, error).catch((err: unknown) => logger.warn({ err: describeDatabaseError(err) }, 'could not close the run row; the next start closes it as killed'));
  };
  if (result.stoppedBeforeWriting) {
    // A run row exists only when content was refreshed first to find the properties.
    await close('token_lost', result.tokenLost.map((e) => e.message).join('\n'));
    for (const lost of result.tokenLost) logger.error({ propertyId: lost.propertyId }, `${lost.message} Nothing was changed.`);
    return ExitCode.tokenLost;
  }
  if (result.fatal) {
    await close('failed', result.fatal.message);
    const known =
      result.fatal instanceof ProviderGaveUpError ||
      result.fatal instanceof DatabaseGaveUpError ||
      result.fatal instanceof AuthenticationError ||
      result.fatal instanceof LeaseBusyError ||
      result.fatal instanceof NothingToFollowError ||
      isDatabaseMisconfigured(result.fatal);
    if (!known) throw result.fatal;
    logger.error(isDatabaseMisconfigured(result.fatal) ? databaseSentence(result.fatal, h) : result.fatal.message);
    return ExitCode.failure;
  }
  if (result.tokenLost.length > 0) {
    await close('token_lost', result.tokenLost.map((e) => e.message).join('\n'));
    return ExitCode.tokenLost;
  }
  if (env.signal.aborted) {
    await close('stopped');
    logger.info({ ...stats }, 'stopped: in-flight work finished, nothing committed is lost');
    return ExitCode.ok;
  }
  if (result.failed.length > 0) {
    const byProperty = new Map<string, string[]>();
    for (const f of result.failed) byProperty.set(f.propertyId, [...(byProperty.get(f.propertyId) ?? []), f.stream]);
    // Streams in a fixed order, not in the order they happened to fail.
    const names = [...byProperty].map(([id, streams]) => `${id} (${[...streams].sort((a, b) => a.localeCompare(b)).join(', ')})`).join(', ');
    await close('failed', result.failed.map((f) => f.message).join('\n'));
    for (const f of result.failed) logger.error({ propertyId: f.propertyId }, f.message);
    logger.error(`sync --once finished with failing properties: ${names} (the others are caught up); see staysync status`);
    return ExitCode.failure;
  }
  if (result.refreshFailures.length > 0) {
    const contentOnly = result.refreshFailures.every((f) => f.stream === 'content');
    await close(contentOnly ? 'content_failed' : 'refresh_failed', result.refreshFailures.map((f) => `${f.stream}: ${f.reason}`).join('\n'));
    logger.error(`the streams are caught up, but ${result.refreshFailures.map((f) => `the ${f.stream.replace(/_/g, ' ')} refresh failed: ${f.reason}`).join('; ')}`);
    return ExitCode.failure;
  }
  await close('ok');
  if (mode === 'once') {
    const left = await leftoverFetches(h.db, 'booking_detail_queue', ONCE_MAX_ATTEMPTS).catch(() => undefined);
    const parts = left ? [`${left.retrying} failing`, `${left.notFound} not found (404)`, `${left.quarantined} quarantined`].filter((p) => !p.startsWith('0 ')) : [];
    if (parts.length > 0) {
      logger.warn({ ...left }, `booking details left for later: ${parts.join(', ')}; they are fetched again on a growing backoff by the next run (see staysync status)`);
    }
    logger.info({ ...stats }, 'sync finished: caught up and queue drained');
  } else {
    logger.info({ ...stats }, 'daemon stopped');
  }
  return ExitCode.ok;
}

function statsOf(ctx: ReturnType<typeof createSyncContext>, client: ProviderClient): Record<string, unknown> {
  return { ...ctx.counters.toJSON(), provider: client.stats() };
}

function graceOver(signal: AbortSignal): Promise<'grace'> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve('grace');
    else signal.addEventListener('abort', () => resolve('grace'), { once: true });
  });
}

function databaseSentence(err: unknown, h: DatabaseHandle): string {
  return `the database ${h.description} refused us: ${describeDatabaseError(err)}. Check DATABASE_URL (host, database name, user and password) and the role's privileges`;
}

/** Turns a database error of a command into the sentence the operator needs. */
function rethrowDatabase(err: unknown, h: DatabaseHandle): never {
  if (isDatabaseMisconfigured(err)) throw new DatabaseConfigurationError(databaseSentence(err, h), { cause: err });
  if (isDatabaseUnavailable(err)) {
    throw new DatabaseUnavailableError(`the database ${h.description} is unreachable: ${describeDatabaseError(err)}. Check DATABASE_URL and that PostgreSQL runs`, { cause: err });
  }
  throw err;
}

/** True for errors that end the process with a sentence, not a stack trace. */
export function isExpectedFailure(err: unknown): boolean {
  return (
    err instanceof ConfigError ||
    err instanceof AuthenticationError ||
    err instanceof DatabaseConfigurationError ||
    err instanceof DatabaseUnavailableError ||
    err instanceof DatabaseGaveUpError ||
    err instanceof ProviderGaveUpError ||
    err instanceof LeaseBusyError ||
    err instanceof OpsPortError ||
    err instanceof LocalServerError
  );
}
