/**
 * PMS mirror: reservations with their room stays, persons (customers and guests), the fetch
 * queue's enqueue, rooms, daily occupancy, as src/mapping/pms.ts maps them (integration-storage
 * bookings and inventory blocks: integration-storage.ts).
 * Reservations are version-guarded (an older payload never overwrites a newer one); an
 * occupancy night is written only when its figures changed, and each change is kept
 * (daily_occupancy_history).
 */
import { sql, type RawBuilder, type Transaction } from 'kysely';
import type { PmsReservationRows } from '../schema.js';
import type { Database, NewDailyOccupancy, NewPmsGuest, NewPmsGuestLoyaltyCard, NewPmsInvoice, NewPmsInvoiceItem } from '../schema.js';
import { requeueSet } from './fetch-queue.js';
import type { Executor } from '../types.js';

/**
 * Writes one reservation version: the header only if not older than the stored one (the
 * version guard below), then its room stays replaced and its customer upserted. Returns false
 * when the stored version was newer and nothing was written.
 *
 * The guard: when both versions have a modification time (modified_at), the later
 * modification wins, ties to the one written now. When either has none (the
 * answer's modifyDateTime was null or not an instant: see the PMS schemas), the later read
 * wins (fetched_at, ties likewise). Why: the provider answers with the reservation as it is
 * when it reads it, so without both modification times the order of the reads (fetched_at is
 * a lower bound of when the provider read the answer) is the order of the versions. A missing
 * time taken as older would let one unreadable answer block every readable version after it;
 * taken as newer, an answer written late (a fetch in flight, a quarantine retry) would
 * overwrite one the provider gave after it.
 */
export async function savePmsReservation(trx: Transaction<Database>, rows: PmsReservationRows): Promise<boolean> {
  const { property_id, number } = rows.reservation;
  const written = await trx
    .insertInto('pms_reservations')
    .values(rows.reservation)
    .onConflict((oc) =>
      oc
        .columns(['property_id', 'number'])
        .doUpdateSet((eb) => {
          const set: Record<string, unknown> = {};
          for (const col of Object.keys(rows.reservation)) {
            if (col !== 'property_id' && col !== 'number' && col !== 'synced_at') set[col] = eb.ref(`excluded.${col}` as never);
          }
          // Written now, whatever the mapping's own clock said (migrations/0013_synced_at.sql).
          set.synced_at = sql`now()`;
          return set;
        })
        .where(
          sql<boolean>`CASE WHEN pms_reservations.modified_at IS NOT NULL AND excluded.modified_at IS NOT NULL
            THEN pms_reservations.modified_at <= excluded.modified_at
            ELSE pms_reservations.fetched_at <= excluded.fetched_at END`,
        ),
    )
    .returning('number')
    .executeTakeFirst();
  if (!written) return false;
  await trx.deleteFrom('pms_room_stays').where('property_id', '=', property_id).where('number', '=', number).execute();
  if (rows.roomStays.length > 0) await trx.insertInto('pms_room_stays').values(rows.roomStays).execute();
  await recordStayVersions(trx, [{ property_id, number }]);
  if (rows.invoices) await replaceInvoices(trx, property_id, number, rows.invoices);
  if (rows.customer) await upsertPmsGuest(trx, rows.customer);
  return true;
}

/** Replaces the invoices of a reservation (and their items) with those read with its version. */
export async function replaceInvoices(
  trx: Executor,
  propertyId: string,
  number: string,
  invoices: { invoices: NewPmsInvoice[]; items: NewPmsInvoiceItem[] },
): Promise<void> {
  await trx.deleteFrom('pms_invoice_items').where('property_id', '=', propertyId).where('number', '=', number).execute();
  await trx.deleteFrom('pms_invoices').where('property_id', '=', propertyId).where('number', '=', number).execute();
  if (invoices.invoices.length > 0) await trx.insertInto('pms_invoices').values(invoices.invoices).execute();
  if (invoices.items.length > 0) await trx.insertInto('pms_invoice_items').values(invoices.items).execute();
}

