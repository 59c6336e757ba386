/**
 * Booking summaries stream (one per property). Cursor: the provider's continueToken.
 *
 * Each page, in ONE transaction: upsert the summaries, enqueue a detail fetch for every
 * summary newer than the stored details, quarantine summaries that fail validation, and
 * store the new token. A crash between pages therefore replays at most one page, and a
 * replayed page changes nothing (upserts and version-guarded enqueues are idempotent).
 */
import { streamNames } from '../../store/states.js';
import { markCursorLost, saveCursorAfterPage } from '../../store/repositories/cursors.js';
import { enqueueDetailFetches, upsertSummariesAndEnqueue } from '../../store/repositories/booking-summaries.js';
import { hasMirroredRows } from '../../store/repositories/bookings.js';
import { quarantineGuestPayload } from '../../privacy/guest-writes.js';
import { rowsAfterErasures } from '../../store/repositories/erasures.js';
import { erasableSummary, type Erasable } from '../../mapping/erasure.js';
import { ContinueTokenRejectedError, RequestRejectedError } from '../../provider/errors.js';
import { parseBookingSummary, type BookingsPage } from '../../provider/schemas/bookings.js';
import { priorityOf } from '../../mapping/bookings.js';
import { type SummaryRow } from '../../store/schema.js';
import type { SyncContext } from '../runtime/context.js';
import { ContinueTokenLostError, ContinueTokenRetryError } from '../runtime/errors.js';
import { TOKEN_LOST_AFTER_REJECTIONS } from '../runtime/token-rejections.js';
import type { PropertyStream } from './types.js';
import { idTextOf } from '../../provider/schemas/primitives.js';
import { ESTIMATE_AFTER_PAGES, logFirstSyncEstimate } from '../runtime/progress.js';

/** The provider's lower bound for bookings. */
export const EARLIEST_MODIFICATION = new Date('2009-01-01T00:00:00Z');

export interface PollResult {
  pages: number;
  summaries: number;
  /** Summaries of pages read while the property was caught up: changes, not a backfill's history. */
  changes: number;
  enqueued: number;
}

/**
 * What a property's stream starts from. `recoverFrom` (set by --recover) replaces a lost
 * token with lastModification for the first page; afterwards the new token takes over.
 */
export interface SummariesStart {
  recoverFrom?: Date | undefined;
}

/**
 * The order of detail fetches (booking_detail_queue.priority, lowest first):
 * 0: a change found by polling a caught-up property (a new booking is in `bookings` seconds
 *    after it is in the list, whatever backfill work is queued);
 * 1: a stay arriving soon (most useful first during a backfill);
 * 2: everything else.
 * 1 and 2 are the mapping's (priorityOf, src/mapping/bookings.ts).
 */
export const FRESH_CHANGE_PRIORITY = 0;

/**
 * Reads pages until the provider says hasMoreData=false (caught up) or the signal aborts.
 * Throws ContinueTokenLostError when the provider refuses the stored token for good
 * (rejectedToken), or when the mirror has rows of the property but its cursor is gone (both
 * would otherwise silently re-sync from 2009); the cursor is then `needs_recover`.
 */
export async function pollSummariesUntilCaughtUp(ctx: SyncContext, propertyId: string, start: SummariesStart, signal: AbortSignal): Promise<PollResult> {
  const log = ctx.logger.child({ component: 'summaries', propertyId });
  try {
    return await readPages(ctx, propertyId, start, signal, log);
  } finally {
    ctx.listScheduler.setBackfilling(propertyId, false);
  }
}

