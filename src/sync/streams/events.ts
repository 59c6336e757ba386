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
 * - `pms_integration_storage:inventory_block_changed`: the inventory block, with its days;
 * - `pms_integration_storage:inventory_changed`: the property's inventory per room type and
 *   night (room-inventory.ts), at most once a minute per property.
 * Events of one claim that name the same thing share one refresh.
 * An event is marked processed in the transaction that writes its refresh, so an event whose
 * refresh did not commit (crash, stop, outage) is processed after a restart. Other types are
 * kept and counted as `ignored`; a refresh that cannot succeed is `failed` with its reason.
 * Events never replace polling: what a lost event announced, the next search finds.
 *
 * Nothing but these events announces a storage booking or a block (no list of them exists), so
 * such an event is never given up while the mirror lacks what it names: when it cannot be acted
 * on now (the storage API not granted, a refusal, an id no property has) it is `waiting`, and
 * looked at again later (at once when the area is granted at the next look).
 *
 * The storage events carry the id to fetch and, as documented, no property. The property is the
 * one of the event's connection (its delivery URL, webhooks.path/<connection>) whose mirror
 * already holds the id, else the connection's only property, else the first of its properties
 * that does not answer 404 when asked in turn (placeStorageEvents): at most one request per
 * property of the connection per unknown id, behind the backfill and paced per connection; the
 * answer is then in the mirror, so later events of that id cost nothing to place.
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
  followedPropertyIds,
  mirroredReadAt,
  msUntilNextEvent,
  nextDueEvents,
  placeEvents,
  propertiesHolding,
  purgeWebhookEvents,
  unplacedWaitUntil,
  waitEvents,
  type StoredEvent,
} from '../../store/repositories/webhook-events.js';
import { quarantineGuestPayload } from '../../privacy/guest-writes.js';
import { describeDatabaseError, FenceLostError } from '../../store/errors.js';
import { InvalidPayloadError, NotFoundError, RequestRejectedError } from '../../provider/errors.js';
import { apiAreas } from '../../provider/api-access.js';
import { parseInventoryBlock, parseStorageBooking } from '../../provider/schemas/pms.js';
import { IdlePause } from '../../util/wait-list.js';
import type { Trx } from '../../store/types.js';
import type { InventoryBlockRows, StorageBookingRows } from '../../store/schema.js';
import type { SyncContext } from '../runtime/context.js';
import { fetchRetryDelayMs, parkedRetryDelayMs } from '../runtime/fetch-drain.js';
import { classify } from '../runtime/failures.js';
import { fetchPmsReservation, PMS_PRIORITY, writePmsReservation } from './pms-reservations.js';
import { refreshRoomTypeInventory } from './room-inventory.js';
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
/** Properties named in a log line or a reason: a connection may have hundreds. */
const NAMED_PROPERTIES_MAX = 10;
/** Ids the provider names are opaque text; anything longer, or not printable, is not an id. */
const ID_TEXT = /^[\x21-\x7e]{1,100}$/;
/** How often the first connection deletes events past webhooks.retainEventsDays, and how many per transaction. */
const PURGE_EVERY_MS = 3_600_000;
const PURGE_BATCH = 5_000;

export type EventTarget =
  | { kind: 'pmsReservation' | 'storageBooking' | 'inventoryBlock'; propertyId: string | null; key: string | null }
  | { kind: 'roomTypeInventory' | 'other'; propertyId: string | null; key: null };

/** The targets that are the integration storage's, whose area an event needs granted. */
type StorageKind = 'storageBooking' | 'inventoryBlock' | 'roomTypeInventory';
const isStorageKind = (kind: EventTarget['kind']): kind is StorageKind =>
  kind === 'storageBooking' || kind === 'inventoryBlock' || kind === 'roomTypeInventory';

/**
 * A payload field by any of `names`, compared without case (the documents give PascalCase for
 * webpms events, camelCase for the storage ids); a value that is no id (ID_TEXT) counts as absent.
 */
function field(payload: Record<string, unknown> | null, names: string[]): string | null {
  if (!payload) return null;
  const wanted = new Set(names.map((n) => n.toLowerCase()));
  for (const [k, v] of Object.entries(payload)) {
    const text = wanted.has(k.toLowerCase()) ? idTextOf(v) : null;
    if (text !== null && ID_TEXT.test(text)) return text;
  }
  return null;
}

