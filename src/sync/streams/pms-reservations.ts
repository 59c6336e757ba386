/**
 * PMS reservations: a search stream per property and a fetch queue.
 *
 * The search reads reservations by modification time, in windows of at most 365 days,
 * property-local minutes, both states (Active and Cancelled), page by page. Its cursor is
 * `coveredTo`: every modification up to the end of that minute has been searched. Backfill
 * starts at pms.backfillFrom; once caught up, each poll reads two parts:
 * - new: from the minute after `coveredTo` to the last complete minute;
 * - recheck: the last pms.overlapMinutes up to `coveredTo` again, for writes that became
 *   visible late (minute precision and local time make an exact edge unsafe). A reservation
 *   found there whose mirrored version was fetched after that part ended is skipped: its
 *   modification is already in the mirror, so an unchanged reservation costs no second call.
 *   (The search gives numbers only, so a reservation fetched before the part ended, i.e. by
 *   an earlier poll when the overlap is longer than the poll interval, is fetched again: keep
 *   pms.overlapMinutes at most the interval of pms.pollCron, as the defaults are.)
 * Each page commits with the window's progress; `coveredTo` moves when the new part's last
 * page committed. The numbers found go to pms_reservation_queue, drained like booking details
 * (fetch-drain.ts): one reservation (with the profiles of guests not mirrored yet) per
 * transaction, version-guarded by modifyDateTime.
 */
import { propertyTimeZone } from '../../store/repositories/content.js';
import { saveCursorAfterPage } from '../../store/repositories/cursors.js';
import type { QueuedFetch } from '../../store/repositories/fetch-queue.js';
import { fetchAgainLater, removeFetch } from '../../store/repositories/fetch-queue.js';
import {
  enqueuePmsReservations,
  guestProfilesToFetch,
  invoicesToFetch,
  loyaltyCardsToRead,
  replaceLoyaltyCards,
  savePmsReservation,
  upsertPmsGuest,
} from '../../store/repositories/pms.js';
import type { Trx } from '../../store/types.js';
import type { NewPmsGuest, NewPmsGuestLoyaltyCard } from '../../store/schema.js';
import { streamNames } from '../../store/states.js';
import { AccessRefusedError, InvalidPayloadError, NotFoundError, RequestRejectedError } from '../../provider/errors.js';
import { apiAreas, type ApiArea } from '../../provider/api-access.js';
import { nextPageTokenOf, PagingError } from '../../provider/paging.js';
import { fetchInvoices, fetchLoyaltyCards } from './pms-deferred-reads.js';
import { parseGuestResponse, parseReservationResponse, parseReservationSearchPage } from '../../provider/schemas/pms.js';
import { isKnownTimeZone, localMinute } from '../../util/local-time.js';
import type { SyncContext } from '../runtime/context.js';
import { FetchDrain, FetchOutcomes, parkedRetryDelayMs, type FetchHandler } from '../runtime/fetch-drain.js';
import { erasableGuest, erasableLoyaltyCards, erasableReservation, type Erasable } from '../../mapping/erasure.js';
import { rowsAfterErasures } from '../../store/repositories/erasures.js';
import { type PmsReservationRows } from '../../store/schema.js';
import type { EngineMode, PropertyStream, QueueStream } from './types.js';

/** Budget priorities in the standard scope (lower first): events 0, following 2, backfill 5; content is 10. */
export const PMS_PRIORITY = { event: 0, following: 2, backfill: 5 } as const;
/** Queue priorities: event 0, following 1, backfill 2. */
const QUEUE_PRIORITY = { event: 0, following: 1, backfill: 2 } as const;

const MINUTE = 60_000;
const DAY = 86_400_000;
/** The document's limit of a modification window. */
const MAX_WINDOW_MS = 365 * DAY;
/** When the property's zone is not known yet, windows are read as UTC and widened by the largest offset. */
const UNKNOWN_ZONE_MARGIN_MS = 14 * 3_600_000;
/** A window that ends earlier than this before now is backfill (lower priority). */
const FOLLOWING_HORIZON_MS = 2 * DAY;
const STATES = ['Active', 'Cancelled'] as const;

type Part = 'recheck' | 'new';

/** Where the search of a property stands (sync_cursors.cursor, as JSON). */
interface SearchCursor {
  /** Every modification up to the end of this minute has been searched (UTC instant, ms). */
  coveredTo: number;
  /** The window being read: resumed after a crash or a failure. */
  window?: { part: Part; from: number; to: number; state: (typeof STATES)[number]; pageToken: string | null } | undefined;
}

