/**
 * The token endpoint's budget shared by replicas. Its limit (3/s, 15/min, 300/h) is per IP
 * address, so replicas that leave through one address must not each spend it: before a token
 * request, a replica admits it here, in one transaction serialised per egress by an advisory
 * lock: when every window of rateLimits.token has room, the request is recorded and may go;
 * otherwise the gate says how long until the oldest request of the full window leaves it.
 * The process's own token budget still applies on top (and paces its connections among
 * themselves); this gate only adds the other replicas' requests.
 *
 * When the database does not answer, the request goes with the local budget alone (said once):
 * a replica must be able to renew its tokens through a database outage.
 */
import { sql } from 'kysely';
import type { RateWindow } from '../config/config.js';
import type { Logger } from '../util/log.js';
import type { Clock } from '../util/clock.js';
import type { Db } from '../store/types.js';

export interface TokenGateOptions {
  db: Db;
  egress: string;
  windows: readonly RateWindow[];
  clock: Clock;
  logger: Logger;
}

export class TokenGate {
  private readonly longestMs: number;
  private saidUnavailable = false;
  private admitted = 0;
  private waits = 0;

  constructor(private readonly opts: TokenGateOptions) {
    this.longestMs = Math.max(...opts.windows.map((w) => w.windowMs));
  }

  /** Admitted requests and the times one had to wait for another replica's (metrics, bench). */
  get stats(): { admitted: number; waits: number } {
    return { admitted: this.admitted, waits: this.waits };
  }

  /** Resolves when this replica may send a token request (recorded as sent). */
  async admit(signal: AbortSignal): Promise<void> {
    for (;;) {
      if (signal.aborted) throw signal.reason;
      let waitMs: number;
      try {
        waitMs = await this.tryAdmit();
      } catch (err) {
        if (!this.saidUnavailable) {
          this.saidUnavailable = true;
          this.opts.logger.warn({ err: (err as Error).message }, 'the shared token budget is unavailable (database): token requests follow this process\'s own budget until it answers');
        }
        return;
      }
      this.saidUnavailable = false;
      if (waitMs <= 0) {
        this.admitted += 1;
        return;
      }
      this.waits += 1;
      await this.opts.clock.sleep(waitMs, signal);
    }
  }

  /** 0 when admitted (and recorded), else how long to wait before trying again. */
  private async tryAdmit(): Promise<number> {
    const { db, egress, windows } = this.opts;
    return db.transaction().execute(async (trx) => {
      await sql`SELECT pg_advisory_xact_lock(hashtext(${`staysync-token:${egress}`}))`.execute(trx);
      // The windows that are full, and when the oldest of their last `limit` requests leaves
      // them. clock_timestamp(), not now(): the lock may have been waited for.
      const r = await sql<{ frees_in_ms: number | null }>`
        SELECT extract(epoch FROM (min(t.sent_at) + make_interval(secs => w.window_ms / 1000.0) - clock_timestamp())) * 1000 AS frees_in_ms
        FROM unnest(${windows.map((w) => w.windowMs)}::int[], ${windows.map((w) => w.limit)}::int[]) AS w(window_ms, lim)
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
      await sql`DELETE FROM token_requests WHERE ctid IN (SELECT ctid FROM token_requests WHERE egress = ${egress} AND sent_at < now() - make_interval(secs => ${this.longestMs / 1000}) LIMIT 100)`.execute(trx);
      return 0;
    });
  }
}
