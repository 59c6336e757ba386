/**
 * webhook_events: the provider's change events as the receiver stored them, and their way to
 * processed, ignored or failed. A redelivered event is stored once (its id is the key); an
 * event the database refuses for its content goes to the quarantine instead, with the reason;
 * an event that cannot be acted on now waits (`waiting`) and is looked at again; events that
 * are neither pending nor waiting are deleted after webhooks.retainEventsDays.
 *
 * An event is routed to the connection that follows its property (sync_cursors) or, while its
 * property is not known (an integration-storage event names none), to the connection its
 * delivery URL named (`connection`).
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
  /** The API connection the delivery URL named (webhooks.path/<connection>); absent or null: none. */
  connection?: string | null;
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
        connection: e.connection ?? null,
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
  /** The API connection the delivery URL named, or null. */
  connection: string | null;
  state: 'pending' | 'waiting';
  attempts: number;
  /**
   * Whether a connection of this schema follows the event's property (it has a cursor); for an
   * event whose property is not known yet, whether its connection follows any.
   */
  followed: boolean;
}

/** The events the drains take: pending ones, and waiting ones when they are looked at again. */
const OPEN = sql<boolean>`state IN ('pending', 'waiting')`;

/** SQL: the event is `connection`'s: a property it follows, or no property and the connection its URL named. */
function routedTo(connection: string) {
  return sql<boolean>`(property_id IN (SELECT property_id FROM sync_cursors WHERE connection = ${connection}) OR (property_id IS NULL AND connection = ${connection}))`;
}

/** SQL: some connection follows the event's property (or, with none known, the connection its URL named follows something). */
const FOLLOWED = sql<boolean>`(CASE WHEN property_id IS NULL THEN coalesce(connection IN (SELECT connection FROM sync_cursors), false)
                                   ELSE property_id IN (SELECT property_id FROM sync_cursors) END)`;

/**
 * Pending and waiting events due now, oldest first, routed to `route.connection` (routedTo);
 * with `route.unrouted`, also those no connection follows once they have waited
 * `unfollowedAfterMs` for a connection to follow them: kept and counted, never fetched.
 */
export async function nextDueEvents(
  db: Executor,
  limit: number,
  route: { connection: string; unrouted: boolean; unfollowedAfterMs: number },
): Promise<StoredEvent[]> {
  const mine = routedTo(route.connection);
  const waited = sql<boolean>`received_at <= now() - ${`${route.unfollowedAfterMs} milliseconds`}::interval`;
  const rows = await db
    .selectFrom('webhook_events')
    .select(['event_id', 'event_type', 'creation_time', 'payload', 'property_id', 'entity_key', 'connection', 'state', 'attempts', FOLLOWED.as('followed')])
    .where(OPEN)
    .where('next_attempt_at', '<=', sql<Date>`now()`)
    .where(route.unrouted ? sql<boolean>`(${mine} OR (NOT ${FOLLOWED} AND ${waited}))` : mine)
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
    connection: r.connection,
    state: r.state === 'waiting' ? 'waiting' : 'pending',
    attempts: r.attempts,
    followed: r.followed,
  }));
}

/**
 * How long until the next pending or waiting event `route` takes falls due (0 when one is due
 * now), or undefined when there is none: how long an idle event drain may sleep when nothing
 * wakes it. An event no connection follows falls due for the unrouted route unfollowedAfterMs
 * after it was received.
 */
export async function msUntilNextEvent(db: Executor, route: { connection: string; unrouted: boolean; unfollowedAfterMs: number }): Promise<number | undefined> {
  const wait = `${route.unfollowedAfterMs} milliseconds`;
  const r = await sql<{ ms: number | null }>`
    SELECT (extract(epoch FROM min(due) - now()) * 1000)::float8 AS ms
      FROM (SELECT CASE WHEN ${routedTo(route.connection)} THEN next_attempt_at
                        WHEN ${route.unrouted} AND NOT ${FOLLOWED}
                        THEN GREATEST(next_attempt_at, received_at + ${wait}::interval) END AS due
              FROM webhook_events WHERE ${OPEN}) e`.execute(db);
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
    .where(OPEN)
    .execute();
}

/**
 * Events kept because what they name cannot be fetched now (`reason`): `waiting`, looked at
 * again after `delayMs`; `attempt` counts one more try that found nothing.
 */
