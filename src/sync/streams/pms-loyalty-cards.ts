/**
 * The loyalty cards of PMS persons. A reservation fetched as it changes reads the cards of its
 * persons with it (pms-reservations.ts); a backfill does not: its budget goes to the
 * reservations and their invoices first, and the cards of the persons it mirrored are read by
 * this pass, below the backfill's priority, so that they take what budget the backfill leaves.
 *
 * The pass reads, in batches, every person of the connection's properties whose cards were never
 * read (pms_guests.loyalty_cards_read_at NULL) and whose last answer is not in quarantine; while
 * a PMS backfill of those properties is under way it waits for it, so that `sync --once` ends
 * with every person's cards. It runs at start (last of the refreshes) and daily with content.
 */
import { activePropertyIds } from '../../store/repositories/content.js';
import { pmsBackfillUnderway, personsWithUnreadLoyaltyCards, replaceLoyaltyCards } from '../../store/repositories/pms.js';
import { rowsAfterErasures } from '../../store/repositories/erasures.js';
import { streamNames } from '../../store/states.js';
import { NotFoundError, RequestRejectedError } from '../../provider/errors.js';
import { PageLoopError, PageTokens } from '../../provider/paging.js';
import { parseLoyaltyCardsPage, type PmsLoyaltyCard } from '../../provider/schemas/pms.js';
import { erasableLoyaltyCards } from '../../mapping/erasure.js';
import { quarantineGuestPayload } from '../../privacy/guest-writes.js';
import type { SyncContext } from '../runtime/context.js';
import type { RefreshStream } from './types.js';

/** Below the PMS backfill (5): the pass takes what budget the backfill leaves. */
const PASS_PRIORITY = 6;
const BATCH = 200;
/** How often a pass waiting for a backfill looks again (one small read). */
const BACKFILL_WAIT_MS = 5_000;
/** How long a property whose PMS search has not started holds the pass up. */
const UNSTARTED_WAIT_MS = 60_000;

/** What a read of a person's cards found: the cards, the person gone at the provider (no cards), or nothing usable. */
export type LoyaltyCardsRead = PmsLoyaltyCard[] | 'gone' | null;

/**
 * A person's loyalty cards, every page: 'gone' on a 404 (read: the person has none); null when
 * refused (403 of this call), paged in a circle or not parseable (the answer is quarantined):
 * the mirrored ones stay, and are read again later.
 */
export async function fetchLoyaltyCards(
  ctx: SyncContext,
  propertyId: string,
  personId: string,
  signal: AbortSignal,
  priority: number,
): Promise<LoyaltyCardsRead> {
  const path = `/api/pms/v2/properties/${encodeURIComponent(propertyId)}/guests/${encodeURIComponent(personId)}/loyalty-cards`;
  const cards: PmsLoyaltyCard[] = [];
  const tokens = new PageTokens();
  let pageToken: string | null = null;
  do {
    let res;
    try {
      res = await ctx.client.requestJson('standard', 'provider', path, pageToken ? { pageToken } : { maxPageSize: 100 }, signal, priority);
    } catch (err) {
      if (err instanceof NotFoundError) return 'gone';
      if (err instanceof RequestRejectedError) return null;
      throw err;
    }
    const page = parseLoyaltyCardsPage(res.body);
    if (!page.ok) {
      ctx.counters.quarantined += 1;
      await ctx.write((trx) =>
        quarantineGuestPayload(
          trx,
          { stream: streamNames.pmsLoyaltyCards, propertyId, entityKey: personId, reason: page.reason, rawBody: res.rawBody },
          ctx.config.pms.personalData,
        ),
      );
      return null;
    }
    cards.push(...page.value.loyaltyCards);
    try {
      pageToken = tokens.next(page.value);
    } catch (err) {
      if (!(err instanceof PageLoopError)) throw err;
      ctx.logger.warn({ component: 'pms', propertyId, personId, reason: err.message }, `loyalty cards of PMS person ${personId}: not read (${err.message})`);
      return null;
    }
  } while (pageToken);
  return cards;
}

/** The pass over the persons whose cards were never read; see the module's comment. */
async function readUnreadCards(ctx: SyncContext, signal: AbortSignal, only: readonly string[]): Promise<void> {
  const propertyIds = only.length > 0 ? [...only] : await activePropertyIds(ctx.db, ctx.connection);
  const startedAt = ctx.clock.now();
  let read = 0;
  while (!signal.aborted) {
    const batch = await personsWithUnreadLoyaltyCards(ctx.db, propertyIds, BATCH);
    if (batch.length === 0) {
      const backfill = await pmsBackfillUnderway(ctx.db, propertyIds);
      // A search not started yet is waited for a while (the engine starts it beside this pass), not for ever.
      if (!backfill.underway && !(backfill.unstarted && ctx.clock.now() - startedAt < UNSTARTED_WAIT_MS)) break;
      await ctx.clock.sleep(BACKFILL_WAIT_MS, signal).catch(() => undefined);
      continue;
    }
    let progressed = false;
    for (const p of batch) {
      if (signal.aborted) return;
      const cards = await fetchLoyaltyCards(ctx, p.propertyId, p.personId, signal, PASS_PRIORITY);
      if (cards === null) continue;
      const readAt = new Date(ctx.clock.now());
      await ctx.write(async (trx) => {
        const [kept] = await rowsAfterErasures(trx, [
          erasableLoyaltyCards(p.propertyId, p.personId, cards === 'gone' ? [] : cards, ctx.config.pms.personalData),
        ]);
        await replaceLoyaltyCards(trx, p.propertyId, p.personId, kept!.cards, readAt);
      });
      progressed = true;
      read += 1;
    }
    // A batch of persons none of whose cards could be read (refused, in a circle) is not read
    // again at once: the next pass tries them.
    if (!progressed) break;
  }
  if (read > 0) ctx.logger.info({ component: 'pms', persons: read }, `loyalty cards read for ${read} PMS persons`);
}

/** Registered with the refreshes, last: at start it waits for the PMS backfill it follows. */
export const pmsLoyaltyCardsStream: RefreshStream = {
  name: streamNames.pmsLoyaltyCards,
  area: 'pms',
  enabled: (config) => config.pms.enabled && config.pms.loyaltyCards,
  cron: (config) => config.content.refreshCron,
  run: readUnreadCards,
  discoversProperties: false,
};
