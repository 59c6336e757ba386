import { sql } from 'kysely';
import type { Db } from '../database.js';

export interface LeaseStatus {
  /** Who took the lease last, and when. */
  holder: string | null;
  acquiredAt: Date | null;
  epoch: string | null;
  /** Whether some session holds the schema's advisory lock right now. */
  heldNow: boolean;
}

/** The writer lease as the database sees it (for `status`): read-only, takes no lock. */
export async function leaseStatus(db: Db, schema: string): Promise<LeaseStatus> {
  const row = await db.selectFrom('sync_lease').select(['holder', 'acquired_at', 'epoch']).where('name', '=', 'writer').executeTakeFirst();
  // An advisory lock on a bigint key shows in pg_locks as classid (high 32 bits) and objid (low 32 bits).
  const held = await sql<{ n: string }>`
    SELECT count(*) AS n FROM pg_locks
    WHERE locktype = 'advisory' AND granted AND objsubid = 1
      AND ((classid::bigint << 32) | objid::bigint) = hashtext(${`staysync:${schema}`})::bigint`.execute(db);
  return {
    holder: row?.holder ?? null,
    acquiredAt: row?.acquired_at ?? null,
    epoch: row?.epoch ?? null,
    heldNow: Number(held.rows[0]?.n ?? 0) > 0,
  };
}
