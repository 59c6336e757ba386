/**
 * The provider's change events: processing what the webhook receiver stored in webhook_events.
 *
 * An event says "something changed" and names it; the refresh it triggers runs promptly and
 * ahead of backfill work (budget priority 0):
 * - `webpms:*` (payload BookingNumber, PropertyId): the PMS reservation is fetched and written;
 *   for an event that may change the booking itself (created, cancelled, rooms added or
 *   removed, arrival or departure moved), the booking's details are enqueued first in line
 *   when the booking list knows the booking;
 * - `pms_integration_storage:booking_changed`: the integration-storage booking, with its
 *   channels and nights (revenue per room stay and stay date);
 * - `pms_integration_storage:inventory_block_changed`: the inventory block, with its days.
 * Events of one claim that name the same thing share one refresh.
 * An event is marked processed in the transaction that writes its refresh, so an event whose
 * refresh did not commit (crash, stop, outage) is processed after a restart. Other types are
 * kept and counted as `ignored`; a refresh that cannot succeed is `failed` with its reason.
 * Events never replace polling: what a lost event announced, the next search finds.
 *
 * Anyone who can reach the receiver can name any property and any booking, so events cannot
 * spend the provider budget beyond a bound:
 * - events of a property that no connection follows are kept and counted (`ignored`), never
 *   fetched: whose budget would it be? (They wait webhooks.unfollowedAfterMs first, for a
 *   connection that is starting or a content refresh that finds the property.)
 * - an event created before the mirror's copy of what it names was read at the provider
 *   announces nothing new: processed without a fetch; events for a thing refreshed less than
 *   COALESCE_MS ago wait and share one refresh (a burst of events for one booking costs one
 *   fetch when it comes in one batch, at most two when it comes in many within two seconds);
 * - each property's event-driven refreshes are paced by a token bucket
 *   (webhooks.eventFetchesPerProperty): a burst passes at once, a flood waits its turn;
 * - a 404 is asked once more, behind the backfill, then the event fails: polling finds a
 *   reservation that exists.
 * Metrics name only the known event types (others count as `other`).
 */
import { streamNames } from '../../store/states.js';
import { enqueueKnownBookingDetails } from '../../store/repositories/booking-queue.js';
import { saveInventoryBlock, saveStorageBooking } from '../../store/repositories/integration-storage.js';
import { inventoryBlockToRows } from '../../mapping/integration-storage.js';
import { erasableStorageBooking, type Erasable } from '../../mapping/erasure.js';
import { rowsAfterErasures } from '../../store/repositories/erasures.js';
import {
  deferEvents,
  eventAgainLater,
  finishEvent,
  mirroredReadAt,
  msUntilNextEvent,
  nextDueEvents,
  purgeWebhookEvents,
  type StoredEvent,
} from '../../store/repositories/webhook-events.js';
import { quarantineGuestPayload } from '../../privacy/guest-writes.js';
import { describeDatabaseError, FenceLostError } from '../../store/errors.js';
import { InvalidPayloadError, NotFoundError } from '../../provider/errors.js';
import { parseInventoryBlock, parseStorageBooking } from '../../provider/schemas/pms.js';
import { IdlePause } from '../../util/wait-list.js';
import type { Trx } from '../../store/types.js';
import type { InventoryBlockRows, StorageBookingRows } from '../../store/schema.js';
import type { SyncContext } from '../runtime/context.js';
import { fetchRetryDelayMs } from '../runtime/fetch-drain.js';
import { classify } from '../runtime/failures.js';
import { fetchPmsReservation, PMS_PRIORITY, writePmsReservation } from './pms-reservations.js';
import type { EngineMode, QueueDrain, QueueStream } from './types.js';
import { idTextOf } from '../../provider/schemas/primitives.js';

const CONCURRENCY = 4;
/** The event types the provider documents; metrics and status count any other as `other`. */
export const KNOWN_EVENT_TYPES = [
  'webpms:create_booking',
  'webpms:cancel_booking',
  'webpms:change_room',
  'webpms:add_room_group_booking',
  'webpms:delete_room_group_booking',
  'webpms:check_in',
  'webpms:check_out',
  'webpms:cancel_check_in',
  'webpms:cancel_check_out',
  'webpms:change_check_in_datetime',
  'webpms:change_check_out_datetime',
  'pms_integration_storage:booking_changed',
  'pms_integration_storage:inventory_changed',
  'pms_integration_storage:inventory_block_changed',
] as const;
const knownEventTypes: ReadonlySet<string> = new Set(KNOWN_EVENT_TYPES);

