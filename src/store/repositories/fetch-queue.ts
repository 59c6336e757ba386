/**
 * The durable fetch queues: booking_detail_queue (booking details) and pms_reservation_queue
 * (PMS reservations). Both have the same bookkeeping: a row per entity to fetch, a generation
 * bumped by every enqueue, a state, and a due time that moves back on a growing backoff after
 * a fetch that did not store the entity. Nothing stays missing without being retried and counted.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../schema.js';
import type { QueueState } from '../states.js';
import type { Executor } from '../types.js';

export type FetchQueue = 'booking_detail_queue' | 'pms_reservation_queue';

export interface QueuedFetch {
  propertyId: string;
  number: string;
  generation: string;
  /** booking_detail_queue only: the modification the summary asked for. */
  wantedModifiedAt: Date | null;
  /**
   * booking_detail_queue only: listed again with the stored modification second, so details
   * identical to the stored ones are an older copy (migrations/0014_relisted_versions.sql).
   */
  expectChange: boolean;
  state: QueueState;
  attempts: number;
  priority: number;
}

/** Most useful first: booking details by arrival soon, then the most recently modified; PMS reservations by priority, then oldest enqueue. */
const drainOrder: Record<FetchQueue, ReturnType<typeof sql>> = {
  booking_detail_queue: sql`priority, wanted_modified_at DESC`,
  pms_reservation_queue: sql`priority, enqueued_at`,
};

/**
 * The next due fetches of `queue`. `exclude` holds keys already being fetched by this process:
 * pass a snapshot taken before the call, since a fetch that completes while the query runs is
 * still listed in the query's snapshot.
 */
export async function nextDueFetches(db: Executor, queue: FetchQueue, connection: string, limit: number, exclude: ReadonlySet<string>): Promise<QueuedFetch[]> {
  const wanted = queue === 'booking_detail_queue' ? sql`wanted_modified_at` : sql`NULL::timestamptz`;
  const expectChange = queue === 'booking_detail_queue' ? sql`expect_change` : sql`false`;
  const r = await sql<{
    property_id: string;
    number: string;
    generation: string;
    wanted_modified_at: Date | null;
    expect_change: boolean;
    state: string;
    attempts: number;
    priority: number;
  }>`
    SELECT property_id, number, generation, ${wanted} AS wanted_modified_at, ${expectChange} AS expect_change, state, attempts, priority
    FROM ${sql.table(queue)}
    WHERE connection = ${connection} AND next_attempt_at <= now()
    ORDER BY ${drainOrder[queue]}
    LIMIT ${limit + exclude.size}`.execute(db);
  const out: QueuedFetch[] = [];
  for (const row of r.rows) {
    if (exclude.has(queueKey(row.property_id, row.number))) continue;
    out.push({
      propertyId: row.property_id,
      number: row.number,
      generation: String(row.generation),
      wantedModifiedAt: row.wanted_modified_at,
      expectChange: row.expect_change,
      state: row.state as QueueState,
      attempts: row.attempts,
      priority: row.priority,
    });
    if (out.length >= limit) break;
  }
  return out;
}

/**
 * How long until the connection's next row of the queue is due (0 when one is due now), or
 * undefined when it has none: how long an idle drain may sleep when nothing wakes it.
 */
export async function msUntilNextFetch(db: Executor, queue: FetchQueue, connection: string): Promise<number | undefined> {
  const r = await sql<{ ms: number | null }>`
    SELECT (extract(epoch FROM min(next_attempt_at) - now()) * 1000)::float8 AS ms
      FROM ${sql.table(queue)} WHERE connection = ${connection}`.execute(db);
  const ms = r.rows[0]?.ms;
  return ms === null || ms === undefined ? undefined : Math.max(0, ms);
}

/**
 * The SET list of an enqueue that meets an existing row (ON CONFLICT DO UPDATE): a new
 * generation (a fetch in flight for the old one will not remove the row), due now, failures
 * forgotten. Callers add what their queue keeps besides (priority, wanted version).
 */
export const requeueSet = sql`generation = excluded.generation, state = 'pending', attempts = 0, next_attempt_at = now(), enqueued_at = now(), last_error = NULL`;

/** VACUUM (ANALYZE) of a queue table, outside any transaction (a pooled connection in autocommit). */
export async function vacuumTable(db: Kysely<Database>, queue: FetchQueue): Promise<void> {
  await sql`VACUUM (ANALYZE) ${sql.table(queue)}`.execute(db);
}

export function queueKey(propertyId: string, number: string): string {
  return `${propertyId}\u0000${number}`;
}

/**
 * The delay of a fetch that must not be tried again until the entity is enqueued again (a
 * newer version is listed): its due time becomes 'infinity'.
 */
export const PARKED_UNTIL_NEXT_VERSION = Number.POSITIVE_INFINITY;

