/**
 * Rooms by type: the accommodation inventory (replaced whole when it changed), the inventory
 * days of each room type (windows replaced whole), the stay units (one row a rate plan code and
 * month), and the PMS codes the mirror knows, read from what it holds (integration-storage
 * bookings, inventory blocks) and paired with content ids.
 */
import { sql } from 'kysely';
import type { NewPmsBuilding, NewPmsFloor, NewPmsRoomPlace, NewRoomTypeInventoryDay, NewStayUnits } from '../schema.js';
import type { Executor } from '../types.js';

/** At most this many codes a property are asked for: what the mirror holds comes from outside. */
export const MAX_CODES_PER_PROPERTY = 200;

/** The stored accommodation inventory's hash, or undefined. */
export async function accommodationHash(db: Executor, propertyId: string): Promise<string | undefined> {
  const r = await db.selectFrom('pms_accommodation_inventories').select('content_hash').where('property_id', '=', propertyId).executeTakeFirst();
  return r?.content_hash;
}

/** Replaces the property's buildings, floors and rooms' places, and keeps the inventory as received. */
export async function replaceAccommodation(
  trx: Executor,
  propertyId: string,
  rows: { buildings: NewPmsBuilding[]; floors: NewPmsFloor[]; rooms: NewPmsRoomPlace[]; contentHash: string },
  raw: unknown,
  refreshedAt: Date,
): Promise<void> {
  await trx.deleteFrom('pms_room_places').where('property_id', '=', propertyId).execute();
  await trx.deleteFrom('pms_floors').where('property_id', '=', propertyId).execute();
  await trx.deleteFrom('pms_buildings').where('property_id', '=', propertyId).execute();
  if (rows.buildings.length > 0) await trx.insertInto('pms_buildings').values(rows.buildings).execute();
  if (rows.floors.length > 0) await trx.insertInto('pms_floors').values(rows.floors).execute();
  // In chunks: a hotel of thousands of rooms stays within the statement's parameter limit.
  for (let i = 0; i < rows.rooms.length; i += 1000)
    await trx
      .insertInto('pms_room_places')
      .values(rows.rooms.slice(i, i + 1000))
      .execute();
  await trx
    .insertInto('pms_accommodation_inventories')
    .values({ property_id: propertyId, raw: JSON.stringify(raw), content_hash: rows.contentHash, refreshed_at: refreshedAt })
    .onConflict((oc) =>
      oc.column('property_id').doUpdateSet({ raw: JSON.stringify(raw), content_hash: rows.contentHash, refreshed_at: refreshedAt, synced_at: sql`now()` }),
    )
    .execute();
}

/** Replaces the inventory days of `propertyId` over [from, to] (every room type) with `rows`. */
export async function replaceInventoryWindow(trx: Executor, propertyId: string, from: string, to: string, rows: NewRoomTypeInventoryDay[]): Promise<void> {
  await trx.deleteFrom('room_type_inventory_days').where('property_id', '=', propertyId).where('stay_date', '>=', from).where('stay_date', '<=', to).execute();
  for (let i = 0; i < rows.length; i += 1000)
    await trx
      .insertInto('room_type_inventory_days')
      .values(rows.slice(i, i + 1000))
      .execute();
}

export async function upsertStayUnits(trx: Executor, rows: NewStayUnits[]): Promise<void> {
  if (rows.length === 0) return;
  await trx
    .insertInto('stay_units')
    .values(rows)
    .onConflict((oc) =>
      oc.columns(['property_id', 'rate_plan_code', 'month']).doUpdateSet((eb) => ({
        first_stay_date: eb.ref('excluded.first_stay_date'),
        last_stay_date: eb.ref('excluded.last_stay_date'),
        stay_units: eb.ref('excluded.stay_units'),
        read_at: eb.ref('excluded.read_at'),
        synced_at: sql`now()`,
      })),
    )
    .execute();
}

/**
 * The stay units of the property's months before `thisMonth` that were read after the month
 * ended (the day `read_at` fell on in `timeZone`, the property's, is after its last stay date),
 * as `code\nmonth` keys: a refresh does not ask for them again.
 */
export async function stayUnitsReadAfterMonthEnded(db: Executor, propertyId: string, thisMonth: string, timeZone: string): Promise<Set<string>> {
  const r = await sql<{ key: string }>`
    SELECT rate_plan_code || chr(10) || to_char(month, 'YYYY-MM-DD') AS key FROM stay_units
     WHERE property_id = ${propertyId} AND month < ${thisMonth}::date AND (read_at AT TIME ZONE ${timeZone})::date > last_stay_date`.execute(db);
  return new Set(r.rows.map((x) => x.key));
}

/**
 * The properties whose inventory by room type or stay units refresh ran (its cursor is active)
 * while the mirror holds no integration-storage booking and no inventory block of theirs: the
 * only answers that name the PMS codes those are asked for.
 */
