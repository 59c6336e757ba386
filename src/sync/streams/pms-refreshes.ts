/**
 * Refreshes that go property by property: the PMS rooms (with content, so that a report shows
 * "room 204" rather than an id), the property's companies, and the daily occupancy statistics over a horizon around today.
 * A property that fails does not stop the others; the refresh then ends with
 * RefreshIncompleteError naming them, and the failures show per property.
 */
import { activePropertyIds, markMissingRemoved, upsertChanged } from '../../store/repositories/content.js';
import { markCursorProblem, saveCursorAfterPage } from '../../store/repositories/cursors.js';
import { writeOccupancyWindow } from '../../store/repositories/pms.js';
import { quarantineGuestPayload } from '../../privacy/guest-writes.js';
import type { NewDailyOccupancy } from '../../store/schema.js';
import { streamNames, type CursorStream } from '../../store/states.js';
import { InvalidPayloadError } from '../../provider/errors.js';
import { PagingError, PageTokens } from '../../provider/paging.js';
import {
  parseCompaniesPage,
  parseCompany,
  parseDailyOccupancy,
  parseRoom,
  parseRoomsPage,
  type PmsCompany,
  type PmsPage,
  type PmsRoom,
} from '../../provider/schemas/pms.js';
import type { ParseResult } from '../../provider/schemas/bookings.js';
import { companyToRow, occupancyDayToRow, roomToRow } from '../../mapping/pms.js';
import { addDays, daysBetween, localDate } from '../../util/local-time.js';
import type { SyncContext } from '../runtime/context.js';
import { RefreshIncompleteError } from '../runtime/errors.js';
import { classify } from '../runtime/failures.js';
import { withAccessHint, zoneOf } from './pms-reservations.js';
import type { RefreshStream } from './types.js';
import { idTextOf } from '../../provider/schemas/primitives.js';

/** Below the PMS search (2–5), above content (10). */
export const REFRESH_PRIORITY = 8;
/** The document's limit of one occupancy request. */
const OCCUPANCY_WINDOW_DAYS = 31;

/**
 * Runs `refresh` for each property (`only`, or all that content lists). A failure that concerns
 * the whole process (stop, database, lease, credentials) ends the refresh at once; any other is
 * recorded for its property and the refresh goes on.
 */
export async function eachProperty(
  ctx: SyncContext,
  signal: AbortSignal,
  only: readonly string[],
  what: string,
  stream: CursorStream | null,
  refresh: (propertyId: string) => Promise<void>,
): Promise<void> {
  const ids = only.length > 0 ? [...only] : await activePropertyIds(ctx.db, ctx.connection);
  const problem = (on: CursorStream, propertyId: string, state: 'retrying' | 'failing' | 'not_granted', reason: string) => ({
    propertyIds: [propertyId],
    stream: on,
    state,
    message: reason.slice(0, 1000),
    at: new Date(ctx.clock.now()),
  });
  const failures: { propertyId: string; reason: string; transient: boolean }[] = [];
  let refused: unknown;
  let read = 0;
  for (const propertyId of ids) {
    if (signal.aborted) return;
    try {
      await refresh(propertyId);
      read++;
    } catch (err) {
      const verdict = classify(err, signal, ctx);
      if (verdict.kind === 'notGranted') {
        // A 403 of the whole API for this property: not a failure. The other properties go on;
        // when none was read, the refresh ends refused, and the daemon runs it again once a
        // token may grant it (else at its next tick).
        ctx.logger.warn({ component: 'pms', propertyId, reason: verdict.reason }, `${what} of property ${propertyId}: not granted; the other properties go on`);
        if (stream) await ctx.write((trx) => markCursorProblem(trx, problem(stream, propertyId, 'not_granted', verdict.reason))).catch(() => undefined);
        refused ??= err;
        continue;
      }
      if (verdict.kind !== 'permanent' && verdict.kind !== 'transient') throw err;
      failures.push({ propertyId, reason: verdict.reason, transient: verdict.kind === 'transient' });
      ctx.logger.warn({ component: 'pms', propertyId, reason: verdict.reason }, `${what} of property ${propertyId} failed; the other properties go on`);
      if (stream)
        await ctx
          .write((trx) => markCursorProblem(trx, problem(stream, propertyId, verdict.kind === 'transient' ? 'retrying' : 'failing', verdict.reason)))
          .catch(() => undefined);
    }
  }
  if (failures.length > 0)
    throw new RefreshIncompleteError(
      what,
      failures,
      failures.every((f) => f.transient),
    );
  if (refused !== undefined && read === 0) throw refused;
}

// ------------------------------------------------------------------ rooms and companies

