import type { Db } from '../database.js';

/** Opens a sync_runs row for this process; returns its id. */
export async function startRun(db: Db, command: string): Promise<string> {
  const r = await db.insertInto('sync_runs').values({ command }).returning('id').executeTakeFirstOrThrow();
  return r.id;
}

export async function finishRun(db: Db, id: string, outcome: string, stats: unknown, error?: string): Promise<void> {
  await db
    .updateTable('sync_runs')
    .set({ finished_at: new Date(), outcome, stats: JSON.stringify(stats), error: error ?? null })
    .where('id', '=', id)
    .execute();
}
