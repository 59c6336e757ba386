/**
 * booking_summaries: the booking list as mirrored (rows from src/mapping/bookings.ts), and the
 * detail fetches a listed version asks for.
 */
import { sql } from 'kysely';
import { requeueSet } from './fetch-queue.js';
import type { Executor } from '../types.js';
import type { SummaryRow } from '../schema.js';

/**
 * Upserts the summaries of one page and enqueues a detail fetch for each booking whose stored
 * details may be older than the summary. Returns how many fetches were enqueued.
 *
 * "May be older" (docs/history.md, no version missed): no stored details; stored details of an
 * earlier modification; stored details of the same modification second that were fetched
 * before that second ended (a second change in the same second may be missing from them); or,
 * with `relistedBy` (a caught-up poll by continueToken, which lists a booking only when it
 * changed), stored details of the same second read before the list was: the booking changed
 * after they were read, in that same second, and the details read were an older copy. Those
 * fetches are enqueued with expect_change. Stored details of a later modification are never
 * downgraded.
 *
 * `keepNewer`: a stored summary of a later modification stays as it is. A reader of the
 * booking list from an earlier point (the reconciliation sweep) may list a version older than
 * the one the main stream wrote meanwhile; the main stream reads in modification order and
 * needs no such check.
 */
export async function upsertSummariesAndEnqueue(
  trx: Executor,
  summaries: SummaryRow[],
  listedAt: Date,
  opts: { keepNewer?: boolean; relistedBy?: Date | null } = {},
): Promise<number> {
  if (summaries.length === 0) return 0;
  // A page lists each booking once, but a defensive dedupe keeps ON CONFLICT from seeing
  // the same key twice in one statement (a Postgres error, 21000).
  const latest = new Map<string, SummaryRow>();
  for (const s of summaries) {
    const key = `${s.propertyId}\u0000${s.number}`;
    const prev = latest.get(key);
    if (!prev || (s.modifiedAt?.getTime() ?? 0) >= (prev.modifiedAt?.getTime() ?? 0)) latest.set(key, s);
  }
  const rows = [...latest.values()];

  // One statement over arrays (unnest), not a VALUES list: a page holds up to 1,000 rows, and
  // a query builder's tree of 7,000 values was the largest transient object of a backfill
  // (the heap V8 grows for it, it keeps).
  const keepNewer = opts.keepNewer ? sql`WHERE booking_summaries.modified_at IS NULL OR excluded.modified_at >= booking_summaries.modified_at` : sql``;
  await sql`
    INSERT INTO booking_summaries (property_id, number, status, created_at, modified_at, listed_at, raw)
    SELECT s.property_id, s.number, s.status, s.created_at, s.modified_at, ${listedAt}, s.raw
    FROM unnest(${rows.map((s) => s.propertyId)}::text[], ${rows.map((s) => s.number)}::text[], ${rows.map((s) => s.status)}::text[],
                ${rows.map((s) => s.createdText ?? s.createdAt?.toISOString() ?? null)}::timestamptz[],
                ${rows.map((s) => s.modifiedText ?? s.modifiedAt?.toISOString() ?? null)}::timestamptz[],
                ${rows.map((s) => JSON.stringify(s.raw))}::jsonb[])
         AS s(property_id, number, status, created_at, modified_at, raw)
    ON CONFLICT (property_id, number) DO UPDATE SET
      status = excluded.status, created_at = excluded.created_at, modified_at = excluded.modified_at,
      listed_at = excluded.listed_at, raw = excluded.raw, synced_at = now()
    ${keepNewer}`.execute(trx);

  return enqueueDetailFetches(trx, rows, opts.relistedBy ?? null);
}

/**
 * Enqueues a detail fetch for each booking whose stored details may be older than the
 * listed modification (all of them when it is unknown: a summary that failed validation
 * still names its booking). `relistedBy`: the list was read by then at the latest, on the
 * provider's clock, by a caught-up poll (see upsertSummariesAndEnqueue). Returns how many
 * fetches were enqueued.
 */
export async function enqueueDetailFetches(
  trx: Executor,
  rows: readonly { propertyId: string; number: string; modifiedAt: Date | null; modifiedText?: string | null; priority: number }[],
  relistedBy: Date | null = null,
): Promise<number> {
  if (rows.length === 0) return 0;
  const relisted = sql`(b.modified_at = s.modified_at AND b.fetched_at < ${relistedBy}::timestamptz)`;
  const enqueued = await sql<{ number: string }>`
    INSERT INTO booking_detail_queue AS q (property_id, number, wanted_modified_at, priority, generation, expect_change)
    SELECT s.property_id, s.number, s.modified_at, s.priority, nextval('booking_detail_queue_generation'), COALESCE(${relisted}, false)
    FROM unnest(${rows.map((s) => s.propertyId)}::text[], ${rows.map((s) => s.number)}::text[],
                ${rows.map((s) => s.modifiedText ?? s.modifiedAt?.toISOString() ?? null)}::timestamptz[],
                ${rows.map((s) => s.priority)}::smallint[])
         AS s(property_id, number, modified_at, priority)
    LEFT JOIN bookings b ON b.property_id = s.property_id AND b.number = s.number
    WHERE b.number IS NULL
       OR s.modified_at IS NULL
       OR b.modified_at < s.modified_at
       OR (b.modified_at = s.modified_at AND b.fetched_at < s.modified_at + interval '1 second')
       OR ${relisted}
    ON CONFLICT (property_id, number) DO UPDATE SET
      wanted_modified_at = GREATEST(q.wanted_modified_at, excluded.wanted_modified_at),
      priority = LEAST(q.priority, excluded.priority),
      -- Kept while the same version is asked for; a newer one says for itself.
      expect_change = excluded.expect_change OR (q.expect_change AND q.wanted_modified_at IS NOT DISTINCT FROM excluded.wanted_modified_at),
      ${requeueSet}
    -- A version parked for good (too large to read) waits for a newer one: the sweep lists it again.
    WHERE q.next_attempt_at <> 'infinity' OR q.wanted_modified_at IS NULL OR excluded.wanted_modified_at IS NULL
       OR excluded.wanted_modified_at > q.wanted_modified_at
    RETURNING q.number`.execute(trx);
  return enqueued.rows.length;
}

/** What the booking list has listed of a property so far: how many bookings, and the earliest modification among them. */
export interface ListedSoFar {
  propertyId: string;
  bookings: number;
  firstModification: Date | null;
}

/**
 * The bookings listed so far of each property in `propertyIds`, for the estimate of a first
 * full sync (src/sync/runtime/progress.ts). Asked only for the properties whose list is still
 * reading its history: it reads each one's rows (the primary key's range of the property).
 */
export async function listedSoFar(db: Executor, propertyIds: readonly string[]): Promise<ListedSoFar[]> {
  if (propertyIds.length === 0) return [];
  const rows = await db
    .selectFrom('booking_summaries')
    .select(['property_id', (eb) => eb.fn.countAll<string>().as('n'), (eb) => eb.fn.min('modified_at').as('first')])
    .where('property_id', 'in', [...propertyIds])
    .groupBy('property_id')
    .execute();
  return rows.map((r) => ({ propertyId: r.property_id, bookings: Number(r.n), firstModification: r.first ?? null }));
}
