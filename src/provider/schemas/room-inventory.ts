/**
 * Tolerant schemas of rooms by type (same rules as pms.ts): the PMS accommodation inventory
 * (PmsApi_ObtainAccommodationInventoryResponse: buildings > floors > rooms), the integration
 * storage's inventory search (PmsIntegrationApi_SearchInventoryRs) and its stay units
 * (PmsIntegrationApi_BookedNightsCountRs). The answers' envelopes are checked here; the
 * records of an inventory search are parsed one by one, so that one bad record is quarantined
 * alone.
 */
import { z } from 'zod';
import { dateOnly, id, int, list, nullable, optId, optString, optUtcDateTime } from './primitives.js';
import { safe, type ParseResult } from './bookings.js';

/** The longest PMS code kept (room type, rate plan): a longer one is not a code but damage. */
export const MAX_PMS_CODE_LENGTH = 100;

const responseError = z.looseObject({ code: optString, message: optString });

const accommodationRoom = z.looseObject({ id, displayName: optString, roomTypeId: optId, floorId: optId });
const floor = z.looseObject({ id, name: optString, rooms: list(accommodationRoom) });
const building = z.looseObject({ id, name: optString, floors: list(floor) });

export const accommodationInventorySchema = z.looseObject({ buildings: list(building) });
export type AccommodationInventory = z.output<typeof accommodationInventorySchema>;

/**
 * The whole answer: the tree is small (a hotel's rooms), so it is parsed, and quarantined, as
 * one. `inventory` is null when the answer holds no tree, or a tree without its `buildings`:
 * such an answer says nothing of the rooms, and the mirrored tree is kept.
 */
export function parseAccommodationInventory(raw: unknown): ParseResult<{ inventory: AccommodationInventory | null; raw: unknown }> {
  const r = safe(
    z.looseObject({
      warnings: list(responseError),
      errors: list(responseError),
      accommodationInventory: nullable(z.unknown()),
    }),
    raw,
    'response',
  );
  if (!r.ok) return r;
  const tree = r.value.accommodationInventory;
  const says = tree !== null && tree !== undefined && (typeof tree !== 'object' || (tree as { buildings?: unknown }).buildings != null);
  if (!says) return { ok: true, value: { inventory: null, raw: tree } };
  const parsed = safe(accommodationInventorySchema, tree, 'accommodationInventory');
  return parsed.ok ? { ok: true, value: { inventory: parsed.value, raw: tree } } : parsed;
}

const pmsCode = z.string().min(1, 'expected a code').max(MAX_PMS_CODE_LENGTH, `expected a code of at most ${MAX_PMS_CODE_LENGTH} characters`);

export const roomTypeInventoryDaySchema = z.looseObject({
  roomTypeCode: pmsCode,
  date: dateOnly,
  physicalRoomCount: int,
  availableRoomCount: int,
  outOfOrderRoomCount: int,
  updateDateTime: optUtcDateTime,
});
export type RoomTypeInventoryDay = z.output<typeof roomTypeInventoryDaySchema>;

/**
 * The envelope of an inventory search: `{ inventory: { propertyId, inventories } }`, the records
 * left raw; `inventories` null when the answer does not hold them (it then says nothing of the
 * window's days, and none is replaced).
 */
export function parseInventorySearch(raw: unknown): ParseResult<{ propertyId: string | null; inventories: unknown[] | null }> {
  const r = safe(
    z.looseObject({
      inventory: z.looseObject({
        propertyId: optId,
        inventories: z
          .array(z.unknown())
          .nullish()
          .transform((v) => v ?? null),
      }),
    }),
    raw,
    'response',
  );
  return r.ok ? { ok: true, value: r.value.inventory } : r;
}

export function parseRoomTypeInventoryDay(raw: unknown): ParseResult<RoomTypeInventoryDay> {
  return safe(roomTypeInventoryDaySchema, raw, 'inventories[]');
}

/** `{ stayUnits }`: a count, never negative. */
export function parseStayUnits(raw: unknown): ParseResult<number> {
  const r = safe(z.looseObject({ stayUnits: int.refine((n) => n >= 0, 'expected a count (0 or more)') }), raw, 'response');
  return r.ok ? { ok: true, value: r.value.stayUnits } : r;
}
