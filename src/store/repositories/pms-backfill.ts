/**
 * What the PMS backfills have still to read, per API connection: the reservations waiting in
 * the fetch queue, and what the pass after a backfill reads (pms-deferred-reads.ts): the
 * invoices of reservations and the loyalty cards of persons not read yet.
 */
import { sql } from 'kysely';
import type { Executor } from '../types.js';

export interface PmsBackfillLeft {
  connection: string;
  reservations: number;
  invoices: number;
  loyaltyCards: number;
}

/** Per connection (the one whose PMS search cursor holds the property), the reads left; connections with none left out. */
export async function pmsBackfillLeft(db: Executor): Promise<PmsBackfillLeft[]> {
  const r = await sql<{ connection: string; reservations: string; invoices: string; cards: string }>`
    SELECT c.connection,
           sum((SELECT count(*) FROM pms_reservation_queue q WHERE q.property_id = c.property_id AND q.state = 'pending')) AS reservations,
           sum((SELECT count(*) FROM pms_reservations r WHERE r.property_id = c.property_id AND r.invoices_read_at IS NULL)) AS invoices,
           sum((SELECT count(*) FROM pms_guests g WHERE g.property_id = c.property_id AND g.loyalty_cards_read_at IS NULL)) AS cards
      FROM sync_cursors c WHERE c.stream = 'pms_reservations'
     GROUP BY c.connection ORDER BY c.connection`.execute(db);
  return r.rows
    .map((x) => ({ connection: x.connection, reservations: Number(x.reservations), invoices: Number(x.invoices), loyaltyCards: Number(x.cards) }))
    .filter((x) => x.reservations + x.invoices + x.loyaltyCards > 0);
}
