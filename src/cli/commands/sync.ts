/**
 * `run` and `sync --once`: the fleet of engines, one per API connection, with its listeners,
 * its start-up under the schema's lock, its reloads and its closing lines.
 */
import { openConfiguredDatabase } from '../../local-pg/open-database.js';
import { ConfigError, isLoopbackHost, type Config } from '../../config/config.js';
import { ExitCode } from '../exit.js';
import { databaseSentence, rethrowDatabase, type CommandEnv } from './env.js';
import { checkWebhookExposure, opsExposure, webhookExposure } from '../../ops/exposure.js';
import { DEFAULT_CONNECTION, resolveConnections, type Connection } from '../../config/connections.js';
import { watch, type FSWatcher } from 'node:fs';
import { type DatabaseHandle } from '../../store/database.js';
import { ensureLocalReader } from '../../local-pg/reader-login.js';
import { describeDatabaseError, isDatabaseMisconfigured, HeldElsewhereError } from '../../store/errors.js';
import { leftoverFetches } from '../../store/repositories/fetch-queue.js';
import { closeAbandonedRuns } from '../../store/repositories/runs.js';
import { Replica } from '../../cluster/replicas.js';
import { TokenGate } from '../../cluster/token-gate.js';
import { systemClock } from '../../util/clock.js';
import type { Logger } from '../../util/log.js';
import { OpsPortError, opsListener, type HttpListener } from '../../ops/http.js';
import { webhookListener } from '../../ops/webhooks.js';
import { storeReceivedEvents } from '../../privacy/guest-writes.js';
import { createMetrics } from '../../ops/metrics.js';
import { AuthenticationError } from '../../provider/errors.js';
import { tokenCapacity } from '../../provider/token-capacity.js';
import { ONCE_MAX_ATTEMPTS } from '../../sync/runtime/fetch-drain.js';
import type { EngineResult } from '../../sync/runtime/engine.js';
import type { EngineMode } from '../../sync/streams/types.js';
import { Fleet, statsOf, type FleetResult } from '../../sync/runtime/fleet.js';
import { DatabaseGaveUpError, NothingToFollowError, ProviderGaveUpError } from '../../sync/runtime/errors.js';
import type { Recovery } from '../../sync/runtime/recovery.js';
import { upgradeMapping } from '../../replay/upgrade.js';

/**
 * `run` (daemon) and `sync --once`: every API connection, each with an engine of its own (the
 * fleet), in either mode. Order: ops endpoint (so that /healthz answers and /readyz says why
 * it is not ready), the schema's start-up lock, migrations, fencing,
 * closing the runs a killed process left open, then the fleet. A connection's run row is
 * opened when its engine is about to write. The daemon re-reads a connections directory when
 * it changes and on SIGHUP (`env.onReload`).
 */
