/**
 * sync_runs: one row per API connection of a `run` or `sync --once` process. Written through the handle's control
 * pool, outside any lease: a run row is the process's own bookkeeping, and closing it
 * must work even while the sync's connections are busy or the lease is lost.
 */
import { sql } from 'kysely';
import type { Db } from '../types.js';
import type { RunOutcome } from '../states.js';

export async function startRun(db: Db, command: string, who: { host: string; pid: number }, connection: string): Promise<string> {
  const r = await db.insertInto('sync_runs').values({ command, host: who.host, pid: who.pid, connection }).returning('id').executeTakeFirstOrThrow();
  return r.id;
}

export async function finishRun(db: Db, id: string, outcome: RunOutcome, stats: unknown, error?: string): Promise<void> {
  await db
    .updateTable('sync_runs')
    .set({ finished_at: new Date(), outcome, stats: JSON.stringify(stats), error: error ?? null })
    .where('id', '=', id)
    .execute();
}

/**
 * Closes the runs (and content refreshes) that processes left open because they were killed
 * or their database session died: those of processes that are not a live replica any more
 * (sync_replicas). Called at start under the schema's lock, before this process registers.
 * Returns the ids closed.
 */
export async function closeAbandonedRuns(db: Db): Promise<string[]> {
  const runs = await db
    .updateTable('sync_runs')
    .set({ finished_at: new Date(), outcome: 'killed', error: 'the process ended without closing its run (killed, or its database session died)' })
    .where('finished_at', 'is', null)
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('sync_replicas as r')
            .select(sql`1`.as('one'))
            .whereRef('r.host', '=', 'sync_runs.host')
            .whereRef('r.pid', '=', 'sync_runs.pid')
            .where('r.expires_at', '>', sql<Date>`now()`),
        ),
      ),
    )
    .returning('id')
    .execute();
  await db
    .updateTable('content_refreshes')
    .set({ finished_at: new Date(), outcome: 'killed', error: 'the process ended during the refresh' })
    .where('finished_at', 'is', null)
    .where(sql<boolean>`connection NOT IN (SELECT c.connection FROM sync_connections c JOIN sync_replicas r USING (replica_id) WHERE r.expires_at > now())`)
    .execute();
  return runs.map((r) => r.id);
}

export interface RunRow {
  id: string;
  command: string;
  startedAt: Date;
  finishedAt: Date | null;
  outcome: string | null;
  error: string | null;
  host: string | null;
  pid: number | null;
  connection: string;
}

/** The most recent runs, newest first. */
export async function recentRuns(db: Db, limit: number): Promise<RunRow[]> {
  const rows = await db.selectFrom('sync_runs').selectAll().orderBy('id', 'desc').limit(limit).execute();
  return rows.map((r) => ({
    id: r.id,
    command: r.command,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    outcome: r.outcome,
    error: r.error,
    host: r.host,
    pid: r.pid,
    connection: r.connection,
  }));
}
