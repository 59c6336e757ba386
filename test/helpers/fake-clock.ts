import { abortableSleep, type Clock } from '../../src/util/clock.js';

/** A clock whose time moves only through advance(); sleeps resolve when time reaches them. */
export class FakeClock implements Clock {
  t = 1_000_000;
  private timers: { at: number; resolve: () => void; reject: (e: unknown) => void; signal?: AbortSignal | undefined }[] = [];
  sleepsScheduled = 0;

  now(): number {
    return this.t;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    this.sleepsScheduled++;
    return new Promise((resolve, reject) => {
      const timer = { at: this.t + Math.max(0, ms), resolve, reject, signal };
      this.timers.push(timer);
      signal?.addEventListener(
        'abort',
        () => {
          this.timers = this.timers.filter((x) => x !== timer);
          reject(signal.reason);
        },
        { once: true },
      );
    });
  }
  get pendingTimers(): number {
    return this.timers.length;
  }
  /** Moves time forward, firing due timers in order and letting their continuations run. */
  async advance(ms: number): Promise<void> {
    const target = this.t + ms;
    await flush();
    for (;;) {
      const due = this.timers.filter((x) => x.at <= target).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.timers = this.timers.filter((x) => x !== due);
      this.t = Math.max(this.t, due.at);
      due.resolve();
      await flush();
    }
    this.t = target;
    await flush();
  }
}

export async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((r) => setImmediate(r));
}

const MINUTE_MS = 60_000;

/**
 * Real time plus an offset that a test only moves forward: the simulator's rate limits still
 * see real time pass, while the PMS search's whole-minute windows can be reached at once.
 */
export class OffsetClock implements Clock {
  private offset = 0;
  now(): number {
    return Date.now() + this.offset;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return abortableSleep(ms, signal);
  }
  /** Moves to `t` (must be later than now). */
  moveTo(t: number): void {
    const shift = t - this.now();
    if (shift < 0) throw new Error('the test clock only moves forward');
    this.offset += shift;
  }
  /** Moves to `ms` after the start of the next minute; returns that time. */
  nextMinute(ms = 0): number {
    const t = (Math.floor(this.now() / MINUTE_MS) + 1) * MINUTE_MS + ms;
    this.moveTo(t);
    return t;
  }
}