export async function syncCommand(env: CommandEnv, mode: EngineMode, recovery: Recovery): Promise<number> {
  const { logger, config } = env;
  if (mode === 'daemon') checkWebhookExposure(config);
  const connections = resolveConnections(config);
  for (const c of connections) checkFollowsSomething(config, c);
  checkRecoverable(recovery, connections);
  const h = await openConfiguredDatabase(config, logger);
  const replica = new Replica({
    db: h.control,
    schema: h.schema,
    logger,
    clock: systemClock,
    takeoverMs: config.replicas.takeoverMs,
    command: mode === 'once' ? 'sync --once' : 'run',
  });
  const tokenGate = new TokenGate({
    db: h.control,
    egress: config.provider.egress,
    windows: config.rateLimits.token,
    clock: systemClock,
    logger: logger.child({ component: 'tokens' }),
    spacingMs: config.replicas.tokenGateSpacingMs,
  });
  const fleet = new Fleet({ config, handle: h, logger, mode, recovery, stopSignal: env.signal, replica, tokenGate });
  let registered = false;
  sayTokenCapacity(config, connections.length, logger);
  let stopping = false;
  env.signal.addEventListener('abort', () => (stopping = true), { once: true });
  const ready = (): { ready: boolean; reason?: string } => {
    if (stopping) return { ready: false, reason: 'stopping' };
    // Where the database is (user, host, port, name) is for the operator's log, which says it once
    // per outage: /readyz answers anyone who can reach the ops port.
    if (!h.availability.available) return { ready: false, reason: 'database unreachable' };
    if (!registered) return { ready: false, reason: 'starting: waiting for the schema lock (another process is starting, or runs a rebuild), then migrating' };
    if (!fleet.running) return { ready: false, reason: 'starting' };
    return { ready: true };
  };
  const opsLog = logger.child({ component: 'ops' });
  const webhooks =
    mode === 'daemon' && config.webhooks.enabled
      ? webhookListener({
          config: config.webhooks,
          // The fleet's once it runs (a connections directory may change them), the start's before.
          connections: () => (fleet.configuredNames.length > 0 ? fleet.configuredNames : connections.map((c) => c.name)),
          // Any replica stores what it receives (an event id is stored once); the connection that follows the property processes it.
          // What is kept of them follows the personal-data policy and the erasure list, as for every guest payload.
          store: (events, invalid) => storeReceivedEvents(h.db, events, invalid, config.pms.personalData),
          onStored: (batch) => {
            // Counted once, by the first connection; every connection's event drain looks at once.
            const first = fleet.connections[0]?.ctx;
            if (first) {
              first.counters.webhookBatches += 1;
              first.counters.webhookEventsStored += batch.stored;
              first.counters.webhookEventsDuplicate += batch.duplicates;
              first.counters.webhookEventsRefused += batch.refused;
            }
            for (const c of fleet.connections) c.ctx.events.emit('enqueued');
          },
          logger: logger.child({ component: 'webhooks' }),
        })
      : undefined;
  const ops: HttpListener | undefined =
    mode === 'daemon'
      ? opsListener({
          ready,
          metrics: createMetrics({
            fleet,
            availability: h.availability,
            replica,
            db: h.metrics,
            logger: opsLog,
            ready: () => ready().ready,
            tokenCapacity: tokenCapacity(config).connections,
            transactions: () => h.transactions.value,
            listeners: { ops: () => ops, webhooks: () => webhooks },
          }),
        })
      : undefined;
  let abandonedGrace = false;
  const stopWatching = mode === 'daemon' ? watchConnections(env, fleet, opsLog) : () => undefined;
  try {
    if (ops) {
      const port = await ops.start(config.ops.host, config.ops.port);
      opsLog.info({ host: config.ops.host, port }, `ops endpoint listening on ${config.ops.host}:${port}: ${opsExposure(config.ops.host)}`);
    }
    if (webhooks) {
      const w = config.webhooks;
      const port = await webhooks.start(w.host, w.port);
      const line = `webhook receiver listening on ${w.host}:${port}${w.path}: ${webhookExposure(w)}`;
      if (w.auth === 'none' && !isLoopbackHost(w.host)) opsLog.warn({ host: w.host, port, auth: w.auth }, line);
      else opsLog.info({ host: w.host, port, auth: w.auth }, line);
    }
    if (!(await prepare(env, h, mode, replica))) return ExitCode.ok;
    registered = true;
    logger.info(
      {
        mode,
        connections: connections.map((c) => c.name),
        properties: connections.length === 1 && connections[0]!.propertyIds.length ? connections[0]!.propertyIds : undefined,
      },
      'sync started',
    );
    const result = await Promise.race([fleet.run(env.signal, connections), graceOver(env.graceSignal)]);
    if (result === 'grace') {
      abandonedGrace = true;
      logger.warn(
        `the shutdown grace time (${config.shutdown.graceMs} ms, shutdown.graceMs) is over: leaving now; ` +
          'work in flight is rolled back by the database and done again at the next start',
      );
      await fleet.abandon('stopped at the end of the grace time');
      return ExitCode.ok;
    }
    return await conclude(env, h, mode, result, fleet);
  } catch (err) {
    if (err instanceof HeldElsewhereError || err instanceof OpsPortError) {
      logger.error(err.message);
      return ExitCode.failure;
    }
    throw err;
  } finally {
    stopping = true;
    stopWatching();
    await webhooks?.stop();
    await ops?.stop();
    // After the grace time, closing must not wait for transactions stuck in the database.
    // Leases are let go first: another replica takes the connections at its next heartbeat.
    const closing = replica
      .deregister(fleet.ledgers())
      .catch((err: unknown) =>
        logger.warn({ err: describeDatabaseError(err) }, 'could not hand over the connections: other replicas take them when the leases expire'),
      )
      .then(() => h.close());
    if (abandonedGrace) await Promise.race([closing, new Promise((r) => setTimeout(r, 200).unref())]);
    else await closing;
  }
}

