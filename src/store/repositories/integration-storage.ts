/**
 * The PMS integration storage in the mirror: storage bookings with their channels and nights,
 * inventory blocks with their days (migrations/0004_pms.sql, 0022_storage_typed.sql), as
 * src/mapping/integration-storage.ts maps them. A version is written only when it is not older
 * than the stored one (updated_at), and then its children are replaced whole in the same
 * transaction: the children always belong to the version in the parent row.
 */
import { sql, type Insertable } from 'kysely';
import type { Database, InventoryBlockRows, StorageBookingRows } from '../schema.js';
import type { Executor } from '../types.js';

/** Rows per INSERT: well within PostgreSQL's 65,535 parameters for the widest child (16 columns). */
const INSERT_CHUNK = 1_000;

async function insertChunked<T extends 'integration_storage_booking_channels' | 'integration_storage_booking_nights' | 'inventory_block_days'>(
  db: Executor,
  table: T,
  rows: readonly Insertable<Database[T]>[],
): Promise<void> {
  for (let i = 0; i < rows.length; i += INSERT_CHUNK)
    await db
      .insertInto(table)
      .values(rows.slice(i, i + INSERT_CHUNK))
      .execute();
}

type StorageTable = 'integration_storage_bookings' | 'inventory_blocks';

/** Upserts a row of a storage table unless the stored one is newer (updated_at); synced_at is the transaction's time. */
async function saveVersioned(db: Executor, table: StorageTable, row: Record<string, unknown>): Promise<boolean> {
  const keys = table === 'integration_storage_bookings' ? ['property_id', 'booking_id'] : ['property_id', 'inventory_block_id'];
  const cols = Object.keys(row);
  const r = await sql<{ k: string }>`
    INSERT INTO ${sql.table(table)} AS t (${sql.join(cols.map((c) => sql.id(c)))})
    VALUES (${sql.join(cols.map((c) => sql`${row[c] ?? null}`))})
    ON CONFLICT (${sql.join(keys.map((k) => sql.id(k)))}) DO UPDATE SET
      ${sql.join(cols.filter((c) => !keys.includes(c) && c !== 'synced_at').map((c) => sql`${sql.id(c)} = excluded.${sql.id(c)}`))},
      synced_at = now()
    WHERE t.updated_at IS NULL OR excluded.updated_at IS NULL OR t.updated_at <= excluded.updated_at
    RETURNING 1 AS k`.execute(db);
  return r.rows.length > 0;
}

/**
 * Writes a storage booking version with its channels and nights; false (nothing written) when
 * the stored version is newer.
 */
export async function saveStorageBooking(db: Executor, rows: StorageBookingRows): Promise<boolean> {
  if (!(await saveVersioned(db, 'integration_storage_bookings', rows.booking))) return false;
  const { property_id, booking_id } = rows.booking;
  await db.deleteFrom('integration_storage_booking_channels').where('property_id', '=', property_id).where('booking_id', '=', booking_id).execute();
  await db.deleteFrom('integration_storage_booking_nights').where('property_id', '=', property_id).where('booking_id', '=', booking_id).execute();
  await insertChunked(db, 'integration_storage_booking_channels', rows.channels);
  await insertChunked(db, 'integration_storage_booking_nights', rows.nights);
  return true;
}

/** Writes an inventory block version with its days; false (nothing written) when the stored version is newer. */
export async function saveInventoryBlock(db: Executor, rows: InventoryBlockRows): Promise<boolean> {
  if (!(await saveVersioned(db, 'inventory_blocks', rows.block))) return false;
  const { property_id, inventory_block_id } = rows.block;
  await db.deleteFrom('inventory_block_days').where('property_id', '=', property_id).where('inventory_block_id', '=', inventory_block_id).execute();
  await insertChunked(db, 'inventory_block_days', rows.days);
  return true;
}