async function readPages(ctx: SyncContext, propertyId: string, start: SummariesStart, signal: AbortSignal, log: SyncContext['logger']): Promise<PollResult> {
  const result: PollResult = { pages: 0, summaries: 0, changes: 0, enqueued: 0 };
  let recoverFrom = start.recoverFrom;
  // Pages of history (not polls) read by this call: the estimate is logged at the third, when the
  // call began behind (a first sync, or its continuation after a restart), not for a burst of
  // changes that fills several pages of a caught-up list.
  let backfillPages = 0;
  let startedBehind: boolean | undefined;

  while (!signal.aborted) {
    // As this process last wrote it (read from the database once per lease): a quiet poll reads nothing first.
    const cursor = await ctx.cursors.get(propertyId, streamNames.bookingSummaries);
    startedBehind ??= cursor?.caughtUp !== true;
    // Recovery clears the token before the first page; a token here means a recovery page
    // already committed (before a failure or a restart of this loop): follow it instead.
    if (recoverFrom && cursor?.cursor && cursor.state === 'active') recoverFrom = undefined;
    let params: { continueToken?: string; lastModification?: string };
    if (recoverFrom) {
      const from = recoverFrom < EARLIEST_MODIFICATION ? EARLIEST_MODIFICATION : recoverFrom;
      params = { lastModification: asLastModification(from) };
      log.info({ lastModification: params.lastModification }, 'recovering: restarting the booking list from a modification time');
    } else if (cursor?.state === 'needs_recover') {
      throw new ContinueTokenLostError(propertyId, cursor.lastError ?? 'the provider rejected its stored continueToken');
    } else if (cursor?.cursor) {
      params = { continueToken: cursor.cursor };
    } else if (cursor?.position && cursor.state === 'active') {
      // The provider sent pages without a continueToken (the document allows it): the list
      // goes on from the last modification it listed, which replays a few bookings at most.
      params = { lastModification: asLastModification(cursor.position) };
      log.info({ lastModification: params.lastModification }, 'no continueToken stored: following the booking list from its last listed modification');
    } else {
      if (await hasMirroredRows(ctx.db, propertyId)) {
        throw await markLost(ctx, propertyId, 'the mirror holds bookings of this property but its continueToken is gone');
      }
      if (result.pages === 0) log.info('no cursor yet: full synchronization from 2009-01-01');
      params = {};
    }

    // Fetched, turned into rows and written holding the page slot: a page (up to 1,000
    // summaries, a few MB once parsed and serialized) is the largest object the daemon holds,
    // and V8 keeps the heap it once needed, so only one is in memory at a time. The properties
    // lose nothing by it: they share one booking list budget, and details are the bottleneck.
    const { page, summaries, badReasons, enqueued, fresh } = await ctx.pageSlots.use(async () => {
      let page, readBy;
      try {
        ({ page, readBy } = await ctx.client.getBookingSummaries(propertyId, { ...params, count: ctx.config.sync.summariesPageSize }, signal));
      } catch (err) {
        if (err instanceof ContinueTokenRejectedError && params.continueToken !== undefined) {
          throw await rejectedToken(ctx, propertyId, params.continueToken, err, signal);
        }
        throw err;
      }
      ctx.tokenRejections.clear(propertyId);
      // A page of a property that was caught up is a poll: what it finds is fetched first, and
      // it lists a booking only when it changed since the last one (so a booking it lists with
      // the stored modification second changed after its details were read, in that second).
      const fresh = cursor?.caughtUp === true && !recoverFrom && params.continueToken !== undefined;
      if (page.hasMoreData) ctx.listScheduler.setBackfilling(propertyId, true);
      // A page without a token keeps the position where it was: the stored token, or (when there
      // is none) the page's last modification, from which the next request continues.
      const nextToken = page.continueToken ?? (recoverFrom ? null : (cursor?.cursor ?? null));
      const pageShape = { hasMoreData: page.hasMoreData, continueToken: page.continueToken };
      // A poll that found nothing and left the position as it was writes nothing now: the
      // ledger records when it asked, with every other quiet poll of the process (poll-ledger.ts).
      if (fresh && page.bookingSummaries.length === 0 && !page.hasMoreData && nextToken === cursor.cursor && cursor.state === 'active') {
        const polledAt = new Date(ctx.clock.now());
        ctx.cursors.update(propertyId, streamNames.bookingSummaries, { lastPollAt: polledAt });
        await ctx.polls.record({ connection: ctx.connection, epoch: ctx.fence.epoch }, propertyId, streamNames.bookingSummaries, polledAt);
        return { page: pageShape, summaries: 0, badReasons: [], enqueued: 0, fresh };
      }
      const written = await writePage(ctx, propertyId, page, nextToken, fresh ? readBy : null);
      ctx.cursors.forget(propertyId, streamNames.bookingSummaries);
      return { page: pageShape, ...written, fresh };
    });
    recoverFrom = undefined;

    for (const reason of badReasons) log.warn({ reason }, 'booking summary failed validation: quarantined');
    result.pages += 1;
    result.summaries += summaries;
    if (fresh) result.changes += summaries;
    result.enqueued += enqueued;
    ctx.counters.summaryPages += 1;
    ctx.counters.summaries += summaries;
    ctx.counters.detailsEnqueued += enqueued;
    ctx.counters.quarantined += badReasons.length;
    if (enqueued > 0) ctx.events.emit('enqueued');
    if (startedBehind && !fresh && page.hasMoreData && ++backfillPages === ESTIMATE_AFTER_PAGES) await logFirstSyncEstimate(ctx, propertyId, log);
    if (!page.hasMoreData) break;
    if (page.continueToken === null) {
      // More data but no token to ask for it with: asking again now would return this page.
      log.warn('the provider said hasMoreData without a continueToken: the rest is read at the next poll');
      break;
    }
  }
  return result;
}