/** A connection without configured properties needs the content API to list them. */
function checkFollowsSomething(config: Config, c: Connection): void {
  if (c.propertyIds.length > 0 || config.content.enabled) return;
  if (c.name === DEFAULT_CONNECTION) {
    throw new ConfigError('propertyIds (STAYSYNC_PROPERTY_IDS): expected at least one property id, or content.enabled true so that the content API lists them');
  }
  throw new ConfigError(`${c.source} (${c.name}): propertyIds: expected at least one property id, or content.enabled true so that the content API lists them`);
}

/**
 * `--recover --property <id>` names a property a connection follows: a mistyped id would
 * recover nothing and say so only in the log. Not checkable when a connection has its
 * properties listed by the content API.
 */
function checkRecoverable(recovery: Recovery, connections: readonly Connection[]): void {
  if (recovery.mode === 'none' || recovery.propertyIds === undefined || connections.some((c) => c.propertyIds.length === 0)) return;
  const followed = new Set(connections.flatMap((c) => c.propertyIds));
  const unknown = recovery.propertyIds.find((id) => !followed.has(id));
  if (unknown !== undefined)
    throw new ConfigError(
      `--property ${unknown}: no API connection follows property ${unknown} (they follow ${[...followed].sort().join(', ')}); nothing to recover`,
    );
}

/**
 * Says at start how many connections this egress address keeps authenticated (the token
 * endpoint's limit is per IP, shared by every replica behind it), and plainly when this
 * process's connections alone need more tokens than that.
 */
function sayTokenCapacity(config: Config, connections: number, logger: Logger): void {
  const capacity = tokenCapacity(config);
  const fields = { egress: config.provider.egress, connections, capacity: capacity.connections };
  if (connections <= capacity.connections) {
    logger.info(
      fields,
      `token endpoint: ${capacity.explanation} behind egress ${config.provider.egress}, ` +
        `shared by every replica with that STAYSYNC_EGRESS; this process follows ${connections}`,
    );
    return;
  }
  logger.warn(
    fields,
    `${connections} ${connections === 1 ? 'connection needs' : 'connections need'} more access tokens than the token endpoint gives one IP address: ${capacity.explanation}. ` +
      'Some connections will wait for their tokens; run the others from a replica with another egress IP',
  );
}

/**
 * Daemon: a connections directory is re-read when a file in it changes (debounced) and on
 * SIGHUP; a definition that does not parse is reported and the running connections go on.
 */
function watchConnections(env: CommandEnv, fleet: Fleet, log: Logger): () => void {
  let timer: NodeJS.Timeout | undefined;
  const reload = (why: string) => {
    let next: Connection[];
    try {
      next = resolveConnections(env.config);
      for (const c of next) checkFollowsSomething(env.config, c);
    } catch (err) {
      log.error(`connections not reloaded (${why}): ${(err as Error).message}. The running connections go on unchanged`);
      return;
    }
    void fleet.reload(next).catch((err: unknown) => log.error({ err: (err as Error).message }, 'connections reload failed'));
  };
  const soon = (why: string) => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => reload(why), RELOAD_DEBOUNCE_MS);
    timer.unref();
  };
  const stopHangup = env.onReload?.(() => reload('SIGHUP')) ?? (() => undefined);
  let watcher: FSWatcher | undefined;
  const dir = env.config.connectionsDir;
  if (dir) {
    try {
      watcher = watch(dir, () => soon(`${dir} changed`));
      watcher.on('error', (err) => log.warn({ err: err.message }, `stopped watching ${dir}: send SIGHUP to reload the connections`));
    } catch (err) {
      log.warn({ err: (err as Error).message }, `cannot watch ${dir}: send SIGHUP to reload the connections`);
    }
  }
  return () => {
    stopHangup();
    watcher?.close();
    if (timer) clearTimeout(timer);
  };
}