function readCursor(text: string | null | undefined, backfillFrom: string): SearchCursor {
  if (text) {
    try {
      const c = JSON.parse(text) as SearchCursor;
      if (typeof c.coveredTo === 'number') return c;
    } catch {
      /* a cursor of another shape: start from the backfill date */
    }
  }
  // The minute before the backfill's first day in any zone.
  return { coveredTo: Date.parse(`${backfillFrom}T00:00:00Z`) - UNKNOWN_ZONE_MARGIN_MS - MINUTE };
}

/**
 * The next window to read after `coveredTo`, or undefined when caught up. It ends with the
 * last complete minute, so that what a poll fetches was fetched after its window closed and a
 * recheck can skip it. `sync --once` reads the current minute too (it ends now); a write later
 * in that minute is found by the next run's recheck, at the cost of fetching again what was
 * fetched within the minute.
 */
function nextWindow(c: SearchCursor, now: number, mode: EngineMode): SearchCursor['window'] {
  const last = Math.floor(now / MINUTE) * MINUTE - (mode === 'once' ? 0 : MINUTE);
  if (c.coveredTo >= last) return undefined;
  const from = c.coveredTo + MINUTE;
  return { part: 'new', from, to: Math.min(last, from + MAX_WINDOW_MS - 2 * UNKNOWN_ZONE_MARGIN_MS - MINUTE), state: 'Active', pageToken: null };
}

/** The recheck window before `coveredTo`, when following (not during backfill). */
function recheckWindow(c: SearchCursor, now: number, overlapMinutes: number): SearchCursor['window'] {
  if (now - c.coveredTo > FOLLOWING_HORIZON_MS) return undefined;
  return { part: 'recheck', from: c.coveredTo - overlapMinutes * MINUTE + MINUTE, to: c.coveredTo, state: 'Active', pageToken: null };
}

/** Zones read from the content API for properties that content has not mirrored (yet), per context. */
const fetchedZones = new WeakMap<SyncContext, Map<string, string | null>>();
/** Zones read from the content mirror, per context, with when: a search page does not read it each time. */
const mirroredZones = new WeakMap<SyncContext, Map<string, { zone: string | null; at: number }>>();
/** A mirrored zone is read again after this (content is refreshed daily; a zone rarely changes). */
const MIRRORED_ZONE_TTL_MS = 3_600_000;

/**
 * The property's IANA time zone: from the content mirror (read at most hourly), else from the
 * content API (one call, remembered), else null (the windows are then widened).
 */
export async function zoneOf(ctx: SyncContext, propertyId: string, signal: AbortSignal): Promise<string | null> {
  let known = mirroredZones.get(ctx);
  if (!known) mirroredZones.set(ctx, (known = new Map()));
  let seen = known.get(propertyId);
  if (!seen || ctx.clock.now() - seen.at >= MIRRORED_ZONE_TTL_MS) {
    const mirrored = await propertyTimeZone(ctx.db, propertyId);
    known.set(propertyId, (seen = { zone: mirrored && isKnownTimeZone(mirrored) ? mirrored : null, at: ctx.clock.now() }));
  }
  if (seen.zone) return seen.zone;
  let cache = fetchedZones.get(ctx);
  if (!cache) fetchedZones.set(ctx, (cache = new Map()));
  if (cache.has(propertyId)) return cache.get(propertyId)!;
  let zone: string | null = null;
  try {
    const res = await ctx.client.requestJson(
      'standard',
      'provider',
      `/api/content/v1/properties/${encodeURIComponent(propertyId)}`,
      {},
      signal,
      PMS_PRIORITY.following,
    );
    const id = (res.body as { timeZone?: { id?: unknown } } | null)?.timeZone?.id;
    zone = typeof id === 'string' && isKnownTimeZone(id) ? id : null;
  } catch (err) {
    if (signal.aborted) throw err;
    ctx.logger.debug({ propertyId, err: (err as Error).message }, 'time zone of the property not readable: PMS windows are widened');
  }
  cache.set(propertyId, zone);
  return zone;
}

