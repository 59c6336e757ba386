/**
 * The provider's change events: processing what the webhook receiver stored in webhook_events.
 *
 * An event says "something changed" and names it; the refresh it triggers runs promptly and
 * ahead of backfill work (budget priority 0):
 * - `webpms:*` (payload BookingNumber, PropertyId): the PMS reservation is fetched and written;
 *   for an event that may change the booking itself (created, cancelled, rooms added or
 *   removed, arrival or departure moved), the booking's details are enqueued first in line
 *   when the booking list knows the booking;
 * - `pms_integration_storage:booking_changed`: the integration-storage booking;
 * - `pms_integration_storage:inventory_block_changed`: the inventory block.
 * Events of one claim that name the same thing share one refresh.
 * An event is marked processed in the transaction that writes its refresh, so an event whose
 * refresh did not commit (crash, stop, outage) is processed after a restart. Other types are
 * kept and counted as `ignored`; a refresh that cannot succeed is `failed` with its reason.
 * Events never replace polling: what a lost event announced, the next search finds.
 */
import { enqueueKnownBookingDetails } from '../db/repositories/booking-queue.js';
import { eventAgainLater, finishEvent, inventoryBlockToRow, nextDueEvents, saveVersioned, storageBookingToRow, type StoredEvent } from '../db/repositories/pms.js';
import { quarantinePayload } from '../db/repositories/quarantine.js';
import { describeDatabaseError, LeaseLostError } from '../db/errors.js';
import { InvalidPayloadError, NotFoundError } from '../provider/errors.js';
import { parseInventoryBlock, parseStorageBooking } from '../provider/pms-schemas.js';
import { IdlePause } from '../util/wait-list.js';
import type { Trx } from '../db/database.js';
import type { SyncContext } from './context.js';
import { fetchRetryDelayMs } from './fetch-drain.js';
import { classify } from './failures.js';
import { fetchPmsReservation, PMS_PRIORITY, writePmsReservation } from './pms-reservations.js';
import type { EngineMode, QueueDrain, QueueStream } from './streams.js';
import { idTextOf } from '../provider/schema-primitives.js';

export const WEBHOOK_EVENTS = 'webhook_events';
const CONCURRENCY = 4;
/** webpms events that may change the booking of the booking list (its details are then fetched first in line). */
const BOOKING_EVENTS = new Set([
  'webpms:create_booking',
  'webpms:cancel_booking',
  'webpms:add_room_group_booking',
  'webpms:delete_room_group_booking',
  'webpms:change_check_in_datetime',
  'webpms:change_check_out_datetime',
]);
/** 404s answered again (the event may come before the data is readable) before an event fails. */
const NOT_FOUND_RETRIES = 3;

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
  if (eventType === 'pms_integration_storage:inventory_block_changed') return { kind: 'inventoryBlock', propertyId, key: field(payload, ['InventoryBlockId', 'BlockId', 'Id']) };
  return { kind: 'other', propertyId, key: null };
}

class EventProcessor implements QueueDrain {
  private readonly idle = new IdlePause();
  private readonly log;

  constructor(private readonly ctx: SyncContext) {
    this.log = ctx.logger.child({ component: 'events' });
  }

  wake(): void {
    this.idle.wake();
  }

