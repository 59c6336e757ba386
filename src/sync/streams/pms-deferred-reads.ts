/**
 * PMS reads a backfill leaves for later: the invoices of its reservations and the loyalty cards
 * of their persons. A reservation fetched as it changes reads both with it
 * (pms-reservations.ts); one fetched by a backfill does not: the standard budget goes to the
 * reservations and their guests first, and this pass, below the backfill's priority, reads
 * what they left with the budget the backfill leaves: first the invoices of every reservation
 * whose invoices were not read with its version (pms_reservations.invoices_read_at NULL), then
 * the cards of every person whose cards were never read (pms_guests.loyalty_cards_read_at NULL),
 * each in key order and at most once a pass, leaving out those whose last answer is in
 * quarantine. Reservations and persons mirrored before 0.2.0 are read the same way.
 *
 * The pass is a queue drain whose queue is those rows. It looks at start and when a backfill
 * fetch leaves a read to it (`readsDeferred`), and, when a pass left something it could not
 * read (refused, answered with errors, incomplete), again after sync.refetchParkedAfterMs,
 * doubling up to 6 hours; not otherwise: idle, it costs the database nothing. A property
 * whose reads of a stream mostly fail (read-health.ts) is only probed, a few reads a pass.
 * `sync --once` waits for it until the PMS queue is done and nothing is left that it could read.
 */
import { activePropertyIds } from '../../store/repositories/content.js';
import { pendingCount } from '../../store/repositories/fetch-queue.js';
import {
  invoicesUnreadAfter,
  personsWithUnreadLoyaltyCardsAfter,
  replaceInvoicesIfUnread,
  replaceLoyaltyCards,
  type UnreadInvoices,
} from '../../store/repositories/pms.js';
import { rowsAfterErasures } from '../../store/repositories/erasures.js';
import { streamNames } from '../../store/states.js';
import { NotFoundError, ProviderErrorsError, RequestRejectedError } from '../../provider/errors.js';
import { PagingError, PageTokens } from '../../provider/paging.js';
import { parseInvoicesPage, parseLoyaltyCardsPage, type PmsPage } from '../../provider/schemas/pms.js';
import type { ParseResult } from '../../provider/schemas/bookings.js';
import { erasableInvoices, erasableLoyaltyCards, type ReadInvoices, type ReadLoyaltyCards } from '../../mapping/erasure.js';
import { keptPayload } from '../../mapping/personal-data.js';
import { quarantineGuestPayload } from '../../privacy/guest-writes.js';
import { IdlePause } from '../../util/wait-list.js';
import type { SyncContext } from '../runtime/context.js';
import { classify } from '../runtime/failures.js';
import { readHealthOf, type TalliedStream } from '../runtime/read-health.js';
import { ONCE_MAX_ATTEMPTS, parkedRetryDelayMs } from '../runtime/fetch-drain.js';
import type { EngineMode, QueueDrain, QueueStream } from './types.js';

/**
 * Below the PMS backfill (5) and the PMS refreshes (8: rooms, occupancy, a few requests every few
 * hours), above content (10): the pass takes what budget those leave.
 */
const PASS_PRIORITY = 9;
/** Rows read from the database at a time. */
const BATCH = 200;

/** One paged list of one thing (a reservation's invoices, a person's cards), as read here. */
interface PagedRead<T> {
  path: string;
  parse: (body: unknown) => ParseResult<PmsPage<T>>;
  /** The list's key in the answer: its items as received. */
  listKey: string;
  /** Where an answer that does not parse goes: its stream and the thing's key. */
  quarantine: { stream: typeof streamNames.pmsInvoices | typeof streamNames.pmsLoyaltyCards; propertyId: string; entityKey: string };
  /** For the log: "invoices of PMS reservation 123". */
  what: string;
}

/**
 * Every page of a list: its items parsed and as received (with the personal-data policy
 * applied), or null when the answer is not a complete list: gone or refused (404, 400, 403:
 * the document describes these endpoints loosely, and a person or reservation the PMS does not
 * find now may be found later), answered with errors (after the client's retries), a page
 * without its list, paged in a circle or without the next page's token, or not parseable (the
 * answer is quarantined). What is mirrored then stays,
 * and is read again later; each outcome is tallied (read-health.ts), so that a property whose
 * reads mostly fail shows the stream failing.
 */
