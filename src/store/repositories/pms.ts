/**
 * PMS mirror: reservations with their room stays, persons (customers and guests), the fetch
 * queue's enqueue, rooms, daily occupancy, integration-storage bookings and inventory blocks.
 * Reservations, storage bookings and blocks are version-guarded (an older payload never
 * overwrites a newer one); occupancy windows are replaced whole.
 */
import { sql, type Insertable, type Transaction } from 'kysely';
import type { InventoryBlock, PmsPerson, PmsReservation, StorageBooking } from '../../provider/schemas/pms.js';
import type {
  Database,
  DailyOccupancyTable,
  InventoryBlocksTable,
  IntegrationStorageBookingsTable,
  PmsGuestsTable,
  PmsReservationsTable,
  PmsRoomStaysTable,
} from '../schema.js';
import { requeueSet } from './fetch-queue.js';
import type { Executor } from '../types.js';

/** Money arrives as its exact text (schema-primitives `num`) and goes to numeric columns as text. */
const money = (v: string | null | undefined): string | null => v ?? null;
const str = (v: string | null | undefined): string | null => (v === undefined || v === null || v === '' ? null : v);
/** A calendar date or null: the typed column only takes what is a date. */
const date = (v: string | null | undefined): string | null => (v && /^\d{4}-\d{2}-\d{2}/.test(v) ? v.slice(0, 10) : null);

export interface PmsReservationRows {
  reservation: Insertable<PmsReservationsTable>;
  roomStays: Insertable<PmsRoomStaysTable>[];
  /** The customer, as a person row (when the reservation has one with an id). */
  customer: Insertable<PmsGuestsTable> | null;
}

/**
 * A person as a row. `raw` is the object to store (already without personal data when it is
 * off); the personal columns are filled only when `personalData` is true.
 */
export function personToRow(propertyId: string, p: PmsPerson, raw: unknown, personalData: boolean, fetchedAt: Date): Insertable<PmsGuestsTable> | null {
  if (p.pmsPersonId === null) return null;
  return {
    property_id: propertyId,
    pms_person_id: p.pmsPersonId,
    first_name: str(p.personName?.firstName),
    last_name: str(p.personName?.lastName),
    middle_name: str(p.personName?.middleName),
    gender: str(p.gender),
    status_name: str(p.status?.displayName),
    email: personalData ? str(p.emails[0]?.address) : null,
    phone: personalData ? str(p.phones[0]?.phoneNumber) : null,
    birth_date: personalData ? date(p.birthDate) : null,
    citizenship: personalData ? str(p.citizenship) : null,
    fetched_at: fetchedAt,
    raw: JSON.stringify(raw),
  };
}

