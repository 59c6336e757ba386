/**
 * booking_detail_queue, the part that only booking details have: a fetched row is removed only
 * when the stored details are at least as new as the summary that asked for them. The rest of
 * the queue's bookkeeping is shared with the PMS queue (fetch-queue.ts).
 */
import { sql, type RawBuilder } from 'kysely';
import { requeueSet, type QueuedFetch } from './fetch-queue.js';
import type { Executor } from '../types.js';

/**
 * Removes a fetched row, unless it was enqueued again since it was claimed (generation moved)
 * or the stored details are still older than what the summary asked for; returns the row
 * removed. A statement, run by saveBookingVersion after the details' header is written (whose
 * modification it compares with), inside its last statement.
 */
export function completeFetchStatement(f: QueuedFetch): RawBuilder<{ number: string }> {
  return sql<{ number: string }>`
    DELETE FROM booking_detail_queue q
    WHERE q.property_id = ${f.propertyId} AND q.number = ${f.number} AND q.generation = ${f.generation}
      AND (q.wanted_modified_at IS NULL OR q.wanted_modified_at <= (
            SELECT b.modified_at FROM bookings b WHERE b.property_id = q.property_id AND b.number = q.number))
    RETURNING q.number`;
}

/**
 * A change event named this booking: fetch its details first (priority 0), if the booking list
 * knows the booking. A number the list has not announced (a reservation made in the PMS only,
 * or one the list will announce shortly) is left to the list: asking the details API for it
 * would only collect 404s. Returns true when enqueued.
 */
export async function enqueueKnownBookingDetails(trx: Executor, propertyId: string, number: string): Promise<boolean> {
  const r = await sql<{ number: string }>`
    INSERT INTO booking_detail_queue AS q (property_id, number, wanted_modified_at, priority, generation)
    SELECT ${propertyId}, ${number}, NULL, 0, nextval('booking_detail_queue_generation')
    WHERE EXISTS (SELECT 1 FROM booking_summaries s WHERE s.property_id = ${propertyId} AND s.number = ${number})
       OR EXISTS (SELECT 1 FROM bookings b WHERE b.property_id = ${propertyId} AND b.number = ${number})
    ON CONFLICT (property_id, number) DO UPDATE SET priority = 0, ${requeueSet}
    RETURNING q.number`.execute(trx);
  return r.rows.length > 0;
}

/**
 * Removes the detail fetch parked as quarantined for this booking when the stored details are
 * at least as new as what the booking list asked for (as completeFetchStatement does after a
 * fetch): the quarantine retry mirrored the booking from its quarantined body.
 */
export async function settleQuarantinedBookingFetch(trx: Executor, propertyId: string, number: string): Promise<void> {
  await sql`
    DELETE FROM booking_detail_queue q
    WHERE q.property_id = ${propertyId} AND q.number = ${number} AND q.state = 'quarantined'
      AND (q.wanted_modified_at IS NULL OR q.wanted_modified_at <= (
            SELECT b.modified_at FROM bookings b WHERE b.property_id = q.property_id AND b.number = q.number))`.execute(trx);
}