/** Files of a secrets volume change together (a symbolic link swap): one reload for the lot. */
const RELOAD_DEBOUNCE_MS = 300;

/**
 * Start-up under the schema's lock (held only for this; replicas start one after the other, a
 * rebuild or quarantine retry waits for them or they for it): migrations (and on the local
 * server the reporting tools' read-only login), fencing, the runs left open by processes that
 * died, and this process's registration among the replicas.
 * Returns false when stopped meanwhile. `--once` waits for an unreachable database up to
 * database.giveUpAfterMs; `run` waits forever.
 */
async function prepare(env: CommandEnv, h: DatabaseHandle, mode: EngineMode, replica: Replica): Promise<boolean> {
  const { config, logger } = env;
  const wait = mode === 'once' ? AbortSignal.any([env.signal, AbortSignal.timeout(config.database.giveUpAfterMs)]) : env.signal;
  try {
    await h.schemaLock.acquire(wait, { wait: true });
    for (;;) {
      try {
        const applied = await h.migrate();
        // An upgrade says what it changed in the schema (nothing on an ordinary restart).
        if (applied.length > 0) logger.info({ applied, schema: h.schema }, `migrations applied: ${applied.join(', ')}`);
        // The local server's read-only login for reporting tools: its superuser is not for them (local-pg/reader-login.ts).
        if (h.localServer) await ensureLocalReader(h.db, h.localServer.reader, { schema: h.schema, reportingSchema: config.database.reportingSchema }, logger);
        await h.schemaLock.startFencing();
        // A mapping newer than the one the typed tables were built with: rebuild them from
        // raw and retry the quarantine before any stream writes (idempotent, so an outage
        // in the middle just starts it again).
        if ((await upgradeMapping({ handle: h, config, logger, signal: env.signal })) === 'stopped') return false;
        await replica.forgetGoneReplicasOfThisHost();
        const closed = await closeAbandonedRuns(h.control);
        if (closed.length > 0) logger.warn({ runs: closed }, `closed ${closed.length} run(s) left open by a process that was killed (outcome killed)`);
        await replica.register();
        break;
      } catch (err) {
        if (isDatabaseMisconfigured(err) || !h.availability.report(err)) throw err;
        await h.availability.waitUntilAvailable(wait);
      }
    }
    // The schema's lock is for start-up only: from here on each connection's lease fences its writes.
    await h.schemaLock.close();
    return true;
  } catch (err) {
    if (env.signal.aborted) return false;
    if (wait.aborted) {
      const outage = h.availability.current;
      if (!outage && !h.schemaLock.held)
        throw new HeldElsewhereError(
          `another staysync process holds the lock of schema ${h.schema} (a rebuild or a quarantine retry) since more than ${config.database.giveUpAfterMs} ms`,
        );
      throw new DatabaseGaveUpError(h.description, config.database.giveUpAfterMs, outage?.lastError ?? describeDatabaseError(err));
    }
    return rethrowDatabase(err, h);
  }
}