/** Maps a parsed reservation to its rows. `raw` is what is stored (see personToRow). Pure. */
export function pmsReservationToRows(
  propertyId: string,
  r: PmsReservation,
  raw: unknown,
  opts: { personalData: boolean; fetchedAt: Date },
): PmsReservationRows {
  const key = { property_id: propertyId, number: r.number };
  const c = r.customer;
  const personal = opts.personalData;
  const rawCustomer = (raw as { customer?: unknown } | null)?.customer ?? null;
  return {
    reservation: {
      ...key,
      reservation_status: str(r.reservationStatus),
      modified_at: r.modifyDateTime,
      currency_code: str(r.currencyCode),
      customer_person_id: c?.pmsPersonId ?? null,
      customer_first_name: str(c?.personName?.firstName),
      customer_last_name: str(c?.personName?.lastName),
      customer_middle_name: str(c?.personName?.middleName),
      customer_language_code: str(r.customerLanguageCode),
      customer_email: personal ? str(c?.emails[0]?.address) : null,
      customer_phone: personal ? str(c?.phones[0]?.phoneNumber) : null,
      customer_birth_date: personal ? date(c?.birthDate) : null,
      customer_citizenship: personal ? str(c?.citizenship) : null,
      customer_company_id: r.customerCompany?.id ?? null,
      customer_company_name: str(r.customerCompany?.name),
      customer_company_type: str(r.customerCompany?.type),
      visit_purpose_id: r.visitPurpose?.id ?? null,
      visit_purpose_name: str(r.visitPurpose?.displayName),
      creation_source_id: r.creationSource?.id ?? null,
      creation_source_name: str(r.creationSource?.name),
      channel_name: str(r.channelInformation?.channelName),
      group_name: str(r.groupName),
      customer_comment: str(r.customerComment),
      agent_commission_percent: money(r.agentCommission?.percent),
      agent_commission_amount: money(r.agentCommission?.amount?.value),
      room_stay_count: r.roomStays.length,
      fetched_at: opts.fetchedAt,
      synced_at: new Date(),
      raw: JSON.stringify(raw),
    },
    roomStays: r.roomStays.map((s, position) => ({
      ...key,
      position,
      pms_room_stay_id: s.pmsRoomStayId,
      room_id: s.roomId,
      room_type_id: s.roomTypeId,
      status: str(s.status),
      check_in_at: s.checkInDateTime,
      check_out_at: s.checkOutDateTime,
      actual_check_in_at: s.actualCheckInDateTime,
      actual_check_out_at: s.actualCheckOutDateTime,
      adults: s.guestCount?.adults ?? null,
      children: s.guestCount?.children ?? null,
      amount: money(s.totalPrice?.amount?.value),
      pay_amount: money(s.totalPrice?.payAmount?.value),
      refund_amount: money(s.totalPrice?.refundAmount?.value),
      deposit: money(s.deposit?.value),
      currency_code: str(s.totalPrice?.amount?.currencyCode) ?? str(r.currencyCode),
      guest_person_ids: s.guestsIds,
      amenities: s.amenities.map((a) => a.name).filter((n): n is string => n !== null),
    })),
    customer: c ? personToRow(propertyId, c, rawCustomer, personal, opts.fetchedAt) : null,
  };
}

