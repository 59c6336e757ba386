/**
 * Whether the database answers. Any component whose query failed because the server is away
 * reports it here; the first report starts an outage: one log line, a probe with backoff, and
 * every stream waits in `waitUntilAvailable` instead of retrying on its own (one line per
 * outage, not one per retry). The first successful probe ends it with one more line.
 */
import type { Logger } from '../util/log.js';
import type { Clock } from '../util/clock.js';
import { WaitList } from '../util/wait-list.js';
import { describeDatabaseError, isDatabaseUnavailable } from './errors.js';

export interface DatabaseOutage {
  /** When the first failure was reported (epoch ms). */
  since: number;
  lastError: string;
}

const PROBE_MIN_MS = 250;
const PROBE_MAX_MS = 5_000;

export class DatabaseAvailability {
  private outage: DatabaseOutage | undefined;
  private readonly waiters = new WaitList();
  private probing = false;
  private closed = false;
  /** Outages so far (metrics). */
  outages = 0;

  constructor(
    private readonly probe: () => Promise<void>,
    /** The database as the operator knows it: redacted URL and the setting to check. */
    readonly description: string,
    private readonly logger: Logger,
    private readonly clock: Clock,
  ) {}

  get available(): boolean {
    return this.outage === undefined;
  }

  /** The current outage, if any. */
  get current(): DatabaseOutage | undefined {
    return this.outage && { ...this.outage };
  }

  /**
   * Reports a failed query. Returns true when the failure means the database is away (the
   * caller should wait for it and then retry); false for any other error (not handled here).
   */
  report(err: unknown): boolean {
    if (!isDatabaseUnavailable(err)) return false;
    const lastError = describeDatabaseError(err);
    if (this.outage) {
      this.outage.lastError = lastError;
      return true;
    }
    this.outage = { since: this.clock.now(), lastError };
    this.outages += 1;
    this.logger.warn(
      { database: this.description, err: lastError },
      `database unreachable (${this.description}): ${lastError}. Waiting for it; nothing committed is lost`,
    );
    void this.probeUntilBack();
    return true;
  }

  /** Resolves at once when the database is available, else when it is back; rejects when `signal` aborts. */
  waitUntilAvailable(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    return this.outage ? this.waiters.wait(signal) : Promise.resolve();
  }

  /** Stops probing (the process is closing). */
  close(): void {
    this.closed = true;
  }

  private async probeUntilBack(): Promise<void> {
    if (this.probing) return;
    this.probing = true;
    try {
      for (let delay = PROBE_MIN_MS; this.outage && !this.closed; delay = Math.min(PROBE_MAX_MS, delay * 2)) {
        await this.clock.sleep(delay);
        try {
          await this.probe();
        } catch (err) {
          if (this.outage) this.outage.lastError = describeDatabaseError(err);
          continue;
        }
        const seconds = ((this.clock.now() - this.outage.since) / 1000).toFixed(1);
        this.logger.info({ database: this.description, outageSeconds: Number(seconds) }, `database reachable again after ${seconds} s; resuming`);
        this.outage = undefined;
        this.waiters.wakeAll();
      }
    } finally {
      this.probing = false;
    }
  }
}