/**
 * Adds to pms_stay_versions what the reservations' room stays (as just written) changed: for
 * each stay whose status, room, room type or planned or actual times differ from its open
 * version (or that has none), the open version ends and the new one starts at the
 * reservation's modification (its fetch when it has none); a stay gone from the reservation has
 * its version ended. One statement for any number of reservations (the sync writes one, a
 * rebuild a batch).
 */
export async function recordStayVersions(trx: Executor, keys: readonly { property_id: string; number: string }[]): Promise<void> {
  if (keys.length === 0) return;
  const tracked = sql`status, room_id, room_type_id, check_in_at, check_out_at, actual_check_in_at, actual_check_out_at`;
  await sql`
    WITH k AS (
      SELECT r.property_id, r.number, COALESCE(r.modified_at, r.fetched_at) AS at
        FROM unnest(${keys.map((k) => k.property_id)}::text[], ${keys.map((k) => k.number)}::text[]) AS x(property_id, number)
        JOIN pms_reservations r ON r.property_id = x.property_id AND r.number = x.number
    ), cur AS (
      SELECT s.property_id, s.number, COALESCE(s.pms_room_stay_id, '#' || s.position) AS stay_key, k.at, s.status, s.room_id,
             s.room_type_id, s.check_in_at, s.check_out_at, s.actual_check_in_at, s.actual_check_out_at
        FROM k JOIN pms_room_stays s ON s.property_id = k.property_id AND s.number = k.number
    ), open AS (
      SELECT v.* FROM k JOIN pms_stay_versions v ON v.property_id = k.property_id AND v.number = k.number AND v.valid_to IS NULL
    ), ended AS (
      UPDATE pms_stay_versions v SET valid_to = GREATEST(k.at, v.valid_from), synced_at = now()
        FROM k
       WHERE v.property_id = k.property_id AND v.number = k.number AND v.valid_to IS NULL
         AND NOT EXISTS (SELECT 1 FROM cur c WHERE c.property_id = v.property_id AND c.number = v.number AND c.stay_key = v.stay_key
                            AND (c.status, c.room_id, c.room_type_id, c.check_in_at, c.check_out_at, c.actual_check_in_at, c.actual_check_out_at)
                                IS NOT DISTINCT FROM (v.status, v.room_id, v.room_type_id, v.check_in_at, v.check_out_at, v.actual_check_in_at, v.actual_check_out_at))
    )
    INSERT INTO pms_stay_versions (property_id, number, stay_key, valid_from, ${tracked})
    SELECT c.property_id, c.number, c.stay_key, GREATEST(c.at, (SELECT max(o.valid_from) FROM open o WHERE o.property_id = c.property_id AND o.number = c.number AND o.stay_key = c.stay_key)),
           c.status, c.room_id, c.room_type_id, c.check_in_at, c.check_out_at, c.actual_check_in_at, c.actual_check_out_at
      FROM cur c
     WHERE NOT EXISTS (SELECT 1 FROM open o WHERE o.property_id = c.property_id AND o.number = c.number AND o.stay_key = c.stay_key
                          AND (c.status, c.room_id, c.room_type_id, c.check_in_at, c.check_out_at, c.actual_check_in_at, c.actual_check_out_at)
                              IS NOT DISTINCT FROM (o.status, o.room_id, o.room_type_id, o.check_in_at, o.check_out_at, o.actual_check_in_at, o.actual_check_out_at))`.execute(
    trx,
  );
}

/**
 * Writes a guest profile unless the stored one was fetched later (the version guard of
 * profiles, which carry no modification time: the later read wins, ties to the one written
 * now), so that an older body (a fetch in flight, a quarantine retry) never overwrites a newer
 * profile. Returns false when the stored one was newer and nothing was written.
 */
