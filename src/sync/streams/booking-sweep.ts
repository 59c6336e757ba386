/**
 * The reconciliation sweep (one per property). Some provider writes become visible late,
 * carrying a modification time up to a few minutes in the past; the booking list's
 * continueToken has already moved past that time, so the main stream never lists them. Every
 * sync.sweep.everyMs, a caught-up property's list is read again from now − sync.sweep.lookbackMs
 * with a continueToken of the sweep's own (sync_cursors, stream booking_sweep).
 *
 * Cost: list requests only (a page holds up to sync.summariesPageSize summaries), each taking a
 * turn of the list scheduler after the polls; a detail fetch only for a version newer than the
 * stored details, so a sweep over an unchanged mirror costs no detail call.
 *
 * Each page, in ONE transaction: the summaries upserted where not older than the stored ones
 * (the main stream may have written a newer version meanwhile), detail fetches enqueued first in
 * line (a late change is a fresh change), the pass position and figures saved (booking_sweeps).
 * A restart resumes the pass from its token; a token the provider rejects only restarts the
 * pass from its lookback: losing the sweep's position loses nothing.
 */
import { streamNames } from '../../store/states.js';
import { findCursor, saveCursorAfterPage, type CursorRow } from '../../store/repositories/cursors.js';
import { upsertSummariesAndEnqueue, enqueueDetailFetches } from '../../store/repositories/booking-summaries.js';
import type { SummaryRow } from '../../store/schema.js';
import { quarantineGuestPayload } from '../../privacy/guest-writes.js';
import { rowsAfterErasures } from '../../store/repositories/erasures.js';
import {
  findSweep,
  listedVersions,
  nextSweepDueAt,
  recordSweepPage,
  restartSweepPass,
  startWatching,
  type SweepCounts,
  type SweepRow,
} from '../../store/repositories/sweeps.js';
import { ContinueTokenRejectedError } from '../../provider/errors.js';
import type { BookingsPage } from '../../provider/schemas/bookings.js';
import { asLastModification, EARLIEST_MODIFICATION, FRESH_CHANGE_PRIORITY, parseSummariesPage } from './booking-summaries.js';
import type { SyncContext } from '../runtime/context.js';
import type { PropertyStream } from './types.js';

/** While the booking list is not caught up (or never was), the sweep looks again this often (at most). */
const RECHECK_MS = 60_000;
/** A sleep until the next pass is cut into pieces of at most this (timers hold 24 days at most). */
const MAX_SLEEP_MS = 6 * 3_600_000;
/** Rejected tokens in one run of a pass before it gives up until the engine's next try (it starts from its lookback then). */
const MAX_RESTARTS = 2;

/** The booking list of the property is caught up: a backfill (or a recovery) is no time to sweep. */
function listCaughtUp(c: CursorRow | undefined): boolean {
  return c !== undefined && c.caughtUp && (c.state === 'active' || c.state === 'retrying');
}

/** Where a pass starts: `lookbackMs` before now, not before the provider's lower bound. */
export function sweepFrom(now: number, lookbackMs: number): Date {
  return new Date(Math.max(EARLIEST_MODIFICATION.getTime(), now - lookbackMs));
}

/**
 * Each property's sweep state as this process last read it, per connection and lease epoch:
 * only the holder of the lease writes it (and forgets it when it does), so a property between
 * two hourly passes is not read again at each look.
 */
const sweepStates = new WeakMap<SyncContext, { epoch: string | undefined; rows: Map<string, SweepRow | undefined> }>();

async function sweepState(ctx: SyncContext, propertyId: string): Promise<SweepRow | undefined> {
  let memo = sweepStates.get(ctx);
  if (!memo || memo.epoch !== ctx.fence.epoch) sweepStates.set(ctx, (memo = { epoch: ctx.fence.epoch, rows: new Map() }));
  if (memo.rows.has(propertyId)) return memo.rows.get(propertyId);
  const row = await findSweep(ctx.db, propertyId);
  memo.rows.set(propertyId, row);
  return row;
}

function forgetSweepState(ctx: SyncContext, propertyId: string): void {
  sweepStates.get(ctx)?.rows.delete(propertyId);
}

