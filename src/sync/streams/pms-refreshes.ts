/**
 * Refreshes that go property by property: the PMS rooms (with content, so that a report shows
 * "room 204" rather than an id) and the daily occupancy statistics over a horizon around today.
 * A property that fails does not stop the others; the refresh then ends with
 * RefreshIncompleteError naming them, and the failures show per property.
 */
import { activePropertyIds, markMissingRemoved, upsertChanged } from '../../store/repositories/content.js';
import { markCursorProblem, saveCursorAfterPage } from '../../store/repositories/cursors.js';
import { replaceOccupancyWindow } from '../../store/repositories/pms.js';
import { quarantineGuestPayload } from '../../privacy/guest-writes.js';
import type { NewDailyOccupancy } from '../../store/schema.js';
import { streamNames, type CursorStream } from '../../store/states.js';
import { InvalidPayloadError } from '../../provider/errors.js';
import { parseDailyOccupancy, parseRoom, parseRoomsPage } from '../../provider/schemas/pms.js';
import { occupancyDayToRow, roomToRow } from '../../mapping/pms.js';
import { addDays, daysBetween, localDate } from '../../util/local-time.js';
import type { SyncContext } from '../runtime/context.js';
import { RefreshIncompleteError } from '../runtime/errors.js';
import { classify } from '../runtime/failures.js';
import { withAccessHint, zoneOf } from './pms-reservations.js';
import type { RefreshStream } from './types.js';
import { idTextOf } from '../../provider/schemas/primitives.js';

/** Below the PMS search (2–5), above content (10). */
const REFRESH_PRIORITY = 8;
/** The document's limit of one occupancy request. */
const OCCUPANCY_WINDOW_DAYS = 31;

/**
 * Runs `refresh` for each property (`only`, or all that content lists). A failure that concerns
 * the whole process (stop, database, lease, credentials) ends the refresh at once; any other is
 * recorded for its property and the refresh goes on.
 */
async function eachProperty(
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
  for (const propertyId of ids) {
    if (signal.aborted) return;
    try {
      await refresh(propertyId);
    } catch (err) {
      const verdict = classify(err, signal, ctx);
      if (verdict.kind === 'notGranted') {
        // A 403 of the whole API for this property: not a failure; asked again at the next refresh.
        ctx.logger.warn({ component: 'pms', propertyId, reason: verdict.reason }, `${what} of property ${propertyId}: not granted; the other properties go on`);
        if (stream) await ctx.write((trx) => markCursorProblem(trx, problem(stream, propertyId, 'not_granted', verdict.reason))).catch(() => undefined);
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
}

// ------------------------------------------------------------------ rooms

/** Every room of a property, page by page, then written with removal in one transaction. */
async function refreshRooms(ctx: SyncContext, propertyId: string, signal: AbortSignal): Promise<void> {
  const path = `/api/pms/v2/properties/${encodeURIComponent(propertyId)}/rooms`;
  const rows: Record<string, unknown>[] = [];
  const seen: string[] = [];
  let pageToken: string | null = null;
  do {
    const res = await ctx.client
      .requestJson('standard', 'provider', path, pageToken ? { pageToken } : { maxPageSize: 100 }, signal, REFRESH_PRIORITY)
      .catch((err: unknown) => {
        throw withAccessHint(err, 'pms', 'pms.enabled');
      });
    const page = parseRoomsPage(res.body);
    if (!page.ok) throw new InvalidPayloadError({ rawBody: res.rawBody, reason: page.reason, propertyId }, { status: res.status, path });
    for (const raw of page.value.rooms) {
      const room = parseRoom(raw);
      const rawId = idTextOf((raw as { id?: unknown } | null)?.id);
      if (rawId !== null) seen.push(rawId);
      if (!room.ok) {
        ctx.counters.quarantined += 1;
        await ctx.write((trx) =>
          quarantineGuestPayload(
            trx,
            { stream: streamNames.pmsRooms, propertyId, entityKey: rawId, reason: room.reason, rawBody: JSON.stringify(raw) },
            ctx.config.pms.personalData,
          ),
        );
        continue;
      }
      rows.push(roomToRow(propertyId, room.value, raw));
    }
    pageToken = page.value.hasNextPage ? page.value.nextPageToken : null;
  } while (pageToken && !signal.aborted);
  if (signal.aborted) return;
  await ctx.write(async (trx) => {
    await upsertChanged(trx, 'pms_rooms', rows);
    await markMissingRemoved(trx, 'pms_rooms', seen, { propertyId });
  });
  ctx.counters.pmsRoomsRefreshed += 1;
}

/** PMS rooms, refreshed with content. */
export const pmsRoomsStream: RefreshStream = {
  name: streamNames.pmsRooms,
  area: 'pms',
  enabled: (config) => config.pms.enabled,
  cron: (config) => config.content.refreshCron,
  run: (ctx, signal, only) => eachProperty(ctx, signal, only, 'PMS rooms refresh', null, (id) => refreshRooms(ctx, id, signal)),
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

/** The horizon of one property, window by window; each window replaces its dates in one transaction. */
async function refreshOccupancy(ctx: SyncContext, propertyId: string, signal: AbortSignal): Promise<void> {
  const { daysBack, daysAhead } = ctx.config.occupancy;
  const zone = (await zoneOf(ctx, propertyId, signal)) ?? 'UTC';
  const today = localDate(ctx.clock.now(), zone);
  const path = `/api/pms-analytics/v1/properties/${encodeURIComponent(propertyId)}/daily-occupancy`;
  let days = 0;
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
    const rawDays = (res.body as { dailyOccupancies?: unknown[] }).dailyOccupancies ?? [];
    const refreshedAt = new Date(ctx.clock.now());
    const byDate = new Map<string, NewDailyOccupancy>();
    v.dailyOccupancies.forEach((d, i) => {
      // Only the dates asked for: a reply that strays outside the window does not touch others.
      if (d.date < w.from || d.date > w.to) return;
      byDate.set(d.date, occupancyDayToRow(propertyId, v, d, rawDays[i], refreshedAt));
    });
    await ctx.write((trx) => replaceOccupancyWindow(trx, propertyId, w.from, w.to, [...byDate.values()]));
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