/** An event type as a metric label: a known type, or `other`. */
export function eventTypeLabel(eventType: string): string {
  return knownEventTypes.has(eventType) ? eventType : 'other';
}

/** webpms events that may change the booking of the booking list (its details are then fetched first in line). */
const BOOKING_EVENTS = new Set([
  'webpms:create_booking',
  'webpms:cancel_booking',
  'webpms:add_room_group_booking',
  'webpms:delete_room_group_booking',
  'webpms:change_check_in_datetime',
  'webpms:change_check_out_datetime',
]);
/** A 404 is asked once more after this (the event may come before the data is readable), behind the backfill. */
const NOT_FOUND_RETRY_MS = 2_000;
/** How often the first connection deletes events past webhooks.retainEventsDays, and how many per transaction. */
const PURGE_EVERY_MS = 3_600_000;
const PURGE_BATCH = 5_000;

export type EventTarget =
  | { kind: 'pmsReservation' | 'storageBooking' | 'inventoryBlock'; propertyId: string | null; key: string | null }
  | { kind: 'other'; propertyId: string | null; key: null };

/** A payload field by any of `names`, compared without case (the documents give PascalCase for webpms events only). */
function field(payload: Record<string, unknown> | null, names: string[]): string | null {
  if (!payload) return null;
  const wanted = new Set(names.map((n) => n.toLowerCase()));
  for (const [k, v] of Object.entries(payload)) {
    const text = wanted.has(k.toLowerCase()) ? idTextOf(v) : null;
    if (text !== null) return text;
  }
  return null;
}

/** What an event is about: its kind, property and key, from the type and the payload. */
export function eventTarget(eventType: string, payload: Record<string, unknown> | null): EventTarget {
  const propertyId = field(payload, ['PropertyId', 'propertyId']);
  if (eventType.startsWith('webpms:')) return { kind: 'pmsReservation', propertyId, key: field(payload, ['BookingNumber', 'Number']) };
  if (eventType === 'pms_integration_storage:booking_changed') return { kind: 'storageBooking', propertyId, key: field(payload, ['BookingId', 'Id']) };
  if (eventType === 'pms_integration_storage:inventory_block_changed')
    return { kind: 'inventoryBlock', propertyId, key: field(payload, ['InventoryBlockId', 'BlockId', 'Id']) };
  return { kind: 'other', propertyId, key: null };
}

/** Events for a thing refreshed less than this ago wait until then, and share one refresh. */
const COALESCE_MS = 2_000;
/** Things whose last refresh time is remembered (the oldest are forgotten first). */
const RECENT_FETCHES_KEPT = 10_000;

/**
 * When each thing was last refreshed for an event. The mirror's copy says when it was read
 * only to the second (the provider's Date header), so events of a burst created in that
 * second are not seen as covered by it: rather than a refresh each, they wait until
 * COALESCE_MS after the last one and share the next.
 */
class RecentFetches {
  private readonly at = new Map<string, number>();

  /** 0 when `key` may be refreshed now, or how long to wait. */
  waitFor(key: string, now: number): number {
    const last = this.at.get(key);
    return last !== undefined && now - last < COALESCE_MS ? last + COALESCE_MS - now : 0;
  }

  fetched(key: string, now: number): void {
    this.at.delete(key);
    this.at.set(key, now);
    if (this.at.size > RECENT_FETCHES_KEPT) this.at.delete(this.at.keys().next().value!);
  }
}

/**
 * The pace of event-driven refreshes, per property: a token bucket holding `burst` refreshes,
 * refilled at `perMinute`. take() spends one and answers 0, or answers how long to wait.
 */
export class EventPace {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(private readonly limits: { burst: number; perMinute: number }) {}

  take(propertyId: string, now: number): number {
    const { burst, perMinute } = this.limits;
    const b = this.buckets.get(propertyId) ?? { tokens: burst, at: now };
    b.tokens = Math.min(burst, b.tokens + ((now - b.at) * perMinute) / 60_000);
    b.at = now;
    this.buckets.set(propertyId, b);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - b.tokens) * 60_000) / perMinute);
  }
}