/**
 * What a stored event is about: as its payload says, with the property staysync found for it
 * (placeStorageEvents) and the key stored at receipt.
 */
function targetOf(e: StoredEvent): EventTarget {
  const t = eventTarget(e.eventType, e.payload);
  const propertyId = e.propertyId ?? t.propertyId;
  if (t.kind === 'other' || t.kind === 'roomTypeInventory') return { kind: t.kind, propertyId, key: null };
  return { kind: t.kind, propertyId, key: e.entityKey ?? t.key };
}

/** What an event is about: its kind, property and key, from the type and the payload. */
export function eventTarget(eventType: string, payload: Record<string, unknown> | null): EventTarget {
  const propertyId = field(payload, ['PropertyId', 'propertyId']);
  if (eventType.startsWith('webpms:')) return { kind: 'pmsReservation', propertyId, key: field(payload, ['BookingNumber', 'Number']) };
  if (eventType === 'pms_integration_storage:booking_changed') return { kind: 'storageBooking', propertyId, key: field(payload, ['BookingId', 'Id']) };
  if (eventType === 'pms_integration_storage:inventory_block_changed')
    return { kind: 'inventoryBlock', propertyId, key: field(payload, ['InventoryBlockId', 'BlockId', 'Id']) };
  if (eventType === 'pms_integration_storage:inventory_changed') return { kind: 'roomTypeInventory', propertyId, key: null };
  return { kind: 'other', propertyId, key: null };
}

