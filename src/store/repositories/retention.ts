/**
 * Retention (privacy.retainPersonalDataDays): which rows of a connection's properties still
 * hold personal data of stays that ended before a cutoff, a batch at a time, and the expiry of
 * quarantined bodies and change events. The erasing itself is src/privacy/erase.ts's, as for
 * forget-guest.
 *
 * "Ended before the cutoff": a booking whose departure is before the cutoff date; a PMS
 * reservation whose every room stay checks out before it; a PMS person all of whose stays (as
 * a guest of a room, or as a customer) do, so that a repeat guest keeps their profile while
 * one of their stays is recent. Each batch is read in key order after the previous one
 * (keyset), so that a row that cannot be erased further is passed, not read again.
 */
import { sql } from 'kysely';
import type { Executor } from '../types.js';
import { holdsPersonalData, notErased, type BookingKey, type PersonKey } from './erasures.js';

/** Where a batch read ends: the next one starts after this key. */
export type After = readonly [string, string] | null;

/** Bookings that departed before `cutoff` (YYYY-MM-DD) and still name a person or hold a card number. */
export async function bookingsPastRetention(
  trx: Executor,
  propertyIds: readonly string[],
  cutoff: string,
  marker: string,
  after: After,
  limit: number,
): Promise<BookingKey[]> {
  const r = await sql<BookingKey>`
    SELECT b.property_id, b.number FROM bookings b
     WHERE b.property_id = ANY(${propertyIds}::text[]) AND b.departure_at < ${cutoff}::date
       AND (b.property_id, b.number) > (${after?.[0] ?? ''}, ${after?.[1] ?? ''})
       AND (${notErased('b.customer_first_name', marker)} OR ${notErased('b.customer_last_name', marker)}
            OR EXISTS (SELECT 1 FROM booking_guests g WHERE g.property_id = b.property_id AND g.number = b.number
                          AND (${notErased('g.first_name', marker)} OR ${notErased('g.last_name', marker)}))
            OR EXISTS (SELECT 1 FROM booking_loyalty_cards c WHERE c.property_id = b.property_id AND c.number = b.number AND c.card_number IS NOT NULL))
     ORDER BY b.property_id, b.number LIMIT ${limit}`.execute(trx);
  return r.rows;
}

/** PMS reservations whose every room stay checked out before `cutoff`, and whose customer still has personal data. */
export async function reservationsPastRetention(
  trx: Executor,
  propertyIds: readonly string[],
  cutoff: string,
  marker: string,
  after: After,
  limit: number,
): Promise<BookingKey[]> {
  const r = await sql<BookingKey>`
    SELECT r.property_id, r.number FROM pms_reservations r
     WHERE r.property_id = ANY(${propertyIds}::text[])
       AND (r.property_id, r.number) > (${after?.[0] ?? ''}, ${after?.[1] ?? ''})
       AND (SELECT max(s.check_out_at) FROM pms_room_stays s WHERE s.property_id = r.property_id AND s.number = r.number) < ${cutoff}::date
       AND ${holdsPersonalData('pms_reservations', 'r', marker)}
     ORDER BY r.property_id, r.number LIMIT ${limit}`.execute(trx);
  return r.rows;
}

/** PMS persons all of whose stays (as a room's guest or as the customer) checked out before `cutoff`, and who still have personal data. */
export async function personsPastRetention(
  trx: Executor,
  propertyIds: readonly string[],
  cutoff: string,
  marker: string,
  after: After,
  limit: number,
): Promise<PersonKey[]> {
  const r = await sql<PersonKey>`
    WITH stays AS (
      SELECT s.property_id, s.check_out_at, unnest(s.guest_person_ids || ARRAY[r.customer_person_id]) AS id
        FROM pms_room_stays s JOIN pms_reservations r ON r.property_id = s.property_id AND r.number = s.number
       WHERE s.property_id = ANY(${propertyIds}::text[])
    ), last_stay AS (
      SELECT property_id, id, max(check_out_at) AS last_out FROM stays WHERE id IS NOT NULL GROUP BY property_id, id
    )
    SELECT g.property_id, g.pms_person_id FROM pms_guests g
      JOIN last_stay l ON l.property_id = g.property_id AND l.id = g.pms_person_id
     WHERE l.last_out < ${cutoff}::date
       AND (g.property_id, g.pms_person_id) > (${after?.[0] ?? ''}, ${after?.[1] ?? ''})
       AND ${holdsPersonalData('pms_guests', 'g', marker)}
     ORDER BY g.property_id, g.pms_person_id LIMIT ${limit}`.execute(trx);
  return r.rows;
}

/**
 * Quarantined bodies of `streams` last seen before `before` get `expired` in place of the body
 * (the row stays: what failed, and when); processed change events received before it lose
 * their payload. Rows of the properties given, and with `unrouted` those of none.
 */
export async function expirePayloads(
  trx: Executor,
  opts: { propertyIds: readonly string[]; unrouted: boolean; streams: readonly string[]; before: Date; expired: string },
): Promise<{ quarantine: number; webhook_events: number }> {
  const mine = (column: string) => sql`(${sql.ref(column)} = ANY(${opts.propertyIds}::text[]) OR (${sql.ref(column)} IS NULL AND ${opts.unrouted}))`;
  const q = await sql`UPDATE quarantine SET raw_body = ${opts.expired}
     WHERE stream = ANY(${opts.streams}::text[]) AND last_seen_at < ${opts.before} AND raw_body <> ${opts.expired} AND ${mine('property_id')}`.execute(trx);
  const w = await sql`UPDATE webhook_events SET payload = NULL
     WHERE state <> 'pending' AND received_at < ${opts.before} AND payload IS NOT NULL AND ${mine('property_id')}`.execute(trx);
  return { quarantine: Number(q.numAffectedRows ?? 0), webhook_events: Number(w.numAffectedRows ?? 0) };
}