class EventProcessor implements QueueDrain {
  private readonly idle = new IdlePause();
  private readonly log;
  private readonly pace: EventPace;
  private readonly recentFetches = new RecentFetches();
  private lastPurgeAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly ctx: SyncContext) {
    this.log = ctx.logger.child({ component: 'events' });
    this.pace = new EventPace(ctx.config.webhooks.eventFetchesPerProperty);
  }

  wake(): void {
    this.idle.wake();
  }

  async run(signal: AbortSignal, opts: { mode: EngineMode; upstreamDone: () => boolean; onFatal: (err: Error) => void }): Promise<void> {
    const { ctx } = this;
    while (!signal.aborted) {
      try {
        await ctx.database.waitUntilAvailable(signal);
        await ctx.fence.waitUntilHeld(signal);
        if (ctx.handlesUnroutedEvents()) await this.purgeNowAndThen(signal);
        const due = await nextDueEvents(ctx.db, 64, {
          connection: ctx.connection,
          unrouted: ctx.handlesUnroutedEvents(),
          unfollowedAfterMs: ctx.config.webhooks.unfollowedAfterMs,
        });
        if (due.length === 0) {
          // sync --once: the properties' first pages create the cursors that route events here.
          if (opts.mode === 'once') {
            if (opts.upstreamDone()) return;
            await this.idle.pause(signal, 100);
            continue;
          }
          // The daemon looks again when events are stored (wake: the receiver of this process,
          // or the replica's heartbeat finding events another replica received) or when a
          // deferred one falls due, and not before: no events, no queries.
          const route = { connection: ctx.connection, unrouted: ctx.handlesUnroutedEvents(), unfollowedAfterMs: ctx.config.webhooks.unfollowedAfterMs };
          // (The purge of old events, done by one connection, is due now and then too.)
          const untilPurge = route.unrouted ? this.lastPurgeAt + PURGE_EVERY_MS - ctx.clock.now() : Infinity;
          await this.idle.pause(signal, Math.min((await msUntilNextEvent(ctx.db, route)) ?? Infinity, untilPurge));
          continue;
        }
        // Events naming the same thing (a check-in sends check_in and change_room together)
        // share one refresh.
        const groups = new Map<string, StoredEvent[]>();
        for (const e of due) {
          const t = eventTarget(e.eventType, e.payload);
          const key = t.kind === 'other' || t.propertyId === null || t.key === null ? `event:${e.eventId}` : `${t.kind}:${t.propertyId}:${t.key}`;
          groups.set(key, [...(groups.get(key) ?? []), e]);
        }
        const work = [...groups.values()];
        let next = 0;
        const worker = async () => {
          while (next < work.length && !signal.aborted) await this.process(work[next++]!, signal, opts.onFatal);
        };
        await Promise.all(Array.from({ length: CONCURRENCY }, worker));
      } catch (err) {
        const verdict = classify(err, signal, ctx);
        if (verdict.kind === 'stopped') break;
        if (verdict.kind === 'database' || verdict.kind === 'lease') continue;
        if (verdict.kind === 'fatal') return opts.onFatal(verdict.error);
        this.log.error({ err: describeDatabaseError(err) }, 'could not read the change events: retrying in 5 s');
        await ctx.clock.sleep(5_000, signal).catch(() => undefined);
      }
    }
  }

  /** Every PURGE_EVERY_MS: events that are no longer pending, received more than webhooks.retainEventsDays ago, are deleted. */
  private async purgeNowAndThen(signal: AbortSignal): Promise<void> {
    const { ctx } = this;
    if (ctx.clock.now() - this.lastPurgeAt < PURGE_EVERY_MS) return;
    this.lastPurgeAt = ctx.clock.now();
    let purged = 0;
    for (;;) {
      const n = await purgeWebhookEvents(ctx.db, ctx.config.webhooks.retainEventsDays, PURGE_BATCH);
      purged += n;
      if (n < PURGE_BATCH || signal.aborted) break;
    }
    if (purged > 0) this.log.info({ purged, retainEventsDays: ctx.config.webhooks.retainEventsDays }, 'deleted change events past their retention');
  }

  /**
   * Events that name the same thing: one refresh, and their end state in its transaction;
   * failures recorded on each event.
   */
  private async process(events: StoredEvent[], signal: AbortSignal, onFatal: (err: Error) => void): Promise<void> {
    const { ctx } = this;
    const first = events[0]!;
    const target = eventTarget(first.eventType, first.payload);
    const finishAll = (trx: Trx, state: 'processed' | 'ignored' | 'failed', error?: string) =>
      Promise.all(events.map((e) => finishEvent(trx, e.eventId, state, error)));
    try {
      if (target.kind === 'other') {
        await ctx.write((trx) => finishAll(trx, 'ignored', `event type ${first.eventType.slice(0, 200)} is kept but not acted on`));
        ctx.counters.webhookEventsIgnored += events.length;
        return;
      }
      if (target.propertyId === null || target.key === null) {
        await ctx.write((trx) =>
          finishAll(trx, 'failed', `the payload does not name the property and the ${target.kind === 'pmsReservation' ? 'booking number' : 'id'} to refresh`),
        );
        ctx.counters.webhookEventsFailed += events.length;
        return;
      }
      const propertyId = target.propertyId;
      const key = target.key;
      if (!first.followed) {
        await ctx.write((trx) => finishAll(trx, 'ignored', 'no connection follows this property: kept, not fetched'));
        ctx.counters.webhookEventsUnfollowed += events.length;
        return;
      }
      // A change of a booking: the property's booking list is polled at the floor again, not
      // after its quiet interval (list-scheduler.ts).
      if (target.kind === 'pmsReservation' && events.some((e) => BOOKING_EVENTS.has(e.eventType))) ctx.listScheduler.changed(propertyId);
      const readAt = await mirroredReadAt(ctx.db, target.kind, propertyId, key);
      if (readAt !== null && events.every((e) => e.creationTime !== null && e.creationTime <= readAt)) {
        await ctx.write((trx) =>
          finishAll(trx, 'processed', `the mirror's copy was read after the event was created (${readAt.toISOString()}): nothing to fetch`),
        );
        ctx.counters.webhookEventsCovered += events.length;
        return;
      }
      const thing = `${target.kind}:${propertyId}:${key}`;
      const now = ctx.clock.now();
      const wait = this.recentFetches.waitFor(thing, now) || this.pace.take(propertyId, now);
      if (wait > 0) {
        await ctx.write((trx) =>
          deferEvents(
            trx,
            events.map((e) => e.eventId),
            wait,
          ),
        );
        ctx.counters.webhookEventsDeferred += events.length;
        return;
      }
      this.recentFetches.fetched(thing, now);
      // A retry (after a 404 or a failure) goes behind the backfill: only a first try is urgent.
      const priority = events.some((e) => e.attempts > 0) ? PMS_PRIORITY.backfill : PMS_PRIORITY.event;
      if (target.kind === 'pmsReservation') {
        // The PMS reservation only when the connection may read the PMS API (the booking's details are queued either way).
        const pmsReadable = ctx.config.pms.enabled && ctx.client.currentAccess.grants('pms');
        const fetched = pmsReadable ? await fetchPmsReservation(ctx, propertyId, key, signal, priority) : undefined;
        // Only a change of the booking itself is worth its details call (4,000 an hour): a
        // check-in or a room change does not change the booking of the booking list.
        const bookingChanged = events.some((e) => BOOKING_EVENTS.has(e.eventType));
        const detailsQueued = await ctx.write(async (trx) => {
          if (fetched) await writePmsReservation(trx, fetched);
          const queued = bookingChanged ? await enqueueKnownBookingDetails(trx, propertyId, key) : false;
          await finishAll(trx, 'processed');
          return queued;
        });
        if (detailsQueued) ctx.events.emit('enqueued');
      } else if (!ctx.client.currentAccess.grants('pmsIntegrationStorage')) {
        await ctx.write((trx) => finishAll(trx, 'ignored', ctx.client.currentAccess.whyNot('pmsIntegrationStorage')));
        ctx.counters.webhookEventsIgnored += events.length;
        return;
      } else {
        const storage = target.kind === 'storageBooking';
        const path = storage
          ? `/api/pms-integration-storage/v1/properties/${encodeURIComponent(propertyId)}/bookings/${encodeURIComponent(key)}`
          : `/api/pms-integration-storage/v1/properties/${encodeURIComponent(propertyId)}/inventories/blocks/${encodeURIComponent(key)}`;
        const res = await ctx.client.requestJson('integrationStorage', 'provider', path, {}, signal, priority);
        // Parsed before the transaction: a payload whose typed parts do not parse is quarantined (failed below).
        const rows = storage ? this.storageRows(propertyId, key, res, path) : this.blockRows(propertyId, key, res, path);
        await ctx.write(async (trx) => {
          if (rows.kind === 'booking') {
            // A storage booking as the erasure list has it now (an inventory block names nobody).
            const [toWrite] = await rowsAfterErasures(trx, [rows.erasable]);
            await saveStorageBooking(trx, toWrite!);
          } else await saveInventoryBlock(trx, rows.rows);
          await finishAll(trx, 'processed');
        });
      }
      ctx.counters.webhookEventsProcessed += events.length;
      for (const e of events)
        if (e.creationTime) ctx.events.emit('eventProcessed', eventTypeLabel(e.eventType), (ctx.clock.now() - e.creationTime.getTime()) / 1000);
    } catch (err) {
      if (signal.aborted) return;
      for (const e of events) await this.failed(e, err, onFatal);
    }
  }

  private storageRows(
    propertyId: string,
    key: string,
    res: { body: unknown; rawBody: string; status: number; fetchedAt: Date },
    path: string,
  ): { kind: 'booking'; erasable: Erasable<StorageBookingRows> } {
    const parsed = parseStorageBooking(res.body);
    if (!parsed.ok)
      throw new InvalidPayloadError({ rawBody: res.rawBody, reason: parsed.reason, propertyId, bookingNumber: key }, { status: res.status, path });
    const received = (res.body as { booking: unknown }).booking;
    return { kind: 'booking', erasable: erasableStorageBooking(propertyId, parsed.value, received, res.fetchedAt, this.ctx.config.pms.personalData) };
  }

  private blockRows(
    propertyId: string,
    key: string,
    res: { body: unknown; rawBody: string; status: number; fetchedAt: Date },
    path: string,
  ): { kind: 'block'; rows: InventoryBlockRows } {
    const parsed = parseInventoryBlock(res.body);
    if (!parsed.ok)
      throw new InvalidPayloadError({ rawBody: res.rawBody, reason: parsed.reason, propertyId, bookingNumber: key }, { status: res.status, path });
    return { kind: 'block', rows: inventoryBlockToRows(propertyId, parsed.value, (res.body as { inventoryBlock: unknown }).inventoryBlock, res.fetchedAt) };
  }

  private async failed(e: StoredEvent, err: unknown, onFatal: (err: Error) => void): Promise<void> {
    const { ctx } = this;
    const verdict = classify(err, new AbortController().signal, ctx);
    if (verdict.kind === 'database' || verdict.kind === 'lease') return; // stays pending: done again when they are back
    if (verdict.kind === 'fatal' || verdict.kind === 'continueTokenLost') return onFatal(verdict.error);
    const write = async (fn: Parameters<SyncContext['write']>[0]) => {
      try {
        await ctx.write(fn);
      } catch (e2) {
        if (!(e2 instanceof FenceLostError) && !ctx.database.report(e2))
          this.log.error({ err: describeDatabaseError(e2) }, 'could not record the outcome of an event');
      }
    };
    if (err instanceof NotFoundError && e.attempts === 0) {
      await write((trx) => eventAgainLater(trx, e.eventId, NOT_FOUND_RETRY_MS, err.message));
      return;
    }
    if (err instanceof InvalidPayloadError) {
      ctx.counters.quarantined += 1;
      await write(async (trx) => {
        await quarantineGuestPayload(
          trx,
          {
            stream: streamNames.webhookEvents,
            propertyId: err.propertyId ?? e.propertyId,
            entityKey: err.bookingNumber ?? e.entityKey,
            reason: err.reason,
            rawBody: err.rawBody,
          },
          ctx.config.pms.personalData,
        );
        await finishEvent(trx, e.eventId, 'failed', err.reason);
      });
      ctx.counters.webhookEventsFailed += 1;
      return;
    }
    if (verdict.kind === 'permanent' || err instanceof NotFoundError) {
      const reason =
        err instanceof NotFoundError
          ? `${err.message}, twice: not asked again (polling finds it if it exists)`
          : verdict.kind === 'permanent'
            ? verdict.reason
            : String(err);
      this.log.warn(
        { eventId: e.eventId, eventType: eventTypeLabel(e.eventType), reason },
        'change event could not be acted on: failed (polling still covers it)',
      );
      await write((trx) => finishEvent(trx, e.eventId, 'failed', reason));
      ctx.counters.webhookEventsFailed += 1;
      return;
    }
    await write((trx) => eventAgainLater(trx, e.eventId, fetchRetryDelayMs(e.attempts), verdict.kind === 'transient' ? verdict.reason : String(err)));
  }
}

/** The change events, registered with the engine as a queue. */
export const webhookEventsStream: QueueStream = {
  name: streamNames.webhookEvents,
  enabled: () => true,
  create: (ctx) => new EventProcessor(ctx),
};