/** A PMS list a property's refresh mirrors whole: its path, its pages and items, its table. */
interface PmsList<T> {
  /** For logs and the quarantine. */
  stream: typeof streamNames.pmsRooms | typeof streamNames.pmsCompanies;
  /** The path under /api/pms/v2/properties/{propertyId}. */
  path: string;
  table: 'pms_rooms' | 'pms_companies';
  page: (raw: unknown) => ParseResult<PmsPage<unknown>>;
  item: (raw: unknown) => ParseResult<T>;
  toRow: (propertyId: string, item: T, raw: unknown) => Record<string, unknown>;
  count: (ctx: SyncContext) => void;
}

/**
 * Every item of a property's list, page by page, then written with removal in one
 * transaction: what the list no longer holds is marked removed. An item that does not parse
 * is quarantined alone. Only a complete list marks anything removed: every page read to the
 * last (paging.ts), each holding its list; anything else fails the property's refresh and
 * writes nothing (a 2xx with `errors` is a failed request already, client.ts).
 */
async function refreshList<T>(ctx: SyncContext, propertyId: string, signal: AbortSignal, list: PmsList<T>): Promise<void> {
  const path = `/api/pms/v2/properties/${encodeURIComponent(propertyId)}/${list.path}`;
  const rows: Record<string, unknown>[] = [];
  const seen: string[] = [];
  const tokens = new PageTokens();
  let pageToken: string | null = null;
  do {
    const res = await ctx.client
      .requestJson('standard', 'provider', path, pageToken ? { pageToken } : { maxPageSize: 100 }, signal, REFRESH_PRIORITY)
      .catch((err: unknown) => {
        throw withAccessHint(err, 'pms', 'pms.enabled');
      });
    const page = list.page(res.body);
    if (!page.ok) throw new InvalidPayloadError({ rawBody: res.rawBody, reason: page.reason, propertyId }, { status: res.status, path });
    const items = page.value.items;
    if (items === null)
      throw new InvalidPayloadError(
        { rawBody: res.rawBody, reason: `the page holds no ${list.path} list: nothing is marked removed`, propertyId },
        { status: res.status, path },
      );
    for (const raw of items) {
      const item = list.item(raw);
      const rawId = idTextOf((raw as { id?: unknown } | null)?.id);
      if (rawId !== null) seen.push(rawId);
      if (!item.ok) {
        ctx.counters.quarantined += 1;
        await ctx.write((trx) =>
          quarantineGuestPayload(
            trx,
            { stream: list.stream, propertyId, entityKey: rawId, reason: item.reason, rawBody: JSON.stringify(raw) },
            ctx.config.pms.personalData,
          ),
        );
        continue;
      }
      rows.push(list.toRow(propertyId, item.value, raw));
    }
    try {
      pageToken = tokens.next({ ...page.value, items: items.length });
    } catch (err) {
      // Nothing of the list is written: a partial list would mark the rest removed.
      if (err instanceof PagingError) throw new InvalidPayloadError({ rawBody: res.rawBody, reason: err.message, propertyId }, { status: res.status, path });
      throw err;
    }
  } while (pageToken && !signal.aborted);
  if (signal.aborted) return;
  const now = new Date(ctx.clock.now());
  await ctx.write(async (trx) => {
    await upsertChanged(trx, list.table, rows);
    await markMissingRemoved(trx, list.table, seen, { propertyId });
    // When the list was last read, in the same transaction: its freshness in status and /metrics.
    await saveCursorAfterPage(trx, { propertyId, stream: list.stream, cursor: null, position: now, caughtUp: true, rows: rows.length, polledAt: now });
  });
  list.count(ctx);
}

const roomsList: PmsList<PmsRoom> = {
  stream: streamNames.pmsRooms,
  path: 'rooms',
  table: 'pms_rooms',
  page: parseRoomsPage,
  item: parseRoom,
  toRow: roomToRow,
  count: (ctx) => (ctx.counters.pmsRoomsRefreshed += 1),
};

const companiesList: PmsList<PmsCompany> = {
  stream: streamNames.pmsCompanies,
  path: 'companies',
  table: 'pms_companies',
  page: parseCompaniesPage,
  item: parseCompany,
  toRow: companyToRow,
  count: (ctx) => (ctx.counters.pmsCompaniesRefreshed += 1),
};

/** PMS rooms, refreshed with content. */
export const pmsRoomsStream: RefreshStream = {
  name: streamNames.pmsRooms,
  area: 'pms',
  enabled: (config) => config.pms.enabled,
  cron: (config) => config.content.refreshCron,
  run: (ctx, signal, only) => eachProperty(ctx, signal, only, 'PMS rooms refresh', streamNames.pmsRooms, (id) => refreshList(ctx, id, signal, roomsList)),
  discoversProperties: false,
};

