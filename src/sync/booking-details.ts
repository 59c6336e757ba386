/**
 * Booking details stream (one per API client): drains the durable detail queue at the
 * details budget, most useful first. One booking per transaction: header upserted under the
 * version guard, children replaced, queue row removed.
 *
 * A fetch that does not store the booking is never retried in a tight loop and never
 * dropped: the row's next attempt moves back on a growing backoff, by outcome:
 * - 404: first a few quick retries (the list may announce a booking before the details
 *   replica has it), then `not_found`, fetched again after sync.refetchParkedAfterMs (10
 *   minutes), doubling up to 6 hours;
 * - a payload that fails validation: quarantined, `quarantined`, fetched again on the same
 *   long backoff (the provider may fix it);
 * - a write the database refuses (constraint, encoding): quarantined with the database's
 *   reason, likewise;
 * - a transient provider failure: `pending`, after 5 s, doubling up to 10 minutes;
 * - the database or the lease is away: the row is left as it was and fetched again once they
 *   are back (the drain waits for them).
 * A changed booking (a new summary) resets the row to `pending` at once.
 */
import {
  completeFetch,
  fetchAgainLater,
  nextDueFetches,
  pendingCount,
  queueKey,
  type QueuedFetch,
} from '../db/repositories/booking-queue.js';
import { bookingToRows, saveBookingVersion } from '../db/repositories/bookings.js';
import { quarantinePayload } from '../db/repositories/quarantine.js';
import { describeDatabaseError, isDatabaseUnavailable, isTransactionConflict, LeaseLostError } from '../db/errors.js';
import { AuthenticationError, InvalidPayloadError, NotFoundError, RequestRejectedError } from '../provider/errors.js';
import type { SyncContext } from './context.js';
import { classify } from './failures.js';
import type { EngineMode, QueueDrain, QueueStream } from './streams.js';

export const BOOKING_DETAILS = 'booking_details';

/** `sync --once` does not wait for fetches that failed this many times (they stay queued and are reported). */
export const ONCE_MAX_ATTEMPTS = 4;
/** 404s answered quickly again before a booking counts as not found. */
const QUICK_404_RETRIES = 3;

/** Backoff after a transient failure: 5 s, 10 s, 20 s, … capped at 10 minutes. */
export function fetchRetryDelayMs(attempts: number): number {
  return Math.min(600_000, 5_000 * 2 ** Math.min(attempts, 10));
}

/** Backoff of a parked row (not found, quarantined, refused): `baseMs` (sync.refetchParkedAfterMs) doubling, capped at 6 hours. */
export function parkedRetryDelayMs(parkedAttempts: number, baseMs: number): number {
  return Math.min(6 * 3_600_000, baseMs * 2 ** Math.min(Math.max(0, parkedAttempts), 10));
}

/** Quick retries of a 404 (replica lag): 1 s, 2 s, 4 s. */
function quick404DelayMs(attempts: number): number {
  return 1_000 * 2 ** attempts;
}

export class BookingDetailsStream implements QueueDrain {
  private readonly inFlight = new Set<string>();
  private wakeIdle: (() => void) | undefined;
  private readonly log;

  constructor(private readonly ctx: SyncContext) {
    this.log = ctx.logger.child({ component: 'details' });
  }

  wake(): void {
    this.wakeIdle?.();
  }

  /** Drains the queue with `detailConcurrency` fetches in flight; the budget paces them. */
  async run(signal: AbortSignal, opts: { mode: EngineMode; upstreamDone: () => boolean; onFatal: (err: Error) => void }): Promise<void> {
    const { ctx } = this;
    const concurrency = ctx.config.sync.detailConcurrency;
    const running = new Set<Promise<void>>();
    let batch: QueuedFetch[] = [];

    while (!signal.aborted) {
      try {
        if (!ctx.database.available || !ctx.lease.held) {
          // What was claimed before the wait may have been fetched by another process meanwhile.
          batch = [];
          await ctx.database.waitUntilAvailable(signal);
          await ctx.lease.waitUntilHeld(signal);
        }
        if (batch.length === 0) {
          // Exclude what is in flight when the query starts: a fetch that completes while the
          // query runs is still listed in the query's snapshot and must not be fetched again.
          batch = await nextDueFetches(ctx.db, concurrency * 8, new Set(this.inFlight));
        }
        const item = batch.shift();
        if (!item) {
          if (running.size > 0) {
            await Promise.race(running);
            continue;
          }
          if (opts.mode === 'once' && opts.upstreamDone() && (await pendingCount(ctx.db, { maxAttempts: ONCE_MAX_ATTEMPTS })) === 0) return;
          await this.idle(signal, 1_000);
          continue;
        }
        const key = queueKey(item.propertyId, item.number);
        if (this.inFlight.has(key)) continue;
        this.inFlight.add(key);
        // fetchOne handles every failure itself; the catch only keeps a bug from becoming an
        // unhandled rejection.
        const p: Promise<void> = this.fetchOne(item, signal, opts.onFatal)
          .catch((err: unknown) => this.log.error({ err: (err as Error).message, number: item.number }, 'internal error in a detail fetch'))
          .finally(() => {
            this.inFlight.delete(key);
            running.delete(p);
          });
        running.add(p);
        if (running.size >= concurrency) await Promise.race(running);
      } catch (err) {
        // The queue could not be read: the database or the lease is away (waited for at the
        // top of the loop), or something unexpected (logged, then a pause).
        batch = [];
        const verdict = classify(err, signal, ctx);
        if (verdict.kind === 'stopped') break;
        if (verdict.kind === 'database' || verdict.kind === 'lease') continue;
        if (verdict.kind === 'fatal') {
          opts.onFatal(verdict.error);
          break;
        }
        this.log.error({ err: describeDatabaseError(err) }, 'could not read the detail queue: retrying in 5 s');
        await ctx.clock.sleep(5_000, signal).catch(() => undefined);
      }
    }
    await Promise.allSettled(running);
  }

