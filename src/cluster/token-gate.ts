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
import type { RateWindow } from '../config/config.js';
import type { Logger } from '../util/log.js';
import type { Clock } from '../util/clock.js';
import type { Db } from '../store/types.js';
import { admitTokenRequest } from '../store/repositories/token-requests.js';

/**
 * How much longer than the provider's each window is counted here. A request is recorded when
 * it is admitted, and reaches the provider after the commit, the connection and the TLS
 * handshake: two replicas' requests admitted a window apart could arrive closer than that, and
 * the provider counts arrivals (the fleet bench saw 429s of the 3-a-second window without it).
 * 250 ms costs nothing at the binding windows (15 a minute, 300 an hour).
 */
export const TOKEN_GATE_GUARD_MS = 250;

export interface TokenGateOptions {
  db: Db;
  egress: string;
  windows: readonly RateWindow[];
  clock: Clock;
  logger: Logger;
}

export class TokenGate {
  private saidUnavailable = false;
  private admitted = 0;
  private waits = 0;

  constructor(private readonly opts: TokenGateOptions) {}

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
          this.opts.logger.warn(
            { err: (err as Error).message },
            "the shared token budget is unavailable (database): token requests follow this process's own budget until it answers",
          );
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
  private tryAdmit(): Promise<number> {
    return admitTokenRequest(this.opts.db, this.opts.egress, this.opts.windows, TOKEN_GATE_GUARD_MS);
  }
}
