/**
 * The CLI's commands, free of process concerns (signals, argv, exit): each takes the parsed
 * configuration, a logger and an AbortSignal, and returns an exit status.
 */
import { ConfigError, requireCredentials, type Config } from './config.js';
import { openDatabase, ping, type DatabaseHandle } from './db/database.js';
import { queueDepthByProperty, pendingCount } from './db/repositories/booking-queue.js';
import { BOOKING_SUMMARIES, listCursors } from './db/repositories/cursors.js';
import { countQuarantined } from './db/repositories/quarantine.js';
import { activePropertyIds, lastContentRefresh } from './db/repositories/content.js';
import { refreshContent } from './sync/content.js';
import { finishRun, startRun } from './db/repositories/runs.js';
import type { Logger } from './log.js';
import { OpsServer, type MetricFamily } from './ops/http.js';
import { AuthenticationError } from './provider/errors.js';
import { ProviderClient } from './provider/client.js';
import type { SyncContext } from './sync/context.js';
import { SyncCounters } from './sync/counters.js';
import { planRecovery, runDaemon, syncOnce, type Recovery } from './sync/engine.js';
import { formatDuration, queueEtaSeconds } from './sync/progress.js';
import { systemClock } from './util/clock.js';

export const ExitCode = {
  ok: 0,
  failure: 1,
  usage: 2,
  tokenLost: 3,
} as const;

export interface CommandEnv {
  config: Config;
  logger: Logger;
  signal: AbortSignal;
  /** Where human-readable output goes (status). */
  out: (line: string) => void;
}

async function withDatabase<T>(env: CommandEnv, fn: (h: DatabaseHandle) => Promise<T>): Promise<T> {
  const handle = await openDatabase(env.config, env.logger);
  try {
    return await fn(handle);
  } finally {
    await handle.close();
  }
}

export async function migrateCommand(env: CommandEnv): Promise<number> {
  return withDatabase(env, async (h) => {
    const applied = await h.migrate();
    env.logger.info({ applied, schema: h.schema }, applied.length ? 'migrations applied' : 'database schema is up to date');
    return ExitCode.ok;
  });
}

