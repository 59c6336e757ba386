import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../schema.js';

type Executor = Kysely<Database> | Transaction<Database>;

export interface QueuedFetch {
  propertyId: string;
  number: string;
  generation: string;
  wantedModifiedAt: Date | null;
  attempts: number;
}

/**
 * The next due fetches, most useful first: stays arriving soon, then the most recently
 * modified. `exclude` holds keys already being fetched by this process: pass a snapshot taken
 * before the call, since a fetch that completes while the query runs is still pending in it.
 */
export async function nextDueFetches(db: Executor, limit: number, exclude: ReadonlySet<string>): Promise<QueuedFetch[]> {
  const rows = await db
    .selectFrom('booking_detail_queue')
    .select(['property_id', 'number', 'generation', 'wanted_modified_at', 'attempts'])
    .where('state', '=', 'pending')
    .where('next_attempt_at', '<=', sql<Date>`now()`)
    .orderBy('priority')
    .orderBy('wanted_modified_at', 'desc')
    .limit(limit + exclude.size)
    .execute();
  const out: QueuedFetch[] = [];
  for (const r of rows) {
    if (exclude.has(queueKey(r.property_id, r.number))) continue;
    out.push({
      propertyId: r.property_id,
      number: r.number,
      generation: r.generation,
      wantedModifiedAt: r.wanted_modified_at,
      attempts: r.attempts,
    });
    if (out.length >= limit) break;
  }
  return out;
}

export function queueKey(propertyId: string, number: string): string {
  return `${propertyId}\u0000${number}`;
}

/**
 * Removes a fetched row, unless it was enqueued again since it was claimed (generation moved)
 * or the stored details are still older than what the summary asked for.
 * Returns true when the row is gone.
 */
export async function completeFetch(trx: Executor, f: QueuedFetch): Promise<boolean> {
  const r = await sql<{ number: string }>`
    DELETE FROM booking_detail_queue q
    WHERE q.property_id = ${f.propertyId} AND q.number = ${f.number} AND q.generation = ${f.generation}
      AND (q.wanted_modified_at IS NULL OR q.wanted_modified_at <= (
            SELECT b.modified_at FROM bookings b WHERE b.property_id = q.property_id AND b.number = q.number))
    RETURNING q.number`.execute(trx);
  return r.rows.length > 0;
}

/** Parks a row that cannot be fetched as it is (not_found, quarantined) until the booking changes again. */
export async function parkFetch(trx: Executor, f: QueuedFetch, state: 'not_found' | 'quarantined', message: string): Promise<void> {
  await trx
    .updateTable('booking_detail_queue')
    .set({ state, last_error: message, attempts: f.attempts + 1 })
    .where('property_id', '=', f.propertyId)
    .where('number', '=', f.number)
    .where('generation', '=', f.generation)
    .execute();
}

/** A transient failure: try again after `delayMs`. */
export async function retryFetchLater(db: Executor, f: QueuedFetch, delayMs: number, message: string): Promise<void> {
  await db
    .updateTable('booking_detail_queue')
    .set({
      attempts: sql`attempts + 1`,
      next_attempt_at: sql`now() + ${`${Math.round(delayMs)} milliseconds`}::interval`,
      last_error: message,
    })
    .where('property_id', '=', f.propertyId)
    .where('number', '=', f.number)
    .where('generation', '=', f.generation)
    .execute();
}

export interface QueueDepth {
  propertyId: string;
  pending: number;
  notFound: number;
  quarantined: number;
}

export async function queueDepthByProperty(db: Executor): Promise<QueueDepth[]> {
  const rows = await db
    .selectFrom('booking_detail_queue')
    .select([
      'property_id',
      sql<string>`count(*) FILTER (WHERE state = 'pending')`.as('pending'),
      sql<string>`count(*) FILTER (WHERE state = 'not_found')`.as('not_found'),
      sql<string>`count(*) FILTER (WHERE state = 'quarantined')`.as('quarantined'),
    ])
    .groupBy('property_id')
    .execute();
  return rows.map((r) => ({
    propertyId: r.property_id,
    pending: Number(r.pending),
    notFound: Number(r.not_found),
    quarantined: Number(r.quarantined),
  }));
}

/** Pending fetches in the whole queue (for draining and ETA). */
export async function pendingCount(db: Executor): Promise<number> {
  const r = await db
    .selectFrom('booking_detail_queue')
    .select(sql<string>`count(*)`.as('n'))
    .where('state', '=', 'pending')
    .executeTakeFirstOrThrow();
  return Number(r.n);
}
