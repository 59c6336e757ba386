import { sql } from 'kysely';
import type { Db } from '../database.js';
import type { Database, SyncCursorsTable } from '../schema.js';
import type { Kysely, Selectable, Transaction } from 'kysely';

type Executor = Kysely<Database> | Transaction<Database>;

export interface CursorRow {
  propertyId: string;
  stream: string;
  cursor: string | null;
  position: Date | null;
  state: string;
  caughtUp: boolean;
  pages: number;
  rowsSeen: number;
  lastPollAt: Date | null;
  lastError: string | null;
}

/** Streams with a cursor per property. */
export const BOOKING_SUMMARIES = 'booking_summaries';

export async function findCursor(db: Executor, propertyId: string, stream: string): Promise<CursorRow | undefined> {
  const r = await db
    .selectFrom('sync_cursors')
    .selectAll()
    .where('property_id', '=', propertyId)
    .where('stream', '=', stream)
    .executeTakeFirst();
  return r && toCursor(r);
}

export async function listCursors(db: Executor, stream: string): Promise<CursorRow[]> {
  const rows = await db.selectFrom('sync_cursors').selectAll().where('stream', '=', stream).orderBy('property_id').execute();
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
  };
}

/** Stores the cursor after a page, in the page's transaction. `position` only moves forward. */
export async function saveCursorAfterPage(
  trx: Executor,
  c: { propertyId: string; stream: string; cursor: string | null; position: Date | null; caughtUp: boolean; rows: number; polledAt: Date },
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
        updated_at: c.polledAt,
      }),
    )
    .execute();
}

/** Records a failed poll without moving the cursor. */
export async function recordCursorError(db: Db, propertyId: string, stream: string, message: string, at: Date): Promise<void> {
  await db
    .insertInto('sync_cursors')
    .values({ property_id: propertyId, stream, cursor: null, position: null, last_poll_at: at, last_error: message, updated_at: at })
    .onConflict((oc) => oc.columns(['property_id', 'stream']).doUpdateSet({ last_poll_at: at, last_error: message, updated_at: at }))
    .execute();
}

/**
 * Marks the cursor lost: the provider rejected it (or it vanished while mirrored rows exist).
 * The cursor value is kept for the operator to inspect; the stream refuses to run until a
 * restart with --recover replaces it.
 */
export async function markCursorLost(db: Db, propertyId: string, stream: string, message: string, at: Date): Promise<void> {
  await db
    .insertInto('sync_cursors')
    .values({ property_id: propertyId, stream, cursor: null, position: null, state: 'token_lost', last_error: message, updated_at: at })
    .onConflict((oc) => oc.columns(['property_id', 'stream']).doUpdateSet({ state: 'token_lost', last_error: message, updated_at: at }))
    .execute();
}

/** Recovery: drop the token so the next poll starts again from `lastModification`. */
export async function resetCursorForRecovery(db: Db, propertyId: string, stream: string, at: Date): Promise<void> {
  await db
    .insertInto('sync_cursors')
    .values({ property_id: propertyId, stream, cursor: null, position: null, state: 'active', last_error: null, updated_at: at })
    .onConflict((oc) =>
      oc.columns(['property_id', 'stream']).doUpdateSet({ cursor: null, state: 'active', caught_up: false, last_error: null, updated_at: at }),
    )
    .execute();
}
