/**
 * The loyalty cards of PMS persons. A reservation fetched as it changes reads the cards of its
 * persons with it (pms-reservations.ts); a backfill does not: its budget goes to the
 * reservations and their invoices first, and the cards of the persons it mirrored are read by
 * this pass, below the backfill's priority, so that they take what budget the backfill leaves.
 *
 * The pass reads, in batches, every person of the connection's properties whose cards were never
 * read (pms_guests.loyalty_cards_read_at NULL) and whose last answer is not in quarantine: at
 * start, and whenever a fetch leaves cards to it; `sync --once` waits for it.
 */
import { activePropertyIds } from '../../store/repositories/content.js';
import { pendingCount } from '../../store/repositories/fetch-queue.js';
import { personsWithUnreadLoyaltyCards, replaceLoyaltyCards } from '../../store/repositories/pms.js';
import { rowsAfterErasures } from '../../store/repositories/erasures.js';
import { streamNames } from '../../store/states.js';
import { NotFoundError, RequestRejectedError } from '../../provider/errors.js';
import { PageLoopError, PageTokens } from '../../provider/paging.js';
import { parseLoyaltyCardsPage, type PmsLoyaltyCard } from '../../provider/schemas/pms.js';
import { erasableLoyaltyCards } from '../../mapping/erasure.js';
import { quarantineGuestPayload } from '../../privacy/guest-writes.js';
import { IdlePause } from '../../util/wait-list.js';
import type { SyncContext } from '../runtime/context.js';
import { classify } from '../runtime/failures.js';
import { ONCE_MAX_ATTEMPTS } from '../runtime/fetch-drain.js';
import type { EngineMode, QueueDrain, QueueStream } from './types.js';

/** Below the PMS backfill (5): the pass takes what budget the backfill leaves. */
const PASS_PRIORITY = 6;
const BATCH = 200;

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

/**
 * The pass over the persons whose cards were never read, as a queue drain: the queue is the
 * persons of pms_guests with loyalty_cards_read_at NULL. It looks when a PMS fetch leaves cards
 * to it (`loyaltyCardsDeferred`), and not otherwise: an idle pass costs the database nothing.
 * `sync --once` ends it when the booking and PMS work it follows is done and nobody is left.
 */
class LoyaltyCardsDrain implements QueueDrain {
  private readonly idle = new IdlePause();
  private readonly stopListening: () => void;

  constructor(private readonly ctx: SyncContext) {
    this.stopListening = ctx.events.on('loyaltyCardsDeferred', () => this.idle.wake());
  }

  wake(): void {
    this.idle.wake();
  }

  async run(signal: AbortSignal, opts: { mode: EngineMode; upstreamDone: () => boolean; onFatal: (err: Error) => void }): Promise<void> {
    const { ctx } = this;
    try {
      while (!signal.aborted) {
        try {
          await ctx.database.waitUntilAvailable(signal);
          await ctx.fence.waitUntilHeld(signal);
          const read = await this.readBatch(signal);
          if (read > 0) continue;
          if (opts.mode === 'once') {
            // Done when nothing upstream can still mirror a person: the property streams are
            // caught up and no PMS reservation waits to be fetched.
            if (
              opts.upstreamDone() &&
              (await pendingCount(ctx.db, 'pms_reservation_queue', { maxAttempts: ONCE_MAX_ATTEMPTS, connection: ctx.connection })) === 0
            ) {
              if ((await this.readBatch(signal)) === 0) return;
              continue;
            }
            await this.idle.pause(signal, 1_000);
            continue;
          }
          await this.idle.pause(signal, Infinity);
        } catch (err) {
          if (signal.aborted) return;
          const verdict = classify(err, signal, ctx);
          if (verdict.kind === 'fatal' || verdict.kind === 'continueTokenLost') return opts.onFatal(verdict.error);
          if (verdict.kind !== 'database' && verdict.kind !== 'lease' && verdict.kind !== 'stopped')
            ctx.logger.warn({ component: 'pms', reason: verdict.reason }, 'loyalty cards: a read failed; the pass tries again in a minute');
          await this.idle.pause(signal, 60_000);
        }
      }
    } finally {
      this.stopListening();
    }
  }

  /** Reads one batch of persons; returns how many were read (0: none left, or none of the batch could be). */
  private async readBatch(signal: AbortSignal): Promise<number> {
    const { ctx } = this;
    const propertyIds = ctx.config.propertyIds.length > 0 ? [...ctx.config.propertyIds] : await activePropertyIds(ctx.db, ctx.connection);
    let read = 0;
    for (const p of await personsWithUnreadLoyaltyCards(ctx.db, propertyIds, BATCH)) {
      if (signal.aborted) break;
      const cards = await fetchLoyaltyCards(ctx, p.propertyId, p.personId, signal, PASS_PRIORITY);
      // Refused or in a circle: the next pass (a later deferral, a restart) tries again.
      if (cards === null) continue;
      const readAt = new Date(ctx.clock.now());
      await ctx.write(async (trx) => {
        const [kept] = await rowsAfterErasures(trx, [
          erasableLoyaltyCards(p.propertyId, p.personId, cards === 'gone' ? [] : cards, ctx.config.pms.personalData),
        ]);
        await replaceLoyaltyCards(trx, p.propertyId, p.personId, kept!.cards, readAt);
      });
      read += 1;
    }
    if (read > 0) ctx.counters.pmsLoyaltyCardsRead += read;
    return read;
  }
}

/** Registered with the queues: it drains the persons whose cards a backfill left to it. */
export const pmsLoyaltyCardsStream: QueueStream = {
  name: streamNames.pmsLoyaltyCards,
  area: 'pms',
  enabled: (config) => config.pms.enabled && config.pms.loyaltyCards,
  create: (ctx) => new LoyaltyCardsDrain(ctx),
};
