/**
 * Retention (privacy.retainPersonalDataDays): which rows of a connection's properties still
 * hold personal data of stays that ended before a cutoff, a batch at a time, and the expiry of
 * quarantined bodies and change events. The erasing itself is src/privacy/erase.ts's, as for
 * forget-guest.
 *
 * "Ended before the cutoff": a booking whose departure is before the cutoff date; a PMS
 * reservation whose every room stay checks out before it; a PMS person all of whose stays (as
 * a guest of a room, or as a customer) do, so that a repeat guest keeps their profile while
 * one of their stays is recent; a reservation's invoices and a booking's loyalty cards are as
 * old as their reservation or booking. Each batch is read in key order after the previous one
 * (keyset), so that a row that cannot be erased further is passed, not read again; and each
 * selection asks for exactly what its erasure changes, so that the next pass (an hour later)
 * reads none of the rows this one erased.
 */
import { sql } from 'kysely';
import { parseJsonLossless } from '../../provider/json.js';
import type { Executor } from '../types.js';
import { holdsPersonalData, notErased, payloadHoldsPersonalData, type BookingKey, type PersonalKeys, type PersonKey } from './erasures.js';

/** Where a batch read ends: the next one starts after this key. */
export type After = readonly [string, string] | null;

/**
 * When a stay ended, as a date: a room stay's check-out (actual, else planned); without one,
 * its check-in (an open check-out: the stay is dated by its start). What has no stay end at all
 * is dated by when the mirror last heard of it (below), so that retention reaches everything.
 */
const stayEnd = (s: string) =>
  sql`COALESCE(${sql.ref(`${s}.actual_check_out_at`)}, ${sql.ref(`${s}.check_out_at`)}, ${sql.ref(`${s}.actual_check_in_at`)}, ${sql.ref(`${s}.check_in_at`)})::date`;

/** A PMS reservation's end: its last room stay's, or without one its last change (or fetch). */
const reservationEnd = (r: string) =>
  sql`COALESCE((SELECT max(${stayEnd('s')}) FROM pms_room_stays s WHERE s.property_id = ${sql.ref(`${r}.property_id`)} AND s.number = ${sql.ref(`${r}.number`)}),
               ${sql.ref(`${r}.modified_at`)}::date, ${sql.ref(`${r}.fetched_at`)}::date)`;