export async function upsertPmsGuest(db: Executor, row: NewPmsGuest): Promise<boolean> {
  const r = await db
    .insertInto('pms_guests')
    .values(row)
    .onConflict((oc) =>
      oc
        .columns(['property_id', 'pms_person_id'])
        .doUpdateSet((eb) => ({
          first_name: eb.ref('excluded.first_name'),
          last_name: eb.ref('excluded.last_name'),
          middle_name: eb.ref('excluded.middle_name'),
          gender: eb.ref('excluded.gender'),
          status_name: eb.ref('excluded.status_name'),
          email: eb.ref('excluded.email'),
          phone: eb.ref('excluded.phone'),
          birth_date: eb.ref('excluded.birth_date'),
          citizenship: eb.ref('excluded.citizenship'),
          email_hash: eb.ref('excluded.email_hash'),
          phone_hash: eb.ref('excluded.phone_hash'),
          fetched_at: eb.ref('excluded.fetched_at'),
          raw: eb.ref('excluded.raw'),
          synced_at: sql`now()`,
        }))
        .where(sql<boolean>`pms_guests.fetched_at <= excluded.fetched_at`),
    )
    .returning('pms_person_id')
    .executeTakeFirst();
  return r !== undefined;
}

/**
 * The guest profiles of a fetched reservation to fetch: those not mirrored yet, and all of
 * them when the mirror holds the reservation at an older version than `modifiedAt` (or either
 * modification is unknown), so that a correction or an erasure made at the provider reaches
 * the mirror with the reservation's next change. One read for both.
 */
export function guestProfilesToFetch(
  db: Executor,
  propertyId: string,
  number: string,
  modifiedAt: string | Date | null | undefined,
  ids: readonly string[],
): Promise<string[]> {
  return personsToRead(db, propertyId, number, modifiedAt, ids, sql`TRUE`);
}

/** The persons of `ids` whose loyalty cards to read with this version of the reservation: as guestProfilesToFetch, counting a person whose cards were never read as new. */
export function loyaltyCardsToRead(
  db: Executor,
  propertyId: string,
  number: string,
  modifiedAt: string | Date | null | undefined,
  ids: readonly string[],
): Promise<string[]> {
  return personsToRead(db, propertyId, number, modifiedAt, ids, sql`g.loyalty_cards_read_at IS NOT NULL`);
}

/** `ids` in order, once each: all of them for a newer version of a mirrored reservation, else those without a pms_guests row that is `known`. */
async function personsToRead(
  db: Executor,
  propertyId: string,
  number: string,
  modifiedAt: string | Date | null | undefined,
  ids: readonly string[],
  known: RawBuilder<boolean>,
): Promise<string[]> {
  if (ids.length === 0) return [];
  const given = modifiedAt instanceof Date ? modifiedAt.toISOString() : (modifiedAt ?? null);
  const r = await sql<{ id: string }>`
    WITH refresh AS (
      SELECT EXISTS (SELECT 1 FROM pms_reservations
                      WHERE property_id = ${propertyId} AND number = ${number}
                        AND (modified_at IS NULL OR ${given}::timestamptz IS NULL OR modified_at < ${given}::timestamptz)) AS all_of_them
    )
    SELECT i.id FROM unnest(${[...ids]}::text[]) WITH ORDINALITY AS i(id, n)
     WHERE (SELECT all_of_them FROM refresh)
        OR NOT EXISTS (SELECT 1 FROM pms_guests g WHERE g.property_id = ${propertyId} AND g.pms_person_id = i.id AND ${known})
     GROUP BY i.id ORDER BY min(i.n)`.execute(db);
  return r.rows.map((x) => x.id);
}

/** When a mirrored person's loyalty cards were last read (null: never), or undefined when the person is not mirrored. */
export async function loyaltyCardsReadAt(db: Executor, propertyId: string, personId: string): Promise<{ readAt: Date | null } | undefined> {
  const row = await db
    .selectFrom('pms_guests')
    .select('loyalty_cards_read_at')
    .where('property_id', '=', propertyId)
    .where('pms_person_id', '=', personId)
    .executeTakeFirst();
  return row && { readAt: row.loyalty_cards_read_at };
}