  private idle(signal: AbortSignal, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.wakeIdle = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.wakeIdle = done;
    });
  }

  private async fetchOne(item: QueuedFetch, signal: AbortSignal, onFatal: (err: Error) => void): Promise<void> {
    const { ctx } = this;
    const ids = { propertyId: item.propertyId, number: item.number };
    let fetched;
    try {
      fetched = await ctx.client.getBooking(item.propertyId, item.number, signal);
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof AuthenticationError) return onFatal(err);
      await this.recordFailure(item, err);
      return;
    }
    ctx.counters.detailsFetched += 1;
    // The provider's clock decides whether these details cover a whole modification second.
    const rows = bookingToRows(item.propertyId, fetched.booking, fetched.raw, fetched.fetchedAt);
    try {
      const { written, completed } = await ctx.write(async (trx) => ({
        written: await saveBookingVersion(trx, rows),
        completed: await completeFetch(trx, item),
      }));
      if (written) ctx.counters.detailsWritten += 1;
      else ctx.counters.detailsStale += 1;
      if (!completed) {
        // Either re-enqueued meanwhile (fine: fetched again), or the provider served details
        // older than the summary that asked for them: try again later instead of spinning.
        await this.later(item, 'pending', fetchRetryDelayMs(item.attempts), 'details older than the listed modification');
      }
    } catch (err) {
      if (err instanceof LeaseLostError || isDatabaseUnavailable(err) || isTransactionConflict(err)) {
        ctx.database.report(err);
        return;
      }
      // The database refused this booking (a constraint, an encoding): keep it aside with the
      // reason, so that it is visible and retried, and go on with the others.
      ctx.counters.quarantined += 1;
      ctx.counters.writeFailures += 1;
      const reason = `database write failed: ${describeDatabaseError(err)}`;
      this.log.warn({ ...ids, reason }, 'booking could not be written: quarantined');
      await this.quarantine(item, reason, JSON.stringify(fetched.raw));
    }
  }

  /** A fetch that did not return usable details. */
  private async recordFailure(item: QueuedFetch, err: unknown): Promise<void> {
    const { ctx } = this;
    const ids = { propertyId: item.propertyId, number: item.number };
    if (err instanceof NotFoundError) {
      ctx.counters.detailsNotFound += 1;
      if (item.attempts + 1 < QUICK_404_RETRIES) {
        this.log.debug(ids, 'booking details not found (404), probably not replicated yet: asking again shortly');
        return this.later(item, 'pending', quick404DelayMs(item.attempts), 'provider answered 404');
      }
      const parked = item.attempts + 1 - QUICK_404_RETRIES;
      if (parked === 0) this.log.warn(ids, 'booking details not found (404) several times: recorded as not_found, fetched again on a growing backoff');
      return this.later(item, 'not_found', this.parkedDelay(parked), 'provider answered 404');
    }
    if (err instanceof InvalidPayloadError) {
      ctx.counters.quarantined += 1;
      if (item.state !== 'quarantined') this.log.warn({ ...ids, reason: err.reason }, 'booking details failed validation: quarantined');
      return this.quarantine(item, err.reason, err.rawBody);
    }
    if (err instanceof RequestRejectedError) {
      ctx.counters.detailFailures += 1;
      this.log.warn({ ...ids, err: err.message }, 'booking details refused by the provider: fetched again on a growing backoff');
      return this.later(item, 'pending', this.parkedDelay(item.attempts), err.message);
    }
    // Transient (the provider is away, throttles, or answered 5xx after the client's retries):
    // the outage itself is logged once by the provider's health, not per booking.
    ctx.counters.detailFailures += 1;
    this.log.debug({ ...ids, err: (err as Error).message }, 'booking details fetch failed: will retry');
    return this.later(item, 'pending', fetchRetryDelayMs(item.attempts), (err as Error).message);
  }

  private async quarantine(item: QueuedFetch, reason: string, rawBody: string): Promise<void> {
    await this.guarded(() =>
      this.ctx.write(async (trx) => {
        await quarantinePayload(trx, { stream: BOOKING_DETAILS, propertyId: item.propertyId, entityKey: item.number, reason, rawBody });
        await fetchAgainLater(trx, item, 'quarantined', this.parkedDelay(item.state === 'quarantined' ? item.attempts : 0), reason);
      }),
    );
  }

  private parkedDelay(parkedAttempts: number): number {
    return parkedRetryDelayMs(parkedAttempts, this.ctx.config.sync.refetchParkedAfterMs);
  }

  private later(item: QueuedFetch, state: 'pending' | 'not_found', delayMs: number, message: string): Promise<void> {
    return this.guarded(() => this.ctx.write((trx) => fetchAgainLater(trx, item, state, delayMs, message)));
  }

  /** Bookkeeping writes: when the database or lease is away the row stays as it was (fetched again later). */
  private async guarded(write: () => Promise<void>): Promise<void> {
    try {
      await write();
    } catch (err) {
      if (err instanceof LeaseLostError || this.ctx.database.report(err)) return;
      this.log.error({ err: describeDatabaseError(err) }, 'could not record the outcome of a detail fetch');
    }
  }
}

/** The booking details queue, registered with the engine. */
export const bookingDetailsStream: QueueStream = {
  name: BOOKING_DETAILS,
  enabled: () => true,
  create: (ctx) => new BookingDetailsStream(ctx),
};
