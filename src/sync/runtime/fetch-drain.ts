/**
 * Draining a durable fetch queue (booking details, PMS reservations): claim due rows, keep
 * `concurrency` fetches in flight (the budget paces them), wait for the database and the lease,
 * and record every outcome that did not store the entity so that nothing is retried in a
 * tight loop and nothing is dropped:
 * - 404: first a few quick retries (the list may announce an entity before a replica has it),
 *   then `not_found`, fetched again after sync.refetchParkedAfterMs, doubling up to 6 hours;
 * - a payload that fails validation, or an entity the database refuses to store (constraint,
 *   encoding): quarantined with the reason, fetched again on the same long backoff;
 * - a body over provider.maxResponseBytes: quarantined once, and fetched again only when a
 *   newer version is enqueued (reading the same one again would cost as much again);
 * - a 4xx refusal: fetched again on the long backoff;
 * - a transient provider failure: `pending`, after 5 s, doubling up to 10 minutes;
 * - the database or the lease is away: the row is left as it was and fetched again once they
 *   are back.
 * Enqueueing the entity again (it changed) makes the row due at once.
 */
import { describeDatabaseError, isDatabaseUnavailable, isTransactionConflict, FenceLostError } from '../../store/errors.js';
import {
  fetchAgainLater,
  msUntilNextFetch,
  nextDueFetches,
  PARKED_UNTIL_NEXT_VERSION,
  pendingCount,
  queueKey,
  vacuumTable,
  type FetchQueue,
  type QueuedFetch,
} from '../../store/repositories/fetch-queue.js';
import { WRITE_FAILED_PREFIX } from '../../store/repositories/quarantine.js';
import { quarantineGuestPayload } from '../../privacy/guest-writes.js';
import type { QueueState, QuarantineStream } from '../../store/states.js';
import type { Logger } from '../../util/log.js';
import { AuthenticationError, InvalidPayloadError, NotFoundError, RequestRejectedError } from '../../provider/errors.js';
import { IdlePause } from '../../util/wait-list.js';
import type { SyncContext } from './context.js';
import { classify } from './failures.js';
import type { EngineMode, QueueDrain } from '../streams/types.js';

/** `sync --once` does not wait for fetches that failed this many times (they stay queued and are reported). */
export const ONCE_MAX_ATTEMPTS = 4;
/** 404s answered quickly again before an entity counts as not found. */
const QUICK_404_RETRIES = 3;

/** Backoff after a transient failure: 5 s, 10 s, 20 s, … capped at 10 minutes. */
export function fetchRetryDelayMs(attempts: number): number {
  return Math.min(600_000, 5_000 * 2 ** Math.min(attempts, 10));
}

/** Backoff of a parked row (not found, quarantined, refused): `baseMs` (sync.refetchParkedAfterMs) doubling, capped at 6 hours. */
export function parkedRetryDelayMs(parkedAttempts: number, baseMs: number): number {
  return Math.min(6 * 3_600_000, baseMs * 2 ** Math.min(Math.max(0, parkedAttempts), 10));
}

/** Quick retries of a 404 (replica lag): 1 s, 2 s, 4 s. */
function quick404DelayMs(attempts: number): number {
  return 1_000 * 2 ** attempts;
}

/** What a queue's stream does with one claimed row: fetch, store, and record what went wrong. */
export interface FetchHandler {
  fetchOne(item: QueuedFetch, signal: AbortSignal, onFatal: (err: Error) => void): Promise<void>;
}

/** The drain loop shared by every fetch queue. */
export class FetchDrain implements QueueDrain {
  private readonly inFlight = new Set<string>();
  private readonly idle = new IdlePause();
  /** Rows taken since the queue was last vacuumed; undefined once a VACUUM was refused. */
  private takenSinceVacuum: number | undefined;
  private vacuuming: Promise<void> | undefined;

  constructor(
    private readonly ctx: SyncContext,
    private readonly queue: FetchQueue,
    private readonly concurrency: number,
    private readonly handler: FetchHandler,
    private readonly log: Logger,
  ) {
    this.takenSinceVacuum = ctx.config.sync.vacuumQueueEveryRows > 0 ? 0 : undefined;
  }

  wake(): void {
    this.idle.wake();
  }