async function readPages<T>(ctx: SyncContext, read: PagedRead<T>, signal: AbortSignal, priority: number): Promise<{ parsed: T[]; raw: unknown[] } | null> {
  const { stream, propertyId, entityKey } = read.quarantine;
  const health = readHealthOf(ctx);
  const out: { parsed: T[]; raw: unknown[] } = { parsed: [], raw: [] };
  const tokens = new PageTokens();
  let pageToken: string | null = null;
  do {
    let res;
    try {
      res = await ctx.client.requestJson('standard', 'provider', read.path, pageToken ? { pageToken } : { maxPageSize: 100 }, signal, priority);
    } catch (err) {
      // Refused, or answered with errors however often it was asked: not read. An outage is
      // not this endpoint's doing: thrown on, the caller waits for it.
      if (err instanceof NotFoundError || err instanceof RequestRejectedError || err instanceof ProviderErrorsError) {
        await health.failed(stream, propertyId, entityKey, err.message);
        return null;
      }
      throw err;
    }
    const page = read.parse(res.body);
    if (!page.ok) {
      ctx.counters.quarantined += 1;
      await ctx.write((trx) => quarantineGuestPayload(trx, { ...read.quarantine, reason: page.reason, rawBody: res.rawBody }, ctx.config.pms.personalData));
      await health.failed(stream, propertyId, entityKey, `${read.path}: the answer is not the documented shape: ${page.reason}`);
      return null;
    }
    const items = page.value.items;
    let reason: string | null = items === null ? `the answer holds no ${read.listKey} list` : null;
    if (items !== null) {
      const raw = (res.body as Record<string, unknown[] | null | undefined>)[read.listKey] ?? [];
      out.parsed.push(...items);
      out.raw.push(...raw.map((i) => keptPayload(i, ctx.config.pms.personalData)));
      try {
        pageToken = tokens.next({ ...page.value, items: items.length });
      } catch (err) {
        if (!(err instanceof PagingError)) throw err;
        reason = err.message;
      }
    }
    if (reason !== null) {
      ctx.logger.warn({ component: 'pms', ...read.quarantine, reason }, `${read.what}: not read (${reason}); the mirrored ones are kept and read again later`);
      await health.failed(stream, propertyId, entityKey, `${read.path}: ${reason}`);
      return null;
    }
  } while (pageToken);
  await health.succeeded(stream, propertyId, entityKey);
  return out;
}

/**
 * The invoices of a reservation, every page (one request for most: up to 100 invoices a page);
 * null when the answer is not a complete list (readPages): the mirrored ones then stay, and are
 * read again (by the pass, or with the reservation's next version).
 */
export function fetchInvoices(ctx: SyncContext, propertyId: string, number: string, signal: AbortSignal, priority: number): Promise<ReadInvoices | null> {
  return readPages(
    ctx,
    {
      path: `/api/pms/v2/properties/${encodeURIComponent(propertyId)}/reservations/${encodeURIComponent(number)}/invoices`,
      parse: parseInvoicesPage,
      listKey: 'invoices',
      quarantine: { stream: streamNames.pmsInvoices, propertyId, entityKey: number },
      what: `invoices of PMS reservation ${number}`,
    },
    signal,
    priority,
  );
}

/**
 * A person's loyalty cards, every page, parsed and as stored (each card's raw); null when the
 * answer is not a complete list
 * (readPages; a 404 too: the documents do not say that it means "no cards", and the person may
 * be found later): the mirrored ones stay, and are read again later.
 */
export function fetchLoyaltyCards(
  ctx: SyncContext,
  propertyId: string,
  personId: string,
  signal: AbortSignal,
  priority: number,
): Promise<ReadLoyaltyCards | null> {
  return readPages(
    ctx,
    {
      path: `/api/pms/v2/properties/${encodeURIComponent(propertyId)}/guests/${encodeURIComponent(personId)}/loyalty-cards`,
      parse: parseLoyaltyCardsPage,
      listKey: 'loyaltyCards',
      quarantine: { stream: streamNames.pmsLoyaltyCards, propertyId, entityKey: personId },
      what: `loyalty cards of PMS person ${personId}`,
    },
    signal,
    priority,
  );
}

class DeferredReadsDrain implements QueueDrain {
  private readonly idle = new IdlePause();
  /** Passes the backoff ran in a row, each leaving something not read: the wait before the next grows with them. */
  private retries = 0;
  private readonly stopListening: () => void;

