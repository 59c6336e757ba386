/**
 * What a quiet hotel costs the database: close to nothing. A caught-up property is polled
 * every few seconds (its booking list) and minutes (its PMS search), and almost every poll finds
 * nothing. Writing each of those would cost a transaction per poll: with a thousand hotels,
 * thousands a second, while nothing happens. So:
 * - a poll that finds nothing writes nothing; what it learned (when it asked, and for the PMS
 *   search how far it has read) is kept here, in memory;
 * - the ledger writes what it holds for every property of the process in ONE statement every
 *   FLUSH_EVERY_MS (src/store/repositories/cursors.ts, recordQuietPolls), and once more when
 *   the process stops;
 * - a poll that finds something writes its rows with its cursor in one transaction, as before.
 * What reads last_poll_at (status, freshness, /metrics, the day close, dbt's freshness) sees it
 * at most FLUSH_EVERY_MS late. A crash loses at most that much of it: the next poll asks again
 * from the stored position, which only lists again what was already mirrored.
 *
 * The write is not fenced by a connection's lease: last_poll_at only moves forward and says a
 * true thing (the provider was asked then and listed nothing new), and a PMS search position only
 * moves forward too, whoever writes it.
 */
import type { Executor } from '../../store/types.js';
import { recordQuietPolls, type QuietPolls } from '../../store/repositories/cursors.js';
import type { CursorStream } from '../../store/states.js';
import type { Logger } from '../../util/log.js';

/** How often the quiet polls of the process are written: the lag of last_poll_at. */
export const FLUSH_EVERY_MS = 5_000;

export class PollLedger {
  private pending = new Map<string, QuietPolls>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private failing = false;

  /**
   * `immediate`: every record is written at once (a process with one connection and no timer,
   * as tests build their contexts); otherwise `start()` writes every FLUSH_EVERY_MS.
   */
  constructor(
    private readonly db: Executor,
    private readonly logger: Logger,
    private readonly immediate = false,
  ) {}

  /** A poll of a caught-up property that found nothing. */
  async record(propertyId: string, stream: CursorStream, polledAt: Date, advanced?: QuietPolls['advanced']): Promise<void> {
    const key = `${stream}\u0000${propertyId}`;
    const had = this.pending.get(key);
    this.pending.set(key, {
      propertyId,
      stream,
      polledAt: had && had.polledAt > polledAt ? had.polledAt : polledAt,
      pages: (had?.pages ?? 0) + 1,
      ...((advanced ?? had?.advanced) ? { advanced: advanced ?? had!.advanced! } : {}),
    });
    if (this.immediate) await this.flush();
  }

  /** Polls recorded and not written yet (tests, status of the process). */
  get size(): number {
    return this.pending.size;
  }

  start(): void {
    if (this.immediate || this.timer) return;
    this.timer = setInterval(() => void this.flush(), FLUSH_EVERY_MS);
    this.timer.unref();
  }

  /** Stops the timer and writes what is left. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  /** Writes what is held, in one statement; what cannot be written now is kept for the next time. */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing.then(() => this.flush());
    if (this.pending.size === 0) return Promise.resolve();
    const batch = this.pending;
    this.pending = new Map();
    this.flushing = recordQuietPolls(this.db, [...batch.values()])
      .then(() => {
        if (this.failing) this.logger.info('the times of quiet polls are written again');
        this.failing = false;
      })
      .catch((err: unknown) => {
        // The database is away: keep them (newer records of the same property win) for the next flush.
        for (const [key, polls] of batch) {
          const newer = this.pending.get(key);
          this.pending.set(key, newer ? { ...newer, pages: newer.pages + polls.pages, advanced: newer.advanced ?? polls.advanced } : polls);
        }
        if (!this.failing) this.logger.warn({ err: (err as Error).message }, 'could not write the times of quiet polls: kept, written again later');
        this.failing = true;
      })
      .finally(() => {
        this.flushing = undefined;
      });
    return this.flushing;
  }
}
