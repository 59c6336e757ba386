/**
 * The sync engine: one summaries loop per property and one details drain per API client,
 * sharing the client's budgets. `once` runs every stream until caught up and the detail
 * queue is drained; `daemon` keeps polling on the croner schedule until the signal aborts.
 */
import { Cron } from 'croner';
import { BOOKING_SUMMARIES, findCursor, resetCursorForRecovery } from '../db/repositories/cursors.js';
import { maxMirroredModification, hasMirroredRows } from '../db/repositories/bookings.js';
import { AuthenticationError } from '../provider/errors.js';
import { isAbortError } from '../util/clock.js';
import { BookingDetailsStream } from './booking-details.js';
import { pollSummariesUntilCaughtUp } from './booking-summaries.js';
import { refreshContent } from './content.js';
import { activePropertyIds } from '../db/repositories/content.js';
import { TokenLostError, type SyncContext } from './context.js';
import { ProgressReporter } from './progress.js';

export type Recovery = { mode: 'none' } | { mode: 'auto' } | { mode: 'at'; from: Date };

/** A property found in the token-lost state before anything was written. */
export interface LostProperty {
  propertyId: string;
  reason: string;
}

/**
 * Checks every property before the run writes anything: a property whose token was rejected
 * earlier, or whose mirror has rows without a cursor, is lost. Without --recover the caller
 * exits 3 and nothing changes; with it, the lost properties get their restart point.
 */
export async function planRecovery(
  ctx: SyncContext,
  propertyIds: readonly string[],
  recovery: Recovery,
): Promise<{ lost: LostProperty[]; recoverFrom: Map<string, Date> }> {
  const lost: LostProperty[] = [];
  for (const propertyId of propertyIds) {
    const cursor = await findCursor(ctx.db, propertyId, BOOKING_SUMMARIES);
    if (cursor?.state === 'token_lost') {
      lost.push({ propertyId, reason: `the provider rejected its stored continueToken (${cursor.lastError ?? 'no detail'})` });
    } else if (!cursor?.cursor && (await hasMirroredRows(ctx.db, propertyId))) {
      lost.push({ propertyId, reason: 'the mirror holds its bookings but its continueToken is gone' });
    }
  }
  const recoverFrom = new Map<string, Date>();
  if (recovery.mode === 'none') return { lost, recoverFrom };
  for (const { propertyId } of lost) {
    let from: Date;
    if (recovery.mode === 'at') {
      from = recovery.from;
    } else {
      const max = await maxMirroredModification(ctx.db, propertyId);
      // The provider recommends the last modification minus two days to avoid gaps.
      from = new Date((max?.getTime() ?? 0) - ctx.config.sync.recoveryOverlapMs);
    }
    recoverFrom.set(propertyId, from);
  }
  return { lost: [], recoverFrom };
}

export interface EngineResult {
  /** Properties stopped because their token was lost during the run. */
  tokenLost: TokenLostError[];
  /** False when a content refresh of the run failed (recorded in content_refreshes). */
  contentOk: boolean;
}

export interface EngineOptions {
  /** Properties whose bookings are followed. */
  propertyIds: readonly string[];
  recoverFrom: ReadonlyMap<string, Date>;
  /** Refresh content and reference data during the run (false: disabled, or done already). */
  refreshContent: boolean;
  /** Only these properties' content is mirrored; empty: all that the content API lists. */
  contentOnly: readonly string[];
}

/** Every stream until caught up and the detail queue is drained. */
export async function syncOnce(ctx: SyncContext, opts: EngineOptions, signal: AbortSignal): Promise<EngineResult> {
  const details = new BookingDetailsStream(ctx);
  ctx.onEnqueued = () => details.notify();
  const progress = new ProgressReporter(ctx, opts.propertyIds);
  progress.start();
  const tokenLost: TokenLostError[] = [];
  let contentOk = true;
  let summariesDone = false;
  const inner = new AbortController();
  const onAbort = () => inner.abort(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    await applyRecovery(ctx, opts.recoverFrom);
    const content = opts.refreshContent
      ? refreshContent(ctx, inner.signal, { only: opts.contentOnly }).then((r) => {
          contentOk = r.ok;
        })
      : Promise.resolve();
    const summaries = Promise.all(
      opts.propertyIds.map((id) =>
        pollWithRetries(ctx, id, opts.recoverFrom.get(id), inner.signal).catch((err: unknown) => {
          if (err instanceof TokenLostError) {
            tokenLost.push(err);
            ctx.logger.error({ propertyId: id }, err.message);
            return;
          }
          throw err;
        }),
      ),
    ).finally(() => {
      summariesDone = true;
      details.notify();
    });
    const drained = details.drain(inner.signal, { untilEmpty: true, isUpstreamDone: () => summariesDone });
    // A fatal error in any stream stops the others.
    await Promise.all([content, summaries, drained].map((p) => p.catch((err: unknown) => (inner.abort(err), Promise.reject(err)))));
  } finally {
    signal.removeEventListener('abort', onAbort);
    progress.stop();
    progress.report();
  }
  return { tokenLost, contentOk };
}