/**
 * A 400 to the stored token: the error that ends this try. Below TOKEN_LOST_AFTER_REJECTIONS
 * in a row for the token, a ContinueTokenRetryError (asked again with backoff). At it, the
 * same list is asked once without the token: answered, the token is lost (ContinueTokenLostError,
 * the cursor `needs_recover`); refused with 400 too, the request itself is faulty and the
 * property fails with it, its token kept. Why so: sync/runtime/token-rejections.ts.
 */
async function rejectedToken(ctx: SyncContext, propertyId: string, token: string, rejected: ContinueTokenRejectedError, signal: AbortSignal): Promise<Error> {
  const { count, since } = ctx.tokenRejections.add(propertyId, token, ctx.clock.now());
  ctx.counters.continueTokenRejections += 1;
  if (count < TOKEN_LOST_AFTER_REJECTIONS) return new ContinueTokenRetryError(count, TOKEN_LOST_AFTER_REJECTIONS, { cause: rejected });
  try {
    // One summary from a minute ago: any answer that is not a 400 says the list itself is fine.
    const from = new Date(Math.max(EARLIEST_MODIFICATION.getTime(), ctx.clock.now() - 60_000));
    await ctx.client.getBookingSummaries(propertyId, { lastModification: asLastModification(from), count: 1 }, signal);
  } catch (err) {
    if (!(err instanceof RequestRejectedError) || err.status !== 400) return err as Error;
    return new RequestRejectedError(
      `the provider answers HTTP 400 to the booking list of property ${propertyId} with and without its continueToken: ` +
        `a faulty request, not a lost token (${err.message})`,
      { status: 400, path: err.path, cause: err },
    );
  }
  return markLost(
    ctx,
    propertyId,
    `the provider answered HTTP 400 to its stored continueToken ${count} times in a row since ${new Date(since).toISOString()}, and answers the same list without it`,
    rejected,
  );
}

/** Marks the property's booking list `needs_recover` (status and /metrics show it) and returns the error that says so. */
async function markLost(ctx: SyncContext, propertyId: string, detail: string, cause?: Error): Promise<ContinueTokenLostError> {
  ctx.tokenRejections.clear(propertyId);
  ctx.cursors.forget(propertyId, streamNames.bookingSummaries);
  await ctx.write((trx) => markCursorLost(trx, propertyId, streamNames.bookingSummaries, detail, new Date(ctx.clock.now())));
  ctx.counters.continueTokensLost += 1;
  return new ContinueTokenLostError(propertyId, detail, cause === undefined ? undefined : { cause });
}