/** Reads windows until caught up, committing each page with the window's progress. */
export async function searchPmsReservations(ctx: SyncContext, propertyId: string, signal: AbortSignal, mode: EngineMode): Promise<void> {
  const log = ctx.logger.child({ component: 'pms', propertyId });
  const { backfillFrom, overlapMinutes } = ctx.config.pms;
  let rechecked = false;
  while (!signal.aborted) {
    // As this process last wrote it (read once per lease): a quiet search reads nothing first.
    const row = await ctx.cursors.get(propertyId, streamNames.pmsReservations);
    const cursor = readCursor(row?.cursor, backfillFrom);
    const now = ctx.clock.now();
    let window = cursor.window;
    if (!window && !rechecked) {
      rechecked = true;
      window = recheckWindow(cursor, now, overlapMinutes);
    }
    window ??= nextWindow(cursor, now, mode);
    if (!window) return;
    if (!row?.cursor && window.part === 'new' && window.pageToken === null && window.state === 'Active') {
      log.info({ from: new Date(window.from).toISOString() }, 'PMS reservations: backfill from this modification time');
    }

    const zone = await zoneOf(ctx, propertyId, signal);
    const following = now - window.to < FOLLOWING_HORIZON_MS;
    const priority = following ? PMS_PRIORITY.following : PMS_PRIORITY.backfill;
    const path = `/api/pms/v2/properties/${encodeURIComponent(propertyId)}/reservations/search`;
    // Minute precision and the property's local time: a zone we do not know yet widens the
    // window by the largest offset, so nothing at its edges is missed.
    const margin = zone ? 0 : UNKNOWN_ZONE_MARGIN_MS;
    const query = window.pageToken
      ? { pageToken: window.pageToken }
      : {
          state: window.state,
          startModifyDateTime: localMinute(window.from - margin, zone ?? 'UTC'),
          endModifyDateTime: localMinute(window.to + margin, zone ?? 'UTC'),
          maxPageSize: 100,
        };
    let res;
    try {
      res = await ctx.client.requestJson('standard', 'provider', path, query, signal, priority);
    } catch (err) {
      if (err instanceof RequestRejectedError && err.status === 400 && window.pageToken) {
        // A page token kept across a restart may have expired: read this state of the window
        // again from its start (what it enqueues again costs nothing more than a queue row).
        log.warn({ state: window.state }, 'PMS search: the stored page token was refused; reading the window again from its start');
        const restart: SearchCursor = { coveredTo: cursor.coveredTo, window: { ...window, pageToken: null } };
        ctx.cursors.forget(propertyId, streamNames.pmsReservations);
        await ctx.write((trx) =>
          saveCursorAfterPage(trx, {
            propertyId,
            stream: streamNames.pmsReservations,
            cursor: JSON.stringify(restart),
            position: new Date(cursor.coveredTo + MINUTE),
            caughtUp: false,
            rows: 0,
            polledAt: new Date(now),
          }),
        );
        continue;
      }
      throw withAccessHint(err, 'pms', 'pms.enabled');
    }
    const page = parseReservationSearchPage(res.body);
    if (!page.ok) throw new InvalidPayloadError({ rawBody: res.rawBody, reason: page.reason, propertyId }, { status: res.status, path });
    // Only a page that holds its list and says where the next is lets the window move on: the
    // window is marked searched once its last page is read (a 2xx with `errors` is a failed
    // request already, client.ts).
    let nextPage: string | null;
    try {
      if (page.value.items === null) throw new PagingError('the page holds no reservations list');
      nextPage = nextPageTokenOf({ ...page.value, items: page.value.items.length });
    } catch (err) {
      if (!(err instanceof PagingError)) throw err;
      throw new InvalidPayloadError(
        { rawBody: res.rawBody, reason: `${err.message}: the search of this window stops there, not marked searched`, propertyId },
        { status: res.status, path },
      );
    }

    // The next step: the next page, the other state, the other part, or the window done.
    const stateIndex = STATES.indexOf(window.state);
    let next: SearchCursor;
    if (nextPage !== null && nextPage === window.pageToken) {
      // The page names itself as the next: read on, it would be asked for ever.
      throw new InvalidPayloadError(
        {
          rawBody: res.rawBody,
          reason: `the provider gave the page token it was asked with as the next page's: the search of this window stops there`,
          propertyId,
        },
        { status: res.status, path },
      );
    } else if (nextPage !== null) {
      next = { coveredTo: cursor.coveredTo, window: { ...window, pageToken: nextPage } };
    } else if (stateIndex < STATES.length - 1) {
      next = { coveredTo: cursor.coveredTo, window: { ...window, state: STATES[stateIndex + 1]!, pageToken: null } };
    } else if (window.part === 'recheck') {
      next = { coveredTo: cursor.coveredTo };
    } else {
      next = { coveredTo: window.to };
    }
    const numbers = page.value.numbers;
    const position = new Date(next.coveredTo + MINUTE);
    const caughtUp = next.window === undefined && next.coveredTo >= Math.floor(ctx.clock.now() / MINUTE) * MINUTE - MINUTE;
    if (numbers.length === 0 && following && row?.cursor && row.state === 'active') {
      // Following, and nothing found: nothing is written now. The next page or window starts
      // from here; when a window is read to its end, the ledger writes the position with the
      // other quiet polls of the process (poll-ledger.ts). A crash before that reads the
      // window again, which finds nothing again.
      const polledAt = new Date(now);
      const text = JSON.stringify(next);
      ctx.cursors.update(propertyId, streamNames.pmsReservations, { cursor: text, position, caughtUp, lastPollAt: polledAt });
      if (next.window === undefined)
        await ctx.polls.record({ connection: ctx.connection, epoch: ctx.fence.epoch }, propertyId, streamNames.pmsReservations, polledAt, {
          cursor: text,
          position,
          coveredTo: next.coveredTo,
          caughtUp,
        });
      ctx.counters.pmsSearchPages += 1;
      continue;
    }
    ctx.cursors.forget(propertyId, streamNames.pmsReservations);
    const enqueued = await ctx.write(async (trx) => {
      const n = await enqueuePmsReservations(
        trx,
        propertyId,
        numbers,
        following ? QUEUE_PRIORITY.following : QUEUE_PRIORITY.backfill,
        // A recheck finds what may already be mirrored: skip versions fetched after the part ended.
        window.part === 'recheck' ? new Date(window.to + MINUTE) : null,
      );
      await saveCursorAfterPage(trx, {
        propertyId,
        stream: streamNames.pmsReservations,
        cursor: JSON.stringify(next),
        position,
        caughtUp,
        rows: numbers.length,
        polledAt: new Date(now),
      });
      return n;
    });
    ctx.counters.pmsSearchPages += 1;
    ctx.counters.pmsReservationsEnqueued += enqueued;
    if (enqueued > 0) ctx.events.emit('enqueued');
  }
}