  async run(signal: AbortSignal, opts: { mode: EngineMode; upstreamDone: () => boolean; onFatal: (err: Error) => void }): Promise<void> {
    const { ctx } = this;
    const running = new Set<Promise<void>>();
    let batch: QueuedFetch[] = [];

    while (!signal.aborted) {
      try {
        if (!ctx.database.available || !ctx.fence.held) {
          // What was claimed before the wait may have been fetched by another process meanwhile.
          batch = [];
          await ctx.database.waitUntilAvailable(signal);
          await ctx.fence.waitUntilHeld(signal);
        }
        if (batch.length === 0) {
          batch = await nextDueFetches(ctx.db, this.queue, ctx.connection, this.concurrency * 8, new Set(this.inFlight));
        }
        const item = batch.shift();
        if (!item) {
          if (running.size > 0) {
            // A fetch may take minutes (a provider retried with backoff, a body that is never
            // JSON): what is enqueued meanwhile is claimed at once, not after it.
            await Promise.race([...running, this.idle.pause(signal, 1_000)]);
            continue;
          }
          if (opts.mode === 'once') {
            if (opts.upstreamDone() && (await pendingCount(ctx.db, this.queue, { maxAttempts: ONCE_MAX_ATTEMPTS, connection: ctx.connection })) === 0) return;
            await this.idle.pause(signal, 1_000);
            continue;
          }
          // The daemon looks again when something is enqueued (wake: a page, an event, the
          // replica's heartbeat finding due rows another process put there) or when its next
          // parked row falls due, and not before: an idle queue costs the database nothing.
          await this.idle.pause(signal, (await msUntilNextFetch(ctx.db, this.queue, ctx.connection)) ?? Infinity);
          continue;
        }
        const key = queueKey(item.propertyId, item.number);
        if (this.inFlight.has(key)) continue;
        this.inFlight.add(key);
        this.vacuumNowAndThen();
        // fetchOne handles every failure itself; the catch only keeps a bug from becoming an
        // unhandled rejection.
        const p: Promise<void> = this.handler
          .fetchOne(item, signal, opts.onFatal)
          .catch((err: unknown) => this.log.error({ err: (err as Error).message, number: item.number }, 'internal error in a fetch'))
          .finally(() => {
            this.inFlight.delete(key);
            running.delete(p);
          });
        running.add(p);
        if (running.size >= this.concurrency) await Promise.race(running);
      } catch (err) {
        // The queue could not be read: the database or the lease is away (waited for at the
        // top of the loop), or something unexpected (logged, then a pause).
        batch = [];
        const verdict = classify(err, signal, ctx);
        if (verdict.kind === 'stopped') break;
        if (verdict.kind === 'database' || verdict.kind === 'lease') continue;
        if (verdict.kind === 'fatal') {
          opts.onFatal(verdict.error);
          break;
        }
        this.log.error({ err: describeDatabaseError(err) }, `could not read ${this.queue}: retrying in 5 s`);
        await ctx.clock.sleep(5_000, signal).catch(() => undefined);
      }
    }
    await Promise.allSettled(running);
    // A VACUUM that ends may start the one that fell due meanwhile: wait for the last.
    while (this.vacuuming) await this.vacuuming;
  }

  /**
   * Starts a VACUUM of the queue (in the background, one at a time) every
   * sync.vacuumQueueEveryRows rows taken. Every fetched row is deleted, and the drain reads the
   * table in index order: the deleted rows' dead index entries pile up at the head of that
   * order, and each read walks them until a VACUUM clears them. Autovacuum does it where it
   * runs and keeps up; where it is off or behind (measured: with autovacuum off, 90,000 dead
   * rows after a full sync of 100,000 bookings, and the details rate fell by half), the drain
   * does it itself. A VACUUM of the queue takes milliseconds and blocks no writer.
   */
  private vacuumNowAndThen(): void {
    if (this.takenSinceVacuum === undefined) return;
    this.takenSinceVacuum += 1;
    this.vacuumIfDue();
  }

  /**
   * A VACUUM that falls due while the previous one still runs (a loaded database) starts when
   * that one ends, so the count of VACUUMs follows the rows taken however slow each one is.
   */
  private vacuumIfDue(): void {
    if (this.takenSinceVacuum === undefined || this.takenSinceVacuum < this.ctx.config.sync.vacuumQueueEveryRows || this.vacuuming) return;
    this.takenSinceVacuum = 0;
    this.vacuuming = vacuumTable(this.ctx.db, this.queue)
      .catch((err: unknown) => {
        if (isDatabaseUnavailable(err)) return;
        // Not the owner of the table (a role without the privilege): autovacuum has to do it.
        this.takenSinceVacuum = undefined;
        this.log.warn(
          { err: describeDatabaseError(err) },
          `could not VACUUM ${this.queue}: the drain slows down as fetched rows pile up, unless autovacuum runs on this database`,
        );
      })
      .finally(() => {
        this.vacuuming = undefined;
        this.vacuumIfDue();
      });
  }
}

/**
 * Records the outcome of a fetch that did not store its entity (see the file comment).
 * `stream` names the quarantine stream; `what` names the entity in log lines.
 */
export class FetchOutcomes {
  constructor(
    private readonly ctx: SyncContext,
    private readonly queue: FetchQueue,
    private readonly stream: QuarantineStream,
    private readonly what: string,
    private readonly log: Logger,
  ) {}

