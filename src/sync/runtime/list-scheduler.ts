/**
 * Spends the booking list budget on freshness. The budget (3/s, 100/min, 3,000/h per API
 * client) is shared by three kinds of list requests:
 * - backfill pages (a property catching up, recovery): they go first and are not scheduled
 *   here, they only wait for the budget;
 * - polls of caught-up properties: one turn at a time, spaced so that the polls alone never
 *   exceed the budget's sustainable rate (the tightest window's limit over its length: one
 *   request every 1.2 s with the production limits), and only a share of it
 *   (sync.pollShareDuringBackfill) while any property backfills;
 * - sweep pages (the reconciliation sweep): a turn when no poll is eligible, or at least
 *   every SWEEP_EVERY_NTH turn when polls would take them all.
 * Which property polls next: one overdue past sync.pollIntervalMs.max first (the longest
 * overdue), else, among those eligible, the one with the highest score: time since its last
 * poll, times RECENT_WEIGHT when it is busy.
 * - Busy: it changed within sync.quietAfterMs, or a change event named it (`changed`). A busy
 *   property is eligible once sync.pollIntervalMs.min has passed since its last poll: with P
 *   busy properties and no backfill, each is polled about every P × 1.2 s.
 * - Quiet: no change for sync.quietAfterMs. It is eligible once sync.pollIntervalMs.quiet has
 *   passed (30 s by default: at most 120 list requests an hour), so a hotel where nothing
 *   happens costs close to nothing, and its first change is listed within that interval. The
 *   budget the quiet ones leave is not spent: polling faster finds nothing there.
 */
import type { Config, RateWindow } from '../../config/config.js';
import type { Logger } from '../../util/log.js';
import type { Clock } from '../../util/clock.js';

/** A busy property's wait counts this many times: it is polled sooner than quiet ones. */
const RECENT_WEIGHT = 3;
/** While polls would take every turn, a waiting sweep page gets at least one turn in this many. */
const SWEEP_EVERY_NTH = 10;

interface Waiter {
  kind: 'poll' | 'sweep';
  propertyId: string;
  since: number;
  resolve: () => void;
  reject: (reason: unknown) => void;
  cleanup: () => void;
}

interface PollState {
  lastPollAt: number | undefined;
  lastChangeAt: number | undefined;
}

/** The sustainable gap between two list requests: the tightest window's length over its limit. */
export function sustainableGapMs(windows: readonly RateWindow[]): number {
  return Math.max(0, ...windows.map((w) => w.windowMs / w.limit));
}

export class ListScheduler {
  private readonly gapMs: number;
  private readonly minMs: number;
  private readonly quietMs: number;
  private readonly quietAfterMs: number;
  private readonly maxMs: number;
  private readonly share: number;
  private readonly waiters: Waiter[] = [];
  private readonly polls = new Map<string, PollState>();
  private readonly backfilling = new Set<string>();
  private lastGrantAt = Number.NEGATIVE_INFINITY;
  /** Turns given to polls since a sweep page last had one while one was waiting. */
  private pollTurnsWhileSweepWaits = 0;
  private timer: AbortController | undefined;
  private warnedCeiling = false;

  constructor(
    config: Config,
    private readonly clock: Clock,
    private readonly log?: Logger,
  ) {
    this.gapMs = sustainableGapMs(config.rateLimits.bookingList);
    this.minMs = config.sync.pollIntervalMs.min;
    this.maxMs = config.sync.pollIntervalMs.max;
    // Within the floor and the ceiling: a quiet property is polled neither more often than any nor later than the ceiling.
    this.quietMs = Math.min(this.maxMs, Math.max(this.minMs, config.sync.pollIntervalMs.quiet));
    this.quietAfterMs = config.sync.quietAfterMs;
    this.share = config.sync.pollShareDuringBackfill;
  }

  /** Resolves when the caught-up property may poll; rejects with the signal's reason when it aborts first. */
  pollTurn(propertyId: string, signal: AbortSignal): Promise<void> {
    if (!this.polls.has(propertyId)) this.polls.set(propertyId, { lastPollAt: undefined, lastChangeAt: undefined });
    return this.enqueue('poll', propertyId, signal);
  }

  /** Resolves when a sweep of the property may send its next list request. */
  sweepTurn(propertyId: string, signal: AbortSignal): Promise<void> {
    return this.enqueue('sweep', propertyId, signal);
  }

  /** A poll (or catch-up) of the property ended; `changes`: summaries it found. */
  polled(propertyId: string, changes: number): void {
    const now = this.clock.now();
    const st = this.polls.get(propertyId) ?? { lastPollAt: undefined, lastChangeAt: undefined };
    st.lastPollAt ??= now;
    if (changes > 0) st.lastChangeAt = now;
    this.polls.set(propertyId, st);
  }

  /**
   * Something says the property changed (a change event named it): it is busy, and its poll
   * is due at the floor, so a quiet property's change is listed without waiting out its quiet
   * interval.
   */
  changed(propertyId: string): void {
    const st = this.polls.get(propertyId);
    if (!st) return;
    st.lastChangeAt = this.clock.now();
    if (this.waiters.some((w) => w.propertyId === propertyId)) this.reschedule();
  }