/**
 * Persons of these properties after `after` (key order) whose loyalty cards were never read and
 * whose last answer is not in quarantine (the partial index pms_guests_cards_unread keeps it a
 * small read).
 */
export async function personsWithUnreadLoyaltyCardsAfter(
  db: Executor,
  propertyIds: readonly string[],
  after: readonly [string, string] | null,
  limit: number,
): Promise<{ propertyId: string; personId: string }[]> {
  if (propertyIds.length === 0) return [];
  const r = await sql<{ property_id: string; pms_person_id: string }>`
    SELECT g.property_id, g.pms_person_id FROM pms_guests g
     WHERE g.property_id = ANY(${[...propertyIds]}::text[]) AND g.loyalty_cards_read_at IS NULL
       AND (g.property_id, g.pms_person_id) > (${after?.[0] ?? ''}, ${after?.[1] ?? ''})
       AND NOT EXISTS (SELECT 1 FROM quarantine q WHERE q.stream = 'pms_loyalty_cards' AND q.property_id = g.property_id AND q.entity_key = g.pms_person_id)
     ORDER BY g.property_id, g.pms_person_id LIMIT ${limit}`.execute(db);
  return r.rows.map((x) => ({ propertyId: x.property_id, personId: x.pms_person_id }));
}

/**
 * Per property the mirror follows, what waits for the pass after the backfill: reservations
 * whose invoices and persons whose loyalty cards are not read (0 when none: a gauge that stays,
 * for alerts). The partial indexes answer each count.
 */
export async function unreadPmsReads(db: Executor): Promise<{ propertyId: string; invoices: number; loyaltyCards: number }[]> {
  const r = await sql<{ property_id: string; invoices: string; cards: string }>`
    SELECT p.property_id,
           (SELECT count(*) FROM pms_reservations r WHERE r.property_id = p.property_id AND r.invoices_read_at IS NULL) AS invoices,
           (SELECT count(*) FROM pms_guests g WHERE g.property_id = p.property_id AND g.loyalty_cards_read_at IS NULL) AS cards
      FROM properties p WHERE p.removed_at IS NULL ORDER BY p.property_id`.execute(db);
  return r.rows.map((x) => ({ propertyId: x.property_id, invoices: Number(x.invoices), loyaltyCards: Number(x.cards) }));
}

/** A reservation whose invoices were not read with its version, with what writing them needs. */
export interface UnreadInvoices {
  propertyId: string;
  number: string;
  customerPersonId: string | null;
  customerCompanyName: string | null;
  currencyCode: string | null;
}

/**
 * Reservations of these properties after `after` (key order) whose invoices were not read with
 * their version and whose last invoices answer is not in quarantine (the partial index
 * pms_reservations_invoices_unread keeps it a small read).
 */
export async function invoicesUnreadAfter(
  db: Executor,
  propertyIds: readonly string[],
  after: readonly [string, string] | null,
  limit: number,
): Promise<UnreadInvoices[]> {
  if (propertyIds.length === 0) return [];
  const r = await sql<{
    property_id: string;
    number: string;
    customer_person_id: string | null;
    customer_company_name: string | null;
    currency_code: string | null;
  }>`
    SELECT r.property_id, r.number, r.customer_person_id, r.customer_company_name, r.currency_code FROM pms_reservations r
     WHERE r.property_id = ANY(${[...propertyIds]}::text[]) AND r.invoices_read_at IS NULL
       AND (r.property_id, r.number) > (${after?.[0] ?? ''}, ${after?.[1] ?? ''})
       AND NOT EXISTS (SELECT 1 FROM quarantine q WHERE q.stream = 'pms_invoices' AND q.property_id = r.property_id AND q.entity_key = r.number)
     ORDER BY r.property_id, r.number LIMIT ${limit}`.execute(db);
  return r.rows.map((x) => ({
    propertyId: x.property_id,
    number: x.number,
    customerPersonId: x.customer_person_id,
    customerCompanyName: x.customer_company_name,
    currencyCode: x.currency_code,
  }));
}