/** A time as the booking list's lastModification takes it: UTC, whole seconds. */
export function asLastModification(at: Date): string {
  return at.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** A summary that failed validation, with the booking number it names (if any). */
export interface BadSummary {
  raw: unknown;
  reason: string;
  number: string | null;
}

/**
 * A page of summaries as rows (with the detail priority `priorityOf` gives each), the ones that
 * failed validation, and the latest modification listed. Pure; shared with the sweep.
 */
export function parseSummariesPage(
  propertyId: string,
  page: BookingsPage,
  now: number,
  priority: (number: string) => number,
  personalData: boolean,
): { rows: Erasable<SummaryRow>[]; bad: BadSummary[]; position: Date | null } {
  const rows: Erasable<SummaryRow>[] = [];
  const bad: BadSummary[] = [];
  let position: Date | null = null;
  for (const raw of page.bookingSummaries) {
    const parsed = parseBookingSummary(raw);
    if (!parsed.ok) {
      bad.push({ raw, reason: parsed.reason, number: idTextOf((raw as { number?: unknown } | null)?.number) });
      continue;
    }
    // raw as the personal-data policy keeps it; the erasure list is read when the page is written.
    const summary = erasableSummary(propertyId, parsed.value, raw, now, personalData);
    const withPriority = (r: SummaryRow): SummaryRow => ({ ...r, priority: priority(parsed.value.number) });
    const row = withPriority(summary.rows);
    if (row.modifiedAt && (!position || row.modifiedAt > position)) position = row.modifiedAt;
    rows.push({ rows: row, identities: summary.identities, withErasures: (isErased) => withPriority(summary.withErasures(isErased)) });
  }
  return { rows, bad, position };
}

/**
 * One page in ONE transaction: summaries upserted, detail fetches enqueued under the version
 * guard, summaries that fail validation quarantined, the new token stored. `polledBy`: for a
 * poll of a caught-up list, when the provider had read it at the latest (ProviderClient's
 * readBy); null for the pages of a backfill or a recovery.
 */
async function writePage(
  ctx: SyncContext,
  propertyId: string,
  page: BookingsPage,
  nextToken: string | null,
  polledBy: Date | null,
): Promise<{ summaries: number; badReasons: string[]; enqueued: number }> {
  const fresh = polledBy !== null;
  const now = ctx.clock.now();
  const priority = (number: string) => (fresh ? FRESH_CHANGE_PRIORITY : priorityOf(number, now));
  const { rows: erasable, bad, position } = parseSummariesPage(propertyId, page, now, priority, ctx.config.pms.personalData);

  const enqueued = await ctx.write(async (trx) => {
    for (const b of bad) {
      await quarantineGuestPayload(
        trx,
        { stream: streamNames.bookingSummaries, propertyId, entityKey: b.number, reason: b.reason, rawBody: JSON.stringify(b.raw) },
        ctx.config.pms.personalData,
      );
    }
    const rows = await rowsAfterErasures(trx, erasable);
    // A summary that failed validation still names its booking: the details may be fine.
    const unparsed = bad.flatMap((b) => (b.number === null ? [] : [{ propertyId, number: b.number, modifiedAt: null, priority: priority(b.number) }]));
    const n = (await upsertSummariesAndEnqueue(trx, rows, new Date(now), { relistedBy: polledBy })) + (await enqueueDetailFetches(trx, unparsed));
    await saveCursorAfterPage(trx, {
      propertyId,
      stream: streamNames.bookingSummaries,
      cursor: nextToken,
      position,
      caughtUp: !page.hasMoreData,
      rows: page.bookingSummaries.length,
      polledAt: new Date(now),
    });
    return n;
  });
  return { summaries: erasable.length, badReasons: bad.map((b) => b.reason), enqueued };
}

/** The booking list, per property, registered with the engine. */
export const bookingSummariesStream: PropertyStream = {
  name: streamNames.bookingSummaries,
  area: 'readReservation',
  title: 'booking list',
  enabled: () => true,
  catchUp: async (ctx, propertyId, signal, start) => {
    // Only what a caught-up list shows is a change: a backfill (a start, a new hotel, a
    // recovery) lists history, and a fleet that counted it would poll every hotel at the
    // budget's floor for sync.quietAfterMs after each start.
    const { changes } = await pollSummariesUntilCaughtUp(ctx, propertyId, start, signal);
    ctx.listScheduler.polled(propertyId, changes);
  },
  // A cron when one is configured; else as often as the list budget allows (list-scheduler.ts).
  waitForNextRun: (ctx, propertyId, signal, tickers) => {
    const cron = ctx.config.sync.pollCron;
    return cron ? tickers.get(cron).next(signal) : ctx.listScheduler.pollTurn(propertyId, signal);
  },
};
