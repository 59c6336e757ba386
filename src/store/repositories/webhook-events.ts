/**
 * webhook_events: the provider's change events as the receiver stored them, and their way to
 * processed, ignored or failed. A redelivered event is stored once (its id is the key); an
 * event the database refuses for its content goes to the quarantine instead, with the reason;
 * events that are no longer pending are deleted after webhooks.retainEventsDays.
 */
import { sql, type Kysely } from 'kysely';
import type { Database } from '../schema.js';
import { streamNames, type WebhookEventState } from '../states.js';
import { isDataRefused, describeDatabaseError } from '../errors.js';
import { quarantinePayload, WRITE_FAILED_PREFIX } from './quarantine.js';
import type { Executor } from '../types.js';

export interface NewEvent {
  eventId: string;
  eventType: string;
  creationTime: string | null;
  payload: unknown;
  propertyId: string | null;
  entityKey: string | null;
}

/** An event that is not stored: its place in the batch, its id when it has one, why, and the event as received. */
export interface UnstorableEvent {
  index: number;
  eventId: string | null;
  reason: string;
  body: string;
}

/** Stores events; an event id already stored is ignored. Returns how many were new. */
export async function insertWebhookEvents(trx: Executor, events: NewEvent[]): Promise<number> {
  if (events.length === 0) return 0;
  const r = await trx
    .insertInto('webhook_events')
    .values(
      events.map((e) => ({
        event_id: e.eventId,
        event_type: e.eventType,
        creation_time: e.creationTime,
        payload: e.payload === null || e.payload === undefined ? null : JSON.stringify(e.payload),
        property_id: e.propertyId,
        entity_key: e.entityKey,
      })),
    )
    .onConflict((oc) => oc.column('event_id').doNothing())
    .returning('event_id')
    .execute();
  return r.length;
}

/**
 * One batch in one transaction: the events stored, `invalid` ones (not events) and those the
 * database refuses for their content (a NUL in a string, a number beyond numeric) quarantined.
 * The batch is tried whole first; only when the database refuses data is it tried event by
 * event, each behind a savepoint. Rejects when the database cannot be reached (or fails
 * otherwise): then nothing is stored and the provider delivers the batch again.
 */
export async function storeWebhookBatch(
  db: Kysely<Database>,
  /** The events and the bodies that are no events, as they may be stored (src/privacy/guest-writes.ts), made in the transaction. */
  prepare: (trx: Executor) => Promise<{ events: (NewEvent & { index: number })[]; invalid: UnstorableEvent[] }>,
): Promise<{ stored: number; refused: UnstorableEvent[] }> {
  return db.transaction().execute(async (trx) => {
    const { events, invalid } = await prepare(trx);
    let stored = 0;
    const refused: UnstorableEvent[] = [];
    await sql`SAVEPOINT batch`.execute(trx);
    try {
      stored = await insertWebhookEvents(trx, events);
      await sql`RELEASE SAVEPOINT batch`.execute(trx);
    } catch (err) {
      if (!isDataRefused(err)) throw err;
      await sql`ROLLBACK TO SAVEPOINT batch`.execute(trx);
      for (const e of events) {
        await sql`SAVEPOINT event`.execute(trx);
        try {
          stored += await insertWebhookEvents(trx, [e]);
          await sql`RELEASE SAVEPOINT event`.execute(trx);
        } catch (err2) {
          if (!isDataRefused(err2)) throw err2;
          await sql`ROLLBACK TO SAVEPOINT event`.execute(trx);
          refused.push({
            index: e.index,
            eventId: e.eventId,
            reason: `${WRITE_FAILED_PREFIX}${describeDatabaseError(err2)}`,
            body: JSON.stringify({ eventId: e.eventId, eventType: e.eventType, creationTime: e.creationTime, payload: e.payload }),
          });
        }
      }
    }
    for (const r of [...invalid, ...refused]) {
      await quarantinePayload(trx, {
        stream: streamNames.webhookReceiver,
        propertyId: null,
        entityKey: r.eventId === null ? null : printable(r.eventId),
        reason: r.reason,
        rawBody: r.body,
      });
    }
    return { stored, refused };
  });
}