/** Events for a thing refreshed less than this ago wait until then, and share one refresh. */
const COALESCE_MS = 2_000;
/** The same for a property's inventory per room type: a year of nights is one request or two, and a busy hotel's inventory changes with every booking. */
const INVENTORY_COALESCE_MS = 60_000;
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
  waitFor(key: string, now: number, windowMs = COALESCE_MS): number {
    const last = this.at.get(key);
    return last !== undefined && now - last < windowMs ? last + windowMs - now : 0;
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

/** What names a thing to refresh, by kind, for the reason of an event that lacks it. */
const NAMED_ID = {
  pmsReservation: 'the booking number (BookingNumber)',
  storageBooking: 'the booking id (bookingId)',
  inventoryBlock: 'the inventory block id (inventoryBlockId)',
} as const;

/** A storage booking or block as read, ready to write. */
type StorageRows = { kind: 'booking'; erasable: Erasable<StorageBookingRows> } | { kind: 'block'; rows: InventoryBlockRows };

/**
 * Events that share one refresh: the same thing of the same property; while its property is
 * not known, the same id through the same connection (one search for all of them).
 */
function groupKey(e: StoredEvent): string {
  const t = targetOf(e);
  const place = t.propertyId ?? `?${e.connection ?? ''}`;
  if (t.kind === 'roomTypeInventory') return `${t.kind}:${place}`;
  if (t.kind === 'other' || t.key === null) return `event:${e.eventId}`;
  return `${t.kind}:${place}:${t.key}`;
}

/** Ends every event of a group. */
async function finishAll(trx: Trx, events: StoredEvent[], state: 'processed' | 'ignored' | 'failed', why?: string): Promise<void> {
  await Promise.all(events.map((e) => finishEvent(trx, e.eventId, state, why)));
}

class EventProcessor implements QueueDrain {
  private readonly idle = new IdlePause();
  /** The log said once that events came to a URL naming no connection while several are configured. */
  private saidUnnamed = false;
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
        for (const e of due) groups.set(groupKey(e), [...(groups.get(groupKey(e)) ?? []), e]);
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

  /** Every PURGE_EVERY_MS: events neither pending nor waiting, received more than webhooks.retainEventsDays ago, are deleted. */
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
    const target = targetOf(first);
    // The property the events are about, once known (a storage event's is found on the way): a failure is recorded with it.
    const where = { propertyId: target.propertyId };
    try {
      if (target.kind === 'other') {
        await this.finish(events, 'ignored', `event type ${first.eventType.slice(0, 200)} is kept but not acted on`);
        ctx.counters.webhookEventsIgnored += events.length;
        return;
      }
      if (target.kind === 'roomTypeInventory') return await this.inventoryChanged(events, target.propertyId, signal);
      // A webpms event is documented with its PropertyId; a storage event's property is found (placeStorageEvents).
      const missing =
        target.key === null ? NAMED_ID[target.kind] : target.kind === 'pmsReservation' && target.propertyId === null ? 'the property (PropertyId)' : null;
      if (missing !== null || target.key === null) {
        await this.finish(events, 'failed', `the payload does not name ${missing} to refresh`);
        ctx.counters.webhookEventsFailed += events.length;
        return;
      }
      if (target.propertyId !== null) return await this.refresh(events, { kind: target.kind, propertyId: target.propertyId, key: target.key }, signal, false);
      if (target.kind !== 'pmsReservation') await this.placeStorageEvents(events, target.kind, target.key, signal, where);
    } catch (err) {
      if (signal.aborted) return;
      for (const e of events) await this.failed(e, err, where.propertyId, onFatal);
    }
  }

  /** Ends every event of a group in one transaction. */
  private finish(events: StoredEvent[], state: 'processed' | 'ignored' | 'failed', why?: string): Promise<void> {
    return this.ctx.write(async (trx) => {
      await finishAll(trx, events, state, why);
    });
  }

  /** Events whose refresh waits its turn (a refresh shared, the pace): due again after `waitMs`, no attempt counted. */
  private async defer(events: StoredEvent[], waitMs: number): Promise<void> {
    await this.ctx.write((trx) =>
      deferEvents(
        trx,
        events.map((e) => e.eventId),
        waitMs,
      ),
    );
    this.ctx.counters.webhookEventsDeferred += events.length;
  }

  /** Keeps events whose target cannot be fetched now: `waiting`, looked at again after `delayMs` (`attempt`: one more try found nothing). */
  private async keep(events: StoredEvent[], delayMs: number, reason: string, attempt: boolean): Promise<void> {
    await this.ctx.write((trx) =>
      waitEvents(
        trx,
        events.map((e) => e.eventId),
        delayMs,
        reason,
        attempt,
      ),
    );
    this.ctx.counters.webhookEventsWaiting += events.length;
  }

  /** The integration storage is not granted now: kept, and looked at again after sync.failingRecheckMs (a new token may grant it). */
  private keepUntilGranted(events: StoredEvent[]): Promise<void> {
    return this.keep(events, this.ctx.config.sync.failingRecheckMs, this.ctx.client.currentAccess.whyNot('pmsIntegrationStorage'), false);
  }

  /** How long a kept event waits before its next look: a moment after the first miss (the data may not be readable yet), then the parked rows' backoff. */
  private keptDelayMs(events: StoredEvent[]): number {
    const attempts = Math.max(...events.map((e) => e.attempts));
    return attempts === 0 ? NOT_FOUND_RETRY_MS : parkedRetryDelayMs(attempts - 1, this.ctx.config.sync.refetchParkedAfterMs);
  }

  /** Counts processed events and tells their latency. */
  private processed(events: StoredEvent[]): void {
    const { ctx } = this;
    ctx.counters.webhookEventsProcessed += events.length;
    for (const e of events)
      if (e.creationTime) ctx.events.emit('eventProcessed', eventTypeLabel(e.eventType), (ctx.clock.now() - e.creationTime.getTime()) / 1000);
  }

  /**
   * The refresh of what events of a known property name: a PMS reservation, a storage booking or
   * block. `place`: the property was found by staysync (placeStorageEvents), and is written into
   * the events with their end.
   */
  private async refresh(
    events: StoredEvent[],
    t: { kind: 'pmsReservation' | 'storageBooking' | 'inventoryBlock'; propertyId: string; key: string },
    signal: AbortSignal,
    place: boolean,
  ): Promise<void> {
    const { ctx } = this;
    const first = events[0]!;
    const { propertyId, key } = t;
    const end = (trx: Trx, state: 'processed' | 'ignored', why?: string) => this.ended(trx, events, state, why, place ? propertyId : null);
    if (!first.followed) {
      await ctx.write((trx) => end(trx, 'ignored', 'no connection follows this property: kept, not fetched'));
      ctx.counters.webhookEventsUnfollowed += events.length;
      return;
    }
    // A change of a booking: the property's booking list is polled at the floor again, not
    // after its quiet interval (list-scheduler.ts).
    if (t.kind === 'pmsReservation' && events.some((e) => BOOKING_EVENTS.has(e.eventType))) ctx.listScheduler.changed(propertyId);
    const readAt = await mirroredReadAt(ctx.db, t.kind, propertyId, key);
    if (readAt !== null && events.every((e) => e.creationTime !== null && e.creationTime <= readAt)) {
      await ctx.write((trx) => end(trx, 'processed', `the mirror's copy was read after the event was created (${readAt.toISOString()}): nothing to fetch`));
      ctx.counters.webhookEventsCovered += events.length;
      return;
    }
    const thing = `${t.kind}:${propertyId}:${key}`;
    const now = ctx.clock.now();
    const wait = this.recentFetches.waitFor(thing, now) || this.pace.take(propertyId, now);
    if (wait > 0) return this.defer(events, wait);
    // A retry (after a 404 or a failure) goes behind the backfill: only a first try is urgent.
    const priority = events.some((e) => e.attempts > 0) ? PMS_PRIORITY.backfill : PMS_PRIORITY.event;
    if (t.kind === 'pmsReservation') {
      this.recentFetches.fetched(thing, now);
      // The PMS reservation only when the connection may read the PMS API (the booking's details are queued either way).
      const pmsReadable = ctx.config.pms.enabled && ctx.client.currentAccess.grants('pms');
      const fetched = pmsReadable ? await fetchPmsReservation(ctx, propertyId, key, signal, priority) : undefined;
      // Only a change of the booking itself is worth its details call (4,000 an hour): a
      // check-in or a room change does not change the booking of the booking list.
      const bookingChanged = events.some((e) => BOOKING_EVENTS.has(e.eventType));
      const detailsQueued = await ctx.write(async (trx) => {
        if (fetched) await writePmsReservation(trx, fetched);
        const queued = bookingChanged ? await enqueueKnownBookingDetails(trx, propertyId, key) : false;
        await end(trx, 'processed');
        return queued;
      });
      if (detailsQueued) ctx.events.emit('enqueued');
    } else {
      if (!ctx.client.currentAccess.grants('pmsIntegrationStorage')) return this.keepUntilGranted(events);
      this.recentFetches.fetched(thing, now);
      const rows = await this.fetchStorage(t.kind, propertyId, key, signal, priority);
      await ctx.write(async (trx) => {
        await this.saveStorage(trx, rows);
        await end(trx, 'processed');
      });
    }
    this.processed(events);
  }

  /** The end of events, with the property staysync found for them (`placedAt`) written in the same transaction. */
  private async ended(trx: Trx, events: StoredEvent[], state: 'processed' | 'ignored', why: string | undefined, placedAt: string | null): Promise<void> {
    if (placedAt !== null)
      await placeEvents(
        trx,
        events.map((e) => e.eventId),
        placedAt,
        false,
      );
    await finishAll(trx, events, state, why);
  }

  /**
   * Storage events that name no property: the property is found among those of the event's
   * connection (the file comment says in which order), then refreshed as any other. An id no
   * property has is kept (waiting) and asked for again later; events of that id that come
   * meanwhile wait with it rather than ask again.
   */
  private async placeStorageEvents(
    events: StoredEvent[],
    kind: 'storageBooking' | 'inventoryBlock',
    key: string,
    signal: AbortSignal,
    where: { propertyId: string | null },
  ): Promise<void> {
    const { ctx } = this;
    const first = events[0]!;
    const ids = events.map((e) => e.eventId);
    const base = ctx.config.webhooks.path;
    if (first.connection === null) {
      // The unrouted connection's: the mirror may know the id already, which places it for free.
      const holders = await propertiesHolding(ctx.db, kind, key, null);
      if (holders.length === 1) {
        // Pending again with its property: the connection that follows it takes it.
        await ctx.write((trx) => placeEvents(trx, ids, holders[0]!, true));
        return;
      }
      if (!this.saidUnnamed) {
        this.saidUnnamed = true;
        this.log.warn(
          { path: base },
          `change events name no property and came to ${base}, which names no API connection while several are configured: kept (waiting); give each connection its own delivery URL, ${base}/<connection>`,
        );
      }
      await this.keep(
        events,
        this.keptDelayMs(events),
        `the event names no property, and its delivery URL (${base}) no API connection while several are configured: give each connection its own delivery URL, ${base}/<connection>`,
        true,
      );
      return;
    }
    if (!first.followed) {
      await this.keep(events, this.keptDelayMs(events), `API connection ${first.connection} follows no property yet: the event waits for it`, true);
      return;
    }
    if (!ctx.client.currentAccess.grants('pmsIntegrationStorage')) return this.keepUntilGranted(events);
    const properties = await followedPropertyIds(ctx.db, ctx.connection);
    const holders = await propertiesHolding(ctx.db, kind, key, properties);
    const known = holders.length === 1 ? holders[0] : properties.length === 1 ? properties[0] : undefined;
    if (known !== undefined) {
      where.propertyId = known;
      return this.refresh(events, { kind, propertyId: known, key }, signal, true);
    }
    const joined = await unplacedWaitUntil(ctx.db, ctx.connection, first.eventType, key, ids);
    if (joined) {
      await this.keep(events, joined.until.getTime() - ctx.clock.now(), joined.reason, false);
      return;
    }
    // One search per connection at the pace of one property's events: a flood of unknown ids
    // cannot spend the storage budget.
    const now = ctx.clock.now();
    const wait = this.pace.take(`search:${ctx.connection}`, now);
    if (wait > 0) return this.defer(events, wait);
    // Behind the backfill: a search is worth less than a first refresh of a known thing.
    for (const propertyId of properties) {
      if (signal.aborted) return;
      ctx.counters.webhookPropertyLookups += 1;
      let rows: StorageRows;
      try {
        rows = await this.fetchStorage(kind, propertyId, key, signal, PMS_PRIORITY.backfill);
      } catch (err) {
        if (err instanceof NotFoundError) continue;
        throw err;
      }
      where.propertyId = propertyId;
      this.recentFetches.fetched(`${kind}:${propertyId}:${key}`, now);
      await ctx.write(async (trx) => {
        await this.saveStorage(trx, rows);
        await this.ended(trx, events, 'processed', undefined, propertyId);
      });
      this.processed(events);
      return;
    }
    const delay = this.keptDelayMs(events);
    const named = properties.slice(0, NAMED_PROPERTIES_MAX).join(', ') + (properties.length > NAMED_PROPERTIES_MAX ? ', …' : '');
    this.log.warn(
      { eventType: eventTypeLabel(first.eventType), id: key, connection: ctx.connection, properties: properties.length, againInMs: delay },
      'change event names an integration-storage id that no property of its connection has: kept (waiting), asked again later',
    );
    await this.keep(
      events,
      delay,
      `no property of API connection ${ctx.connection} has ${kind === 'storageBooking' ? 'integration-storage booking' : 'inventory block'} ${key} (asked ${named}: 404 each): asked again later`,
      true,
    );
  }

  /**
   * `pms_integration_storage:inventory_changed`: the inventory per room type of the event's
   * property, or of every property of its connection when it names none (the documents give no
   * payload for it); at most once per INVENTORY_COALESCE_MS per property.
   */
  private async inventoryChanged(events: StoredEvent[], propertyId: string | null, signal: AbortSignal): Promise<void> {
    const { ctx } = this;
    const first = events[0]!;
    if (!ctx.config.roomInventory.enabled) {
      await this.finish(events, 'ignored', 'roomInventory.enabled is false: the inventory per room type is not mirrored');
      ctx.counters.webhookEventsIgnored += events.length;
      return;
    }
    if (!first.followed) {
      await this.finish(events, 'ignored', 'no connection follows this property: kept, not fetched');
      ctx.counters.webhookEventsUnfollowed += events.length;
      return;
    }
    const properties = propertyId !== null ? [propertyId] : first.connection !== null ? await followedPropertyIds(ctx.db, ctx.connection) : [];
    if (properties.length === 0) {
      await this.finish(
        events,
        'ignored',
        `the event names no property, and its delivery URL (${ctx.config.webhooks.path}) no API connection: the scheduled refresh (roomInventory.refreshCron) covers it`,
      );
      ctx.counters.webhookEventsIgnored += events.length;
      return;
    }
    if (!ctx.client.currentAccess.grants('pmsIntegrationStorage')) return this.keepUntilGranted(events);
    const now = ctx.clock.now();
    const thing = (p: string) => `roomTypeInventory:${p}`;
    const wait =
      Math.max(0, ...properties.map((p) => this.recentFetches.waitFor(thing(p), now, INVENTORY_COALESCE_MS))) ||
      (properties.length === 1 ? this.pace.take(properties[0]!, now) : 0);
    if (wait > 0) return this.defer(events, wait);
    for (const p of properties) this.recentFetches.fetched(thing(p), now);
    for (const p of properties) await refreshRoomTypeInventory(ctx, p, signal);
    await this.finish(events, 'processed');
    this.processed(events);
  }

  /** A storage booking or block read at the provider, parsed before any transaction (a payload that does not parse is quarantined by `failed`). */
  private async fetchStorage(
    kind: 'storageBooking' | 'inventoryBlock',
    propertyId: string,
    key: string,
    signal: AbortSignal,
    priority: number,
  ): Promise<StorageRows> {
    const storage = kind === 'storageBooking';
    const path = storage
      ? `/api/pms-integration-storage/v1/properties/${encodeURIComponent(propertyId)}/bookings/${encodeURIComponent(key)}`
      : `/api/pms-integration-storage/v1/properties/${encodeURIComponent(propertyId)}/inventories/blocks/${encodeURIComponent(key)}`;
    const res = await this.ctx.client.requestJson('integrationStorage', 'provider', path, {}, signal, priority);
    return storage ? this.storageRows(propertyId, key, res, path) : this.blockRows(propertyId, key, res, path);
  }

  private async saveStorage(trx: Trx, rows: StorageRows): Promise<void> {
    if (rows.kind === 'booking') {
      // A storage booking as the erasure list has it now (an inventory block names nobody).
      const [toWrite] = await rowsAfterErasures(trx, [rows.erasable]);
      await saveStorageBooking(trx, toWrite!);
    } else await saveInventoryBlock(trx, rows.rows);
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

  /** `propertyId`: the property the event is about when known (a storage event's may have been found on the way). */
  private async failed(e: StoredEvent, err: unknown, propertyId: string | null, onFatal: (err: Error) => void): Promise<void> {
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
    const target = targetOf(e);
    // A 403 of the integration storage: the connection may lack its API. Asked again after
    // sync.failingRecheckMs (a new token may grant it), not given up.
    const refused = verdict.kind === 'notGranted' ? verdict.reason : err instanceof RequestRejectedError && err.status === 403 ? err.message : undefined;
    if (refused !== undefined && isStorageKind(target.kind)) {
      const reason = `${refused}: the API connection may lack the ${apiAreas.pmsIntegrationStorage.title} (extranet, Property settings > API connections > Public APIs); asked again later`;
      this.log.warn(
        { eventId: e.eventId, eventType: eventTypeLabel(e.eventType), reason, againInMs: ctx.config.sync.failingRecheckMs },
        'change event could not be acted on, and the mirror lacks what it announces: kept (waiting), asked again later',
      );
      await write((trx) => waitEvents(trx, [e.eventId], ctx.config.sync.failingRecheckMs, reason, false));
      ctx.counters.webhookEventsWaiting += 1;
      return;
    }
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
      const reason = verdict.kind === 'permanent' ? verdict.reason : String(err);
      // Nothing else announces a storage booking or a block: while the mirror lacks it, the event is not given up.
      const announced = target.kind === 'storageBooking' || target.kind === 'inventoryBlock' ? target : undefined;
      if (announced && (propertyId === null || announced.key === null || (await mirroredReadAt(ctx.db, announced.kind, propertyId, announced.key)) === null)) {
        const delay = this.keptDelayMs([e]);
        this.log.warn(
          { eventId: e.eventId, eventType: eventTypeLabel(e.eventType), reason, againInMs: delay },
          'change event could not be acted on, and the mirror lacks what it announces: kept (waiting), asked again later',
        );
        await write((trx) => waitEvents(trx, [e.eventId], delay, `${reason}: kept until the mirror has it, asked again later`, true));
        ctx.counters.webhookEventsWaiting += 1;
        return;
      }
      const why =
        err instanceof NotFoundError
          ? `${err.message}, twice: not asked again (${announced ? 'the mirror keeps its copy' : 'polling finds it if it exists'})`
          : reason;
      this.log.warn(
        { eventId: e.eventId, eventType: eventTypeLabel(e.eventType), reason: why },
        'change event could not be acted on: failed (polling still covers it)',
      );
      await write((trx) => finishEvent(trx, e.eventId, 'failed', why));
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