/** `run` (daemon) and `sync --once` share everything but the engine loop. */
export async function syncCommand(env: CommandEnv, mode: 'once' | 'daemon', recovery: Recovery): Promise<number> {
  const { config, logger } = env;
  requireCredentials(config);
  if (config.propertyIds.length === 0 && !config.content.enabled) {
    throw new ConfigError(
      'propertyIds (STAYSYNC_PROPERTY_IDS): expected at least one property id, or content.enabled true so that the content API lists them',
    );
  }
  return withDatabase(env, async (h) => {
    if (!(await h.tryLease())) {
      logger.error({ schema: h.schema }, 'another staysync process is syncing into this schema; exiting');
      return ExitCode.failure;
    }
    await h.migrate();
    const counters = new SyncCounters();
    const client = new ProviderClient({ config, logger });
    const ctx: SyncContext = { config, db: h.db, client, logger, clock: systemClock, counters };
    let stopping = false;
    const ops =
      mode === 'daemon'
        ? new OpsServer(
            {
              ready: async () => !stopping && (await ping(h.db).then(() => true, () => false)),
              metrics: () => collectMetrics(ctx),
            },
            logger.child({ component: 'ops' }),
          )
        : undefined;
    try {
      // Which properties to follow: the configured ones, or (none configured) those the
      // content API lists, which needs a content refresh before anything else.
      let propertyIds: readonly string[] = config.propertyIds;
      let contentRefreshed = false;
      if (propertyIds.length === 0) {
        const refreshed = await refreshContent(ctx, env.signal);
        contentRefreshed = true;
        propertyIds = await activePropertyIds(h.db);
        if (propertyIds.length === 0) {
          if (!refreshed.ok) {
            logger.error('no property to follow: STAYSYNC_PROPERTY_IDS is empty and the content refresh failed');
            return ExitCode.failure;
          }
          logger.warn('no property to follow: STAYSYNC_PROPERTY_IDS is empty and the content API lists none');
        }
      }
      const { lost, recoverFrom } = await planRecovery(ctx, propertyIds, recovery);
      if (lost.length > 0) {
        for (const l of lost) {
          logger.error(
            { propertyId: l.propertyId },
            `property ${l.propertyId}: token lost: ${l.reason}. Nothing was changed. ` +
              `Restart with --recover to resume from the last mirrored modification minus two days, ` +
              `or --recover=<ISO time> to choose the point.`,
          );
        }
        return ExitCode.tokenLost;
      }
      await ops?.start(config.ops.host, config.ops.port);
      const runId = await startRun(h.db, mode === 'once' ? 'sync --once' : 'run');
      logger.info({ mode, properties: propertyIds, runId }, 'sync started');
      try {
        const engine = {
          propertyIds,
          recoverFrom,
          refreshContent: config.content.enabled && !contentRefreshed,
          contentOnly: config.propertyIds,
        };
        const result =
          mode === 'once'
            ? await syncOnce(ctx, engine, env.signal)
            : await runDaemon(ctx, { ...engine, followContentProperties: config.propertyIds.length === 0 }, env.signal);
        stopping = true;
        const stats = { ...counters.toJSON(), provider: client.stats() };
        if (result.tokenLost.length > 0) {
          await finishRun(h.db, runId, 'token_lost', stats, result.tokenLost.map((e) => e.message).join('\n'));
          return ExitCode.tokenLost;
        }
        const outcome = env.signal.aborted ? 'stopped' : result.contentOk ? 'ok' : 'content_failed';
        await finishRun(h.db, runId, outcome, stats);
        if (!result.contentOk && mode === 'once') {
          logger.error('bookings are caught up, but the content refresh failed (see content_refreshes and the log above)');
          return ExitCode.failure;
        }
        logger.info({ outcome, ...counters.toJSON() }, mode === 'once' ? 'sync finished: caught up and queue drained' : 'daemon stopped');
        return ExitCode.ok;
      } catch (err) {
        stopping = true;
        await finishRun(h.db, runId, 'failed', counters.toJSON(), (err as Error).message).catch(() => undefined);
        throw err;
      }
    } finally {
      stopping = true;
      await ops?.stop();
      await client.close();
    }
  });
}

async function collectMetrics(ctx: SyncContext): Promise<MetricFamily[]> {
  const c = ctx.counters.toJSON();
  const families: MetricFamily[] = Object.entries(c).map(([k, v]) => ({
    name: `staysync_${k.replace(/[A-Z]/g, (m) => '_' + m.toLowerCase())}_total`,
    help: `Counter ${k} of this process.`,
    type: 'counter' as const,
    samples: [{ value: v }],
  }));
  const stats = ctx.client.stats();
  families.push({
    name: 'staysync_provider_requests_total',
    help: 'HTTP requests sent to the provider, by rate-limit scope.',
    type: 'counter',
    samples: Object.entries(stats.requests).map(([scope, value]) => ({ labels: { scope }, value })),
  });
  for (const k of ['responses429', 'responses5xx', 'responses401', 'retries'] as const) {
    families.push({ name: `staysync_provider_${k.toLowerCase()}_total`, help: `Provider ${k}.`, type: 'counter', samples: [{ value: stats[k] }] });
  }
  const depth = await queueDepthByProperty(ctx.db);
  families.push({
    name: 'staysync_detail_queue_pending',
    help: 'Booking detail fetches waiting, by property.',
    type: 'gauge',
    samples: depth.map((d) => ({ labels: { property_id: d.propertyId }, value: d.pending })),
  });
  const cursors = await listCursors(ctx.db, BOOKING_SUMMARIES);
  families.push({
    name: 'staysync_booking_list_position_seconds',
    help: 'Latest modification time covered by the booking list cursor (unix seconds), by property.',
    type: 'gauge',
    samples: cursors.map((c) => ({ labels: { property_id: c.propertyId }, value: (c.position?.getTime() ?? 0) / 1000 })),
  });
  return families;
}

