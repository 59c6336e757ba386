/**
 * Booking details stream (one per API client): drains booking_detail_queue at the details
 * budget, most useful first (fetch-drain.ts). One booking per transaction: header upserted
 * under the version guard, children replaced, queue row removed.
 */
import { streamNames } from '../../store/states.js';
import { completeFetchStatement } from '../../store/repositories/booking-queue.js';
import { saveBookingVersion, type VersionOutcome } from '../../store/repositories/bookings.js';
import { erasableBooking } from '../../mapping/erasure.js';
import { rowsAfterErasures } from '../../store/repositories/erasures.js';
import { bookingHistoryOf } from '../../mapping/history.js';
import { recordChangeLag } from '../../store/repositories/freshness.js';
import type { QueuedFetch } from '../../store/repositories/fetch-queue.js';
import type { SyncContext } from '../runtime/context.js';
import { FRESH_CHANGE_PRIORITY } from './booking-summaries.js';
import { FetchDrain, FetchOutcomes, type FetchHandler } from '../runtime/fetch-drain.js';
import type { QueueStream } from './types.js';

/**
 * Times details that look like an older copy (identical to the stored ones although the list
 * showed the booking again, a version the booking left within the same second, or another
 * status than the list shows for the same second) are asked for again, on the short backoff (5, 10, 20 s), before they are believed: a lagging replica
 * catches up within seconds, while a booking that really changed back stays as it is.
 */
export const OLDER_COPY_RETRIES = 3;

class BookingDetails implements FetchHandler {
  constructor(
    private readonly ctx: SyncContext,
    private readonly outcomes: FetchOutcomes,
  ) {}

  async fetchOne(item: QueuedFetch, signal: AbortSignal, onFatal: (err: Error) => void): Promise<void> {
    const { ctx } = this;
    let fetched;
    try {
      fetched = await ctx.client.getBooking(item.propertyId, item.number, signal);
    } catch (err) {
      if (signal.aborted) return;
      return this.outcomes.fetchFailed(item, err, onFatal);
    }
    ctx.counters.detailsFetched += 1;
    // The provider's clock decides whether these details cover a whole modification second.
    const erasable = erasableBooking(item.propertyId, fetched.booking, fetched.raw, fetched.fetchedAt, ctx.config.pms.personalData);
    const rows = erasable.rows;
    // A fresh change (found by a poll of a caught-up list, or announced by an event): its lag,
    // from the modification the summary announced to this write, is recorded in the same
    // transaction (status and reporting read it) and, once committed, observed by /metrics.
    const fresh = item.priority === FRESH_CHANGE_PRIORITY;
    try {
      const { lag, written, completed, olderCopy } = await ctx.write(async (trx) => {
        // Before the details: it compares with the version stored so far.
        const lag = fresh
          ? await recordChangeLag(trx, {
              propertyId: item.propertyId,
              number: item.number,
              changedAt: item.wantedModifiedAt ?? rows.booking.modified_at,
              version: rows.booking.modified_at,
            })
          : undefined;
        // The queue row is completed by the details' own last statement, unless they are an
        // older copy to ask for again.
        const believe = item.attempts >= OLDER_COPY_RETRIES;
        const isOlderCopy = (outcome: VersionOutcome) =>
          !believe && (outcome === 'earlier-copy' || outcome === 'unlike-list' || (outcome === 'unchanged' && item.expectChange));
        // As the erasure list has it now (a guest erased meanwhile does not come back).
        const [toWrite] = await rowsAfterErasures(trx, [erasable]);
        const saved = await saveBookingVersion(trx, toWrite!, bookingHistoryOf(toWrite!), {
          acceptEarlierCopy: believe,
          alongside: (outcome) => (isOlderCopy(outcome) ? null : completeFetchStatement(item)),
        });
        const olderCopy = isOlderCopy(saved.outcome);
        return { lag, written: saved.written && !olderCopy, completed: saved.alongsideRows > 0, olderCopy };
      });
      if (written) ctx.counters.detailsWritten += 1;
      else ctx.counters.detailsStale += 1;
      if (lag !== undefined) ctx.events.emit('changeLag', item.propertyId, lag);
      // Either re-enqueued meanwhile (fine: fetched again), or the provider served details
      // older than the summary that asked for them: try again later instead of spinning.
      if (olderCopy) await this.outcomes.stale(item, 'details are an older copy (the booking changed after the stored version, in the same second)');
      else if (!completed) await this.outcomes.stale(item, 'details older than the listed modification');
    } catch (err) {
      await this.outcomes.writeFailed(item, err, JSON.stringify(fetched.raw));
    }
  }
}

/** The booking details queue, registered with the engine. */
export const bookingDetailsStream: QueueStream = {
  name: streamNames.bookingDetails,
  area: 'readReservation',
  enabled: () => true,
  create: (ctx) => {
    const log = ctx.logger.child({ component: 'details' });
    const outcomes = new FetchOutcomes(ctx, 'booking_detail_queue', streamNames.bookingDetails, 'booking details', log);
    return new FetchDrain(ctx, 'booking_detail_queue', ctx.config.sync.detailConcurrency, new BookingDetails(ctx, outcomes), log);
  },
};
