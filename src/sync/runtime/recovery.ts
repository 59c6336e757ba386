/**
 * Recovery after a lost token. A property whose booking list lost its continueToken (the cursor
 * is `needs_recover`, or the mirror holds its bookings but neither a token nor a list position)
 * restarts its list from the last mirrored modification minus the configured overlap (two days,
 * as the provider recommends), or from a chosen time. When: at the start of a run, for the lost
 * properties its --recover names (all of them without --property); and, with sync.autoRecover,
 * whenever a token is lost (engine.ts). Until then only that property's booking list waits.
 */
import { streamNames } from '../../store/states.js';
import { maxMirroredModification, hasMirroredRows } from '../../store/repositories/bookings.js';
import { findCursor, resetCursorForRecovery } from '../../store/repositories/cursors.js';
import type { SyncContext } from './context.js';

export type Recovery =
  | { mode: 'none' }
  /** --recover: from the last mirrored modification minus sync.recoveryOverlapMs; `propertyIds` from --property (absent: every lost property). */
  | { mode: 'auto'; propertyIds?: readonly string[] }
  /** --recover=<ISO time>: from that time. */
  | { mode: 'at'; from: Date; propertyIds?: readonly string[] };

/**
 * Where the lost properties among `propertyIds` that `recovery` names restart their booking
 * list. Reads only (none at all without --recover).
 */
export async function planRecovery(ctx: SyncContext, propertyIds: readonly string[], recovery: Recovery): Promise<Map<string, Date>> {
  const plan = new Map<string, Date>();
  if (recovery.mode === 'none') return plan;
  const named = recovery.propertyIds;
  for (const propertyId of named === undefined ? propertyIds : propertyIds.filter((id) => named.includes(id))) {
    if (!(await needsRecovery(ctx, propertyId))) {
      if (named !== undefined)
        ctx.logger.info({ propertyId }, `property ${propertyId}: its booking list does not need a recovery; --recover leaves it as it is`);
      continue;
    }
    plan.set(propertyId, recovery.mode === 'at' ? recovery.from : await recoveryPoint(ctx, propertyId));
  }
  return plan;
}

async function needsRecovery(ctx: SyncContext, propertyId: string): Promise<boolean> {
  const cursor = await findCursor(ctx.db, propertyId, streamNames.bookingSummaries);
  if (cursor?.state === 'needs_recover') return true;
  // A cursor with a position but no token is a list whose pages came without one: it goes on
  // from that position (pollSummariesUntilCaughtUp), it is not lost.
  return !cursor?.cursor && !cursor?.position && (await hasMirroredRows(ctx.db, propertyId));
}

/** The last mirrored modification of the property minus sync.recoveryOverlapMs (the list clamps it to 2009). */
export async function recoveryPoint(ctx: SyncContext, propertyId: string): Promise<Date> {
  const max = await maxMirroredModification(ctx.db, propertyId);
  return new Date((max?.getTime() ?? 0) - ctx.config.sync.recoveryOverlapMs);
}

/** Marks recovering properties active again, cursor cleared, before their first page (which reads from their point). */
export async function applyRecovery(ctx: SyncContext, plan: ReadonlyMap<string, Date>): Promise<void> {
  for (const [propertyId, from] of plan) {
    ctx.logger.warn({ propertyId, from: from.toISOString() }, 'recovery: the booking list restarts from this modification time');
    await ctx.write((trx) => resetCursorForRecovery(trx, propertyId, streamNames.bookingSummaries, new Date(ctx.clock.now())));
    ctx.cursors.forget(propertyId, streamNames.bookingSummaries);
    ctx.tokenRejections.clear(propertyId);
    ctx.counters.continueTokensRecovered += 1;
  }
}
