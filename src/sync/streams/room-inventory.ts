/**
 * Rooms by type, property by property (issue 27, points 3 and 8):
 * - the accommodation inventory (PMS API): where each room is, with the PMS rooms
 *   (content.refreshCron); written only when it changed;
 * - the inventory of each PMS room type and night (integration storage, POST inventories/search)
 *   over roomInventory.daysBack to daysAhead around the property's today, for the room type
 *   codes the mirror knows (integration-storage bookings and inventory blocks), in windows of
 *   at most a year (the provider takes 2), each replaced in one transaction;
 * - the stay units of each PMS rate plan code the mirror knows (integration storage,
 *   calculate-stay-units), month by month over the months of that horizon.
 * The two integration-storage refreshes first pair the PMS codes with content ids
 * (pms_room_type_codes, pms_rate_plan_codes), which the reporting views join on.
 * A record that does not parse is quarantined alone; an answer that does not parse is
 * quarantined whole and fails its property only (eachProperty).
 */
import {
  accommodationHash,
  knownRatePlanCodes,
  knownRoomTypeCodes,
  learnCodePairs,
  replaceAccommodation,
  replaceInventoryWindow,
  stayUnitsReadAfterMonthEnded,
  upsertStayUnits,
} from '../../store/repositories/room-inventory.js';
import { saveCursorAfterPage } from '../../store/repositories/cursors.js';
import { quarantineGuestPayload } from '../../privacy/guest-writes.js';
import type { NewRoomTypeInventoryDay, NewStayUnits } from '../../store/schema.js';
import { streamNames, type QuarantineStream } from '../../store/states.js';
import { InvalidPayloadError } from '../../provider/errors.js';
import { parseAccommodationInventory, parseInventorySearch, parseRoomTypeInventoryDay, parseStayUnits } from '../../provider/schemas/room-inventory.js';
import { accommodationToRows, dateWindows, inventoryDayToRow, monthsOf, stayUnitMonthsToAsk } from '../../mapping/room-inventory.js';
import { addDays, localDate } from '../../util/local-time.js';
import type { SyncContext } from '../runtime/context.js';
import { withAccessHint, zoneOf } from './pms-reservations.js';
import { eachProperty, REFRESH_PRIORITY } from './pms-refreshes.js';
import type { RefreshStream } from './types.js';

/** Nights of one inventory search: a year, half the provider's limit of 2 years. */
const INVENTORY_WINDOW_DAYS = 366;

/** Quarantines an answer (or one record of it) that does not parse; the property's refresh goes on or fails as the caller decides. */
async function quarantine(
  ctx: SyncContext,
  stream: QuarantineStream,
  propertyId: string,
  entityKey: string | null,
  reason: string,
  rawBody: string,
): Promise<void> {
  ctx.counters.quarantined += 1;
  await ctx.write((trx) => quarantineGuestPayload(trx, { stream, propertyId, entityKey, reason, rawBody }, ctx.config.pms.personalData));
}

/** An answer that does not parse: quarantined whole, then the property's refresh fails with it. */
async function invalidAnswer(
  ctx: SyncContext,
  stream: QuarantineStream,
  propertyId: string,
  res: { status: number; rawBody: string },
  path: string,
  reason: string,
): Promise<never> {
  await quarantine(ctx, stream, propertyId, propertyId, reason, res.rawBody);
  throw new InvalidPayloadError({ rawBody: res.rawBody, reason, propertyId }, { status: res.status, path });
}

/** The property's today and horizon (property-local dates), and its zone. */
async function horizonOf(ctx: SyncContext, propertyId: string, signal: AbortSignal): Promise<{ first: string; last: string; today: string; zone: string }> {
  const { daysBack, daysAhead } = ctx.config.roomInventory;
  const zone = (await zoneOf(ctx, propertyId, signal)) ?? 'UTC';
  const today = localDate(ctx.clock.now(), zone);
  return { first: addDays(today, -daysBack), last: addDays(today, daysAhead), today, zone };
}

/** Marks the property's cursor of a stream caught up (its freshness in status and /metrics). */
async function refreshed(
  ctx: SyncContext,
  propertyId: string,
  stream: typeof streamNames.roomTypeInventory | typeof streamNames.stayUnits | typeof streamNames.accommodationInventory,
  rows: number,
) {
  const now = new Date(ctx.clock.now());
  await ctx.write((trx) => saveCursorAfterPage(trx, { propertyId, stream, cursor: null, position: now, caughtUp: true, rows, polledAt: now }));
}