/** The exit status and the closing lines of a finished run: the most serious of the connections' (3, then 1, then 0). */
async function conclude(env: CommandEnv, h: DatabaseHandle, mode: EngineMode, fleet: FleetResult, views: Fleet): Promise<number> {
  const { logger } = env;
  if (fleet.fatal) {
    if (!isDatabaseMisconfigured(fleet.fatal)) throw fleet.fatal;
    logger.error(databaseSentence(fleet.fatal, h));
    return ExitCode.failure;
  }
  const several = fleet.connections.length > 1;
  let code: number = ExitCode.ok;
  for (const { name, result } of fleet.connections) {
    const log = several ? logger.child({ connection: name }) : logger;
    const view = views.connections.find((c) => c.name === name);
    code = mostSerious(code, concludeConnection(env, log, mode, result, view ? statsOf(view) : {}));
  }
  if (code === ExitCode.ok && !env.signal.aborted && mode === 'once') {
    const left = await leftoverFetches(h.db, 'booking_detail_queue', ONCE_MAX_ATTEMPTS).catch(() => undefined);
    const parts = left
      ? [`${left.retrying} failing`, `${left.notFound} not found (404)`, `${left.quarantined} quarantined`].filter((p) => !p.startsWith('0 '))
      : [];
    if (parts.length > 0) {
      logger.warn(
        { ...left },
        `booking details left for later: ${parts.join(', ')}; they are fetched again on a growing backoff by the next run (see staysync status)`,
      );
    }
  }
  return code;
}

/**
 * One connection's closing lines and exit status (its run row was closed by the fleet). A lost
 * token ends nothing: `run` goes on without that property's booking list (exit 0 when stopped),
 * `sync --once` syncs everything else and exits 3.
 */
function concludeConnection(env: CommandEnv, logger: Logger, mode: EngineMode, result: EngineResult, stats: Record<string, unknown>): number {
  if (result.fatal) {
    const known =
      result.fatal instanceof ProviderGaveUpError ||
      result.fatal instanceof DatabaseGaveUpError ||
      result.fatal instanceof AuthenticationError ||
      result.fatal instanceof HeldElsewhereError ||
      result.fatal instanceof NothingToFollowError;
    if (!known) throw result.fatal;
    logger.error(result.fatal.message);
    return ExitCode.failure;
  }
  if (env.signal.aborted) {
    logger.info({ ...stats }, 'stopped: in-flight work finished, nothing committed is lost');
    return ExitCode.ok;
  }
  const lost = result.continueTokenLost.map((e) => e.propertyId).sort();
  if (lost.length > 0)
    logger.error(
      { properties: lost },
      `sync --once finished, but the booking list of ${lost.length === 1 ? `property ${lost[0]} needs` : `properties ${lost.join(', ')} need`} a recovery ` +
        `(the rest is synced): staysync sync --once --recover --property <id>; see staysync status`,
    );
  const code = lost.length > 0 ? ExitCode.continueTokenLost : ExitCode.failure;
  if (result.failed.length > 0) {
    const byProperty = new Map<string, string[]>();
    for (const f of result.failed) byProperty.set(f.propertyId, [...(byProperty.get(f.propertyId) ?? []), f.stream]);
    // Streams in a fixed order, not in the order they happened to fail.
    const names = [...byProperty].map(([id, streams]) => `${id} (${[...streams].sort((a, b) => a.localeCompare(b)).join(', ')})`).join(', ');
    for (const f of result.failed) logger.error({ propertyId: f.propertyId }, f.message);
    logger.error(`sync --once finished with failing properties: ${names} (the others are caught up); see staysync status`);
    return code;
  }
  if (result.refreshFailures.length > 0) {
    logger.error(
      `the streams are caught up, but ${result.refreshFailures.map((f) => `the ${f.stream.replace(/_/g, ' ')} refresh failed: ${f.reason}`).join('; ')}`,
    );
    return code;
  }
  if (lost.length > 0) return ExitCode.continueTokenLost;
  logger.info({ ...stats }, mode === 'once' ? 'sync finished: caught up and queue drained' : 'daemon stopped');
  return ExitCode.ok;
}

function mostSerious(a: number, b: number): number {
  const rank = (c: number) => (c === ExitCode.continueTokenLost ? 2 : c === ExitCode.ok ? 0 : 1);
  return rank(b) > rank(a) ? b : a;
}

function graceOver(signal: AbortSignal): Promise<'grace'> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve('grace');
    else signal.addEventListener('abort', () => resolve('grace'), { once: true });
  });
}
