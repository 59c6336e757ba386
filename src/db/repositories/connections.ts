/**
 * Which API connection a property's bookkeeping belongs to (migrations/0010_connections.sql).
 * New rows take the connection of the transaction that writes them; a property that moves to
 * another connection (the hotel issued new credentials, the operator moved it) is adopted
 * when that connection starts following it, so its cursors and queued fetches go with it.
 */
import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database } from '../schema.js';

type Executor = Kysely<Database> | Transaction<Database>;

/** The tables whose rows a connection drains or reports per property. */
const ADOPTED = ['sync_cursors', 'booking_detail_queue', 'pms_reservation_queue', 'properties'] as const;

/** Gives `propertyIds` to `connection` in every bookkeeping table; returns how many rows moved. */
export async function adoptProperties(trx: Executor, connection: string, propertyIds: readonly string[]): Promise<number> {
  if (propertyIds.length === 0) return 0;
  let moved = 0;
  for (const table of ADOPTED) {
    const r = await sql`
      UPDATE ${sql.table(table)} SET connection = ${connection}
      WHERE property_id = ANY(${[...propertyIds]}::text[]) AND connection <> ${connection}`.execute(trx);
    moved += Number(r.numAffectedRows ?? 0);
  }
  return moved;
}
