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

/** An idle pause that work arriving cuts short: `pause(signal, ms)` until `wake()`, the time, or the signal. */
export class IdlePause {
  private wakeUp: (() => void) | undefined;

  wake(): void {
    this.wakeUp?.();
  }

  pause(signal: AbortSignal, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        // A pause that ended by its time must not take the wake-up of a later one.
        if (this.wakeUp === done) this.wakeUp = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.wakeUp = done;
    });
  }
}
