/**
 * Rooms by type at the edge and in the mapping: what the schemas refuse (a code too long or
 * missing, a count that is not one, a tree of the wrong shape), the tree as rows (a room or
 * floor listed twice keeps its first place), and the windows and months of a horizon.
 */
import { describe, expect, it } from 'vitest';
import { parseAccommodationInventory, parseInventorySearch, parseRoomTypeInventoryDay, parseStayUnits } from '../../src/provider/schemas/room-inventory.js';
import { accommodationToRows, dateWindows, monthsOf } from '../../src/mapping/room-inventory.js';

const day = {
  roomTypeCode: 'DBL',
  date: '2026-03-15',
  physicalRoomCount: 50,
  availableRoomCount: 25,
  outOfOrderRoomCount: 2,
  updateDateTime: '2026-03-15T14:30:00Z',
};

describe('rooms by type: schemas', () => {
  it('reads a record of the inventory search as documented, and refuses a code too long, empty or missing and a count that is not one', () => {
    expect(parseRoomTypeInventoryDay(day)).toMatchObject({
      ok: true,
      value: { roomTypeCode: 'DBL', physicalRoomCount: 50, updateDateTime: '2026-03-15T14:30:00Z' },
    });
    expect(parseRoomTypeInventoryDay({ ...day, updateDateTime: null })).toMatchObject({ ok: true, value: { updateDateTime: null } });
    for (const bad of [
      { ...day, roomTypeCode: 'X'.repeat(101) },
      { ...day, roomTypeCode: '' },
      { ...day, roomTypeCode: null },
      { ...day, physicalRoomCount: 'many' },
      { ...day, availableRoomCount: 1.5 },
      { ...day, date: '15.03.2026' },
      'DBL',
    ]) {
      expect(parseRoomTypeInventoryDay(bad).ok, JSON.stringify(bad).slice(0, 80)).toBe(false);
    }
  });

  it('reads the envelope of a search without its records, and refuses one without inventory', () => {
    expect(parseInventorySearch({ inventory: { propertyId: '2490', inventories: [day, 'junk'] } })).toEqual({
      ok: true,
      value: { propertyId: '2490', inventories: [day, 'junk'] },
    });
    // Null says nothing of the window's days: none is replaced.
    expect(parseInventorySearch({ inventory: { propertyId: '2490', inventories: null } })).toEqual({
      ok: true,
      value: { propertyId: '2490', inventories: null },
    });
    expect(parseInventorySearch({ errors: [] }).ok).toBe(false);
    expect(parseInventorySearch({ inventory: { inventories: 'x' } }).ok).toBe(false);
  });

  it('reads stay units as a count, never negative', () => {
    expect(parseStayUnits({ stayUnits: 37 })).toEqual({ ok: true, value: 37 });
    for (const bad of [{ stayUnits: -1 }, { stayUnits: 2.5 }, { stayUnits: '37x' }, {}, null]) expect(parseStayUnits(bad).ok, JSON.stringify(bad)).toBe(false);
  });

  it('reads the accommodation tree, an absent one as none (not as empty: the mirrored tree is kept), and refuses one of the wrong shape', () => {
    expect(parseAccommodationInventory({ warnings: [], errors: [] })).toMatchObject({ ok: true, value: { inventory: null } });
    expect(parseAccommodationInventory({ accommodationInventory: { buildings: [] } })).toMatchObject({ ok: true, value: { inventory: { buildings: [] } } });
    expect(parseAccommodationInventory({ accommodationInventory: { buildings: 'the annex' } }).ok).toBe(false);
    expect(parseAccommodationInventory({ accommodationInventory: { buildings: [{ name: 'no id' }] } }).ok).toBe(false);
    expect(
      parseAccommodationInventory({
        accommodationInventory: { buildings: [{ id: 'b', name: 'B', floors: [{ id: 'f', name: 'F', rooms: [{ displayName: 'no id' }] }] }] },
      }).ok,
    ).toBe(false);
  });
});

describe('rooms by type: mapping', () => {
  it('places each room once, under the floor that lists it first, with positions as listed', () => {
    const raw = {
      buildings: [
        {
          id: 'b1',
          name: 'Main building',
          floors: [
            { id: '1', name: '1st floor', rooms: [{ id: 'r1', displayName: '101', roomTypeId: 't1', floorId: '1' }] },
            {
              id: '2',
              name: '2nd floor',
              rooms: [
                { id: 'r1', displayName: '101 again' },
                { id: 'r2', displayName: '201', roomTypeId: 't2', floorId: '9' },
              ],
            },
            { id: '2', name: 'listed twice', rooms: [] },
          ],
        },
        { id: 'b1', name: 'listed twice', floors: [] },
      ],
    };
    const parsed = parseAccommodationInventory({ accommodationInventory: raw });
    if (!parsed.ok || !parsed.value.inventory) throw new Error('the tree does not parse');
    const at = new Date('2026-06-01T00:00:00Z');
    const rows = accommodationToRows('500100', parsed.value.inventory, parsed.value.raw, at);
    expect(rows.buildings).toEqual([{ property_id: '500100', building_id: 'b1', name: 'Main building', position: 0, refreshed_at: at }]);
    expect(rows.floors.map((f) => [f.floor_id, f.name, f.position])).toEqual([
      ['1', '1st floor', 0],
      ['2', '2nd floor', 1],
    ]);
    expect(rows.rooms.map((r) => [r.room_id, r.floor_id, r.display_name, r.room_type_id])).toEqual([
      ['r1', '1', '101', 't1'],
      ['r2', '2', '201', 't2'],
    ]);
    expect(accommodationToRows('500100', parsed.value.inventory, parsed.value.raw, at).contentHash).toBe(rows.contentHash);
    // An answer without a tree, or a tree without its buildings, says nothing of the rooms.
    for (const body of [{}, { accommodationInventory: null }, { accommodationInventory: {} }, { accommodationInventory: { buildings: null } }])
      expect(parseAccommodationInventory(body)).toMatchObject({ ok: true, value: { inventory: null } });
  });

  it('cuts a horizon into windows of at most n nights, and names the months it touches', () => {
    expect(dateWindows('2026-01-01', '2026-01-10', 4)).toEqual([
      { from: '2026-01-01', to: '2026-01-04' },
      { from: '2026-01-05', to: '2026-01-08' },
      { from: '2026-01-09', to: '2026-01-10' },
    ]);
    expect(dateWindows('2026-01-01', '2026-01-01', 366)).toEqual([{ from: '2026-01-01', to: '2026-01-01' }]);
    expect(monthsOf('2025-11-27', '2026-02-03')).toEqual([
      { month: '2025-11-01', from: '2025-11-01', to: '2025-11-30' },
      { month: '2025-12-01', from: '2025-12-01', to: '2025-12-31' },
      { month: '2026-01-01', from: '2026-01-01', to: '2026-01-31' },
      { month: '2026-02-01', from: '2026-02-01', to: '2026-02-28' },
    ]);
    expect(monthsOf('2028-02-10', '2028-02-10')).toEqual([{ month: '2028-02-01', from: '2028-02-01', to: '2028-02-29' }]);
  });
});