/**
 * Runs a pass when one is due (or in progress) and the booking list is caught up; else records
 * the first time it sees the property caught up (the schedule's start) and returns.
 * Returns the figures of the pass run, or undefined when none was due.
 */
export async function sweepIfDue(ctx: SyncContext, propertyId: string, signal: AbortSignal): Promise<SweepCounts | undefined> {
  if (!listCaughtUp(await ctx.cursors.get(propertyId, streamNames.bookingSummaries))) return undefined;
  const now = ctx.clock.now();
  const state = await sweepState(ctx, propertyId);
  if (!state) {
    // Never swept: the first pass is due everyMs from now, so that a full sync just done is
    // not read again at once.
    await ctx.write((trx) => startWatching(trx, propertyId, new Date(now)));
    forgetSweepState(ctx, propertyId);
    return undefined;
  }
  if (!state.pass && now < nextSweepDueAt(state, ctx.config.sync.sweep.everyMs).getTime()) return undefined;
  return sweepPass(ctx, propertyId, signal);
}

/** One pass (or the rest of the one in progress) until the provider says hasMoreData=false. */
export async function sweepPass(ctx: SyncContext, propertyId: string, signal: AbortSignal): Promise<SweepCounts> {
  const log = ctx.logger.child({ component: streamNames.bookingSweep, propertyId });
  const { lookbackMs } = ctx.config.sync.sweep;
  const total: SweepCounts = { pages: 0, summaries: 0, enqueued: 0, late: 0 };
  let restarts = 0;
  while (!signal.aborted) {
    const state = await sweepState(ctx, propertyId);
    const token = state?.pass ? ((await findCursor(ctx.db, propertyId, streamNames.bookingSweep))?.cursor ?? null) : null;
    const requestedAt = ctx.clock.now();
    const from = token ? null : sweepFrom(requestedAt, lookbackMs);
    if (from && !state?.pass) log.debug({ lastModification: asLastModification(from) }, 'sweep: reading the booking list again');
    // After the polls: a sweep never delays a fresh change (list-scheduler.ts).
    await ctx.listScheduler.sweepTurn(propertyId, signal);
    // Fetched and written holding the page slot, like the booking list's pages (booking-summaries.ts).
    const counts = await ctx.pageSlots.use(async () => {
      let page: BookingsPage;
      try {
        ({ page } = await ctx.client.getBookingSummaries(
          propertyId,
          { ...(token ? { continueToken: token } : { lastModification: asLastModification(from!) }), count: ctx.config.sync.summariesPageSize },
          signal,
        ));
      } catch (err) {
        if (!(err instanceof ContinueTokenRejectedError)) throw err;
        // The sweep's own position: losing it loses nothing, the pass starts again from its lookback.
        await ctx.write((trx) => restartSweepPass(trx, propertyId, new Date(ctx.clock.now())));
        forgetSweepState(ctx, propertyId);
        restarts += 1;
        if (restarts > MAX_RESTARTS) throw err;
        log.warn({ err: err.message }, "sweep: the provider rejected the sweep's continueToken; the pass starts again from its lookback");
        return undefined;
      }
      // Without a token the rest of the list cannot be asked for: the pass ends here, the next covers it.
      const last = !page.hasMoreData || page.continueToken === null;
      if (page.hasMoreData && page.continueToken === null) log.warn('sweep: the provider said hasMoreData without a continueToken: the pass ends here');
      const written = await writeSweepPage(ctx, propertyId, page, { startedAt: new Date(requestedAt), from, last });
      forgetSweepState(ctx, propertyId);
      return { last, ...written };
    });
    if (!counts) continue;
    const { last } = counts;
    total.pages += 1;
    total.summaries += counts.summaries;
    total.enqueued += counts.enqueued;
    total.late += counts.late;
    ctx.counters.detailsEnqueued += counts.enqueued;
    ctx.counters.quarantined += counts.bad;
    if (counts.enqueued > 0) ctx.events.emit('enqueued');
    if (last) {
      const level = total.late > 0 ? 'info' : 'debug';
      log[level](
        { pages: total.pages, summaries: total.summaries, lateChanges: total.late, enqueued: total.enqueued },
        `sweep of property ${propertyId}: ${total.late} late change(s) found`,
      );
      break;
    }
  }
  return total;
}

