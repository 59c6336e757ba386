/**
 * Booking details stream (one per API client): drains the durable detail queue at the
 * details budget, most useful first. One booking per transaction: header upserted under the
 * version guard, children replaced, queue row removed. Outcomes that are not a success are
 * recorded, never retried in a tight loop: 404 parks the row as not_found, a payload that
 * fails validation goes to quarantine and parks the row, other failures back off.
 */
import { completeFetch, nextDueFetches, parkFetch, pendingCount, queueKey, retryFetchLater, type QueuedFetch } from '../db/repositories/booking-queue.js';
import { bookingToRows, saveBookingVersion } from '../db/repositories/bookings.js';
import { quarantinePayload } from '../db/repositories/quarantine.js';
import { AuthenticationError, InvalidPayloadError, NotFoundError } from '../provider/errors.js';
import { isAbortError } from '../util/clock.js';
import type { SyncContext } from './context.js';

export const BOOKING_DETAILS = 'booking_details';

/** Backoff of a queue row after a failed fetch: 5 s, 10 s, 20 s, … capped at 10 minutes. */
export function fetchRetryDelayMs(attempts: number): number {
  return Math.min(600_000, 5_000 * 2 ** Math.min(attempts, 10));
}

export interface DrainOptions {
  /** Return when the queue has no pending row and `isUpstreamDone()` is true (sync --once). */
  untilEmpty: boolean;
  /** For untilEmpty: whether the summaries streams have caught up (no more enqueues coming). */
  isUpstreamDone?: () => boolean;
}

export class BookingDetailsStream {
  private readonly inFlight = new Set<string>();
  private wake: (() => void) | undefined;
  private readonly log;

  constructor(private readonly ctx: SyncContext) {
    this.log = ctx.logger.child({ component: 'details' });
  }

  /** Wakes an idle drain loop (called when summaries enqueued new fetches). */
  notify(): void {
    this.wake?.();
  }

  /** Drains the queue with `detailConcurrency` fetches in flight; the budget paces them. */
  async drain(signal: AbortSignal, opts: DrainOptions): Promise<void> {
    const concurrency = this.ctx.config.sync.detailConcurrency;
    const running = new Set<Promise<void>>();
    let batch: QueuedFetch[] = [];

    while (!signal.aborted) {
      if (batch.length === 0) {
        // Exclude what is in flight when the query starts: a fetch that completes while the
        // query runs is still pending in the query's snapshot and must not be fetched again.
        batch = await nextDueFetches(this.ctx.db, concurrency * 8, new Set(this.inFlight));
      }
      const item = batch.shift();
      if (!item) {
        if (running.size > 0) {
          await Promise.race(running);
          continue;
        }
        if (opts.untilEmpty && (opts.isUpstreamDone?.() ?? true) && (await pendingCount(this.ctx.db)) === 0) return;
        await this.idle(signal, 1_000);
        continue;
      }
      const key = queueKey(item.propertyId, item.number);
      if (this.inFlight.has(key)) continue;
      this.inFlight.add(key);
      const p = this.fetchOne(item, signal).finally(() => {
        this.inFlight.delete(key);
        running.delete(p);
      });
      running.add(p);
      if (running.size >= concurrency) await Promise.race(running);
    }
    await Promise.allSettled(running);
  }

  private idle(signal: AbortSignal, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.wake = done;
    });
  }

  private async fetchOne(item: QueuedFetch, signal: AbortSignal): Promise<void> {
    const { ctx } = this;
    const ids = { propertyId: item.propertyId, number: item.number };
    try {
      const fetched = await ctx.client.getBooking(item.propertyId, item.number, signal);
      ctx.counters.detailsFetched += 1;
      // The provider's clock decides whether these details cover a whole modification second.
      const fetchedAt = fetched.fetchedAt ?? new Date(ctx.clock.now());
      const rows = bookingToRows(item.propertyId, fetched.booking, fetched.raw, fetchedAt);
      const { written, completed } = await ctx.db.transaction().execute(async (trx) => {
        const written = await saveBookingVersion(trx, rows);
        const completed = await completeFetch(trx, item);
        return { written, completed };
      });
      if (written) ctx.counters.detailsWritten += 1;
      else ctx.counters.detailsStale += 1;
      if (!completed) {
        // Either re-enqueued meanwhile (fine: fetched again), or the provider served details
        // older than the summary that asked for them: try again later instead of spinning.
        await retryFetchLater(ctx.db, item, fetchRetryDelayMs(item.attempts), 'details older than the listed modification');
      }
    } catch (err) {
      if (signal.aborted && isAbortError(err, signal)) return;
      if (err instanceof NotFoundError) {
        ctx.counters.detailsNotFound += 1;
        this.log.warn(ids, 'booking details not found (404): recorded, fetched again only if the booking changes');
        await parkFetch(ctx.db, item, 'not_found', 'provider answered 404');
        return;
      }
      if (err instanceof InvalidPayloadError) {
        ctx.counters.quarantined += 1;
        this.log.warn({ ...ids, reason: err.reason }, 'booking details failed validation: quarantined');
        await ctx.db.transaction().execute(async (trx) => {
          await quarantinePayload(trx, {
            stream: BOOKING_DETAILS,
            propertyId: item.propertyId,
            entityKey: item.number,
            reason: err.reason,
            rawBody: err.rawBody,
          });
          await parkFetch(trx, item, 'quarantined', err.reason.slice(0, 500));
        });
        return;
      }
      if (err instanceof AuthenticationError) throw err;
      ctx.counters.detailFailures += 1;
      const delay = fetchRetryDelayMs(item.attempts);
      this.log.warn({ ...ids, err: (err as Error).message, retryInMs: delay }, 'booking details fetch failed: will retry');
      await retryFetchLater(ctx.db, item, delay, (err as Error).message).catch((e: unknown) =>
        this.log.error({ ...ids, err: (e as Error).message }, 'could not record the failed fetch'),
      );
    }
  }
}
