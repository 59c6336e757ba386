/**
 * Progress of a long sync, logged at a steady pace (not per request): where each property's
 * booking list stands in time, rows read, the detail queue and its ETA at the budget.
 */
import { streamNames } from '../../store/states.js';
import { findCursor, listCursors } from '../../store/repositories/cursors.js';
import { pendingCount } from '../../store/repositories/fetch-queue.js';
import { listedSoFar } from '../../store/repositories/booking-summaries.js';
import type { RateWindow } from '../../config/config.js';
import type { SyncContext } from './context.js';

/** Sustained requests per second a set of sliding windows allows: the tightest window. */
export function sustainedRate(windows: readonly RateWindow[]): number {
  return Math.min(...windows.map((w) => (w.limit * 1000) / w.windowMs));
}

/** Seconds to drain `pending` fetches at the details budget's sustained rate. */
export function queueEtaSeconds(pending: number, windows: readonly RateWindow[]): number {
  return Math.ceil(pending / sustainedRate(windows));
}

export function formatDuration(seconds: number): string {
  if (seconds < 60) return `${seconds}s`;
  const m = Math.floor(seconds / 60);
  if (m < 60) return `${m}m${String(seconds % 60).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  return `${h}h${String(m % 60).padStart(2, '0')}m`;
}

/**
 * The estimate of a property's first full sync, made from what its booking list has listed so
 * far. The booking list gives no total (a page says only hasMoreData), and it lists bookings in
 * modification order, from the property's first one: so the bookings listed between the first
 * modification and the list's position, spread over the whole time from the first modification
 * to now, give the total. Histories grow towards recent years, so an early estimate is low; it
 * rises with every page, and is exact once the list has caught up.
 */
export interface FirstSyncEstimate {
  /** Bookings listed so far. */
  found: number;
  /** Bookings expected in all; null while the pages so far cover no time (one modification second). */
  estimatedTotal: number | null;
  /** Seconds until the last booking's details are read, at the list and details budgets; null without an estimate. */
  endsInSeconds: number | null;
  /** When the estimate was made (UTC). */
  asOf: string;
}

export interface FirstSyncInput {
  found: number;
  firstModification: Date | null;
  /** The latest modification listed (the cursor's position). */
  position: Date | null;
  caughtUp: boolean;
  /** The property's detail fetches still waiting in the queue. */
  pendingDetails: number;
  now: number;
  /** Summaries per list page (sync.summariesPageSize). */
  pageSize: number;
  listWindows: readonly RateWindow[];
  detailWindows: readonly RateWindow[];
}

/**
 * The estimate (see FirstSyncEstimate). The time is that of the slower of the two budgets, as if
 * the property had them alone: the list pages still to read, and the details of every booking
 * still to list plus those waiting in the queue. Properties in their first sync share both
 * budgets; firstSyncTotals gives the time for all of them.
 */
export function estimateFirstSync(i: FirstSyncInput): FirstSyncEstimate {
  const asOf = new Date(i.now).toISOString();
  let total: number | null = null;
  if (i.caughtUp) total = i.found;
  else if (i.found > 0 && i.firstModification && i.position) {
    const covered = i.position.getTime() - i.firstModification.getTime();
    const whole = i.now - i.firstModification.getTime();
    if (covered > 0) total = Math.max(i.found, Math.round((i.found * whole) / covered));
  }
  if (total === null) return { found: i.found, estimatedTotal: null, endsInSeconds: null, asOf };
  const left = firstSyncWork(i, total);
  return { found: i.found, estimatedTotal: total, endsInSeconds: workSeconds(left, i.listWindows, i.detailWindows), asOf };
}

/** The requests a first sync has still to make: list pages and booking details. */
interface FirstSyncWork {
  listPages: number;
  details: number;
}

function firstSyncWork(i: Pick<FirstSyncInput, 'found' | 'caughtUp' | 'pendingDetails' | 'pageSize'>, total: number): FirstSyncWork {
  const unlisted = total - i.found;
  return { listPages: i.caughtUp ? 0 : Math.ceil(unlisted / i.pageSize), details: unlisted + i.pendingDetails };
}

function workSeconds(w: FirstSyncWork, listWindows: readonly RateWindow[], detailWindows: readonly RateWindow[]): number {
  return Math.ceil(Math.max(w.listPages / sustainedRate(listWindows), w.details / sustainedRate(detailWindows)));
}

/**
 * All properties in their first sync together: the bookings still to list or to read, and the
 * seconds until the last one ends, with the budgets shared (one list budget and one details
 * budget per API connection's client).
 */
export function firstSyncTotals(inputs: readonly { input: FirstSyncInput; estimate: FirstSyncEstimate }[]): {
  properties: number;
  detailsLeft: number;
  endsInSeconds: number | null;
} {
  const work = { listPages: 0, details: 0 };
  let known = true;
  for (const { input, estimate } of inputs) {
    if (estimate.estimatedTotal === null) known = false;
    else {
      const w = firstSyncWork(input, estimate.estimatedTotal);
      work.listPages += w.listPages;
      work.details += w.details;
    }
  }
  const first = inputs[0]?.input;
  return {
    properties: inputs.length,
    detailsLeft: work.details,
    endsInSeconds: first && known ? workSeconds(work, first.listWindows, first.detailWindows) : null,
  };
}

/**
 * The backfill pages of a property after which the daemon logs the estimate of its first sync:
 * enough for the pages to span some time, and once per backfill (not at every page: with a
 * thousand hotels that would be a thousand lines a minute).
 */
export const ESTIMATE_AFTER_PAGES = 3;

/** Logs the estimate of a property's first sync (one info line); a failure to read it costs only the line. */
export async function logFirstSyncEstimate(ctx: SyncContext, propertyId: string, log: SyncContext['logger']): Promise<void> {
  try {
    const [listed] = await listedSoFar(ctx.db, [propertyId]);
    const cursor = await findCursor(ctx.db, propertyId, streamNames.bookingSummaries);
    const estimate = estimateFirstSync({
      found: listed?.bookings ?? 0,
      firstModification: listed?.firstModification ?? null,
      position: cursor?.position ?? null,
      caughtUp: cursor?.caughtUp ?? false,
      pendingDetails: await pendingCount(ctx.db, 'booking_detail_queue', { propertyId }),
      now: ctx.clock.now(),
      pageSize: ctx.config.sync.summariesPageSize,
      listWindows: ctx.config.rateLimits.bookingList,
      detailWindows: ctx.config.rateLimits.bookingDetails,
    });
    log.info(
      {
        found: estimate.found,
        estimatedTotal: estimate.estimatedTotal,
        listedTo: cursor?.position?.toISOString() ?? null,
        endsInSeconds: estimate.endsInSeconds,
        endsIn: estimate.endsInSeconds === null ? null : formatDuration(estimate.endsInSeconds),
      },
      'first sync: estimate from the first pages (see staysync status as it goes on)',
    );
  } catch (err) {
    log.debug({ err: (err as Error).message }, 'first sync estimate not available');
  }
}

export class ProgressReporter {
  private timer: NodeJS.Timeout | undefined;
  private lastFetched = 0;
  private lastAt = 0;
  /** The counters at the last line, and whether work was left then: a quiet connection logs and reads nothing. */
  private lastCounters = '';
  private workLeft = true;
  private readonly log;

  constructor(
    private readonly ctx: SyncContext,
    /** Live: the daemon adds properties found by a content refresh. */
    private readonly propertyIds: Iterable<string>,
  ) {
    this.log = ctx.logger.child({ component: 'progress' });
  }

  start(): void {
    this.lastAt = this.ctx.clock.now();
    this.timer = setInterval(() => this.report(), this.ctx.config.sync.progressIntervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * Logs a progress line, unless nothing moved since the last one and nothing was left to do
   * then (`force`: the line at the end of a run): with a thousand quiet connections a line each
   * every 30 s would be a log and two queries a second for nothing.
   */
  report(force = false): void {
    const counters = this.countersNow();
    if (!force && counters === this.lastCounters && !this.workLeft) return;
    this.lastCounters = counters;
    void this.collect().then(
      (line) => {
        this.workLeft = line.queue > 0 || line.properties.some((p) => !p.caughtUp);
        this.log.info(line, 'progress');
      },
      (err: unknown) => this.log.debug({ err: (err as Error).message }, 'progress not available'),
    );
  }

  private countersNow(): string {
    const c = this.ctx.counters;
    return `${c.summaries} ${c.detailsEnqueued} ${c.detailsFetched} ${c.quarantined}`;
  }

  private async collect(): Promise<{ properties: { caughtUp: boolean }[]; queue: number } & Record<string, unknown>> {
    const { ctx } = this;
    const now = ctx.clock.now();
    const wanted = [...this.propertyIds];
    const cursors = await listCursors(ctx.db, streamNames.bookingSummaries, wanted);
    const pending = await pendingCount(ctx.db, 'booking_detail_queue', { connection: ctx.connection });
    const fetched = ctx.counters.detailsFetched;
    const elapsed = Math.max(1, now - this.lastAt) / 1000;
    const rate = (fetched - this.lastFetched) / elapsed;
    this.lastFetched = fetched;
    this.lastAt = now;
    return {
      properties: cursors.map((c) => ({
        propertyId: c.propertyId,
        position: c.position?.toISOString() ?? null,
        caughtUp: c.caughtUp,
        rows: c.rowsSeen,
        state: c.state,
      })),
      summaries: ctx.counters.summaries,
      detailsFetched: fetched,
      detailsPerSecond: Math.round(rate * 100) / 100,
      queue: pending,
      queueEta: formatDuration(queueEtaSeconds(pending, ctx.config.rateLimits.bookingDetails)),
      quarantined: ctx.counters.quarantined,
    };
  }
}
