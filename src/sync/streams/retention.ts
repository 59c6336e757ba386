/**
 * Retention (a refresh, at start and every hour, only with privacy.retainPersonalDataDays):
 * the personal data of the connection's stays that ended more than that many days ago is
 * erased, and old quarantined bodies and change events expire (src/privacy/retention.ts).
 */
import { retentionPass } from '../../privacy/retention.js';
import { activePropertyIds } from '../../store/repositories/content.js';
import { streamNames } from '../../store/states.js';
import type { RefreshStream } from './types.js';

export const RETENTION_CRON = '41 * * * *';

export const retentionStream: RefreshStream = {
  name: streamNames.retention,
  enabled: (config) => config.privacy.retainPersonalDataDays !== undefined,
  cron: () => RETENTION_CRON,
  discoversProperties: false,
  async run(ctx, signal, only) {
    const days = ctx.config.privacy.retainPersonalDataDays;
    if (days === undefined) return;
    const ids = only.length > 0 ? [...only] : await activePropertyIds(ctx.db, ctx.connection);
    if (signal.aborted) return;
    const pass = await retentionPass((fn) => ctx.write(fn), {
      propertyIds: ids,
      days,
      now: new Date(ctx.clock.now()),
      unrouted: ctx.handlesUnroutedEvents(),
      signal,
    });
    // Said whenever the pass read a row: a pass that reads rows it leaves as they were would show here, hour after hour.
    const read = pass.bookings + pass.reservations + pass.invoices + pass.persons + pass.storageBookings;
    const changed = Object.values(pass.rowsTouched).reduce((n, c) => n + c, 0);
    if (read > 0 || changed > 0)
      ctx.logger.info(
        { component: 'retention', retainPersonalDataDays: days, rowsRead: read, rowsChanged: changed, ...pass },
        `erased the personal data of ${pass.bookings} bookings, ${pass.reservations} PMS reservations (and the invoice payers of ${pass.invoices} others), ${pass.persons} guest profiles and ${pass.storageBookings} integration-storage bookings whose stays ended more than ${days} days ago (${read} rows read, ${changed} changed)`,
      );
  },
};