/** An id as a quarantine key: printable, bounded (an event that is not an event may carry anything). */
function printable(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, '?').slice(0, 200);
}

export interface StoredEvent {
  eventId: string;
  eventType: string;
  creationTime: Date | null;
  payload: Record<string, unknown> | null;
  propertyId: string | null;
  entityKey: string | null;
  attempts: number;
  /** Whether a connection of this schema follows the event's property (it has a cursor). */
  followed: boolean;
}

/**
 * Pending events due now, oldest first, of the properties `route.connection` follows (per
 * sync_cursors); with `route.unrouted`, also those of properties no connection follows (or
 * that name none) once they have waited `unfollowedAfterMs` for a connection to follow them:
 * they are kept and counted, never fetched.
 */
export async function nextDueEvents(
  db: Executor,
  limit: number,
  route: { connection: string; unrouted: boolean; unfollowedAfterMs: number },
): Promise<StoredEvent[]> {
  const mine = sql<boolean>`property_id IN (SELECT property_id FROM sync_cursors WHERE connection = ${route.connection})`;
  const followed = sql<boolean>`coalesce(property_id IN (SELECT property_id FROM sync_cursors), false)`;
  const waited = sql<boolean>`received_at <= now() - ${`${route.unfollowedAfterMs} milliseconds`}::interval`;
  const rows = await db
    .selectFrom('webhook_events')
    .select(['event_id', 'event_type', 'creation_time', 'payload', 'property_id', 'entity_key', 'attempts', followed.as('followed')])
    .where('state', '=', 'pending')
    .where('next_attempt_at', '<=', sql<Date>`now()`)
    .where(route.unrouted ? sql<boolean>`(${mine} OR (NOT ${followed} AND ${waited}))` : mine)
    .orderBy('creation_time')
    .orderBy('received_at')
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    eventId: r.event_id,
    eventType: r.event_type,
    creationTime: r.creation_time,
    payload: (r.payload as Record<string, unknown> | null) ?? null,
    propertyId: r.property_id,
    entityKey: r.entity_key,
    attempts: r.attempts,
    followed: r.followed,
  }));
}

/**
 * How long until the next pending event `route` takes falls due (0 when one is due now), or
 * undefined when there is none: how long an idle event drain may sleep when nothing wakes it.
 * An event of a property no connection follows falls due for the unrouted route
 * unfollowedAfterMs after it was received.
 */
export async function msUntilNextEvent(db: Executor, route: { connection: string; unrouted: boolean; unfollowedAfterMs: number }): Promise<number | undefined> {
  const wait = `${route.unfollowedAfterMs} milliseconds`;
  const r = await sql<{ ms: number | null }>`
    SELECT (extract(epoch FROM min(due) - now()) * 1000)::float8 AS ms
      FROM (SELECT CASE WHEN property_id IN (SELECT property_id FROM sync_cursors WHERE connection = ${route.connection}) THEN next_attempt_at
                        WHEN ${route.unrouted} AND NOT coalesce(property_id IN (SELECT property_id FROM sync_cursors), false)
                        THEN GREATEST(next_attempt_at, received_at + ${wait}::interval) END AS due
              FROM webhook_events WHERE state = 'pending') e`.execute(db);
  const ms = r.rows[0]?.ms;
  return ms === null || ms === undefined ? undefined : Math.max(0, ms);
}

/** The mirror's tables that an event refreshes, with the key columns of what it names. */
const refreshedTables = {
  pmsReservation: { table: 'pms_reservations', key: 'number' },
  storageBooking: { table: 'integration_storage_bookings', key: 'booking_id' },
  inventoryBlock: { table: 'inventory_blocks', key: 'inventory_block_id' },
} as const;

/**
 * When the mirror's copy of what an event names was read at the provider (a lower bound, on
 * the provider's clock), or null when the mirror has none. An event created before it
 * announces a change that copy already holds.
 */
export async function mirroredReadAt(db: Executor, kind: keyof typeof refreshedTables, propertyId: string, key: string): Promise<Date | null> {
  const { table, key: column } = refreshedTables[kind];
  const r = await sql<{
    fetched_at: Date;
  }>`SELECT fetched_at FROM ${sql.table(table)} WHERE property_id = ${propertyId} AND ${sql.id(column)} = ${key}`.execute(db);
  return r.rows[0]?.fetched_at ?? null;
}