/** One sweep page in ONE transaction; returns its figures. */
async function writeSweepPage(
  ctx: SyncContext,
  propertyId: string,
  page: BookingsPage,
  pass: { startedAt: Date; from: Date | null; last: boolean },
): Promise<{ summaries: number; enqueued: number; late: number; bad: number }> {
  const now = ctx.clock.now();
  // A late change is a fresh change: fetched first in line.
  const { rows: erasable, bad, position } = parseSummariesPage(propertyId, page, now, () => FRESH_CHANGE_PRIORITY, ctx.config.pms.personalData);
  return ctx.write(async (trx) => {
    const rows = await rowsAfterErasures(trx, erasable);
    const listed = await listedVersions(trx, propertyId, [...rows.map((r) => r.number), ...bad.flatMap((b) => (b.number === null ? [] : [b.number]))]);
    // Late: a version the booking list never showed (a booking it lacks, or a newer modification).
    const isLate = (r: SummaryRow) => {
      if (!listed.has(r.number)) return true;
      const seen = listed.get(r.number) ?? null;
      return r.modifiedAt !== null && (seen === null || r.modifiedAt.getTime() > seen.getTime());
    };
    const lateRows = rows.filter(isLate);
    for (const b of bad) {
      await quarantineGuestPayload(
        trx,
        { stream: streamNames.bookingSummaries, propertyId, entityKey: b.number, reason: b.reason, rawBody: JSON.stringify(b.raw) },
        ctx.config.pms.personalData,
      );
    }
    // A summary that fails validation tells no version: its details are fetched only when the
    // mirror has never listed the booking (else every sweep would fetch them again).
    const unknown = bad.flatMap((b) =>
      b.number !== null && !listed.has(b.number) ? [{ propertyId, number: b.number, modifiedAt: null, priority: FRESH_CHANGE_PRIORITY }] : [],
    );
    const enqueued = (await upsertSummariesAndEnqueue(trx, rows, new Date(now), { keepNewer: true })) + (await enqueueDetailFetches(trx, unknown));
    await saveCursorAfterPage(trx, {
      propertyId,
      stream: streamNames.bookingSweep,
      cursor: pass.last ? null : page.continueToken,
      position,
      caughtUp: pass.last,
      rows: page.bookingSummaries.length,
      polledAt: new Date(now),
    });
    const counts = { pages: 1, summaries: rows.length, enqueued, late: lateRows.length + unknown.length };
    await recordSweepPage(trx, { propertyId, startedAt: pass.startedAt, from: pass.from, page: counts, finishedAt: pass.last ? new Date(now) : null });
    return { summaries: rows.length, enqueued, late: counts.late, bad: bad.length };
  });
}

/** How long until the sweep of the property should look again. */
async function msUntilNextLook(ctx: SyncContext, propertyId: string): Promise<number> {
  const { everyMs } = ctx.config.sync.sweep;
  const recheck = Math.min(everyMs, RECHECK_MS);
  if (!listCaughtUp(await ctx.cursors.get(propertyId, streamNames.bookingSummaries))) return recheck;
  const state = await sweepState(ctx, propertyId);
  if (!state) return 0;
  if (state.pass) return 0;
  return Math.min(MAX_SLEEP_MS, Math.max(0, nextSweepDueAt(state, everyMs).getTime() - ctx.clock.now()));
}

/** The reconciliation sweep, per property, registered with the engine. */
export const bookingSweepStream: PropertyStream = {
  name: streamNames.bookingSweep,
  area: 'readReservation',
  title: 'sweep',
  enabled: (config) => config.sync.sweep.enabled,
  catchUp: async (ctx, propertyId, signal) => {
    await sweepIfDue(ctx, propertyId, signal);
  },
  waitForNextRun: async (ctx, propertyId, signal) => {
    await ctx.clock.sleep(await msUntilNextLook(ctx, propertyId), signal);
  },
};