/**
 * A reservation's invoices as read at `readAt` by the pass after a backfill, written only when
 * the mirrored version still waits for them and was fetched before the read: a newer version
 * fetched meanwhile, or invoices read with one, win.
 */
export async function replaceInvoicesIfUnread(
  trx: Transaction<Database>,
  propertyId: string,
  number: string,
  invoices: { invoices: NewPmsInvoice[]; items: NewPmsInvoiceItem[] },
  readAt: Date,
): Promise<boolean> {
  // synced_at stays: the reservation's data did not change (its room stays share its synced_at);
  // the invoices written are new rows, with their own.
  const r = await sql`UPDATE pms_reservations SET invoices_read_at = ${readAt}
     WHERE property_id = ${propertyId} AND number = ${number} AND invoices_read_at IS NULL AND fetched_at <= ${readAt}`.execute(trx);
  if (Number(r.numAffectedRows ?? 0) === 0) return false;
  await replaceInvoices(trx, propertyId, number, invoices);
  return true;
}

/**
 * A person's loyalty cards as read at `readAt`, replacing the mirrored ones; the person's row
 * (written before, in the same transaction) records the read. Cards read before the mirrored
 * ones (the pass after a backfill, beside a fetch that read them with a change) are not written.
 */
export async function replaceLoyaltyCards(
  trx: Executor,
  propertyId: string,
  personId: string,
  cards: readonly NewPmsGuestLoyaltyCard[],
  readAt: Date,
): Promise<void> {
  const newer = await trx
    .selectFrom('pms_guests')
    .select('pms_person_id')
    .where('property_id', '=', propertyId)
    .where('pms_person_id', '=', personId)
    .where('loyalty_cards_read_at', '>', readAt)
    .executeTakeFirst();
  if (newer) return;
  await trx.deleteFrom('pms_guest_loyalty_cards').where('property_id', '=', propertyId).where('pms_person_id', '=', personId).execute();
  if (cards.length > 0)
    await trx
      .insertInto('pms_guest_loyalty_cards')
      .values([...cards])
      .execute();
  await trx
    .updateTable('pms_guests')
    .set({ loyalty_cards_read_at: readAt })
    .where('property_id', '=', propertyId)
    .where('pms_person_id', '=', personId)
    .execute();
}

/** What the replay of a reservation's quarantined invoices needs of the mirrored reservation, or undefined when it is not mirrored. */
export async function reservationOfInvoices(
  db: Executor,
  propertyId: string,
  number: string,
): Promise<{ customerPersonId: string | null; customerCompanyName: string | null; currencyCode: string | null; invoicesReadAt: Date | null } | undefined> {
  const r = await sql<{ customer_person_id: string | null; customer_company_name: string | null; currency_code: string | null; invoices_read_at: Date | null }>`
    SELECT customer_person_id, customer_company_name, currency_code, invoices_read_at FROM pms_reservations
     WHERE property_id = ${propertyId} AND number = ${number}`.execute(db);
  const row = r.rows[0];
  return (
    row && {
      customerPersonId: row.customer_person_id,
      customerCompanyName: row.customer_company_name,
      currencyCode: row.currency_code,
      invoicesReadAt: row.invoices_read_at,
    }
  );
}

/**
 * The currency of each mirrored reservation given, by `property_id/number`: what an invoice
 * item that gives none is in (a rebuild of the invoices of a batch asks once).
 */
export async function reservationCurrencies(db: Executor, keys: readonly { property_id: string; number: string }[]): Promise<Map<string, string | null>> {
  if (keys.length === 0) return new Map();
  const r = await sql<{ key: string; currency_code: string | null }>`
    SELECT r.property_id || '/' || r.number AS key, r.currency_code
      FROM unnest(${keys.map((k) => k.property_id)}::text[], ${keys.map((k) => k.number)}::text[]) AS x(property_id, number)
      JOIN pms_reservations r ON r.property_id = x.property_id AND r.number = x.number`.execute(db);
  return new Map(r.rows.map((x) => [x.key, x.currency_code]));
}

