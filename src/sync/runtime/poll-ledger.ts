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
 * The write is fenced by the connections' leases, all in one statement: a poll made under a
 * lease the process no longer holds (another replica took the connection) is not written.
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

  constructor(
    private readonly db: Executor,
    private readonly logger: Logger,
    opts: {
      /** Every record is written at once (one process, no timer, as tests build their contexts); else `start()` writes every FLUSH_EVERY_MS. */
      immediate?: boolean;
      /** The replica whose leases fence the writes (none: the schema's lock, which the process holds, fences them). */
      replicaId?: string;
    } = {},
  ) {
    this.immediate = opts.immediate ?? false;
    this.replicaId = opts.replicaId;
  }

  private readonly immediate: boolean;
  private readonly replicaId: string | undefined;

  /** A poll of a caught-up property that found nothing, made under `lease` (its connection and epoch). */
  async record(
    lease: { connection: string; epoch: string | undefined },
    propertyId: string,
    stream: CursorStream,
    polledAt: Date,
    advanced?: QuietPolls['advanced'],
  ): Promise<void> {
    const key = `${lease.connection}\u0000${stream}\u0000${propertyId}`;
    const had = this.pending.get(key);
    // Polls under an older epoch are not written: the newest lease decides.
    const same = had && had.epoch === lease.epoch ? had : undefined;
    this.pending.set(key, {
      propertyId,
      stream,
      connection: lease.connection,
      epoch: lease.epoch,
      polledAt: same && same.polledAt > polledAt ? same.polledAt : polledAt,
      pages: (same?.pages ?? 0) + 1,
      ...((advanced ?? same?.advanced) ? { advanced: advanced ?? same!.advanced! } : {}),
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
    this.flushing = recordQuietPolls(this.db, [...batch.values()], this.replicaId)
      .then(() => {
        if (this.failing) this.logger.info('the times of quiet polls are written again');
        this.failing = false;
      })
      .catch((err: unknown) => {
        // The database is away: keep them (newer records of the same property win) for the next flush.
        for (const [key, polls] of batch) {
          const newer = this.pending.get(key);
          if (!newer) this.pending.set(key, polls);
          else if (newer.epoch === polls.epoch)
            this.pending.set(key, {
              ...newer,
              pages: newer.pages + polls.pages,
              ...((newer.advanced ?? polls.advanced) ? { advanced: newer.advanced ?? polls.advanced! } : {}),
            });
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