export async function propertiesWithoutStorageItems(db: Executor): Promise<string[]> {
  const r = await sql<{ property_id: string }>`
    SELECT DISTINCT c.property_id FROM sync_cursors c
     WHERE c.stream IN ('room_type_inventory', 'stay_units') AND c.state = 'active'
       AND NOT EXISTS (SELECT 1 FROM integration_storage_bookings b WHERE b.property_id = c.property_id)
       AND NOT EXISTS (SELECT 1 FROM inventory_blocks i WHERE i.property_id = c.property_id)
     ORDER BY c.property_id`.execute(db);
  return r.rows.map((x) => x.property_id);
}

/** The elements of a JSON array (none when the value is not an array: raw is as the provider sent it). */
const elements = (json: ReturnType<typeof sql>) => sql`jsonb_array_elements(CASE WHEN jsonb_typeof(${json}) = 'array' THEN ${json} ELSE '[]'::jsonb END)`;

/**
 * The PMS room type codes the mirror knows for a property: those of its integration-storage
 * bookings' room stays (roomTypes[].pmsSideCode) and of its inventory blocks' days
 * (dailyItems[].roomTypeCode); sorted, at most MAX_CODES_PER_PROPERTY, each at most 100 characters.
 */
export async function knownRoomTypeCodes(db: Executor, propertyId: string): Promise<string[]> {
  const r = await sql<{ code: string }>`
    SELECT code FROM (
      SELECT rt->>'pmsSideCode' AS code
      FROM integration_storage_bookings b, ${elements(sql`b.raw->'roomStays'`)} rs, ${elements(sql`rs->'roomTypes'`)} rt
      WHERE b.property_id = ${propertyId}
      UNION
      SELECT d->>'roomTypeCode'
      FROM inventory_blocks ib, ${elements(sql`ib.raw->'dailyItems'`)} d
      WHERE ib.property_id = ${propertyId}
    ) c
    WHERE code <> '' AND length(code) <= 100
    ORDER BY code
    LIMIT ${MAX_CODES_PER_PROPERTY}`.execute(db);
  return r.rows.map((x) => x.code);
}

/**
 * The PMS rate plan codes the mirror knows for a property: those of its integration-storage
 * bookings' room stays (ratePlans[].pmsSideCode) and of its inventory blocks (rate_plan_codes).
 */
export async function knownRatePlanCodes(db: Executor, propertyId: string): Promise<string[]> {
  const r = await sql<{ code: string }>`
    SELECT code FROM (
      SELECT rp->>'pmsSideCode' AS code
      FROM integration_storage_bookings b, ${elements(sql`b.raw->'roomStays'`)} rs, ${elements(sql`rs->'ratePlans'`)} rp
      WHERE b.property_id = ${propertyId}
      UNION
      SELECT unnest(ib.rate_plan_codes) FROM inventory_blocks ib WHERE ib.property_id = ${propertyId}
    ) c
    WHERE code <> '' AND length(code) <= 100
    ORDER BY code
    LIMIT ${MAX_CODES_PER_PROPERTY}`.execute(db);
  return r.rows.map((x) => x.code);
}

/**
 * Pairs the PMS codes of the integration-storage bookings' room stays with the content ids of
 * the same booking's stay at the same position (the bookings mirror's booking_room_stays, else
 * the PMS mirror's pms_room_stays for room types), and replaces the property's pairs with them:
 * the first room type and the first rate plan of each stay.
 */
export async function learnCodePairs(trx: Executor, propertyId: string, kind: 'room_type' | 'rate_plan', at: Date): Promise<number> {
  const table = kind === 'room_type' ? 'pms_room_type_codes' : 'pms_rate_plan_codes';
  await trx.deleteFrom(table).where('property_id', '=', propertyId).execute();
  const code = kind === 'room_type' ? sql`rs.stay->'roomTypes'->0->>'pmsSideCode'` : sql`rs.stay->'ratePlans'->0->>'pmsSideCode'`;
  const contentId = kind === 'room_type' ? sql`COALESCE(s.room_type_id, ps.room_type_id)` : sql`s.rate_plan_id`;
  const r = await sql`
    INSERT INTO ${sql.table(table)} (property_id, ${sql.ref(`${kind}_code`)}, ${sql.ref(`${kind}_id`)}, room_stays, learnt_at)
    SELECT b.property_id, ${code}, ${contentId}, count(*), ${at}
    FROM integration_storage_bookings b
    CROSS JOIN LATERAL ${elements(sql`b.raw->'roomStays'`)} WITH ORDINALITY AS rs(stay, n)
    LEFT JOIN booking_room_stays s ON s.property_id = b.property_id AND s.number = b.booking_number AND s.stay_index = rs.n - 1
    LEFT JOIN pms_room_stays ps ON ps.property_id = b.property_id AND ps.number = b.booking_number AND ps.position = rs.n - 1
    WHERE b.property_id = ${propertyId} AND b.booking_number IS NOT NULL
      AND ${code} <> '' AND length(${code}) <= 100 AND ${contentId} IS NOT NULL
    GROUP BY 1, 2, 3`.execute(trx);
  return Number(r.numAffectedRows ?? 0);
}