export interface PropertyStatus {
  propertyId: string;
  state: string;
  position: string | null;
  caughtUp: boolean;
  lastPollAt: string | null;
  lastError: string | null;
  queuePending: number;
  queueNotFound: number;
  quarantined: number;
  queueEta: string;
}

export async function statusCommand(env: CommandEnv, json: boolean): Promise<number> {
  return withDatabase(env, async (h) => {
    await h.migrate();
    const cursors = await listCursors(h.db, BOOKING_SUMMARIES);
    const depth = new Map((await queueDepthByProperty(h.db)).map((d) => [d.propertyId, d]));
    const quarantined = await countQuarantined(h.db);
    const ids = [...new Set([...env.config.propertyIds, ...cursors.map((c) => c.propertyId)])].sort();
    const windows = env.config.rateLimits.bookingDetails;
    const rows: PropertyStatus[] = ids.map((id) => {
      const c = cursors.find((x) => x.propertyId === id);
      const d = depth.get(id);
      return {
        propertyId: id,
        state: c ? c.state : 'not started',
        position: c?.position?.toISOString() ?? null,
        caughtUp: c?.caughtUp ?? false,
        lastPollAt: c?.lastPollAt?.toISOString() ?? null,
        lastError: c?.lastError ?? null,
        queuePending: d?.pending ?? 0,
        queueNotFound: d?.notFound ?? 0,
        quarantined: quarantined.get(id) ?? 0,
        queueEta: formatDuration(queueEtaSeconds(d?.pending ?? 0, windows)),
      };
    });
    const total = await pendingCount(h.db);
    const content = await lastContentRefresh(h.db);
    if (json) {
      env.out(
        JSON.stringify(
          { properties: rows, queuePending: total, queueEta: formatDuration(queueEtaSeconds(total, windows)), lastContentRefresh: content ?? null },
          null,
          2,
        ),
      );
      return ExitCode.ok;
    }
    if (rows.length === 0) {
      env.out('No property configured or mirrored yet. Set STAYSYNC_PROPERTY_IDS (or let the content API list them) and run `staysync sync --once`.');
      return ExitCode.ok;
    }
    const header = ['property', 'state', 'list position (UTC)', 'caught up', 'last poll (UTC)', 'queue', '404', 'quarantined', 'queue ETA'];
    const table = rows.map((r) => [
      r.propertyId,
      r.state,
      r.position ?? '-',
      r.caughtUp ? 'yes' : 'no',
      r.lastPollAt ?? '-',
      String(r.queuePending),
      String(r.queueNotFound),
      String(r.quarantined),
      r.queueEta,
    ]);
    const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i]!.length)));
    const fmt = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
    env.out(fmt(header));
    for (const row of table) env.out(fmt(row));
    env.out(`\nDetail queue: ${total} pending, ETA ${formatDuration(queueEtaSeconds(total, windows))} at the details budget.`);
    env.out(
      content
        ? `Content: last refresh started ${content.startedAt.toISOString()}, ${content.outcome ?? 'running or interrupted'}` +
            (content.properties !== null ? `, ${content.properties} properties, ${content.changedRows ?? 0} rows changed.` : '.')
        : 'Content: never refreshed.',
    );
    for (const r of rows.filter((x) => x.lastError)) env.out(`property ${r.propertyId}: last error: ${r.lastError}`);
    return ExitCode.ok;
  });
}

/** True for errors that end the process with a sentence, not a stack trace. */
export function isExpectedFailure(err: unknown): boolean {
  return err instanceof ConfigError || err instanceof AuthenticationError;
}