/** Replaces a reservation's invoices with those of a replayed answer, read at `readAt`. */
export async function replaceInvoicesReadAt(
  trx: Executor,
  propertyId: string,
  number: string,
  invoices: { invoices: NewPmsInvoice[]; items: NewPmsInvoiceItem[] },
  readAt: Date,
): Promise<void> {
  await replaceInvoices(trx, propertyId, number, invoices);
  await sql`UPDATE pms_reservations SET invoices_read_at = ${readAt}, synced_at = now() WHERE property_id = ${propertyId} AND number = ${number}`.execute(trx);
}

/**
 * Whether the invoices of a reservation are to be read with the version `modifiedAt`: when it
 * is newer than the mirrored one, when the mirrored one's were never read, or when either
 * version has no modification time (the invoices may have changed; see savePmsReservation).
 */
export async function invoicesToFetch(db: Executor, propertyId: string, number: string, modifiedAt: string | Date | null | undefined): Promise<boolean> {
  const given = modifiedAt instanceof Date ? modifiedAt.toISOString() : (modifiedAt ?? null);
  const r = await sql<{ current: boolean }>`
    SELECT EXISTS (SELECT 1 FROM pms_reservations
                    WHERE property_id = ${propertyId} AND number = ${number} AND invoices_read_at IS NOT NULL
                      AND modified_at IS NOT NULL AND ${given}::timestamptz IS NOT NULL AND modified_at >= ${given}::timestamptz) AS current`.execute(db);
  return !r.rows[0]?.current;
}

/**
 * Enqueues reservation fetches. With `unlessFetchedSince`, a number whose mirrored version was
 * fetched at or after that instant is skipped: its modification (found in a window that ended
 * before it) is already in the mirror. Returns how many were enqueued.
 */
export async function enqueuePmsReservations(
  trx: Executor,
  propertyId: string,
  numbers: readonly string[],
  priority: number,
  unlessFetchedSince: Date | null,
): Promise<number> {
  if (numbers.length === 0) return 0;
  const r = await sql<{ number: string }>`
    INSERT INTO pms_reservation_queue AS q (property_id, number, priority, generation)
    SELECT ${propertyId}, n, ${priority}, nextval('pms_reservation_queue_generation')
    FROM unnest(${[...new Set(numbers)]}::text[]) AS n
    LEFT JOIN pms_reservations r ON r.property_id = ${propertyId} AND r.number = n
    WHERE ${unlessFetchedSince === null ? sql`true` : sql`r.number IS NULL OR r.fetched_at < ${unlessFetchedSince}`}
    ON CONFLICT (property_id, number) DO UPDATE SET priority = LEAST(q.priority, excluded.priority), ${requeueSet}
    RETURNING q.number`.execute(trx);
  return r.rows.length;
}

/**
 * Removes the reservation fetch parked as quarantined: the quarantine retry mirrored the
 * reservation (this version or a newer one) from its quarantined body.
 */
export async function settleQuarantinedPmsFetch(trx: Executor, propertyId: string, number: string): Promise<void> {
  await sql`DELETE FROM pms_reservation_queue WHERE property_id = ${propertyId} AND number = ${number} AND state = 'quarantined'`.execute(trx);
}

/** When the mirrored profile of a person was fetched; undefined when it is not mirrored. */
export async function pmsGuestFetchedAt(db: Executor, propertyId: string, personId: string): Promise<Date | undefined> {
  const r = await db
    .selectFrom('pms_guests')
    .select('fetched_at')
    .where('property_id', '=', propertyId)
    .where('pms_person_id', '=', personId)
    .executeTakeFirst();
  return r?.fetched_at;
}

// ------------------------------------------------------------------ daily occupancy