// ------------------------------------------------------------------ accommodation inventory

async function refreshAccommodation(ctx: SyncContext, propertyId: string, signal: AbortSignal): Promise<void> {
  const path = `/api/pms/v2/properties/${encodeURIComponent(propertyId)}/obtain-accommodation-inventory`;
  const res = await ctx.client.requestJson('standard', 'provider', path, {}, signal, REFRESH_PRIORITY).catch((err: unknown) => {
    throw withAccessHint(err, 'pms', 'pms.enabled');
  });
  const parsed = parseAccommodationInventory(res.body);
  if (!parsed.ok) return invalidAnswer(ctx, streamNames.accommodationInventory, propertyId, res, path, parsed.reason);
  if (parsed.value.inventory === null)
    // Not quarantined: the answer is the documented shape, it only holds nothing to mirror.
    throw new InvalidPayloadError(
      { rawBody: res.rawBody, reason: 'the answer holds no accommodationInventory with its buildings: the mirrored tree is kept', propertyId },
      { status: res.status, path },
    );
  const rows = accommodationToRows(propertyId, parsed.value.inventory, parsed.value.raw, new Date(ctx.clock.now()));
  if ((await accommodationHash(ctx.db, propertyId)) !== rows.contentHash) {
    await ctx.write((trx) => replaceAccommodation(trx, propertyId, rows, parsed.value.raw, new Date(ctx.clock.now())));
  }
  await refreshed(ctx, propertyId, streamNames.accommodationInventory, 1);
  ctx.counters.accommodationInventories += 1;
}

/** Where each room is (buildings, floors), refreshed with the PMS rooms. */
export const accommodationInventoryStream: RefreshStream = {
  name: streamNames.accommodationInventory,
  area: 'pms',
  enabled: (config) => config.pms.enabled,
  cron: (config) => config.content.refreshCron,
  run: (ctx, signal, only) =>
    eachProperty(ctx, signal, only, 'accommodation inventory refresh', streamNames.accommodationInventory, (id) => refreshAccommodation(ctx, id, signal)),
  discoversProperties: false,
};

// ------------------------------------------------------------------ inventory per room type and night

/** One property's inventory per room type and night over the horizon (also what a `pms_integration_storage:inventory_changed` event refreshes). */
export async function refreshRoomTypeInventory(ctx: SyncContext, propertyId: string, signal: AbortSignal): Promise<void> {
  await ctx.write((trx) => learnCodePairs(trx, propertyId, 'room_type', new Date(ctx.clock.now())));
  const codes = await knownRoomTypeCodes(ctx.db, propertyId);
  let days = 0;
  if (codes.length > 0) {
    const { first, last } = await horizonOf(ctx, propertyId, signal);
    const path = `/api/pms-integration-storage/v1/properties/${encodeURIComponent(propertyId)}/inventories/search`;
    for (const w of dateWindows(first, last, INVENTORY_WINDOW_DAYS)) {
      if (signal.aborted) return;
      const res = await ctx.client
        .postJson('integrationStorage', path, { roomTypeCodes: codes, startDate: w.from, endDate: w.to }, signal, REFRESH_PRIORITY)
        .catch((err: unknown) => {
          throw withAccessHint(err, 'pmsIntegrationStorage', 'roomInventory.enabled');
        });
      const parsed = parseInventorySearch(res.body);
      if (!parsed.ok) return invalidAnswer(ctx, streamNames.roomTypeInventory, propertyId, res, path, parsed.reason);
      if (parsed.value.inventories === null)
        throw new InvalidPayloadError(
          { rawBody: res.rawBody, reason: `the answer holds no inventories list: the days from ${w.from} to ${w.to} are kept`, propertyId },
          { status: res.status, path },
        );
      const refreshedAt = new Date(ctx.clock.now());
      const asked = new Set(codes);
      const byKey = new Map<string, NewRoomTypeInventoryDay>();
      for (const raw of parsed.value.inventories) {
        const day = parseRoomTypeInventoryDay(raw);
        if (!day.ok) {
          const r = raw as { roomTypeCode?: unknown; date?: unknown } | null;
          const key = typeof r?.roomTypeCode === 'string' && typeof r.date === 'string' ? `${r.roomTypeCode.slice(0, 100)} ${r.date.slice(0, 10)}` : null;
          await quarantine(ctx, streamNames.roomTypeInventory, propertyId, key, day.reason, JSON.stringify(raw));
          continue;
        }
        // Only what was asked: a record of another code or outside the window does not touch other rows.
        if (!asked.has(day.value.roomTypeCode) || day.value.date < w.from || day.value.date > w.to) continue;
        byKey.set(`${day.value.roomTypeCode}\n${day.value.date}`, inventoryDayToRow(propertyId, day.value, raw, refreshedAt));
      }
      await ctx.write((trx) => replaceInventoryWindow(trx, propertyId, w.from, w.to, [...byKey.values()]));
      ctx.counters.roomInventoryWindows += 1;
      days += byKey.size;
    }
  } else {
    ctx.logger.debug(
      { component: 'pms', propertyId },
      'inventory per room type: no PMS room type code known yet (integration-storage bookings or inventory blocks name them)',
    );
  }
  await refreshed(ctx, propertyId, streamNames.roomTypeInventory, days);
}

