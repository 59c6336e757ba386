/**
 * sync_replicas and sync_connections: the statements of replica coordination (the logic is
 * cluster/replicas.ts). A replica's row expires unless its heartbeat renews it; a connection's
 * lease is its row in sync_connections (holder, expiry, epoch).
 */
import { sql } from 'kysely';
import type { Db, Executor } from '../types.js';
import type { ConnectionState } from '../states.js';

function interval(ms: number): string {
  return `${Math.round(ms)} milliseconds`;
}

export interface ReplicaRow {
  replicaId: string;
  host: string;
  pid: number;
  command: 'run' | 'sync --once';
}

/** The replicas alive now (their heartbeat has not expired), oldest first. */
export async function liveReplicaRows(db: Executor): Promise<{ host: string; pid: number; startedAt: Date }[]> {
  const rows = await db
    .selectFrom('sync_replicas')
    .select(['host', 'pid', 'started_at'])
    .where('expires_at', '>', sql<Date>`now()`)
    .orderBy('started_at')
    .execute();
  return rows.map((r) => ({ host: r.host, pid: r.pid, startedAt: r.started_at }));
}

/** The replicas registered from `host` (alive or not). */
export async function replicasOfHost(db: Executor, host: string): Promise<{ replicaId: string; pid: number }[]> {
  const rows = await db.selectFrom('sync_replicas').select(['replica_id', 'pid']).where('host', '=', host).execute();
  return rows.map((r) => ({ replicaId: r.replica_id, pid: r.pid }));
}

export async function removeReplicas(db: Executor, replicaIds: readonly string[]): Promise<void> {
  if (replicaIds.length === 0) return;
  await db
    .deleteFrom('sync_replicas')
    .where('replica_id', 'in', [...replicaIds])
    .execute();
}

/** Registers (or renews) a replica until `ttlMs` from now. */
export async function registerReplica(db: Executor, r: ReplicaRow, ttlMs: number): Promise<void> {
  await sql`
    INSERT INTO sync_replicas (replica_id, host, pid, expires_at, command)
    VALUES (${r.replicaId}, ${r.host}, ${r.pid}, now() + ${interval(ttlMs)}::interval, ${r.command})
    ON CONFLICT (replica_id) DO UPDATE SET heartbeat_at = now(), expires_at = excluded.expires_at`.execute(db);
}

/**
 * One heartbeat, one round trip: the registration renewed, the leases of `connections` this
 * replica still holds renewed (with their epochs), how many other daemon replicas are alive,
 * and which of those connections have work due that their idle drains may not know of: detail
 * or PMS fetches, or change events (received by another replica, or put there by another
 * process). `unroutedEvents`: change events no connection follows are due.
 * One index probe per connection and queue: the drains sleep while nothing is due.
 */
export async function heartbeat(
  db: Executor,
  r: ReplicaRow,
  ttlMs: number,
  connections: readonly string[],
): Promise<{ renewed: Map<string, string>; otherDaemons: number; workDue: Set<string>; unroutedEvents: boolean }> {
  const rows = await sql<{ kind: string; connection: string | null; epoch: string | null; live: string | null }>`
    WITH me AS (
      INSERT INTO sync_replicas (replica_id, host, pid, expires_at, command)
      VALUES (${r.replicaId}, ${r.host}, ${r.pid}, now() + ${interval(ttlMs)}::interval, ${r.command})
      ON CONFLICT (replica_id) DO UPDATE SET heartbeat_at = now(), expires_at = excluded.expires_at
      RETURNING 1
    ), renewed AS (
      UPDATE sync_connections SET lease_expires_at = now() + ${interval(ttlMs)}::interval
      WHERE replica_id = ${r.replicaId} AND connection = ANY(${[...connections]}::text[])
      RETURNING connection, epoch::text AS epoch
    )
    SELECT 'lease' AS kind, connection, epoch, NULL::bigint AS live FROM renewed
    UNION ALL
    SELECT 'live', NULL, NULL, count(*) FROM sync_replicas WHERE expires_at > now() AND replica_id <> ${r.replicaId} AND command = 'run'
    UNION ALL
    SELECT 'work', c, NULL, NULL FROM unnest(${[...connections]}::text[]) AS c
     WHERE EXISTS (SELECT 1 FROM booking_detail_queue q WHERE q.connection = c AND q.next_attempt_at <= now())
        OR EXISTS (SELECT 1 FROM pms_reservation_queue q WHERE q.connection = c AND q.next_attempt_at <= now())
        OR EXISTS (SELECT 1 FROM webhook_events e JOIN sync_cursors s ON s.property_id = e.property_id
                    WHERE s.connection = c AND e.state IN ('pending', 'waiting') AND e.next_attempt_at <= now())
        OR EXISTS (SELECT 1 FROM webhook_events e
                    WHERE e.property_id IS NULL AND e.connection = c AND e.state IN ('pending', 'waiting') AND e.next_attempt_at <= now())
    UNION ALL
    SELECT 'unrouted', NULL, NULL, NULL WHERE EXISTS (
      SELECT 1 FROM webhook_events e WHERE e.state IN ('pending', 'waiting') AND e.next_attempt_at <= now()
         AND NOT EXISTS (SELECT 1 FROM sync_cursors s WHERE s.property_id = e.property_id OR (e.property_id IS NULL AND s.connection = e.connection)))`.execute(
    db,
  );
  return {
    renewed: new Map(rows.rows.filter((x) => x.kind === 'lease').map((x) => [x.connection!, x.epoch!])),
    otherDaemons: Number(rows.rows.find((x) => x.kind === 'live')?.live ?? 0),
    workDue: new Set(rows.rows.filter((x) => x.kind === 'work').map((x) => x.connection!)),
    unroutedEvents: rows.rows.some((x) => x.kind === 'unrouted'),
  };
}