/**
 * A 403 of an API area as a whole means the API connection lacks it: an AccessRefusedError,
 * which shows the area as not granted until the next access token (not failing), and names
 * where it is granted and which setting turns the stream off.
 */
export function withAccessHint(err: unknown, area: ApiArea, setting: string): unknown {
  if (err instanceof RequestRejectedError && err.status === 403) {
    return new AccessRefusedError(
      area,
      `${err.message} (the API connection has no access to the ${apiAreas[area].title}: grant it in the extranet, Property settings > API connections > Public APIs, or set ${setting} to false)`,
      { status: 403, path: err.path, cause: err },
    );
  }
  return err;
}

/** A person's loyalty cards as read, as rows. */
export interface PersonLoyaltyCards {
  personId: string;
  cards: NewPmsGuestLoyaltyCard[];
}

/** A reservation as fetched and mapped, with the profiles of its guests that were not mirrored. */
export interface FetchedReservation {
  /** The reservation's rows, and how to make them without an erased customer (the erasure list is read when they are written). */
  reservation: Erasable<{ rows: PmsReservationRows; stored: unknown }>;
  guests: Erasable<NewPmsGuest | null>[];
  /** The loyalty cards read, by person (pms.loyaltyCards). */
  loyaltyCards: Erasable<PersonLoyaltyCards>[];
  /** The invoices or the persons' cards are left to the pass after the backfill (pms-deferred-reads.ts). */
  deferred: boolean;
  /** When the reservation was read: its persons' cards count as read then. */
  readAt: Date;
  rawBody: string;
  /** Guests whose profile could not be read (gone, refused, not the documented shape), with why: the reservation is fetched again later. */
  unreadGuests: string[];
}

/**
 * Fetches one reservation, its invoices when it is a newer version than the mirror's (or its
 * invoices were not read yet), and the profiles of its guests that are not mirrored yet, or all of
 * them when it is a newer version of a mirrored reservation (names and, with pms.personalData,
 * contact data; stripped otherwise; with privacy.pseudonymKey, the pseudonyms of the contact
 * data either way). Throws the client's errors
 * (NotFoundError, InvalidPayloadError, …) for the caller to record.
 */
