/**
 * Rooms by type as rows: the accommodation inventory as buildings, floors and rooms' places;
 * a record of the inventory search as a day of a room type; the months of a horizon (the
 * stay units are asked for month by month). Pure functions, shared by the refresh and tests.
 */
import type { AccommodationInventory, RoomTypeInventoryDay } from '../provider/schemas/room-inventory.js';
import type { NewPmsBuilding, NewPmsFloor, NewPmsRoomPlace, NewRoomTypeInventoryDay } from '../store/schema.js';
import { addDays } from '../util/local-time.js';
import { hashOf } from './content.js';

export interface AccommodationRows {
  buildings: NewPmsBuilding[];
  floors: NewPmsFloor[];
  rooms: NewPmsRoomPlace[];
  contentHash: string;
}

/**
 * The tree as rows. A floor listed twice in a building, or a room listed twice in the tree,
 * keeps its first place (the keys are unique); a room's floor is the floor it is listed
 * under (its own floorId may name another: the tree is what places it).
 */
export function accommodationToRows(propertyId: string, inv: AccommodationInventory, raw: unknown, refreshedAt: Date): AccommodationRows {
  const buildings: NewPmsBuilding[] = [];
  const floors: NewPmsFloor[] = [];
  const rooms: NewPmsRoomPlace[] = [];
  const seenBuildings = new Set<string>();
  const seenFloors = new Set<string>();
  const seenRooms = new Set<string>();
  inv.buildings.forEach((b, bi) => {
    if (seenBuildings.has(b.id)) return;
    seenBuildings.add(b.id);
    buildings.push({ property_id: propertyId, building_id: b.id, name: b.name, position: bi, refreshed_at: refreshedAt });
    b.floors.forEach((f, fi) => {
      const key = `${b.id}\n${f.id}`;
      if (seenFloors.has(key)) return;
      seenFloors.add(key);
      floors.push({ property_id: propertyId, building_id: b.id, floor_id: f.id, name: f.name, position: fi, refreshed_at: refreshedAt });
      for (const r of f.rooms) {
        if (seenRooms.has(r.id)) continue;
        seenRooms.add(r.id);
        rooms.push({
          property_id: propertyId,
          room_id: r.id,
          building_id: b.id,
          floor_id: f.id,
          display_name: r.displayName,
          room_type_id: r.roomTypeId,
          refreshed_at: refreshedAt,
        });
      }
    });
  });
  return { buildings, floors, rooms, contentHash: hashOf(raw) };
}

export function inventoryDayToRow(propertyId: string, d: RoomTypeInventoryDay, raw: unknown, refreshedAt: Date): NewRoomTypeInventoryDay {
  return {
    property_id: propertyId,
    room_type_code: d.roomTypeCode,
    stay_date: d.date,
    physical_room_count: d.physicalRoomCount,
    available_room_count: d.availableRoomCount,
    out_of_order_room_count: d.outOfOrderRoomCount,
    updated_at: d.updateDateTime,
    refreshed_at: refreshedAt,
    raw: JSON.stringify(raw),
  };
}

/** Windows of at most `days` nights (inclusive dates) covering [first, last]. */
export function dateWindows(first: string, last: string, days: number): { from: string; to: string }[] {
  const out: { from: string; to: string }[] = [];
  for (let from = first; from <= last; from = addDays(from, days)) {
    const to = addDays(from, days - 1);
    out.push({ from, to: to < last ? to : last });
  }
  return out;
}

/**
 * The months of a stay-units refresh worth asking for one rate plan code: this month and the
 * later ones every time (their bookings still change), an earlier one only until an answer read
 * after it ended is mirrored (`readAfterItEnded`): from then on its count is the PMS's last word.
 */
export function stayUnitMonthsToAsk<M extends { month: string }>(months: readonly M[], thisMonth: string, readAfterItEnded: (month: string) => boolean): M[] {
  return months.filter((m) => m.month >= thisMonth || !readAfterItEnded(m.month));
}

/** The calendar months (first and last date of each) that [first, last] touches. */
export function monthsOf(first: string, last: string): { month: string; from: string; to: string }[] {
  const out: { month: string; from: string; to: string }[] = [];
  let y = Number(first.slice(0, 4));
  let m = Number(first.slice(5, 7));
  for (;;) {
    const month = `${String(y).padStart(4, '0')}-${String(m).padStart(2, '0')}-01`;
    if (month > last) return out;
    const next = m === 12 ? `${String(y + 1).padStart(4, '0')}-01-01` : `${String(y).padStart(4, '0')}-${String(m + 1).padStart(2, '0')}-01`;
    out.push({ month, from: month, to: addDays(next, -1) });
    if (m === 12) {
      y += 1;
      m = 1;
    } else m += 1;
  }
}