  async run(signal: AbortSignal, opts: { mode: EngineMode; upstreamDone: () => boolean; onFatal: (err: Error) => void }): Promise<void> {
    const { ctx } = this;
    while (!signal.aborted) {
      try {
        await ctx.database.waitUntilAvailable(signal);
        await ctx.lease.waitUntilHeld(signal);
        const due = await nextDueEvents(ctx.db, 64, { connection: ctx.connection, unrouted: ctx.handlesUnroutedEvents() });
        if (due.length === 0) {
          if (opts.mode === 'once') return;
          await this.idle.pause(signal, 1_000);
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



  /**
   * Events that name the same thing: one refresh, and their end state in its transaction;
   * failures recorded on each event.
   */
  private async process(events: StoredEvent[], signal: AbortSignal, onFatal: (err: Error) => void): Promise<void> {
    const { ctx } = this;
    const first = events[0]!;
    const target = eventTarget(first.eventType, first.payload);
    const finishAll = (trx: Trx, state: 'processed' | 'ignored' | 'failed', error?: string) => Promise.all(events.map((e) => finishEvent(trx, e.eventId, state, error)));
    try {
      if (target.kind === 'other') {
        await ctx.write((trx) => finishAll(trx, 'ignored', `event type ${first.eventType} is kept but not acted on`));
        ctx.counters.webhookEventsIgnored += events.length;
        return;
      }
      if (target.propertyId === null || target.key === null) {
        await ctx.write((trx) => finishAll(trx, 'failed', `the payload does not name the property and the ${target.kind === 'pmsReservation' ? 'booking number' : 'id'} to refresh`));
        ctx.counters.webhookEventsFailed += events.length;
        return;
      }
      const propertyId = target.propertyId;
      const key = target.key;
      if (target.kind === 'pmsReservation') {
        const fetched = ctx.config.pms.enabled ? await fetchPmsReservation(ctx, propertyId, key, signal, PMS_PRIORITY.event) : undefined;
        // Only a change of the booking itself is worth its details call (4,000 an hour): a
        // check-in or a room change does not change the booking of the booking list.
        const bookingChanged = events.some((e) => BOOKING_EVENTS.has(e.eventType));
        const detailsQueued = await ctx.write(async (trx) => {
          if (fetched) await writePmsReservation(trx, fetched);
          const queued = bookingChanged ? await enqueueKnownBookingDetails(trx, propertyId, key) : false;
          await finishAll(trx, 'processed');
          return queued;
        });
        if (detailsQueued) ctx.onEnqueued?.();
      } else {
        const storage = target.kind === 'storageBooking';
        const path = storage
          ? `/api/pms-integration-storage/v1/properties/${encodeURIComponent(propertyId)}/bookings/${encodeURIComponent(key)}`
          : `/api/pms-integration-storage/v1/properties/${encodeURIComponent(propertyId)}/inventories/blocks/${encodeURIComponent(key)}`;
        const res = await ctx.client.requestJson('integrationStorage', 'provider', path, {}, signal, 0);
        const row = storage ? this.storageRow(propertyId, key, res, path) : this.blockRow(propertyId, key, res, path);
        await ctx.write(async (trx) => {
          await saveVersioned(trx, storage ? 'integration_storage_bookings' : 'inventory_blocks', row);
          await finishAll(trx, 'processed');
        });
      }
      ctx.counters.webhookEventsProcessed += events.length;
      for (const e of events) if (e.creationTime) ctx.onEventProcessed?.(e.eventType, (ctx.clock.now() - e.creationTime.getTime()) / 1000);
    } catch (err) {
      if (signal.aborted) return;
      for (const e of events) await this.failed(e, err, onFatal);
    }
  }

  private storageRow(propertyId: string, key: string, res: { body: unknown; rawBody: string; status: number; fetchedAt: Date }, path: string): Record<string, unknown> {
    const parsed = parseStorageBooking(res.body);
    if (!parsed.ok) throw new InvalidPayloadError({ rawBody: res.rawBody, reason: parsed.reason, propertyId, bookingNumber: key }, { status: res.status, path });
    return storageBookingToRow(propertyId, parsed.value, (res.body as { booking: unknown }).booking, res.fetchedAt);
  }

  private blockRow(propertyId: string, key: string, res: { body: unknown; rawBody: string; status: number; fetchedAt: Date }, path: string): Record<string, unknown> {
    const parsed = parseInventoryBlock(res.body);
    if (!parsed.ok) throw new InvalidPayloadError({ rawBody: res.rawBody, reason: parsed.reason, propertyId, bookingNumber: key }, { status: res.status, path });
    return inventoryBlockToRow(propertyId, parsed.value, (res.body as { inventoryBlock: unknown }).inventoryBlock, res.fetchedAt);
  }

  private async failed(e: StoredEvent, err: unknown, onFatal: (err: Error) => void): Promise<void> {
    const { ctx } = this;
    const verdict = classify(err, new AbortController().signal, ctx);
    if (verdict.kind === 'database' || verdict.kind === 'lease') return; // stays pending: done again when they are back
    if (verdict.kind === 'fatal' || verdict.kind === 'tokenLost') return onFatal(verdict.error);
    const write = async (fn: Parameters<SyncContext['write']>[0]) => {
      try {
        await ctx.write(fn);
      } catch (e2) {
        if (!(e2 instanceof LeaseLostError) && !ctx.database.report(e2)) this.log.error({ err: describeDatabaseError(e2) }, 'could not record the outcome of an event');
      }
    };
    if (err instanceof NotFoundError && e.attempts + 1 < NOT_FOUND_RETRIES) {
      await write((trx) => eventAgainLater(trx, e.eventId, 1_000 * 2 ** e.attempts, err.message));
      return;
    }
    if (err instanceof InvalidPayloadError) {
      ctx.counters.quarantined += 1;
      await write(async (trx) => {
        await quarantinePayload(trx, { stream: WEBHOOK_EVENTS, propertyId: err.propertyId, entityKey: err.bookingNumber ?? null, reason: err.reason, rawBody: err.rawBody });
        await finishEvent(trx, e.eventId, 'failed', err.reason);
      });
      ctx.counters.webhookEventsFailed += 1;
      return;
    }
    if (verdict.kind === 'permanent' || err instanceof NotFoundError) {
      this.log.warn({ eventId: e.eventId, eventType: e.eventType, reason: verdict.kind === 'permanent' ? verdict.reason : String(err) }, 'change event could not be acted on: failed (polling still covers it)');
      await write((trx) => finishEvent(trx, e.eventId, 'failed', verdict.kind === 'permanent' ? verdict.reason : (err as Error).message));
      ctx.counters.webhookEventsFailed += 1;
      return;
    }
    await write((trx) => eventAgainLater(trx, e.eventId, fetchRetryDelayMs(e.attempts), verdict.kind === 'transient' ? verdict.reason : String(err)));
  }
}

/** The change events, registered with the engine as a queue. */
export const webhookEventsStream: QueueStream = {
  name: WEBHOOK_EVENTS,
  enabled: () => true,
  create: (ctx) => new EventProcessor(ctx),
};