  /** The property reads backfill pages (true) or is caught up again (false): polls then take only their share. */
  setBackfilling(propertyId: string, on: boolean): void {
    const had = this.backfilling.size > 0;
    if (on) this.backfilling.add(propertyId);
    else this.backfilling.delete(propertyId);
    if (had !== this.backfilling.size > 0) this.reschedule();
  }

  /** The gap the scheduler keeps between two of its turns now. */
  private currentGapMs(): number {
    return this.backfilling.size > 0 ? this.gapMs / this.share : this.gapMs;
  }

  private enqueue(kind: Waiter['kind'], propertyId: string, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(signal.reason);
      };
      const waiter: Waiter = { kind, propertyId, since: this.clock.now(), resolve, reject, cleanup: () => signal.removeEventListener('abort', onAbort) };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
      this.reschedule();
    });
  }

  private reschedule(): void {
    this.timer?.abort();
    this.timer = undefined;
    this.pump();
  }

  /** Gives every turn that is due now, then sleeps until the next one can be. */
  private pump(): void {
    for (;;) {
      if (this.waiters.length === 0) return;
      const now = this.clock.now();
      const nextTurnAt = this.lastGrantAt + this.currentGapMs();
      if (now < nextTurnAt) return this.wakeAt(nextTurnAt - now);
      const choice = this.choose(now);
      if ('waitMs' in choice) return this.wakeAt(choice.waitMs);
      const w = choice.waiter;
      this.waiters.splice(this.waiters.indexOf(w), 1);
      w.cleanup();
      this.lastGrantAt = now;
      if (w.kind === 'poll') {
        const st = this.polls.get(w.propertyId)!;
        st.lastPollAt = now;
        this.pollTurnsWhileSweepWaits = this.waiters.some((x) => x.kind === 'sweep') ? this.pollTurnsWhileSweepWaits + 1 : 0;
      } else {
        this.pollTurnsWhileSweepWaits = 0;
        // A sweep page lists every change of the last days, the newest too: for a quiet
        // property it stands for a poll, which keeps it within 3,600 / pollIntervalMs.quiet list
        // requests an hour, sweeps included.
        const st = this.polls.get(w.propertyId);
        if (st) st.lastPollAt = now;
      }
      w.resolve();
    }
  }

  private choose(now: number): { waiter: Waiter } | { waitMs: number } {
    const sinceLast = (w: Waiter) => now - (this.polls.get(w.propertyId)?.lastPollAt ?? Number.NEGATIVE_INFINITY);
    const polls = this.waiters.filter((w) => w.kind === 'poll');
    const sweep = this.waiters.find((w) => w.kind === 'sweep');
    if (sweep && this.pollTurnsWhileSweepWaits >= SWEEP_EVERY_NTH - 1) return { waiter: sweep };
    const overdue = polls.filter((w) => sinceLast(w) >= this.maxMs).sort((a, b) => sinceLast(b) - sinceLast(a));
    if (overdue.length > 0) {
      this.warnIfCeilingUnreachable(polls.length);
      return { waiter: overdue[0]! };
    }
    const busy = (w: Waiter) => {
      const st = this.polls.get(w.propertyId);
      return st?.lastChangeAt !== undefined && now - st.lastChangeAt < this.quietAfterMs;
    };
    const interval = (w: Waiter) => (busy(w) ? this.minMs : this.quietMs);
    // A quiet property's sweep page, due when its poll is, is taken in the poll's place: it
    // lists the newest changes too (see pump), so the pair costs one request, not two.
    if (sweep && this.quietMs > this.minMs && !busy(sweep) && sinceLast(sweep) >= this.quietMs && polls.some((w) => w.propertyId === sweep.propertyId))
      return { waiter: sweep };
    const eligible = polls.filter((w) => sinceLast(w) >= interval(w));
    if (eligible.length > 0) {
      const score = (w: Waiter) => sinceLast(w) * (busy(w) ? RECENT_WEIGHT : 1);
      return { waiter: eligible.reduce((best, w) => (score(w) > score(best) ? w : best)) };
    }
    if (sweep) return { waiter: sweep };
    // Every waiter is a poll polled within its interval: the earliest becomes eligible first.
    return { waitMs: Math.max(1, Math.min(...polls.map((w) => interval(w) - sinceLast(w)))) };
  }

  /** Says once when the properties of this connection are too many for the ceiling at this budget. */
  private warnIfCeilingUnreachable(waiting: number): void {
    const round = this.polls.size * this.gapMs;
    if (this.warnedCeiling || round <= this.maxMs) return;
    this.warnedCeiling = true;
    this.log?.warn(
      { properties: this.polls.size, waiting, roundMs: Math.round(round), maxMs: this.maxMs },
      `${this.polls.size} caught-up properties share one booking list budget: each is polled about every ${Math.round(round / 1000)} s, ` +
        `longer than sync.pollIntervalMs.max (${Math.round(this.maxMs / 1000)} s); the budget is the bound`,
    );
  }

  private wakeAt(ms: number): void {
    const timer = new AbortController();
    this.timer = timer;
    this.clock.sleep(ms, timer.signal).then(
      () => {
        if (this.timer !== timer) return;
        this.timer = undefined;
        this.pump();
      },
      () => undefined,
    );
  }
}