/** Polls a property until caught up, retrying transient failures with backoff. */
async function pollWithRetries(ctx: SyncContext, propertyId: string, recoverFrom: Date | undefined, signal: AbortSignal): Promise<void> {
  let failures = 0;
  let start = { recoverFrom };
  while (!signal.aborted) {
    try {
      await pollSummariesUntilCaughtUp(ctx, propertyId, start, signal);
      return;
    } catch (err) {
      if (err instanceof TokenLostError || err instanceof AuthenticationError) throw err;
      if (signal.aborted && isAbortError(err, signal)) return;
      failures += 1;
      ctx.counters.pollErrors += 1;
      const delay = Math.min(300_000, 1_000 * 2 ** Math.min(failures, 9));
      ctx.logger.warn({ propertyId, err: (err as Error).message, retryInMs: delay }, 'booking list poll failed: will retry');
      // A committed recovery page replaced the lost token; start from the stored cursor then.
      const cursor = await findCursor(ctx.db, propertyId, BOOKING_SUMMARIES).catch(() => undefined);
      if (cursor?.cursor) start = { recoverFrom: undefined };
      await ctx.clock.sleep(delay, signal).catch(() => undefined);
    }
  }
}

/** Marks recovering properties active again, cursor cleared, before their first page. */
async function applyRecovery(ctx: SyncContext, recoverFrom: ReadonlyMap<string, Date>): Promise<void> {
  for (const [propertyId, from] of recoverFrom) {
    ctx.logger.warn({ propertyId, from: from.toISOString() }, 'recovery: the booking list restarts from this modification time');
    await resetCursorForRecovery(ctx.db, propertyId, BOOKING_SUMMARIES, new Date(ctx.clock.now()));
  }
}

/**
 * The daemon: every property polled until caught up, then again on each tick of
 * `sync.pollCron`; the details stream drains continuously; content is refreshed at start
 * (when `refreshContent`) and on each tick of `content.refreshCron`. With
 * `followContentProperties`, properties that a refresh finds are followed from then on.
 * Returns when the signal aborts (graceful stop: in-flight transactions finish, nothing
 * committed is lost) or when a property's token is lost (the caller exits 3).
 */
export async function runDaemon(
  ctx: SyncContext,
  opts: EngineOptions & { followContentProperties: boolean },
  signal: AbortSignal,
): Promise<EngineResult> {
  const details = new BookingDetailsStream(ctx);
  ctx.onEnqueued = () => details.notify();
  const followed = new Set<string>();
  const progress = new ProgressReporter(ctx, followed);
  const inner = new AbortController();
  const onAbort = () => inner.abort(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
  const tokenLost: TokenLostError[] = [];
  let contentOk = true;
  const wakers = new Set<() => void>();
  const loops: Promise<void>[] = [];

  const follow = (propertyId: string, recover: Date | undefined) => {
    if (followed.has(propertyId)) return;
    followed.add(propertyId);
    const loop = (async () => {
        let start = recover;
        while (!inner.signal.aborted) {
          try {
            await pollWithRetries(ctx, propertyId, start, inner.signal);
            start = undefined;
          } catch (err) {
            if (err instanceof TokenLostError) {
              ctx.logger.error({ propertyId }, err.message);
              tokenLost.push(err);
              // Stop the daemon: a lost token needs the operator (restart with --recover).
              inner.abort(err);
              return;
            }
            throw err;
          }
          await new Promise<void>((resolve) => {
            const done = () => {
              wakers.delete(done);
              inner.signal.removeEventListener('abort', done);
              resolve();
            };
            wakers.add(done);
            inner.signal.addEventListener('abort', done, { once: true });
          });
        }
      })().catch((err: unknown) => {
        inner.abort(err);
        throw err;
      });
    // Awaited (and its failure surfaced) at the end; marked handled now so that an early
    // failure is not an unhandled rejection meanwhile.
    loop.catch(() => undefined);
    loops.push(loop);
  };

  let contentRunning: Promise<void> = Promise.resolve();
  const contentRefresh = () => {
    contentRunning = contentRunning.then(async () => {
      if (inner.signal.aborted) return;
      const r = await refreshContent(ctx, inner.signal, { only: opts.contentOnly });
      contentOk &&= r.ok;
      if (!opts.followContentProperties || inner.signal.aborted) return;
      const fresh = (await activePropertyIds(ctx.db)).filter((id) => !followed.has(id));
      if (fresh.length === 0) return;
      const plan = await planRecovery(ctx, fresh, { mode: 'none' });
      for (const l of plan.lost) ctx.logger.error({ propertyId: l.propertyId }, `property ${l.propertyId}: token lost: ${l.reason}; not followed until a restart with --recover`);
      const lost = new Set(plan.lost.map((l) => l.propertyId));
      for (const id of fresh.filter((x) => !lost.has(x))) {
        ctx.logger.info({ propertyId: id }, 'new property in the content API: following its bookings');
        follow(id, undefined);
      }
    }).catch((err: unknown) => {
      if (!inner.signal.aborted) inner.abort(err);
    });
    return contentRunning;
  };

  const pollCron = new Cron(ctx.config.sync.pollCron, { protect: true }, () => {
    for (const w of wakers) w();
  });
  const contentCron = ctx.config.content.enabled ? new Cron(ctx.config.content.refreshCron, { protect: true }, () => void contentRefresh()) : undefined;
  progress.start();
  try {
    await applyRecovery(ctx, opts.recoverFrom);
    for (const id of opts.propertyIds) follow(id, opts.recoverFrom.get(id));
    if (opts.refreshContent) void contentRefresh();
    const drain = details.drain(inner.signal, { untilEmpty: false }).catch((err: unknown) => {
      inner.abort(err);
      throw err;
    });
    await drain;
    // Loops added while draining are in `loops`; wait for all, surfacing the first failure.
    await Promise.all(loops);
    await contentRunning;
    if (inner.signal.aborted && inner.signal.reason instanceof Error && !(inner.signal.reason instanceof TokenLostError) && !signal.aborted) {
      throw inner.signal.reason;
    }
  } finally {
    pollCron.stop();
    contentCron?.stop();
    signal.removeEventListener('abort', onAbort);
    progress.stop();
  }
  return { tokenLost, contentOk };
}