  constructor(private readonly ctx: SyncContext) {
    this.stopListening = ctx.events.on('readsDeferred', () => this.idle.wake());
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
          const { read, notRead } = await this.pass(signal);
          if (read > 0) continue;
          if (opts.mode === 'once') {
            // Done when nothing upstream can still leave a read: the property streams are
            // caught up and no PMS reservation waits to be fetched (then one last pass).
            if (
              opts.upstreamDone() &&
              (await pendingCount(ctx.db, 'pms_reservation_queue', { maxAttempts: ONCE_MAX_ATTEMPTS, connection: ctx.connection })) === 0
            ) {
              if ((await this.pass(signal)).read === 0) return;
              continue;
            }
            await this.idle.pause(signal, 1_000);
            continue;
          }
          // What could not be read is asked again on a growing backoff, not only at the next
          // start or backfill: the provider may answer it later.
          if (notRead === 0) this.retries = 0;
          const delay = notRead > 0 ? parkedRetryDelayMs(this.retries, ctx.config.sync.refetchParkedAfterMs) : Infinity;
          const pausedAt = ctx.clock.now();
          await this.idle.pause(signal, delay);
          // Only a pass the backoff ran makes the next wait longer, not one a backfill's fetch woke.
          if (ctx.clock.now() - pausedAt >= delay) this.retries += 1;
        } catch (err) {
          if (signal.aborted) return;
          const verdict = classify(err, signal, ctx);
          if (verdict.kind === 'fatal' || verdict.kind === 'continueTokenLost') return opts.onFatal(verdict.error);
          if (verdict.kind !== 'database' && verdict.kind !== 'lease' && verdict.kind !== 'stopped')
            ctx.logger.warn({ component: 'pms', reason: verdict.reason }, 'PMS reads after the backfill: a read failed; the pass tries again in a minute');
          await this.idle.pause(signal, 60_000);
        }
      }
    } finally {
      this.stopListening();
    }
  }

  /** One pass: the invoices, then the cards, each row at most once; returns how many were read, and how many could not be. */
  private async pass(signal: AbortSignal): Promise<{ read: number; notRead: number }> {
    const { ctx } = this;
    const propertyIds = ctx.config.propertyIds.length > 0 ? [...ctx.config.propertyIds] : await activePropertyIds(ctx.db, ctx.connection);
    let read = 0;
    let notRead = 0;
    const health = readHealthOf(ctx);
    // Reads this pass per stream and property: one whose reads mostly fail is only probed.
    const asked = new Map<string, number>();
    const mayAsk = (stream: TalliedStream, propertyId: string): boolean => {
      const key = `${stream}\u0000${propertyId}`;
      const n = asked.get(key) ?? 0;
      if (health.probesLeft(stream, propertyId, n) <= 0) return false;
      asked.set(key, n + 1);
      return true;
    };
    for (let after: [string, string] | null = null; !signal.aborted;) {
      const batch: UnreadInvoices[] = await invoicesUnreadAfter(ctx.db, propertyIds, after, BATCH);
      if (batch.length === 0) break;
      for (const r of batch) {
        if (signal.aborted) break;
        if (!mayAsk(streamNames.pmsInvoices, r.propertyId)) {
          notRead += 1;
          continue;
        }
        const invoices = await fetchInvoices(ctx, r.propertyId, r.number, signal, PASS_PRIORITY);
        if (invoices === null) {
          notRead += 1;
          continue;
        }
        const readAt = new Date(ctx.clock.now());
        await ctx.write(async (trx) => {
          const [rows] = await rowsAfterErasures(trx, [erasableInvoices(r.propertyId, r.number, r, invoices)]);
          await replaceInvoicesIfUnread(trx, r.propertyId, r.number, rows!, readAt);
        });
        read += 1;
        ctx.counters.pmsInvoicesRead += 1;
      }
      const last = batch[batch.length - 1]!;
      after = [last.propertyId, last.number];
    }
    if (!ctx.config.pms.loyaltyCards) return { read, notRead };
    for (let after: [string, string] | null = null; !signal.aborted;) {
      const batch: { propertyId: string; personId: string }[] = await personsWithUnreadLoyaltyCardsAfter(ctx.db, propertyIds, after, BATCH);
      if (batch.length === 0) break;
      for (const p of batch) {
        if (signal.aborted) break;
        if (!mayAsk(streamNames.pmsLoyaltyCards, p.propertyId)) {
          notRead += 1;
          continue;
        }
        const cards = await fetchLoyaltyCards(ctx, p.propertyId, p.personId, signal, PASS_PRIORITY);
        if (cards === null) {
          notRead += 1;
          continue;
        }
        const readAt = new Date(ctx.clock.now());
        await ctx.write(async (trx) => {
          const [kept] = await rowsAfterErasures(trx, [erasableLoyaltyCards(p.propertyId, p.personId, cards, ctx.config.pms.personalData)]);
          await replaceLoyaltyCards(trx, p.propertyId, p.personId, kept!.cards, readAt);
        });
        read += 1;
        ctx.counters.pmsLoyaltyCardsRead += 1;
      }
      const last = batch[batch.length - 1]!;
      after = [last.propertyId, last.personId];
    }
    return { read, notRead };
  }
}

/** Registered with the queues: it drains the reads a backfill left. */
export const pmsDeferredReadsStream: QueueStream = {
  name: streamNames.pmsDeferredReads,
  area: 'pms',
  enabled: (config) => config.pms.enabled,
  create: (ctx) => new DeferredReadsDrain(ctx),
};
