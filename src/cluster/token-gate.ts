/**
 * The token endpoint's budget shared by replicas. Its limit (3/s, 15/min, 300/h) is per IP
 * address, so replicas that leave through one address must not each spend it: before a token
 * request, a replica admits it here, in one transaction serialised per egress by an advisory
 * lock: when every window of rateLimits.token has room, the request is recorded and may go;
 * otherwise the gate says how long until the oldest request of the full window leaves it.
 * The process's own token budget still applies on top (and paces its connections among
 * themselves); this gate only adds the other replicas' requests.
 *
 * The requests waiting in a process are admitted together, in one transaction, at most one
 * every TOKEN_GATE_SPACING_MS unless a full window is what they wait for: a thousand
 * connections renew about 1.2 tokens a second, and one transaction each was a fifth of what a
 * quiet fleet cost the database.
 *
 * When the database does not answer, the requests go with the local budget alone (said once):
 * a replica must be able to renew its tokens through a database outage.
 */
import type { RateWindow } from '../config/config.js';
import type { Logger } from '../util/log.js';
import type { Clock } from '../util/clock.js';
import type { Db } from '../store/types.js';
import { admitTokenRequests, type TokenAdmission } from '../store/repositories/token-requests.js';

/**
 * How much longer than the provider's each window is counted here. A request is recorded when
 * it is admitted, and reaches the provider after the commit, the connection and the TLS
 * handshake: two replicas' requests admitted a window apart could arrive closer than that, and
 * the provider counts arrivals (the fleet bench saw 429s of the 3-a-second window without it).
 * 250 ms costs nothing at the binding windows (15 a minute, 300 an hour).
 */
export const TOKEN_GATE_GUARD_MS = 250;

/**
 * At most one admission transaction per process in this time, unless a full window is what
 * the requests wait for or a batch is full (as many requests as the smallest window allows:
 * a catch-up's go as fast as the windows let them). A request that finds the gate idle goes
 * at once (with the others of the same turn of the event loop); one that comes within 5 s of
 * the last admission waits for the next, with the others of those 5 s. Tokens are renewed a
 * minute before they expire (provider.tokenRenewBeforeExpiryMs), so the wait costs nothing.
 * The daemon takes it from replicas.tokenGateSpacingMs (default this).
 */
export const TOKEN_GATE_SPACING_MS = 5_000;

export interface TokenGateOptions {
  db: Db;
  egress: string;
  windows: readonly RateWindow[];
  clock: Clock;
  logger: Logger;
  /** Default TOKEN_GATE_SPACING_MS. */
  spacingMs?: number;
}

interface Waiter {
  resolve: () => void;
  signal: AbortSignal;
  onAbort: () => void;
}

export class TokenGate {
  private saidUnavailable = false;
  private admitted = 0;
  private waits = 0;
  private transactions = 0;
  private readonly waiting: Waiter[] = [];
  private pumping = false;
  private lastTryAt = Number.NEGATIVE_INFINITY;
  /** Ends the pump's sleep once no request is left waiting. */
  private wake: AbortController | undefined;
  /** Ends the pump's wait for the spacing once a batch is full. */
  private spaced: AbortController | undefined;
  /** A full batch: the smallest window's limit (the 3 a second of the token endpoint). */
  private readonly batchSize: number;

  constructor(private readonly opts: TokenGateOptions) {
    this.batchSize = Math.max(1, Math.min(...opts.windows.map((w) => w.limit)));
  }

  /**
   * Admitted requests, the times some had to wait for a full window (another replica's
   * requests or this one's), and the admission transactions (metrics, bench, tests).
   */
  get stats(): { admitted: number; waits: number; transactions: number } {
    return { admitted: this.admitted, waits: this.waits, transactions: this.transactions };
  }

  /** Resolves when this replica may send a token request (recorded as sent). */
  admit(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        signal,
        onAbort: () => {
          this.leave(waiter);
          reject(signal.reason as Error);
        },
      };
      signal.addEventListener('abort', waiter.onAbort, { once: true });
      this.waiting.push(waiter);
      // A full batch does not wait for the spacing: a catch-up's requests go as fast as the windows let them.
      if (this.waiting.length >= this.batchSize) this.spaced?.abort();
      if (this.pumping) return;
      // At the next turn of the event loop: the requests of this one go together.
      this.pumping = true;
      setImmediate(() => void this.pump());
    });
  }

  private leave(waiter: Waiter): void {
    const i = this.waiting.indexOf(waiter);
    if (i >= 0) this.waiting.splice(i, 1);
    if (this.waiting.length === 0) this.wake?.abort();
  }

  /** Admits the waiting requests, in as few transactions as the spacing and the windows allow. */
  private async pump(): Promise<void> {
    const { clock } = this.opts;
    const spacingMs = this.opts.spacingMs ?? TOKEN_GATE_SPACING_MS;
    try {
      let waitMs = this.lastTryAt + spacingMs - clock.now();
      let forSpacing = true;
      while (this.waiting.length > 0) {
        if (waitMs > 0 && !(forSpacing && this.waiting.length >= this.batchSize)) {
          this.wake = new AbortController();
          if (forSpacing) this.spaced = this.wake;
          await clock.sleep(waitMs, this.wake.signal).catch(() => undefined);
          this.wake = undefined;
          this.spaced = undefined;
          if (this.waiting.length === 0) return;
        }
        this.lastTryAt = clock.now();
        let result: TokenAdmission;
        try {
          result = await this.tryAdmit(this.waiting.length);
        } catch (err) {
          if (!this.saidUnavailable) {
            this.saidUnavailable = true;
            this.opts.logger.warn(
              { err: (err as Error).message },
              "the shared token budget is unavailable (database): token requests follow this process's own budget until it answers",
            );
          }
          // Let through the ones that asked; those that come meanwhile try the database again.
          this.release(this.waiting.length);
          waitMs = spacingMs;
          forSpacing = true;
          continue;
        }
        this.saidUnavailable = false;
        this.admitted += Math.min(result.admitted, this.waiting.length);
        this.release(result.admitted);
        forSpacing = result.waitMs <= 0;
        if (result.waitMs > 0) {
          this.waits += 1;
          waitMs = result.waitMs;
        } else waitMs = spacingMs;
      }
    } finally {
      this.pumping = false;
    }
  }

  /** Lets the first `count` waiting requests go. */
  private release(count: number): void {
    for (const w of this.waiting.splice(0, count)) {
      w.signal.removeEventListener('abort', w.onAbort);
      w.resolve();
    }
  }

  private tryAdmit(wanted: number): Promise<TokenAdmission> {
    this.transactions += 1;
    return admitTokenRequests(this.opts.db, this.opts.egress, this.opts.windows, wanted, TOKEN_GATE_GUARD_MS);
  }
}
