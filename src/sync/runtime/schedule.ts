/**
 * Schedules the engine waits on: a croner expression that wakes every waiter at each tick.
 *
 * One Ticker per expression in the whole process, shared by every property and every engine
 * (connection) that waits on it: a croner job costs about 80 KB of heap (its pattern keeps a
 * table of 10,000 years), so one per connection made a replica of 500 connections hold 40 MB
 * of identical schedules. Each engine holds its expressions through a Tickers of its own; the
 * job stops when the last engine that used it stops.
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

/** The process's tickers by expression, with how many Tickers hold each. */
const shared = new Map<string, { ticker: Ticker; holders: number }>();

/** How many croner jobs the process runs now (tests). */
export function runningTickers(): number {
  return shared.size;
}

/** The tickers of one engine: the process's shared ones, held until stopAll. */
export class Tickers {
  private readonly held = new Set<string>();

  get(expression: string): Ticker {
    let entry = shared.get(expression);
    if (!entry) {
      entry = { ticker: new Ticker(expression), holders: 0 };
      shared.set(expression, entry);
    }
    if (!this.held.has(expression)) {
      this.held.add(expression);
      entry.holders += 1;
    }
    return entry.ticker;
  }

  /** Lets go of this engine's tickers; a ticker no engine holds any more stops. */
  stopAll(): void {
    for (const expression of this.held) {
      const entry = shared.get(expression);
      if (!entry) continue;
      entry.holders -= 1;
      if (entry.holders === 0) {
        entry.ticker.stop();
        shared.delete(expression);
      }
    }
    this.held.clear();
  }
}
