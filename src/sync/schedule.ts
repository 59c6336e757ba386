/**
 * Schedules the engine waits on: a croner expression that wakes every waiter at each tick.
 * One Ticker per expression, shared by every property that polls on it.
 */
import { Cron } from 'croner';

export class Ticker {
  private readonly waiters = new Set<() => void>();
  private readonly cron: Cron;

  constructor(expression: string) {
    this.cron = new Cron(expression, { protect: true }, () => {
      for (const wake of [...this.waiters]) wake();
    });
  }

  /** Resolves at the next tick; rejects with the signal's reason when it aborts first. */
  next(signal: AbortSignal): Promise<void> {
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

  stop(): void {
    this.cron.stop();
  }
}

/** One Ticker per expression, created on first use, all stopped together. */
export class Tickers {
  private readonly byExpression = new Map<string, Ticker>();

  get(expression: string): Ticker {
    let t = this.byExpression.get(expression);
    if (!t) {
      t = new Ticker(expression);
      this.byExpression.set(expression, t);
    }
    return t;
  }

  stopAll(): void {
    for (const t of this.byExpression.values()) t.stop();
    this.byExpression.clear();
  }
}
