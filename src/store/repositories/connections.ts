/**
 * Which API connection a property's bookkeeping belongs to (migrations/0010_connections.sql).
 * New rows take the connection of the transaction that writes them; a property that moves to
 * another connection (the hotel issued new credentials, the operator moved it) is adopted
 * when that connection starts following it, so its cursors and queued fetches go with it.
 */
import { sql } from 'kysely';
import type { Executor } from '../types.js';

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

export interface ConnectionStatusRow {
  connection: string;
  state: string;
  since: Date;
  reason: string | null;
  /** The replica syncing it now (its lease unexpired, the replica alive); null when none. */
  syncedBy: string | null;
  properties: number;
  queuePending: number;
}

/** Every connection the schema knows, with who syncs it now (for `status`; reads only). */
export async function connectionStatus(db: Executor): Promise<ConnectionStatusRow[]> {
  const r = await sql<{
    connection: string;
    state: string;
    state_since: Date;
    reason: string | null;
    synced_by: string | null;
    properties: string;
    pending: string;
  }>`
    SELECT c.connection, c.state, c.state_since, c.reason,
           CASE WHEN c.lease_expires_at > now() AND EXISTS (SELECT 1 FROM sync_replicas r WHERE r.replica_id = c.replica_id AND r.expires_at > now())
                THEN c.holder END AS synced_by,
           (SELECT count(DISTINCT property_id) FROM sync_cursors s WHERE s.connection = c.connection) AS properties,
           (SELECT count(*) FROM booking_detail_queue q WHERE q.connection = c.connection AND q.state = 'pending') AS pending
    FROM sync_connections c ORDER BY c.connection`.execute(db);
  return r.rows.map((x) => ({
    connection: x.connection,
    state: x.synced_by === null && (x.state === 'running' || x.state === 'starting') ? 'waiting' : x.state,
    since: x.state_since,
    reason: x.reason,
    syncedBy: x.synced_by,
    properties: Number(x.properties),
    queuePending: Number(x.pending),
  }));
}

/** The replicas alive now and how many connections each syncs. */
export async function replicaStatus(db: Executor): Promise<{ holder: string; startedAt: Date; heartbeatAt: Date; connections: number }[]> {
  const r = await sql<{ host: string; pid: number; command: string; started_at: Date; heartbeat_at: Date; n: string }>`
    SELECT r.host, r.pid, r.command, r.started_at, r.heartbeat_at,
           (SELECT count(*) FROM sync_connections c WHERE c.replica_id = r.replica_id AND c.lease_expires_at > now()) AS n
    FROM sync_replicas r WHERE r.expires_at > now() ORDER BY r.started_at`.execute(db);
  return r.rows.map((x) => ({
    holder: `${x.host} pid ${x.pid}${x.command === 'run' ? '' : ` (${x.command})`}`,
    startedAt: x.started_at,
    heartbeatAt: x.heartbeat_at,
    connections: Number(x.n),
  }));
}