/** Ends an event: processed (its refresh committed in this transaction), ignored or failed. */
export async function finishEvent(db: Executor, eventId: string, state: Exclude<WebhookEventState, 'pending'>, error?: string): Promise<void> {
  await db
    .updateTable('webhook_events')
    .set({ state, processed_at: new Date(), last_error: error?.slice(0, 1000) ?? null, synced_at: sql`now()` })
    .where('event_id', '=', eventId)
    .execute();
}

/** A refresh that failed for now: the event is processed again after `delayMs`. */
export async function eventAgainLater(db: Executor, eventId: string, delayMs: number, error: string): Promise<void> {
  await db
    .updateTable('webhook_events')
    .set({
      attempts: sql`attempts + 1`,
      next_attempt_at: sql`now() + ${`${Math.round(delayMs)} milliseconds`}::interval`,
      last_error: error.slice(0, 1000),
      synced_at: sql`now()`,
    })
    .where('event_id', '=', eventId)
    .execute();
}

/** Events whose refresh waits for its turn (the per-property pace): due again after `delayMs`, no attempt counted. */
export async function deferEvents(db: Executor, eventIds: string[], delayMs: number): Promise<void> {
  if (eventIds.length === 0) return;
  await db
    .updateTable('webhook_events')
    .set({ next_attempt_at: sql`now() + ${`${Math.round(delayMs)} milliseconds`}::interval`, synced_at: sql`now()` })
    .where('event_id', 'in', eventIds)
    .where('state', '=', 'pending')
    .execute();
}

/**
 * Deletes up to `batch` events that are no longer pending and were received more than
 * `retainDays` days ago; returns how many. Small batches: each is a short transaction.
 */
export async function purgeWebhookEvents(db: Executor, retainDays: number, batch: number): Promise<number> {
  const r = await sql`
    DELETE FROM webhook_events WHERE event_id IN (
      SELECT event_id FROM webhook_events
       WHERE state <> 'pending' AND received_at < now() - make_interval(days => ${retainDays})
       LIMIT ${batch})`.execute(db);
  return Number(r.numAffectedRows ?? 0);
}

export interface EventCounts {
  eventType: string;
  state: string;
  n: number;
}

/** Events by type and state (status, metrics); types not in `knownTypes` count as `other`. */
export async function countEvents(db: Executor, knownTypes: readonly string[]): Promise<EventCounts[]> {
  const r = await sql<{ event_type: string; state: string; n: string }>`
    SELECT CASE WHEN event_type = ANY(${[...knownTypes]}::text[]) THEN event_type ELSE 'other' END AS event_type, state, count(*) AS n
      FROM webhook_events GROUP BY 1, 2 ORDER BY 1, 2`.execute(db);
  return r.rows.map((x) => ({ eventType: x.event_type, state: x.state, n: Number(x.n) }));
}

export interface PendingEvents {
  /** '' for events that name no property or a property no connection follows. */
  propertyId: string;
  pending: number;
  oldestPendingAt: Date | null;
}

/**
 * Change events per followed property: how many wait and since when. Every followed property
 * that has events gets a row (0 when none wait), so that the gauges show a property's queue
 * emptying rather than vanishing; the events of other properties (anyone can name any) share
 * the row ''.
 */
export async function pendingEventsByProperty(db: Executor): Promise<PendingEvents[]> {
  const r = await sql<{ property_id: string; pending: string; oldest: Date | null }>`
    SELECT CASE WHEN property_id IN (SELECT property_id FROM sync_cursors) THEN property_id ELSE '' END AS property_id,
           count(*) FILTER (WHERE state = 'pending') AS pending,
           min(received_at) FILTER (WHERE state = 'pending') AS oldest
      FROM webhook_events GROUP BY 1 ORDER BY 1`.execute(db);
  return r.rows.map((x) => ({ propertyId: x.property_id, pending: Number(x.pending), oldestPendingAt: x.oldest ? new Date(x.oldest) : null }));
}