/** Who holds a connection's lease when another replica cannot take it now; undefined when it can be taken. */
export async function leaseHolderIfBusy(
  db: Executor,
  connection: string,
  replicaId: string,
): Promise<{ holder: string | null; acquiredAt: Date | null } | undefined> {
  const busy = await sql<{ holder: string | null; acquired_at: Date | null }>`
    SELECT c.holder, c.acquired_at FROM sync_connections c
    WHERE c.connection = ${connection}
      AND NOT (c.replica_id IS NULL OR c.replica_id = ${replicaId} OR c.lease_expires_at < now()
               OR NOT EXISTS (SELECT 1 FROM sync_replicas r WHERE r.replica_id = c.replica_id AND r.expires_at > now()))`.execute(db);
  const row = busy.rows[0];
  return row ? { holder: row.holder, acquiredAt: row.acquired_at } : undefined;
}

/** The holder of a connection's lease as recorded (for messages). */
export async function leaseHolder(db: Executor, connection: string): Promise<{ holder: string | null; acquiredAt: Date | null }> {
  const row = await db.selectFrom('sync_connections').select(['holder', 'acquired_at']).where('connection', '=', connection).executeTakeFirst();
  return { holder: row?.holder ?? null, acquiredAt: row?.acquired_at ?? null };
}

/**
 * Takes a connection's lease when it is free, expired, or held by a replica that is dead or
 * gone: its epoch goes up by one. The row is locked FOR UPDATE first, which conflicts with the
 * fences' FOR KEY SHARE: this waits for the previous holder's writes in flight (an UPDATE that
 * changes no key column would not wait). Returns the new epoch and the budget ledger the
 * previous holder left (with its age), or undefined when the lease cannot be taken.
 */
export async function takeLease(
  db: Db,
  connection: string,
  holder: { replicaId: string; name: string; ttlMs: number },
): Promise<{ epoch: string; ledger: unknown; ledgerAgeMs: number | null } | undefined> {
  await sql`INSERT INTO sync_connections (connection) VALUES (${connection}) ON CONFLICT (connection) DO NOTHING`.execute(db);
  return db.transaction().execute(async (trx) => {
    await sql`SELECT 1 FROM sync_connections WHERE connection = ${connection} FOR UPDATE`.execute(trx);
    const taken = await sql<{ epoch: string; ledger: unknown; ledger_age_ms: number | null }>`
      UPDATE sync_connections AS c SET
        epoch = c.epoch + 1, replica_id = ${holder.replicaId}, holder = ${holder.name},
        lease_expires_at = now() + ${interval(holder.ttlMs)}::interval, acquired_at = now(),
        state = 'starting', state_since = now(), reason = NULL
      WHERE c.connection = ${connection}
        AND (c.replica_id IS NULL OR c.replica_id = ${holder.replicaId} OR c.lease_expires_at < now()
             OR NOT EXISTS (SELECT 1 FROM sync_replicas r WHERE r.replica_id = c.replica_id AND r.expires_at > now()))
      RETURNING epoch::text AS epoch, budget_ledger AS ledger, extract(epoch FROM now() - ledger_saved_at) * 1000 AS ledger_age_ms`.execute(trx);
    const row = taken.rows[0];
    return row ? { epoch: row.epoch, ledger: row.ledger, ledgerAgeMs: row.ledger_age_ms === null ? null : Number(row.ledger_age_ms) } : undefined;
  });
}

/** Lets go of a lease held with `epoch`, leaving the connection's state and its budget ledger (when given). */
export async function releaseLease(
  db: Executor,
  connection: string,
  replicaId: string,
  epoch: string,
  end: { state: ConnectionState; reason: string | null; ledger: unknown },
): Promise<void> {
  const ledger = end.ledger === undefined ? null : JSON.stringify(end.ledger);
  await sql`
    UPDATE sync_connections SET replica_id = NULL, lease_expires_at = NULL, state = ${end.state}, reason = ${end.reason}, state_since = now(),
      budget_ledger = ${ledger}::jsonb, ledger_saved_at = ${ledger === null ? sql`NULL` : sql`now()`}
    WHERE connection = ${connection} AND replica_id = ${replicaId} AND epoch = ${epoch}`.execute(db);
}

/** Records a connection's state (only while `replicaId` holds it). */
export async function recordConnectionState(db: Executor, connection: string, replicaId: string, state: ConnectionState, reason: string | null): Promise<void> {
  await sql`
    UPDATE sync_connections SET state = ${state}, reason = ${reason},
      state_since = CASE WHEN state = ${state} THEN state_since ELSE now() END
    WHERE connection = ${connection} AND replica_id = ${replicaId}`.execute(db);
}

/**
 * The fence of a connection's write, the transaction's first statement, as text for the
 * session that runs it: the row of the connection held by `replicaId` with `epoch`, locked
 * FOR KEY SHARE; it also sets `staysync.connection` (the default of the bookkeeping tables'
 * connection column) for the transaction. No row: the lease is another replica's now.
 */
export const CONNECTION_FENCE =
  "SELECT set_config('staysync.connection', connection, true) FROM sync_connections WHERE connection = $1 AND replica_id = $2 AND epoch = $3 FOR KEY SHARE";