/**
 * Writes one reservation version: the header only if not older than the stored one (version
 * guard on modified_at), then its room stays replaced and its customer upserted. Returns false
 * when the stored version was newer and nothing was written.
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
            if (col !== 'property_id' && col !== 'number') set[col] = eb.ref(`excluded.${col}` as never);
          }
          return set;
        })
        .where(sql<boolean>`pms_reservations.modified_at IS NULL OR excluded.modified_at IS NULL OR pms_reservations.modified_at <= excluded.modified_at`),
    )
    .returning('number')
    .executeTakeFirst();
  if (!written) return false;
  await trx.deleteFrom('pms_room_stays').where('property_id', '=', property_id).where('number', '=', number).execute();
  if (rows.roomStays.length > 0) await trx.insertInto('pms_room_stays').values(rows.roomStays).execute();
  if (rows.customer) await upsertPmsGuest(trx, rows.customer);
  return true;
}

export async function upsertPmsGuest(db: Executor, row: Insertable<PmsGuestsTable>): Promise<void> {
  await db
    .insertInto('pms_guests')
    .values(row)
    .onConflict((oc) =>
      oc.columns(['property_id', 'pms_person_id']).doUpdateSet((eb) => ({
        first_name: eb.ref('excluded.first_name'),
        last_name: eb.ref('excluded.last_name'),
        middle_name: eb.ref('excluded.middle_name'),
        gender: eb.ref('excluded.gender'),
        status_name: eb.ref('excluded.status_name'),
        email: eb.ref('excluded.email'),
        phone: eb.ref('excluded.phone'),
        birth_date: eb.ref('excluded.birth_date'),
        citizenship: eb.ref('excluded.citizenship'),
        fetched_at: eb.ref('excluded.fetched_at'),
        raw: eb.ref('excluded.raw'),
      })),
    )
    .execute();
}

/** Of `ids`, those not mirrored yet in pms_guests. */
export async function unknownPersonIds(db: Executor, propertyId: string, ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const known = await db
    .selectFrom('pms_guests')
    .select('pms_person_id')
    .where('property_id', '=', propertyId)
    .where('pms_person_id', 'in', [...ids])
    .execute();
  const have = new Set(known.map((k) => k.pms_person_id));
  return [...new Set(ids)].filter((i) => !have.has(i));
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

// ------------------------------------------------------------------ daily occupancy

/** Replaces the occupancy of `propertyId` over [from, to] (dates) with `rows`, in the caller's transaction. */
export async function replaceOccupancyWindow(trx: Executor, propertyId: string, from: string, to: string, rows: Insertable<DailyOccupancyTable>[]): Promise<void> {
  await trx.deleteFrom('daily_occupancy').where('property_id', '=', propertyId).where('stay_date', '>=', from).where('stay_date', '<=', to).execute();
  if (rows.length > 0) await trx.insertInto('daily_occupancy').values(rows).execute();
}

// ------------------------------------------------------------------ integration storage

export function storageBookingToRow(propertyId: string, b: StorageBooking, raw: unknown, fetchedAt: Date): Insertable<IntegrationStorageBookingsTable> {
  const arrivals = b.roomStays.map((s) => s.stayDates?.arrivalDateTime).filter((v): v is string => !!v).sort();
  const departures = b.roomStays.map((s) => s.stayDates?.departureDateTime).filter((v): v is string => !!v).sort();
  return {
    property_id: propertyId,
    booking_id: b.id,
    status: str(b.status),
    booking_number: b.uniqueIds.find((u) => u.idContext === 'External' && u.id)?.id ?? null,
    updated_at: b.updateDateTime,
    pms_updated_at: b.pmsSideUpdateDateTime,
    pms_created_at: b.pmsSideCreateDateTime,
    cancelled_at: b.cancellationInfo?.pmsSideCancelDateTime ?? null,
    cancel_reason: str(b.cancellationInfo?.cancelReason),
    amount_after_tax: money(b.total?.amountAfterTax),
    currency_code: str(b.total?.currencyCode),
    guarantee_code: str(b.guaranteeInfo?.guaranteeCode),
    arrival_at: arrivals[0] ?? null,
    departure_at: departures[departures.length - 1] ?? null,
    fetched_at: fetchedAt,
    synced_at: new Date(),
    raw: JSON.stringify(raw),
  };
}

export function inventoryBlockToRow(propertyId: string, b: InventoryBlock, raw: unknown, fetchedAt: Date): Insertable<InventoryBlocksTable> {
  return {
    property_id: propertyId,
    inventory_block_id: b.id,
    pms_side_id: str(b.pmsSideId),
    pms_side_code: str(b.pmsSideCode),
    block_status: str(b.blockStatus),
    pms_block_status: str(b.pmsBlockStatus),
    updated_at: b.updateDateTime,
    pms_created_at: b.pmsSideCreateDateTime,
    pms_cancelled_at: b.pmsSideCancelDateTime,
    rate_plan_codes: b.ratePlanCodes,
    fetched_at: fetchedAt,
    synced_at: new Date(),
    raw: JSON.stringify(raw),
  };
}

/** Upserts a row of a storage table unless the stored one is newer (updated_at). */
export async function saveVersioned(
  db: Executor,
  table: 'integration_storage_bookings' | 'inventory_blocks',
  row: Record<string, unknown>,
): Promise<boolean> {
  const keys = table === 'integration_storage_bookings' ? ['property_id', 'booking_id'] : ['property_id', 'inventory_block_id'];
  const cols = Object.keys(row);
  const r = await sql<{ k: string }>`
    INSERT INTO ${sql.table(table)} AS t (${sql.join(cols.map((c) => sql.id(c)))})
    VALUES (${sql.join(cols.map((c) => sql`${row[c] ?? null}`))})
    ON CONFLICT (${sql.join(keys.map((k) => sql.id(k)))}) DO UPDATE SET
      ${sql.join(cols.filter((c) => !keys.includes(c)).map((c) => sql`${sql.id(c)} = excluded.${sql.id(c)}`))}
    WHERE t.updated_at IS NULL OR excluded.updated_at IS NULL OR t.updated_at <= excluded.updated_at
    RETURNING 1 AS k`.execute(db);
  return r.rows.length > 0;
}