/** Bookings that departed before `cutoff` (YYYY-MM-DD; one without room stays: last changed before it) and still name a person or hold a card number. */
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
     WHERE b.property_id = ANY(${propertyIds}::text[]) AND COALESCE(b.departure_at::date, b.modified_at::date, b.fetched_at::date) < ${cutoff}::date
       AND (b.property_id, b.number) > (${after?.[0] ?? ''}, ${after?.[1] ?? ''})
       AND (${notErased('b.customer_first_name', marker)} OR ${notErased('b.customer_last_name', marker)}
            OR EXISTS (SELECT 1 FROM booking_guests g WHERE g.property_id = b.property_id AND g.number = b.number
                          AND (${notErased('g.first_name', marker)} OR ${notErased('g.last_name', marker)}))
            OR EXISTS (SELECT 1 FROM booking_loyalty_cards c WHERE c.property_id = b.property_id AND c.number = b.number AND c.card_number IS NOT NULL))
     ORDER BY b.property_id, b.number LIMIT ${limit}`.execute(trx);
  return r.rows;
}

/**
 * What of a PMS reservation (as `r`) retention erases, while it still holds personal data: its
 * customer; or, on their own, the payers of its invoices who may be the customer (any but the
 * customer company: src/mapping/erasure.ts payerMayBeCustomer, which this must equal), since the
 * pass after a backfill may read the invoices once retention erased the customer.
 */
const RESERVATION_PARTS = {
  customer: (marker: string) => holdsPersonalData('pms_reservations', 'r', marker),
  invoicePayers: (marker: string) =>
    sql<boolean>`EXISTS (SELECT 1 FROM pms_invoices i WHERE i.property_id = r.property_id AND i.number = r.number
                    AND i.payer_name <> '' AND ${notErased('i.payer_name', marker)} AND i.payer_name IS DISTINCT FROM r.customer_company_name)`,
};

/** PMS reservations that ended before `cutoff` (reservationEnd) whose `part` still holds personal data. */
export async function reservationsPastRetention(
  trx: Executor,
  propertyIds: readonly string[],
  cutoff: string,
  marker: string,
  part: keyof typeof RESERVATION_PARTS,
  after: After,
  limit: number,
): Promise<BookingKey[]> {
  const r = await sql<BookingKey>`
    SELECT r.property_id, r.number FROM pms_reservations r
     WHERE r.property_id = ANY(${propertyIds}::text[])
       AND (r.property_id, r.number) > (${after?.[0] ?? ''}, ${after?.[1] ?? ''})
       AND ${RESERVATION_PARTS[part](marker)}
       AND ${reservationEnd('r')} < ${cutoff}::date
     ORDER BY r.property_id, r.number LIMIT ${limit}`.execute(trx);
  return r.rows;
}

/**
 * PMS persons all of whose stays (as a room's guest, or as the customer of a reservation:
 * reservationEnd) ended before `cutoff`, and who still have personal data (`personal`: what of
 * their loyalty cards' raw is). A person the mirror holds no stay of (they left every guest
 * list) is dated by the last fetch of their profile.
 */
export async function personsPastRetention(
  trx: Executor,
  propertyIds: readonly string[],
  cutoff: string,
  marker: string,
  personal: PersonalKeys,
  after: After,
  limit: number,
): Promise<PersonKey[]> {
  const r = await sql<PersonKey>`
    WITH stays AS (
      SELECT s.property_id, ${stayEnd('s')} AS ended, unnest(s.guest_person_ids) AS id
        FROM pms_room_stays s WHERE s.property_id = ANY(${propertyIds}::text[])
      UNION ALL
      SELECT r.property_id, ${reservationEnd('r')}, r.customer_person_id
        FROM pms_reservations r WHERE r.property_id = ANY(${propertyIds}::text[]) AND r.customer_person_id IS NOT NULL
    ), last_stay AS (
      SELECT property_id, id, max(ended) AS last_out FROM stays WHERE id IS NOT NULL GROUP BY property_id, id
    )
    SELECT g.property_id, g.pms_person_id FROM pms_guests g
      LEFT JOIN last_stay l ON l.property_id = g.property_id AND l.id = g.pms_person_id
     WHERE g.property_id = ANY(${propertyIds}::text[]) AND COALESCE(l.last_out, g.fetched_at::date) < ${cutoff}::date
       AND (g.property_id, g.pms_person_id) > (${after?.[0] ?? ''}, ${after?.[1] ?? ''})
       AND ${holdsPersonalData('pms_guests', 'g', marker, personal)}
     ORDER BY g.property_id, g.pms_person_id LIMIT ${limit}`.execute(trx);
  return r.rows;
}

/**
 * Integration-storage bookings that ended before `cutoff` (their departure; without one, their
 * last change or fetch) whose raw still holds, anywhere, a person (the value of a
 * `personal.persons` key) with a name not erased (`personal.names`, on the person or in its
 * `personName`), or a key the policy keeps only with personal data (`personal.values`). Exactly
 * what the erasure changes, so that a row erased is not read again: a `name` outside a person
 * (a channel's, a service's) is no one's.
 */
export async function storageBookingsPastRetention(
  trx: Executor,
  propertyIds: readonly string[],
  cutoff: string,
  marker: string,
  personal: PersonalKeys,
  after: After,
  limit: number,
): Promise<BookingKey[]> {
  const r = await sql<{ property_id: string; booking_id: string }>`
    SELECT s.property_id, s.booking_id FROM integration_storage_bookings s
     WHERE s.property_id = ANY(${propertyIds}::text[])
       AND (s.property_id, s.booking_id) > (${after?.[0] ?? ''}, ${after?.[1] ?? ''})
       AND COALESCE(s.departure_at::date, s.pms_updated_at::date, s.updated_at::date, s.fetched_at::date) < ${cutoff}::date
       AND ${payloadHoldsPersonalData('s.raw', personal, marker)}
     ORDER BY s.property_id, s.booking_id LIMIT ${limit}`.execute(trx);
  return r.rows.map((x) => ({ property_id: x.property_id, number: x.booking_id }));
}

/** Writes the raw `erase` gives each integration-storage booking given (`number`: its booking_id); null leaves it. */
export async function eraseStorageBookings(
  trx: Executor,
  keys: readonly BookingKey[],
  erase: (raw: unknown) => unknown,
  touched: Record<string, number>,
): Promise<void> {
  for (const k of keys) {
    const [row] = (
      await sql<{
        raw: string;
      }>`SELECT raw::text AS raw FROM integration_storage_bookings WHERE property_id = ${k.property_id} AND booking_id = ${k.number} FOR UPDATE`.execute(trx)
    ).rows;
    const erased = row ? erase(parseJsonLossless(row.raw)) : null;
    if (erased === null) continue;
    await sql`UPDATE integration_storage_bookings SET raw = ${JSON.stringify(erased)}::jsonb, synced_at = now()
       WHERE property_id = ${k.property_id} AND booking_id = ${k.number}`.execute(trx);
    touched.integration_storage_bookings = (touched.integration_storage_bookings ?? 0) + 1;
  }
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
     WHERE state NOT IN ('pending', 'waiting') AND received_at < ${opts.before} AND payload IS NOT NULL AND ${mine('property_id')}`.execute(trx);
  return { quarantine: Number(q.numAffectedRows ?? 0), webhook_events: Number(w.numAffectedRows ?? 0) };
}