/** The property's companies (customers and agents), refreshed with content: the reservations' and invoices' companies join them. */
export const pmsCompaniesStream: RefreshStream = {
  name: streamNames.pmsCompanies,
  area: 'pms',
  enabled: (config) => config.pms.enabled,
  cron: (config) => config.content.refreshCron,
  run: (ctx, signal, only) =>
    eachProperty(ctx, signal, only, 'PMS companies refresh', streamNames.pmsCompanies, (id) => refreshList(ctx, id, signal, companiesList)),
  discoversProperties: false,
};

// ------------------------------------------------------------------ daily occupancy

/** The 31-day windows (inclusive dates) covering [first, last]. */
export function occupancyWindows(first: string, last: string): { from: string; to: string }[] {
  const out: { from: string; to: string }[] = [];
  for (let from = first; daysBetween(from, last) >= 0; from = addDays(from, OCCUPANCY_WINDOW_DAYS)) {
    const to = addDays(from, OCCUPANCY_WINDOW_DAYS - 1);
    out.push({ from, to: daysBetween(to, last) >= 0 ? to : last });
  }
  return out;
}

/**
 * The horizon of one property, window by window, each in one transaction: the nights whose
 * figures changed are written (and their change kept in daily_occupancy_history), the others
 * cost nothing but the window's read (writeOccupancyWindow).
 */
async function refreshOccupancy(ctx: SyncContext, propertyId: string, signal: AbortSignal): Promise<void> {
  const { daysBack, daysAhead } = ctx.config.occupancy;
  const zone = (await zoneOf(ctx, propertyId, signal)) ?? 'UTC';
  const today = localDate(ctx.clock.now(), zone);
  const path = `/api/pms-analytics/v1/properties/${encodeURIComponent(propertyId)}/daily-occupancy`;
  let days = 0;
  const refresh = { startedAt: new Date(ctx.clock.now()) };
  for (const w of occupancyWindows(addDays(today, -daysBack), addDays(today, daysAhead))) {
    if (signal.aborted) return;
    const res = await ctx.client
      .requestJson('standard', 'provider', path, { startStayDate: w.from, endStayDate: w.to }, signal, REFRESH_PRIORITY)
      .catch((err: unknown) => {
        throw withAccessHint(err, 'pmsAnalytics', 'occupancy.enabled');
      });
    const parsed = parseDailyOccupancy(res.body);
    if (!parsed.ok) throw new InvalidPayloadError({ rawBody: res.rawBody, reason: parsed.reason, propertyId }, { status: res.status, path });
    const v = parsed.value;
    const rawDays = (res.body as { dailyOccupancies?: unknown }).dailyOccupancies;
    // The window's nights the answer does not give are deleted: only an answer that gives its list may do that.
    if (!Array.isArray(rawDays))
      throw new InvalidPayloadError(
        { rawBody: res.rawBody, reason: `the answer holds no dailyOccupancies list: no night from ${w.from} to ${w.to} is deleted`, propertyId },
        { status: res.status, path },
      );
    const refreshedAt = new Date(ctx.clock.now());
    const byDate = new Map<string, NewDailyOccupancy>();
    v.dailyOccupancies.forEach((d, i) => {
      // Only the dates asked for: a reply that strays outside the window does not touch others.
      if (d.date < w.from || d.date > w.to) return;
      byDate.set(d.date, occupancyDayToRow(propertyId, v, d, rawDays[i], refreshedAt));
    });
    await ctx.write((trx) => writeOccupancyWindow(trx, propertyId, w.from, w.to, [...byDate.values()], refreshedAt, refresh));
    ctx.counters.occupancyWindows += 1;
    days += byDate.size;
  }
  await ctx.write((trx) =>
    saveCursorAfterPage(trx, {
      propertyId,
      stream: streamNames.dailyOccupancy,
      cursor: null,
      position: new Date(ctx.clock.now()),
      caughtUp: true,
      rows: days,
      polledAt: new Date(ctx.clock.now()),
    }),
  );
}

/** Daily occupancy over the configured horizon, at start and on occupancy.refreshCron. */
export const dailyOccupancyStream: RefreshStream = {
  name: streamNames.dailyOccupancy,
  area: 'pmsAnalytics',
  enabled: (config) => config.occupancy.enabled,
  cron: (config) => config.occupancy.refreshCron,
  run: (ctx, signal, only) => eachProperty(ctx, signal, only, 'daily occupancy refresh', streamNames.dailyOccupancy, (id) => refreshOccupancy(ctx, id, signal)),
  discoversProperties: false,
};