/**
 * A fetch that did not store the entity: the row goes to `state` and is tried again after
 * `delayMs` (never, for PARKED_UNTIL_NEXT_VERSION), unless it was enqueued again meanwhile
 * (then the new enqueue wins).
 */
export async function fetchAgainLater(db: Executor, queue: FetchQueue, f: QueuedFetch, state: QueueState, delayMs: number, message: string): Promise<void> {
  const due = delayMs === PARKED_UNTIL_NEXT_VERSION ? sql`'infinity'::timestamptz` : sql`now() + ${`${Math.round(delayMs)} milliseconds`}::interval`;
  await sql`
    UPDATE ${sql.table(queue)} SET
      state = ${state},
      attempts = attempts + 1,
      next_attempt_at = ${due},
      last_error = ${message.slice(0, 1000)}
    WHERE property_id = ${f.propertyId} AND number = ${f.number} AND generation = ${f.generation}`.execute(db);
}

/** Removes a fetched row unless it was enqueued again since it was claimed. Returns true when it is gone. */
export async function removeFetch(db: Executor, queue: FetchQueue, f: QueuedFetch): Promise<boolean> {
  const r = await sql`
    DELETE FROM ${sql.table(queue)}
    WHERE property_id = ${f.propertyId} AND number = ${f.number} AND generation = ${f.generation}`.execute(db);
  return Number(r.numAffectedRows ?? 0) > 0;
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

export async function queueDepthByProperty(db: Executor, queue: FetchQueue): Promise<QueueDepth[]> {
  const r = await sql<{ property_id: string; pending: string; not_found: string; quarantined: string; retrying: string; oldest: Date | null }>`
    SELECT property_id,
           count(*) FILTER (WHERE state = 'pending') AS pending,
           count(*) FILTER (WHERE state = 'not_found') AS not_found,
           count(*) FILTER (WHERE state = 'quarantined') AS quarantined,
           count(*) FILTER (WHERE state = 'pending' AND attempts > 0) AS retrying,
           min(enqueued_at) FILTER (WHERE state = 'pending') AS oldest
    FROM ${sql.table(queue)} GROUP BY property_id ORDER BY property_id`.execute(db);
  return r.rows.map((row) => ({
    propertyId: row.property_id,
    pending: Number(row.pending),
    notFound: Number(row.not_found),
    quarantined: Number(row.quarantined),
    retrying: Number(row.retrying),
    oldestPendingAt: row.oldest,
  }));
}

/**
 * Pending fetches in the whole queue (for draining and the ETA). With `maxAttempts`, only those
 * that failed fewer times: `sync --once` does not wait for fetches that keep failing (they stay
 * queued for the next run and are reported). With `connection`, only that connection's.
 */
export async function pendingCount(
  db: Executor,
  queue: FetchQueue,
  opts: { maxAttempts?: number; connection?: string; propertyId?: string } = {},
): Promise<number> {
  const attempts = opts.maxAttempts === undefined ? sql`` : sql`AND attempts < ${opts.maxAttempts}`;
  const mine = opts.connection === undefined ? sql`` : sql`AND connection = ${opts.connection}`;
  const property = opts.propertyId === undefined ? sql`` : sql`AND property_id = ${opts.propertyId}`;
  const r = await sql<{ n: string }>`SELECT count(*) AS n FROM ${sql.table(queue)} WHERE state = 'pending' ${attempts} ${mine} ${property}`.execute(db);
  return Number(r.rows[0]?.n ?? 0);
}

/**
 * Pending fetches of booking_detail_queue that a backfill enqueued (priority 1 and 2, see
 * FRESH_CHANGE_PRIORITY in src/sync/streams/booking-summaries.ts), per property: a property
 * whose list has caught up is still in its first sync while it has some.
 */
export async function backfillPendingByProperty(db: Executor): Promise<Map<string, number>> {
  const r = await sql<{ property_id: string; n: string }>`
    SELECT property_id, count(*) AS n FROM booking_detail_queue WHERE state = 'pending' AND priority >= 1 GROUP BY property_id`.execute(db);
  return new Map(r.rows.map((row) => [row.property_id, Number(row.n)]));
}

/** Fetches that `sync --once` leaves for later, by state (for its closing line). */
export async function leftoverFetches(
  db: Executor,
  queue: FetchQueue,
  maxAttempts: number,
): Promise<{ retrying: number; notFound: number; quarantined: number }> {
  const r = await sql<{ retrying: string; not_found: string; quarantined: string }>`
    SELECT count(*) FILTER (WHERE state = 'pending' AND attempts >= ${maxAttempts}) AS retrying,
           count(*) FILTER (WHERE state = 'not_found') AS not_found,
           count(*) FILTER (WHERE state = 'quarantined') AS quarantined
    FROM ${sql.table(queue)}`.execute(db);
  const row = r.rows[0];
  return { retrying: Number(row?.retrying ?? 0), notFound: Number(row?.not_found ?? 0), quarantined: Number(row?.quarantined ?? 0) };
}
