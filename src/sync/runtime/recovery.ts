/**
 * Recovery after a lost token. Before a run writes anything, every property is checked: a
 * property whose token the provider rejected earlier, or whose mirror has rows but neither a
 * token nor a list position, is lost. Without --recover the run stops (exit 3) and nothing changes; with it, the lost
 * properties restart their booking list from the last mirrored modification minus the
 * configured overlap (two days, as the provider recommends), or from a chosen time.
 */
import { streamNames } from '../../store/states.js';
import { maxMirroredModification, hasMirroredRows } from '../../store/repositories/bookings.js';
import { findCursor, resetCursorForRecovery } from '../../store/repositories/cursors.js';
import type { SyncContext } from './context.js';
import { ContinueTokenLostError } from './errors.js';

export type Recovery = { mode: 'none' } | { mode: 'auto' } | { mode: 'at'; from: Date };

export interface RecoveryPlan {
  /** Lost properties that the run must not touch (only when recovery is 'none'). */
  lost: ContinueTokenLostError[];
  /** Lost properties and where their booking list restarts. */
  recoverFrom: Map<string, Date>;
}

/** Finds the lost properties among `propertyIds` and, with --recover, where each restarts. Reads only. */
export async function planRecovery(ctx: SyncContext, propertyIds: readonly string[], recovery: Recovery): Promise<RecoveryPlan> {
  const lost: ContinueTokenLostError[] = [];
  for (const propertyId of propertyIds) {
    const cursor = await findCursor(ctx.db, propertyId, streamNames.bookingSummaries);
    if (cursor?.state === 'token_lost') {
      lost.push(new ContinueTokenLostError(propertyId, cursor.lastError ?? 'the provider rejected its stored continueToken'));
    } else if (!cursor?.cursor && !cursor?.position && (await hasMirroredRows(ctx.db, propertyId))) {
      // (A cursor with a position but no token is a list whose pages came without one: it
      // goes on from that position, see pollSummariesUntilCaughtUp.)
      lost.push(new ContinueTokenLostError(propertyId, 'the mirror holds its bookings but its continueToken is gone'));
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
      from = new Date((max?.getTime() ?? 0) - ctx.config.sync.recoveryOverlapMs);
    }
    recoverFrom.set(propertyId, from);
  }
  return { lost: [], recoverFrom };
}

/** Marks recovering properties active again, cursor cleared, before their first page. */
export async function applyRecovery(ctx: SyncContext, recoverFrom: ReadonlyMap<string, Date>): Promise<void> {
  for (const [propertyId, from] of recoverFrom) {
    ctx.logger.warn({ propertyId, from: from.toISOString() }, 'recovery: the booking list restarts from this modification time');
    await ctx.write((trx) => resetCursorForRecovery(trx, propertyId, streamNames.bookingSummaries, new Date(ctx.clock.now())));
  }
}
