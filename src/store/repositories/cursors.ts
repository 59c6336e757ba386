/**
 * sync_cursors: where each stream of each property stands, and how it is doing (state,
 * last error and since when). The cursor value moves only in the transaction of the rows it
 * covers (saveCursorAfterPage); the other functions record states and errors.
 */
import { sql, type Selectable } from 'kysely';
import type { SyncCursorsTable } from '../schema.js';
import type { CursorState, CursorStream } from '../states.js';
import type { Executor } from '../types.js';

export interface CursorRow {
  propertyId: string;
  stream: CursorStream;
  cursor: string | null;
  position: Date | null;
  state: CursorState;
  caughtUp: boolean;
  pages: number;
  rowsSeen: number;
  lastPollAt: Date | null;
  lastError: string | null;
  errorSince: Date | null;
}

export async function findCursor(db: Executor, propertyId: string, stream: CursorStream): Promise<CursorRow | undefined> {
  const r = await db.selectFrom('sync_cursors').selectAll().where('property_id', '=', propertyId).where('stream', '=', stream).executeTakeFirst();
  return r && toCursor(r);
}

/**
 * The cursors of `stream`: every property's, or those of `propertyIds` (a connection's own:
 * its engines must not each read the whole fleet's; 500 of them stopping at once did that, and
 * ran a replica out of heap).
 */
export async function listCursors(db: Executor, stream: CursorStream, propertyIds?: readonly string[]): Promise<CursorRow[]> {
  let q = db.selectFrom('sync_cursors').selectAll().where('stream', '=', stream);
  if (propertyIds !== undefined) {
    if (propertyIds.length === 0) return [];
    q = q.where('property_id', 'in', [...propertyIds]);
  }
  const rows = await q.orderBy('property_id').execute();
  return rows.map(toCursor);
}

function toCursor(r: Selectable<SyncCursorsTable>): CursorRow {
  return {
    propertyId: r.property_id,
    stream: r.stream,
    cursor: r.cursor,
    position: r.position,
    state: r.state,
    caughtUp: r.caught_up,
    pages: Number(r.pages),
    rowsSeen: Number(r.rows_seen),
    lastPollAt: r.last_poll_at,
    lastError: r.last_error,
    errorSince: r.error_since,
  };
}

/** Stores the cursor after a page, in the page's transaction. `position` only moves forward. The stream is healthy again. */
export async function saveCursorAfterPage(
  trx: Executor,
  c: { propertyId: string; stream: CursorStream; cursor: string | null; position: Date | null; caughtUp: boolean; rows: number; polledAt: Date },
): Promise<void> {
  await trx
    .insertInto('sync_cursors')
    .values({
      property_id: c.propertyId,
      stream: c.stream,
      cursor: c.cursor,
      position: c.position,
      state: 'active',
      caught_up: c.caughtUp,
      pages: 1,
      rows_seen: c.rows,
      last_poll_at: c.polledAt,
      last_error: null,
      error_since: null,
      updated_at: c.polledAt,
    })
    .onConflict((oc) =>
      oc.columns(['property_id', 'stream']).doUpdateSet({
        cursor: c.cursor,
        position: sql`GREATEST(sync_cursors.position, excluded.position)`,
        state: 'active',
        caught_up: c.caughtUp,
        pages: sql`sync_cursors.pages + 1`,
        rows_seen: sql`sync_cursors.rows_seen + excluded.rows_seen`,
        last_poll_at: c.polledAt,
        last_error: null,
        error_since: null,
        updated_at: c.polledAt,
      }),
    )
    .execute();
}

/**
 * Records a problem without moving the cursor: `retrying` (transient: the provider is away,
 * retried with backoff) or `failing` (permanent: needs attention). `error_since` keeps the
 * start of a continuing problem of the same state. A lost token stays lost (`needs_recover`).
 */
export async function markCursorProblem(
  db: Executor,
  c: { propertyIds: readonly string[]; stream: CursorStream; state: 'retrying' | 'failing' | 'not_granted'; message: string; at: Date },
): Promise<void> {
  if (c.propertyIds.length === 0) return;
  await sql`
    INSERT INTO sync_cursors AS s (property_id, stream, state, last_error, error_since, updated_at)
    SELECT p, ${c.stream}, ${c.state}, ${c.message}, ${c.at}, ${c.at} FROM unnest(${[...c.propertyIds]}::text[]) AS p
    ON CONFLICT (property_id, stream) DO UPDATE SET
      state = excluded.state,
      last_error = excluded.last_error,
      error_since = CASE WHEN s.state = excluded.state THEN COALESCE(s.error_since, excluded.error_since) ELSE excluded.error_since END,
      updated_at = excluded.updated_at
    WHERE s.state <> 'needs_recover'`.execute(db);
}

/**
 * A stream whose reads fail no more (sync/runtime/read-health.ts): active again, its error
 * cleared, nothing else changed (such a stream has no position, and writes only when its state
 * changes, so last_poll_at is not kept up to date).
 */
export async function markCursorHealthy(db: Executor, propertyId: string, stream: CursorStream, at: Date): Promise<void> {
  await db
    .updateTable('sync_cursors')
    .set({ state: 'active', last_error: null, error_since: null, updated_at: at })
    .where('property_id', '=', propertyId)
    .where('stream', '=', stream)
    .where('state', '=', 'failing')
    .execute();
}

/** The provider answers again: properties marked `retrying` are active again (their next page confirms it). */
export async function clearRetrying(db: Executor, propertyIds: readonly string[], stream: CursorStream, at: Date): Promise<void> {
  if (propertyIds.length === 0) return;
  await db
    .updateTable('sync_cursors')
    .set({ state: 'active', last_error: null, error_since: null, updated_at: at })
    .where('stream', '=', stream)
    .where('state', '=', 'retrying')
    .where('property_id', 'in', [...propertyIds])
    .execute();
}

