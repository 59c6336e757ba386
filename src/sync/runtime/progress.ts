/**
 * Progress of a long sync, logged at a steady pace (not per request): where each property's
 * booking list stands in time, rows read, the detail queue and its ETA at the budget.
 */
import { streamNames } from '../../store/states.js';
import { listCursors } from '../../store/repositories/cursors.js';
import { pendingCount } from '../../store/repositories/fetch-queue.js';
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
