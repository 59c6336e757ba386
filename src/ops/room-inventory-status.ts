/**
 * The part of `status` that says why a property's inventory by room type and stay units are
 * empty. Both are asked for the PMS's own codes (room types, rate plans), which only
 * integration-storage bookings and inventory blocks name: the PMS and content APIs give ids,
 * not those codes (the provider's documents). And the integration storage has no list to read:
 * its bookings and blocks are fetched when a change event names them. Without events, nothing
 * can be asked, and the views built on them (daily_kpis_by_room_type, stay_units_reconciliation,
 * segment_mix, block_pickup) stay empty: said here, not left to be guessed.
 */
import type { Config } from '../config/config.js';
import type { Db } from '../store/types.js';
import { propertiesWithoutStorageItems } from '../store/repositories/room-inventory.js';

export interface RoomInventoryWithoutCodes {
  propertyId: string;
  why: string;
}

export async function gatherRoomInventoryWithoutCodes(db: Db, config: Config): Promise<RoomInventoryWithoutCodes[]> {
  const events = config.webhooks.enabled
    ? 'no integration-storage change event has named this property yet'
    : 'webhooks.enabled is off (see docs/first-real-sync.md, Reports that need change events)';
  const why =
    'no integration-storage booking or inventory block is mirrored, and only they name the PMS codes these are asked for; ' +
    `the integration storage has no list to read them from: change events bring them, and ${events}`;
  return (await propertiesWithoutStorageItems(db)).map((propertyId) => ({ propertyId, why }));
}

export function roomInventoryLines(rows: readonly RoomInventoryWithoutCodes[]): string[] {
  return rows.map((r) => `property ${r.propertyId}: inventory by room type and stay units empty: ${r.why}`);
}