/** The figures of an occupancy night: what a version of daily_occupancy_history is made of. */
const OCCUPANCY_FIGURES = [
  'currency_code',
  'property_room_count',
  'occupancy_rate',
  'closed_room_count',
  'occupancy_room_count',
  'complimentary_occupancy_room_count',
  'room_revenue',
  'revenue',
  'meal_revenue',
  'arrival_count',
  'guest_count',
] as const;

/**
 * Writes one read of an occupancy window (dates `from` to `to`, read at `readAt`) in the
 * caller's transaction, and returns how many nights it found new, changed or gone.
 *
 * Only what changed is written (a refresh reads 731 nights every few hours, and most are as
 * they were): a night whose figures and day object equal the stored ones costs no row write; a
 * changed or new one is upserted in daily_occupancy, and when its figures changed, its open
 * version in daily_occupancy_history ends at `readAt` and the new one starts there; a night of
 * the window the answer no longer gives is removed and its version ended. The property's row of
 * occupancy_refreshes adds the window to the refresh started at `refresh.startedAt` (the one
 * row an unchanged window writes).
 */
export async function writeOccupancyWindow(
  trx: Executor,
  propertyId: string,
  from: string,
  to: string,
  rows: NewDailyOccupancy[],
  readAt: Date,
  refresh: { startedAt: Date } = { startedAt: readAt },
): Promise<number> {
  const figures = sql.join(OCCUPANCY_FIGURES.map((c) => sql.id(c)));
  const figuresOf = (alias: string) => sql.join(OCCUPANCY_FIGURES.map((c) => sql.ref(`${alias}.${c}`)));
  const incoming = rows.map((r) => ({ ...r, raw: typeof r.raw === 'string' ? r.raw : JSON.stringify(r.raw) }));
  const written = await sql<{ stay_date: string }>`
    WITH incoming AS (
      SELECT * FROM jsonb_to_recordset(${JSON.stringify(incoming)}::jsonb) AS x(
        property_id text, stay_date date, currency_code text, property_room_count integer, occupancy_rate numeric,
        closed_room_count integer, occupancy_room_count integer, complimentary_occupancy_room_count integer,
        room_revenue numeric, revenue numeric, meal_revenue numeric, arrival_count integer, guest_count integer,
        refreshed_at timestamptz, raw text)
    )
    INSERT INTO daily_occupancy AS d (property_id, stay_date, ${figures}, refreshed_at, raw)
    SELECT i.property_id, i.stay_date, ${figuresOf('i')}, i.refreshed_at, i.raw::jsonb
      FROM incoming i
     WHERE NOT EXISTS (SELECT 1 FROM daily_occupancy s
                        WHERE s.property_id = i.property_id AND s.stay_date = i.stay_date
                          AND (${figuresOf('s')}, s.raw) IS NOT DISTINCT FROM (${figuresOf('i')}, i.raw::jsonb))
    ON CONFLICT (property_id, stay_date) DO UPDATE SET
      ${sql.join(OCCUPANCY_FIGURES.map((c) => sql`${sql.id(c)} = excluded.${sql.id(c)}`))},
      -- When these figures were first read: kept when only the day object changed.
      refreshed_at = CASE WHEN (${figuresOf('d')}) IS NOT DISTINCT FROM (${figuresOf('excluded')}) THEN d.refreshed_at ELSE excluded.refreshed_at END,
      raw = excluded.raw,
      synced_at = now()
    RETURNING d.stay_date::text AS stay_date`.execute(trx);
  const gone = await sql<{ stay_date: string }>`
    DELETE FROM daily_occupancy
     WHERE property_id = ${propertyId} AND stay_date BETWEEN ${from}::date AND ${to}::date
       AND stay_date::text <> ALL (${rows.map((r) => r.stay_date)}::text[])
    RETURNING stay_date::text AS stay_date`.execute(trx);
  const touched = [...written.rows, ...gone.rows].map((r) => r.stay_date);
  if (touched.length > 0) await recordOccupancyVersions(trx, propertyId, touched, readAt);
  // The refresh's row: the nights it read so far (its windows are read in date order).
  await sql`
    INSERT INTO occupancy_refreshes AS o (property_id, started_at, read_at, first_date, last_date, nights, nights_changed)
    VALUES (${propertyId}, ${refresh.startedAt}, ${readAt}, ${from}::date, ${to}::date, ${rows.length}, ${touched.length})
    ON CONFLICT (property_id) DO UPDATE SET
      first_date = CASE WHEN o.started_at = excluded.started_at THEN LEAST(o.first_date, excluded.first_date) ELSE excluded.first_date END,
      last_date = CASE WHEN o.started_at = excluded.started_at THEN GREATEST(o.last_date, excluded.last_date) ELSE excluded.last_date END,
      nights = CASE WHEN o.started_at = excluded.started_at THEN o.nights + excluded.nights ELSE excluded.nights END,
      nights_changed = CASE WHEN o.started_at = excluded.started_at THEN o.nights_changed + excluded.nights_changed ELSE excluded.nights_changed END,
      started_at = excluded.started_at, read_at = excluded.read_at, synced_at = now()`.execute(trx);
  return touched.length;
}