/** The inventory per PMS room type and night over the horizon, at start and on roomInventory.refreshCron. */
export const roomTypeInventoryStream: RefreshStream = {
  name: streamNames.roomTypeInventory,
  area: 'pmsIntegrationStorage',
  enabled: (config) => config.roomInventory.enabled,
  cron: (config) => config.roomInventory.refreshCron,
  run: (ctx, signal, only) =>
    eachProperty(ctx, signal, only, 'inventory per room type refresh', streamNames.roomTypeInventory, (id) => refreshRoomTypeInventory(ctx, id, signal)),
  discoversProperties: false,
};

// ------------------------------------------------------------------ stay units

async function refreshStayUnits(ctx: SyncContext, propertyId: string, signal: AbortSignal): Promise<void> {
  await ctx.write((trx) => learnCodePairs(trx, propertyId, 'rate_plan', new Date(ctx.clock.now())));
  const codes = await knownRatePlanCodes(ctx.db, propertyId);
  const { first, last, today, zone } = await horizonOf(ctx, propertyId, signal);
  const path = `/api/pms-integration-storage/v1/properties/${encodeURIComponent(propertyId)}/calculate-stay-units`;
  // A month that ended and was read since is not asked again: at 200 codes and 25 months, every
  // month every 6 hours was more than the storage budget of 7 properties (docs/replicas-and-sizing.md).
  const thisMonth = `${today.slice(0, 7)}-01`;
  const final = await stayUnitsReadAfterMonthEnded(ctx.db, propertyId, thisMonth, zone);
  let count = 0;
  for (const code of codes) {
    const rows: NewStayUnits[] = [];
    for (const m of stayUnitMonthsToAsk(monthsOf(first, last), thisMonth, (month) => final.has(`${code}\n${month}`))) {
      if (signal.aborted) return;
      const res = await ctx.client
        .requestJson('integrationStorage', 'provider', path, { firstStayDate: m.from, lastStayDate: m.to, pmsSideRatePlanCode: code }, signal, REFRESH_PRIORITY)
        .catch((err: unknown) => {
          throw withAccessHint(err, 'pmsIntegrationStorage', 'roomInventory.enabled');
        });
      const parsed = parseStayUnits(res.body);
      if (!parsed.ok) {
        // One month's answer: quarantined, and the other months and codes go on.
        await quarantine(ctx, streamNames.stayUnits, propertyId, `${code.slice(0, 100)} ${m.month.slice(0, 7)}`, parsed.reason, res.rawBody);
        continue;
      }
      rows.push({
        property_id: propertyId,
        rate_plan_code: code,
        month: m.month,
        first_stay_date: m.from,
        last_stay_date: m.to,
        stay_units: parsed.value,
        read_at: new Date(ctx.clock.now()),
      });
      ctx.counters.stayUnitCounts += 1;
    }
    // A rate plan's months in one transaction: the view compares a code's months read together.
    await ctx.write((trx) => upsertStayUnits(trx, rows));
    count += rows.length;
  }
  await refreshed(ctx, propertyId, streamNames.stayUnits, count);
}

/** The PMS's stay units per rate plan code and month over the horizon's months, on the inventory's schedule. */
export const stayUnitsStream: RefreshStream = {
  name: streamNames.stayUnits,
  area: 'pmsIntegrationStorage',
  enabled: (config) => config.roomInventory.enabled,
  cron: (config) => config.roomInventory.refreshCron,
  run: (ctx, signal, only) => eachProperty(ctx, signal, only, 'stay units refresh', streamNames.stayUnits, (id) => refreshStayUnits(ctx, id, signal)),
  discoversProperties: false,
};