export async function fetchPmsReservation(
  ctx: SyncContext,
  propertyId: string,
  number: string,
  signal: AbortSignal,
  priority: number,
): Promise<FetchedReservation> {
  const base = `/api/pms/v2/properties/${encodeURIComponent(propertyId)}`;
  const path = `${base}/reservations/${encodeURIComponent(number)}`;
  const res = await ctx.client.requestJson('standard', 'provider', path, {}, signal, priority);
  // Keyed by the number it was fetched by: the answer's own may be null (raw keeps it as sent).
  const parsed = parseReservationResponse(res.body, number);
  if (!parsed.ok)
    throw new InvalidPayloadError({ rawBody: res.rawBody, reason: parsed.reason, propertyId, bookingNumber: number }, { status: res.status, path });
  const policy = { personalData: ctx.config.pms.personalData, pseudonymKey: ctx.config.privacy.pseudonymKey };
  const rawReservation = (res.body as { reservation?: unknown }).reservation;
  // During a backfill, the invoices and the persons' loyalty cards wait for the pass after it
  // (pms-deferred-reads.ts): the budget goes to the reservations and their guests first.
  const backfill = priority === PMS_PRIORITY.backfill;
  const invoicesDue = await invoicesToFetch(ctx.db, propertyId, number, parsed.value.modifyDateTime);
  // null: not read with this version (invoices_read_at NULL), which the pass reads.
  const invoices = !invoicesDue ? undefined : backfill ? null : await fetchInvoices(ctx, propertyId, number, signal, priority);
  const reservation = erasableReservation(propertyId, parsed.value, rawReservation, policy, res.fetchedAt, invoices);
  const { rows, stored } = reservation.rows;

  const customerId = parsed.value.customer?.pmsPersonId ?? null;
  const referenced = parsed.value.roomStays.flatMap((s) => s.guestsIds).filter((id) => id !== customerId);
  // A backfill, whose reservations are new, fetches a repeat guest once; a newer version
  // fetches all of its guests again.
  const guests: Erasable<NewPmsGuest | null>[] = [];
  const unread = new Map<string, string>();
  for (const personId of await guestProfilesToFetch(ctx.db, propertyId, number, rows.reservation.modified_at, referenced)) {
    const guestPath = `${base}/guests/${encodeURIComponent(personId)}`;
    let g;
    try {
      g = await ctx.client.requestJson('standard', 'provider', guestPath, {}, signal, priority);
    } catch (err) {
      // A guest that is gone or refused does not hold up its reservation, which is written
      // without it and fetched again later (PmsReservationFetches): its profile is read then.
      if (err instanceof NotFoundError || err instanceof RequestRejectedError) {
        unread.set(personId, err.message);
        continue;
      }
      throw err;
    }
    const person = parseGuestResponse(g.body);
    if (!person.ok) {
      unread.set(personId, `${guestPath}: the answer is not the documented shape: ${person.reason}`);
      continue;
    }
    const rawGuest = (g.body as { guest?: unknown }).guest;
    const guest = erasableGuest(propertyId, person.value, rawGuest, policy, g.fetchedAt);
    if (guest.rows) guests.push(guest);
  }
  // The cards of the persons whose row this write leaves in pms_guests (not of a profile that
  // could not be read: its cards would have no person to be erased with).
  const loyaltyCards: Erasable<PersonLoyaltyCards>[] = [];
  const deferred = backfill && (invoicesDue || ctx.config.pms.loyaltyCards);
  if (ctx.config.pms.loyaltyCards && !backfill) {
    const persons = [...(customerId ? [customerId] : []), ...referenced.filter((id) => !unread.has(id))];
    for (const personId of await loyaltyCardsToRead(ctx.db, propertyId, number, rows.reservation.modified_at, persons)) {
      const cards = await fetchLoyaltyCards(ctx, propertyId, personId, signal, priority);
      if (cards) loyaltyCards.push(erasableLoyaltyCards(propertyId, personId, cards, ctx.config.pms.personalData));
    }
  }
  const unreadGuests = [...unread].map(([id, why]) => `guest ${id}: ${why}`);
  return { reservation, guests, loyaltyCards, deferred, readAt: res.fetchedAt, rawBody: JSON.stringify(stored), unreadGuests };
}

