/**
 * token_requests: the token requests sent from one egress address by every replica, for the
 * token endpoint's per-IP budget (the logic is cluster/token-gate.ts).
 */
import { sql } from 'kysely';
import type { RateWindow } from '../../config/config.js';
import type { Db } from '../types.js';

export interface TokenAdmission {
  /** How many of the requests asked for may go now (recorded as sent). */
  admitted: number;
  /** When some could not: how long until a full window has room again (ms); else 0. */
  waitMs: number;
}

/**
 * Admits up to `wanted` token requests from `egress`, as many as every window has room for,
 * and records them; says how long until the oldest request of a full window leaves it when
 * some are left. One transaction, serialised per egress by an advisory lock.
 */
export async function admitTokenRequests(db: Db, egress: string, windows: readonly RateWindow[], wanted: number, guardMs = 0): Promise<TokenAdmission> {
  // Each window counted guardMs longer: see TOKEN_GATE_GUARD_MS (cluster/token-gate.ts).
  const guarded = windows.map((w) => ({ limit: w.limit, windowMs: w.windowMs + guardMs }));
  const longestMs = Math.max(...guarded.map((w) => w.windowMs));
  const windowMs = guarded.map((w) => w.windowMs);
  const limits = guarded.map((w) => w.limit);
  return db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(hashtext(${`staysync-token:${egress}`}))`.execute(trx);
    // The room of the fullest window (each count stops at its limit). clock_timestamp(), not
    // now(): the lock may have been waited for.
    const room = await sql<{ room: number }>`
      SELECT min(w.lim - (
        SELECT count(*) FROM (
          SELECT 1 FROM token_requests
          WHERE egress = ${egress} AND sent_at > clock_timestamp() - make_interval(secs => w.window_ms / 1000.0)
          LIMIT w.lim
        ) r
      ))::int AS room
      FROM unnest(${windowMs}::int[], ${limits}::int[]) AS w(window_ms, lim)`.execute(trx);
    const admitted = Math.max(0, Math.min(wanted, room.rows[0]?.room ?? 0));
    if (admitted > 0) {
      await sql`INSERT INTO token_requests (egress, sent_at) SELECT ${egress}, clock_timestamp() FROM generate_series(1, ${admitted}::int)`.execute(trx);
      // Keep the table to the longest window, a few rows at a time.
      await sql`DELETE FROM token_requests WHERE ctid IN (SELECT ctid FROM token_requests WHERE egress = ${egress} AND sent_at < now() - make_interval(secs => ${longestMs / 1000}) LIMIT 100)`.execute(
        trx,
      );
    }
    if (admitted === wanted) return { admitted, waitMs: 0 };
    // The windows that are full now, and when the oldest of their last `limit` requests leaves them.
    const full = await sql<{ frees_in_ms: number | null }>`
      SELECT extract(epoch FROM (min(t.sent_at) + make_interval(secs => w.window_ms / 1000.0) - clock_timestamp())) * 1000 AS frees_in_ms
      FROM unnest(${windowMs}::int[], ${limits}::int[]) AS w(window_ms, lim)
      LEFT JOIN LATERAL (
        SELECT sent_at FROM token_requests
        WHERE egress = ${egress} AND sent_at > clock_timestamp() - make_interval(secs => w.window_ms / 1000.0)
        ORDER BY sent_at DESC
        LIMIT w.lim
      ) t ON true
      GROUP BY w.window_ms, w.lim
      HAVING count(t.sent_at) >= w.lim`.execute(trx);
    return { admitted, waitMs: Math.max(1, ...full.rows.map((x) => Math.ceil(Number(x.frees_in_ms ?? 1)))) };
  });
}
