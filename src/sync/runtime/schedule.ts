/**
 * Schedules the engine waits on: a croner expression that wakes every waiter at each tick.
 * One Ticker per expression, shared by every property that polls on it.
 */
import { Cron } from 'croner';
import { WaitList } from '../../util/wait-list.js';

export class Ticker {
  private readonly waiters = new WaitList();
  private readonly cron: Cron;

  constructor(expression: string) {
    this.cron = new Cron(expression, { protect: true }, () => this.waiters.wakeAll());
  }

  /** Resolves at the next tick; rejects with the signal's reason when it aborts first. */
  next(signal: AbortSignal): Promise<void> {
    return this.waiters.wait(signal);
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