/** Writes a fetched reservation and its guests; returns whether the reservation was newer than the mirror's. */
export async function writePmsReservation(trx: Trx, fetched: FetchedReservation): Promise<boolean> {
  // One lookup of the erasure list for the reservation and its guests.
  const [reservation, ...rest] = await rowsAfterErasures<{ rows: PmsReservationRows } | NewPmsGuest | null | PersonLoyaltyCards>(trx, [
    fetched.reservation,
    ...fetched.guests,
    ...fetched.loyaltyCards,
  ]);
  const guests = rest.slice(0, fetched.guests.length) as (NewPmsGuest | null)[];
  const cards = rest.slice(fetched.guests.length) as PersonLoyaltyCards[];
  const written = await savePmsReservation(trx, (reservation as { rows: PmsReservationRows }).rows);
  for (const g of guests) if (g) await upsertPmsGuest(trx, g);
  const propertyId = (reservation as { rows: PmsReservationRows }).rows.reservation.property_id;
  for (const c of cards) await replaceLoyaltyCards(trx, propertyId, c.personId, c.cards, fetched.readAt);
  return written;
}

class PmsReservationFetches implements FetchHandler {
  constructor(
    private readonly ctx: SyncContext,
    private readonly outcomes: FetchOutcomes,
  ) {}

  async fetchOne(item: QueuedFetch, signal: AbortSignal, onFatal: (err: Error) => void): Promise<void> {
    const { ctx } = this;
    const priority =
      item.priority === QUEUE_PRIORITY.event ? PMS_PRIORITY.event : item.priority === QUEUE_PRIORITY.following ? PMS_PRIORITY.following : PMS_PRIORITY.backfill;
    let fetched: FetchedReservation;
    try {
      fetched = await fetchPmsReservation(ctx, item.propertyId, item.number, signal, priority);
    } catch (err) {
      if (signal.aborted) return;
      return this.outcomes.fetchFailed(item, err, onFatal);
    }
    ctx.counters.pmsReservationsFetched += 1;
    // A guest whose profile could not be read is not skipped for good: the reservation is
    // written, and fetched again on the parked backoff (which reads only the missing profiles).
    const unread = fetched.unreadGuests;
    if (unread.length > 0 && item.state !== 'not_found')
      ctx.logger.warn(
        { component: 'pms', propertyId: item.propertyId, number: item.number, reason: unread.join('; ') },
        `PMS reservation ${item.number}: ${unread.length} guest profile(s) could not be read; the reservation is written and fetched again on a growing backoff`,
      );
    try {
      const written = await ctx.write(async (trx) => {
        const w = await writePmsReservation(trx, fetched);
        if (unread.length === 0) await removeFetch(trx, 'pms_reservation_queue', item);
        else
          await fetchAgainLater(
            trx,
            'pms_reservation_queue',
            item,
            'not_found',
            parkedRetryDelayMs(item.state === 'not_found' ? item.attempts : 0, ctx.config.sync.refetchParkedAfterMs),
            `written without the profiles of ${unread.join('; ')}`,
          );
        return w;
      });
      if (written) ctx.counters.pmsReservationsWritten += 1;
      if (fetched.deferred) ctx.events.emit('readsDeferred');
    } catch (err) {
      await this.outcomes.writeFailed(item, err, fetched.rawBody);
    }
  }
}

/** The PMS search, per property, registered with the engine. */
export const pmsReservationsStream: PropertyStream = {
  name: streamNames.pmsReservations,
  area: 'pms',
  title: 'PMS reservations',
  enabled: (config) => config.pms.enabled,
  catchUp: async (ctx, propertyId, signal, start) => {
    await searchPmsReservations(ctx, propertyId, signal, start.mode);
  },
  waitForNextRun: (ctx, _propertyId, signal, tickers) => tickers.get(ctx.config.pms.pollCron).next(signal),
};

/** The PMS reservation fetch queue, registered with the engine. */
export const pmsReservationQueueStream: QueueStream = {
  name: streamNames.pmsReservationQueue,
  area: 'pms',
  enabled: (config) => config.pms.enabled,
  create: (ctx) => {
    const log = ctx.logger.child({ component: 'pms' });
    const outcomes = new FetchOutcomes(ctx, 'pms_reservation_queue', streamNames.pmsReservations, 'PMS reservation', log);
    return new FetchDrain(ctx, 'pms_reservation_queue', ctx.config.pms.fetchConcurrency, new PmsReservationFetches(ctx, outcomes), log);
  },
};
