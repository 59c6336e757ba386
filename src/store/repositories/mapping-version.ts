/**
 * The mapping version the typed tables were built with (mirror_settings), and whether the
 * mirror holds anything built by a mapping at all: what the mapping upgrade (src/replay/upgrade.ts)
 * decides from.
 */
import { sql } from 'kysely';
import type { Executor } from '../types.js';

const SETTING = 'mapping_version';

/** The mapping version the typed tables were built with; null when none is recorded. */
export async function storedMappingVersion(db: Executor): Promise<number | null> {
  const r = await sql<{ value: string }>`SELECT value FROM mirror_settings WHERE name = ${SETTING}`.execute(db);
  const v = r.rows[0]?.value;
  if (v === undefined) return null;
  const n = Number(v);
  return Number.isInteger(n) ? n : null;
}

export async function saveMappingVersion(trx: Executor, version: number): Promise<void> {
  await sql`
    INSERT INTO mirror_settings (name, value, updated_at) VALUES (${SETTING}, ${String(version)}, now())
    ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`.execute(trx);
}

/** True when any table the mapping fills from raw, or the quarantine, holds a row. */
export async function mirrorHoldsRows(db: Executor): Promise<boolean> {
  const tables = [
    'bookings',
    'booking_summaries',
    'properties',
    'reference_lists',
    'cancellation_rules',
    'extra_stay_rules',
    'pms_reservations',
    'pms_guests',
    'pms_rooms',
    'pms_companies',
    'daily_occupancy',
    'integration_storage_bookings',
    'inventory_blocks',
    'quarantine',
  ];
  const r = await sql<{ e: boolean }>`SELECT ${sql.join(
    tables.map((t) => sql`EXISTS (SELECT 1 FROM ${sql.table(t)})`),
    sql` OR `,
  )} AS e`.execute(db);
  return r.rows[0]?.e === true;
}
