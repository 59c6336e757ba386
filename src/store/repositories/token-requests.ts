/**
 * token_requests: the token requests sent from one egress address by every replica, for the
 * token endpoint's per-IP budget (the logic is cluster/token-gate.ts).
 */
import { sql } from 'kysely';
import type { RateWindow } from '../../config/config.js';
import type { Db } from '../types.js';

/**
 * Admits one token request from `egress` when every window has room, and records it; else
 * says how long until the oldest request of a full window leaves it. One transaction,
 * serialised per egress by an advisory lock.
 */
export async function admitTokenRequest(db: Db, egress: string, windows: readonly RateWindow[], guardMs = 0): Promise<number> {
  // Each window counted guardMs longer: see TOKEN_GATE_GUARD_MS (cluster/token-gate.ts).
  const guarded = windows.map((w) => ({ limit: w.limit, windowMs: w.windowMs + guardMs }));
  const longestMs = Math.max(...guarded.map((w) => w.windowMs));
  return db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(hashtext(${`staysync-token:${egress}`}))`.execute(trx);
    // The windows that are full, and when the oldest of their last `limit` requests leaves
    // them. clock_timestamp(), not now(): the lock may have been waited for.
    const r = await sql<{ frees_in_ms: number | null }>`
      SELECT extract(epoch FROM (min(t.sent_at) + make_interval(secs => w.window_ms / 1000.0) - clock_timestamp())) * 1000 AS frees_in_ms
      FROM unnest(${guarded.map((w) => w.windowMs)}::int[], ${guarded.map((w) => w.limit)}::int[]) AS w(window_ms, lim)
      LEFT JOIN LATERAL (
        SELECT sent_at FROM token_requests
        WHERE egress = ${egress} AND sent_at > clock_timestamp() - make_interval(secs => w.window_ms / 1000.0)
        ORDER BY sent_at DESC
        LIMIT w.lim
      ) t ON true
      GROUP BY w.window_ms, w.lim
      HAVING count(t.sent_at) >= w.lim`.execute(trx);
    if (r.rows.length > 0) return Math.max(1, ...r.rows.map((x) => Math.ceil(Number(x.frees_in_ms ?? 1))));
    await sql`INSERT INTO token_requests (egress, sent_at) VALUES (${egress}, clock_timestamp())`.execute(trx);
    // Keep the table to the longest window, a few rows at a time.
    await sql`DELETE FROM token_requests WHERE ctid IN (SELECT ctid FROM token_requests WHERE egress = ${egress} AND sent_at < now() - make_interval(secs => ${longestMs / 1000}) LIMIT 100)`.execute(
      trx,
    );
    return 0;
  });
}
