/**
 * booking_detail_queue: the durable queue of booking detail fetches. A row exists while the
 * stored details of a booking may be older than its latest summary. Rows are claimed when due
 * (next_attempt_at), most useful first; a fetch that did not store the booking moves the row's
 * next attempt back on a growing backoff, in every state: nothing stays missing without being
 * retried and counted.
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../schema.js';
import type { QueueState } from '../states.js';

type Executor = Kysely<Database> | Transaction<Database>;

export interface QueuedFetch {
  propertyId: string;
  number: string;
  generation: string;
  wantedModifiedAt: Date | null;
  state: QueueState;
  attempts: number;
}

/**
 * The next due fetches, most useful first: stays arriving soon, then the most recently
 * modified. `exclude` holds keys already being fetched by this process: pass a snapshot taken
 * before the call, since a fetch that completes while the query runs is still listed in it.
 */
export async function nextDueFetches(db: Executor, limit: number, exclude: ReadonlySet<string>): Promise<QueuedFetch[]> {
  const rows = await db
    .selectFrom('booking_detail_queue')
    .select(['property_id', 'number', 'generation', 'wanted_modified_at', 'state', 'attempts'])
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
      state: r.state as QueueState,
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

/**
 * A fetch that did not store the booking: the row goes to `state` and is tried again after
 * `delayMs`, unless it was enqueued again meanwhile (then the new enqueue wins).
 */
export async function fetchAgainLater(db: Executor, f: QueuedFetch, state: QueueState, delayMs: number, message: string): Promise<void> {
  await db
    .updateTable('booking_detail_queue')
    .set({
      state,
      attempts: sql`attempts + 1`,
      next_attempt_at: sql`now() + ${`${Math.round(delayMs)} milliseconds`}::interval`,
      last_error: message.slice(0, 1000),
    })
    .where('property_id', '=', f.propertyId)
    .where('number', '=', f.number)
    .where('generation', '=', f.generation)
    .execute();
}

export interface QueueDepth {
  propertyId: string;
  /** Waiting to be fetched (due now or after a short backoff). */
  pending: number;
  /** Answered 404 several times; fetched again on a growing backoff. */
  notFound: number;
  /** Failed validation; fetched again on a growing backoff. */
  quarantined: number;
  /** Pending fetches that failed at least once (transient provider errors). */
  retrying: number;
  /** When the oldest pending fetch was enqueued. */
  oldestPendingAt: Date | null;
}

export async function queueDepthByProperty(db: Executor): Promise<QueueDepth[]> {
  const rows = await db
    .selectFrom('booking_detail_queue')
    .select([
      'property_id',
      sql<string>`count(*) FILTER (WHERE state = 'pending')`.as('pending'),
      sql<string>`count(*) FILTER (WHERE state = 'not_found')`.as('not_found'),
      sql<string>`count(*) FILTER (WHERE state = 'quarantined')`.as('quarantined'),
      sql<string>`count(*) FILTER (WHERE state = 'pending' AND attempts > 0)`.as('retrying'),
      sql<Date | null>`min(enqueued_at) FILTER (WHERE state = 'pending')`.as('oldest'),
    ])
    .groupBy('property_id')
    .execute();
  return rows.map((r) => ({
    propertyId: r.property_id,
    pending: Number(r.pending),
    notFound: Number(r.not_found),
    quarantined: Number(r.quarantined),
    retrying: Number(r.retrying),
    oldestPendingAt: r.oldest,
  }));
}

/**
 * Pending fetches in the whole queue (for draining and the ETA). With `maxAttempts`, only those
 * that failed fewer times: `sync --once` does not wait for fetches that keep failing (they stay
 * queued for the next run and are reported).
 */
export async function pendingCount(db: Executor, opts: { maxAttempts?: number } = {}): Promise<number> {
  let q = db.selectFrom('booking_detail_queue').select(sql<string>`count(*)`.as('n')).where('state', '=', 'pending');
  if (opts.maxAttempts !== undefined) q = q.where('attempts', '<', opts.maxAttempts);
  const r = await q.executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Fetches that `sync --once` leaves for later, by state (for its closing line). */
export async function leftoverFetches(db: Executor, maxAttempts: number): Promise<{ retrying: number; notFound: number; quarantined: number }> {
  const r = await db
    .selectFrom('booking_detail_queue')
    .select([
      sql<string>`count(*) FILTER (WHERE state = 'pending' AND attempts >= ${maxAttempts})`.as('retrying'),
      sql<string>`count(*) FILTER (WHERE state = 'not_found')`.as('not_found'),
      sql<string>`count(*) FILTER (WHERE state = 'quarantined')`.as('quarantined'),
    ])
    .executeTakeFirstOrThrow();
  return { retrying: Number(r.retrying), notFound: Number(r.not_found), quarantined: Number(r.quarantined) };
}