/**
 * Marks the cursor lost (`needs_recover`): the provider rejects it (or it vanished while
 * mirrored rows exist). The cursor value is kept for the operator to inspect; the stream
 * refuses to run until a recovery replaces it (resetCursorForRecovery).
 */
export async function markCursorLost(db: Executor, propertyId: string, stream: CursorStream, message: string, at: Date): Promise<void> {
  await db
    .insertInto('sync_cursors')
    .values({ property_id: propertyId, stream, cursor: null, position: null, state: 'needs_recover', last_error: message, error_since: at, updated_at: at })
    .onConflict((oc) => oc.columns(['property_id', 'stream']).doUpdateSet({ state: 'needs_recover', last_error: message, error_since: at, updated_at: at }))
    .execute();
}

/** Recovery: drop the token so the next poll starts again from `lastModification`. */
export async function resetCursorForRecovery(db: Executor, propertyId: string, stream: CursorStream, at: Date): Promise<void> {
  await db
    .insertInto('sync_cursors')
    .values({ property_id: propertyId, stream, cursor: null, position: null, state: 'active', last_error: null, updated_at: at })
    .onConflict((oc) =>
      oc
        .columns(['property_id', 'stream'])
        // The position goes too: a page without a token continues from it, which must not
        // skip the recovery's overlap if the process stops before the first recovery page.
        .doUpdateSet({ cursor: null, position: null, state: 'active', caught_up: false, last_error: null, error_since: null, updated_at: at }),
    )
    .execute();
}

/** What caught-up polls that found nothing learned, for one property and stream (PollLedger). */
export interface QuietPolls {
  propertyId: string;
  stream: CursorStream;
  /** The API connection whose lease the polls were made under, and its epoch then. */
  connection: string;
  epoch: string | undefined;
  /** The last of them. */
  polledAt: Date;
  /** How many. */
  pages: number;
  /**
   * The stream's position after them, when it moved without rows to write with it (a PMS
   * search window read to its end): `cursor` replaces the stored one only when `coveredTo` is
   * ahead of the one the stored cursor holds, so a late write never moves it back.
   */
  advanced?: { cursor: string; position: Date; coveredTo: number; caughtUp: boolean };
}

/**
 * Records caught-up polls that found nothing, of many properties in one statement: their time
 * (last_poll_at, which status, freshness, the day close and dbt read), their count, and a PMS
 * search position that moved. last_poll_at only moves forward.
 *
 * Fenced as every write of a connection is, for all of them at once: with `replicaId`, only
 * the polls made under a lease this replica still holds with the same epoch are written, and
 * the leases are locked (FOR KEY SHARE) until the statement commits, so a replica taking one
 * over waits for it. Without (one process, under the schema's lock), every poll is written.
 */
export async function recordQuietPolls(db: Executor, polls: readonly QuietPolls[], replicaId?: string): Promise<void> {
  if (polls.length === 0) return;
  const held =
    replicaId === undefined
      ? sql`SELECT DISTINCT connection, epoch FROM unnest(${polls.map((p) => p.connection)}::text[], ${polls.map((p) => p.epoch ?? null)}::text[]) AS x(connection, epoch)`
      : sql`SELECT c.connection, c.epoch::text AS epoch FROM sync_connections c
             WHERE c.replica_id = ${replicaId} AND c.connection = ANY(${[...new Set(polls.map((p) => p.connection))]}::text[])
             FOR KEY SHARE`;
  await sql`
    WITH held AS MATERIALIZED (${held})
    UPDATE sync_cursors s
       SET last_poll_at = GREATEST(s.last_poll_at, v.polled_at),
           pages = s.pages + v.pages,
           -- CASE, not AND: the booking list's cursor is the provider's token, not JSON, and is never cast.
           cursor = CASE WHEN v.cursor IS NULL THEN s.cursor
                         WHEN COALESCE((s.cursor::jsonb ->> 'coveredTo')::bigint, 0) < v.covered_to THEN v.cursor
                         ELSE s.cursor END,
           position = CASE WHEN v.cursor IS NULL THEN s.position
                           WHEN COALESCE((s.cursor::jsonb ->> 'coveredTo')::bigint, 0) < v.covered_to THEN GREATEST(s.position, v.position)
                           ELSE s.position END,
           caught_up = CASE WHEN v.cursor IS NULL THEN s.caught_up
                            WHEN COALESCE((s.cursor::jsonb ->> 'coveredTo')::bigint, 0) < v.covered_to THEN v.caught_up
                            ELSE s.caught_up END
      FROM unnest(${polls.map((p) => p.propertyId)}::text[], ${polls.map((p) => p.stream)}::text[], ${polls.map((p) => p.polledAt)}::timestamptz[],
                  ${polls.map((p) => p.pages)}::int[], ${polls.map((p) => p.advanced?.cursor ?? null)}::text[],
                  ${polls.map((p) => p.advanced?.position ?? null)}::timestamptz[], ${polls.map((p) => p.advanced?.coveredTo ?? null)}::bigint[],
                  ${polls.map((p) => p.advanced?.caughtUp ?? null)}::boolean[], ${polls.map((p) => p.connection)}::text[],
                  ${polls.map((p) => p.epoch ?? null)}::text[])
           AS v(property_id, stream, polled_at, pages, cursor, position, covered_to, caught_up, connection, epoch)
      JOIN held h ON h.connection = v.connection AND h.epoch IS NOT DISTINCT FROM v.epoch
     WHERE s.property_id = v.property_id AND s.stream = v.stream`.execute(db);
}