/**
 * Brings daily_occupancy_history in line with daily_occupancy for the given nights, as read at
 * `readAt`: an open version whose figures differ from the stored night's (or whose night is
 * gone) ends at `readAt`, and the stored figures open a new version there. A version that
 * would end where it started (two reads at one instant) is replaced rather than kept empty.
 */
async function recordOccupancyVersions(trx: Executor, propertyId: string, dates: readonly string[], readAt: Date): Promise<void> {
  const figures = sql.join(OCCUPANCY_FIGURES.map((c) => sql.id(c)));
  const same = sql`(${sql.join(OCCUPANCY_FIGURES.map((c) => sql.ref(`d.${c}`)))}) IS NOT DISTINCT FROM (${sql.join(OCCUPANCY_FIGURES.map((c) => sql.ref(`h.${c}`)))})`;
  const stale = sql`h.property_id = ${propertyId} AND h.stay_date::text = ANY (${[...dates]}::text[]) AND h.valid_to IS NULL
    AND NOT EXISTS (SELECT 1 FROM daily_occupancy d WHERE d.property_id = h.property_id AND d.stay_date = h.stay_date AND ${same})`;
  await sql`DELETE FROM daily_occupancy_history h WHERE ${stale} AND h.valid_from >= ${readAt}`.execute(trx);
  await sql`UPDATE daily_occupancy_history h SET valid_to = ${readAt}, synced_at = now() WHERE ${stale}`.execute(trx);
  await sql`
    INSERT INTO daily_occupancy_history (property_id, stay_date, valid_from, ${figures})
    SELECT d.property_id, d.stay_date, ${readAt}, ${sql.join(OCCUPANCY_FIGURES.map((c) => sql.ref(`d.${c}`)))}
      FROM daily_occupancy d
     WHERE d.property_id = ${propertyId} AND d.stay_date::text = ANY (${[...dates]}::text[])
       AND NOT EXISTS (SELECT 1 FROM daily_occupancy_history h
                        WHERE h.property_id = d.property_id AND h.stay_date = d.stay_date AND h.valid_to IS NULL AND ${same})`.execute(trx);
}

/**
 * What a stored occupancy day keeps of the answer it came in (its currency and the property's
 * room count) and when it was refreshed; undefined when the day is not stored.
 */
export async function storedOccupancyDay(
  db: Executor,
  propertyId: string,
  stayDate: string,
): Promise<{ currency_code: string | null; property_room_count: number; refreshed_at: Date } | undefined> {
  const r = await sql<{ currency_code: string | null; property_room_count: number; refreshed_at: Date }>`
    SELECT currency_code, property_room_count, refreshed_at FROM daily_occupancy WHERE property_id = ${propertyId} AND stay_date::text = ${stayDate}`.execute(
    db,
  );
  return r.rows[0];
}
