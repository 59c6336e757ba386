/**
 * The day close (a refresh, at start and every quarter of an hour): for each property of the
 * connection whose local day has ended since, the books as they stood at its local midnight are
 * recorded for the year ahead (pace reads them: src/store/repositories/day-close.ts).
 *
 * Recording late is exact: a close is read from history as of its instant, not from the tables
 * as they are when the refresh runs. So the schedule only bounds how soon a close shows up.
 */
import { activePropertyIds } from '../../store/repositories/content.js';
import { recordDayCloses } from '../../store/repositories/day-close.js';
import { streamNames } from '../../store/states.js';
import type { RefreshStream } from './types.js';

export const DAY_CLOSE_CRON = '3,18,33,48 * * * *';

/**
 * Per connection: when its next close is due (a property's local midnight, or now while one
 * could not be recorded yet). Ticks before it read and write nothing: a quiet hotel's day
 * close costs a transaction a day, not one every quarter of an hour.
 */
const nextCloseAt = new WeakMap<object, number>();

export const dayCloseStream: RefreshStream = {
  name: streamNames.dayClose,
  enabled: () => true,
  cron: () => DAY_CLOSE_CRON,
  discoversProperties: false,
  async run(ctx, signal, only) {
    if (only.length === 0 && ctx.clock.now() < (nextCloseAt.get(ctx) ?? 0)) return;
    const ids = only.length > 0 ? [...only] : await activePropertyIds(ctx.db, ctx.connection);
    if (signal.aborted || ids.length === 0) return;
    const now = new Date(ctx.clock.now());
    const written = await ctx.write((trx) => recordDayCloses(trx, ids, now));
    if (only.length === 0) nextCloseAt.set(ctx, written.nextCloseAt?.getTime() ?? 0);
    if (written.days > 0)
      ctx.logger.info({ component: 'day-close', ...written }, `recorded ${written.days} day closes (${written.nights} nights on the books)`);
  },
};
