/**
 * Callers waiting for something to happen (the database to answer, the lease to be held, a
 * schedule to tick): `wait` until `wakeAll`, or until the caller's signal aborts.
 */
export class WaitList {
  private readonly waiters = new Set<() => void>();

  /** Resolves at the next wakeAll(); rejects with the signal's reason when it aborts first. */
  wait(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const done = () => {
        this.waiters.delete(done);
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        this.waiters.delete(done);
        reject(signal.reason);
      };
      this.waiters.add(done);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  wakeAll(): void {
    // A copy: each wake-up removes itself from the set while it is walked.
    // oxlint-disable-next-line unicorn/no-useless-spread
    for (const wake of [...this.waiters]) wake();
  }
}

/** The longest a timer can wait (Node's limit, about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * An idle pause that work arriving cuts short: `pause(signal, ms)` until `wake()`, the time, or
 * the signal. A wake while nobody pauses is kept for the next pause, which then returns at once:
 * work that arrives between a look at the queue and the pause after it is not slept through.
 */
export class IdlePause {
  private wakeUp: (() => void) | undefined;
  private woken = false;

  wake(): void {
    if (this.wakeUp) this.wakeUp();
    else this.woken = true;
  }

  /** `ms` may be Infinity: then only a wake or the signal ends it. */
  pause(signal: AbortSignal, ms: number): Promise<void> {
    if (this.woken || signal.aborted) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        if (timer) clearTimeout(timer);
        signal.removeEventListener('abort', done);
        // A pause that ended by its time must not take the wake-up of a later one.
        if (this.wakeUp === done) this.wakeUp = undefined;
        resolve();
      };
      const timer = Number.isFinite(ms) ? setTimeout(done, Math.min(MAX_TIMER_MS, Math.max(0, ms))) : undefined;
      signal.addEventListener('abort', done, { once: true });
      this.wakeUp = done;
    });
  }
}