  /** A fetch failed: 404, invalid payload, refusal, or transient. Fatal errors go to `onFatal`. */
  async fetchFailed(item: QueuedFetch, err: unknown, onFatal: (err: Error) => void): Promise<void> {
    const { ctx } = this;
    const ids = { propertyId: item.propertyId, number: item.number };
    if (err instanceof AuthenticationError) return onFatal(err);
    if (err instanceof NotFoundError) {
      ctx.counters.detailsNotFound += 1;
      if (item.attempts + 1 < QUICK_404_RETRIES) {
        this.log.debug(ids, `${this.what} not found (404), probably not replicated yet: asking again shortly`);
        return this.later(item, 'pending', quick404DelayMs(item.attempts), 'provider answered 404');
      }
      const parked = item.attempts + 1 - QUICK_404_RETRIES;
      if (parked === 0) this.log.warn(ids, `${this.what} not found (404) several times: recorded as not_found, fetched again on a growing backoff`);
      return this.later(item, 'not_found', this.parkedDelay(parked), 'provider answered 404');
    }
    if (err instanceof InvalidPayloadError) {
      ctx.counters.quarantined += 1;
      if (err.tooLarge) {
        // Fetching the same version again reads as much again: it waits for the next version.
        this.log.warn({ ...ids, reason: err.reason }, `${this.what} too large: quarantined, fetched again only when a newer version is listed`);
        return this.quarantine(item, err.reason, err.rawBody, PARKED_UNTIL_NEXT_VERSION);
      }
      if (item.state !== 'quarantined') this.log.warn({ ...ids, reason: err.reason }, `${this.what} failed validation: quarantined`);
      return this.quarantine(item, err.reason, err.rawBody);
    }
    if (err instanceof RequestRejectedError) {
      ctx.counters.detailFailures += 1;
      this.log.warn({ ...ids, err: err.message }, `${this.what} refused by the provider: fetched again on a growing backoff`);
      return this.later(item, 'pending', this.parkedDelay(item.attempts), err.message);
    }
    // Transient (the provider is away, throttles, or answered 5xx after the client's retries):
    // the outage itself is logged once by the provider's health, not per entity.
    ctx.counters.detailFailures += 1;
    this.log.debug({ ...ids, err: (err as Error).message }, `${this.what} fetch failed: will retry`);
    return this.later(item, 'pending', fetchRetryDelayMs(item.attempts), (err as Error).message);
  }

  /**
   * The write of a fetched entity failed. The database or the lease being away leaves the row
   * as it was; a refusal of this entity (constraint, encoding) quarantines it with the reason.
   */
  async writeFailed(item: QueuedFetch, err: unknown, rawBody: string): Promise<void> {
    const { ctx } = this;
    if (err instanceof FenceLostError || isDatabaseUnavailable(err) || isTransactionConflict(err)) {
      ctx.database.report(err);
      return;
    }
    ctx.counters.quarantined += 1;
    ctx.counters.writeFailures += 1;
    const reason = `${WRITE_FAILED_PREFIX}${describeDatabaseError(err)}`;
    this.log.warn({ propertyId: item.propertyId, number: item.number, reason }, `${this.what} could not be written: quarantined`);
    await this.quarantine(item, reason, rawBody);
  }

  /** Fetched, but the stored version is still older than the one asked for: try again later. */
  stale(item: QueuedFetch, message: string): Promise<void> {
    return this.later(item, 'pending', fetchRetryDelayMs(item.attempts), message);
  }

  private async quarantine(
    item: QueuedFetch,
    reason: string,
    rawBody: string,
    delayMs = this.parkedDelay(item.state === 'quarantined' ? item.attempts : 0),
  ): Promise<void> {
    await this.guarded(() =>
      this.ctx.write(async (trx) => {
        // The quarantine keeps no more of a person than the mirror does: the policy, and the erasure list.
        await quarantineGuestPayload(
          trx,
          { stream: this.stream, propertyId: item.propertyId, entityKey: item.number, reason, rawBody },
          this.ctx.config.pms.personalData,
        );
        await fetchAgainLater(trx, this.queue, item, 'quarantined', delayMs, reason);
      }),
    );
  }

  private parkedDelay(parkedAttempts: number): number {
    return parkedRetryDelayMs(parkedAttempts, this.ctx.config.sync.refetchParkedAfterMs);
  }

  private later(item: QueuedFetch, state: QueueState, delayMs: number, message: string): Promise<void> {
    return this.guarded(() => this.ctx.write((trx) => fetchAgainLater(trx, this.queue, item, state, delayMs, message)));
  }

  /** Bookkeeping writes: when the database or lease is away the row stays as it was (fetched again later). */
  private async guarded(write: () => Promise<void>): Promise<void> {
    try {
      await write();
    } catch (err) {
      if (err instanceof FenceLostError || this.ctx.database.report(err)) return;
      this.log.error({ err: describeDatabaseError(err) }, 'could not record the outcome of a fetch');
    }
  }
}