export async function waitEvents(db: Executor, eventIds: string[], delayMs: number, reason: string, attempt: boolean): Promise<void> {
  if (eventIds.length === 0) return;
  await db
    .updateTable('webhook_events')
    .set({
      state: 'waiting',
      attempts: attempt ? sql`attempts + 1` : sql`attempts`,
      next_attempt_at: sql`now() + ${`${Math.round(delayMs)} milliseconds`}::interval`,
      last_error: reason.slice(0, 1000),
      synced_at: sql`now()`,
    })
    .where('event_id', 'in', eventIds)
    .where(OPEN)
    .execute();
}

/**
 * The property found for events that named none, written into them. With `reroute`, they are
 * pending again at once: the connection that follows the property takes them.
 */
export async function placeEvents(db: Executor, eventIds: string[], propertyId: string, reroute: boolean): Promise<void> {
  if (eventIds.length === 0) return;
  let q = db.updateTable('webhook_events').set({ property_id: propertyId, synced_at: sql`now()` });
  if (reroute) q = q.set({ state: 'pending', next_attempt_at: sql`now()` });
  await q.where('event_id', 'in', eventIds).execute();
}

/** The properties a connection follows (its cursors): where an event that names no property may be about. */
export async function followedPropertyIds(db: Executor, connection: string): Promise<string[]> {
  const rows = await db.selectFrom('sync_cursors').select('property_id').distinct().where('connection', '=', connection).orderBy('property_id').execute();
  return rows.map((r) => r.property_id);
}

/**
 * The properties whose mirrored copy holds this integration-storage booking or inventory block
 * id, among `propertyIds` (null: any): what an earlier fetch found costs no request again.
 */
export async function propertiesHolding(
  db: Executor,
  kind: 'storageBooking' | 'inventoryBlock',
  key: string,
  propertyIds: readonly string[] | null,
): Promise<string[]> {
  const { table, key: column } = refreshedTables[kind];
  const among = propertyIds === null ? sql`true` : sql`property_id = ANY(${[...propertyIds]}::text[])`;
  const r = await sql<{ property_id: string }>`
    SELECT DISTINCT property_id FROM ${sql.table(table)} WHERE ${sql.id(column)} = ${key} AND ${among} ORDER BY 1 LIMIT 2`.execute(db);
  return r.rows.map((x) => x.property_id);
}

/**
 * Until when, and why, another event of the same type and id through the same connection waits
 * because no property had it: an event that comes meanwhile joins it rather than asking every
 * property again. Undefined when none waits.
 */
export async function unplacedWaitUntil(
  db: Executor,
  connection: string,
  eventType: string,
  key: string,
  except: string[],
): Promise<{ until: Date; reason: string } | undefined> {
  const r = await db
    .selectFrom('webhook_events')
    .select(['next_attempt_at', 'last_error'])
    .where('state', '=', 'waiting')
    .where('property_id', 'is', null)
    .where('connection', '=', connection)
    .where('event_type', '=', eventType)
    .where('entity_key', '=', key)
    .where('event_id', 'not in', except.length > 0 ? except : [''])
    .where('next_attempt_at', '>', sql<Date>`now()`)
    .orderBy('next_attempt_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  return r ? { until: r.next_attempt_at, reason: r.last_error ?? 'waits with an earlier event of the same id' } : undefined;
}

export interface WaitingEvents {
  /** Why they wait (their last_error). */
  reason: string;
  n: number;
  /** When the first of them is looked at again. */
  nextAt: Date;
}

/** Waiting events by reason, the most common first (status): what is kept and why. */
export async function waitingEvents(db: Executor, limit: number): Promise<{ total: number; reasons: WaitingEvents[] }> {
  const r = await sql<{ reason: string; n: string; next_at: Date; total: string }>`
    SELECT coalesce(last_error, '') AS reason, count(*) AS n, min(next_attempt_at) AS next_at, sum(count(*)) OVER () AS total
      FROM webhook_events WHERE state = 'waiting' GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT ${limit}`.execute(db);
  return {
    total: Number(r.rows[0]?.total ?? 0),
    reasons: r.rows.map((x) => ({ reason: x.reason, n: Number(x.n), nextAt: new Date(x.next_at) })),
  };
}

/**
 * Deletes up to `batch` events that are neither pending nor waiting and were received more
 * than `retainDays` days ago; returns how many. Small batches: each is a short transaction.
 * A waiting event stays until what it announces is fetched.
 */
export async function purgeWebhookEvents(db: Executor, retainDays: number, batch: number): Promise<number> {
  const r = await sql`
    DELETE FROM webhook_events WHERE event_id IN (
      SELECT event_id FROM webhook_events
       WHERE state NOT IN ('pending', 'waiting') AND received_at < now() - make_interval(days => ${retainDays})
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
