/**
 * The engines' schedules: one croner job per expression for the whole process, however many
 * connections (engines) wait on it (a job holds about 80 KB of heap), each engine woken at its
 * ticks, and the job stopped when the last engine that used it stops.
 */
import { describe, expect, it } from 'vitest';
import { runningTickers, Tickers } from '../../src/sync/runtime/schedule.js';

const EVERY_SECOND = '* * * * * *';

describe('the tickers of the engines', () => {
  it('share one job per expression across engines, wake each, and stop with the last engine', async () => {
    const before = runningTickers();
    const engines = Array.from({ length: 50 }, () => new Tickers());
    const tickers = engines.map((t) => t.get(EVERY_SECOND));
    engines[0]!.get(EVERY_SECOND); // an engine asking again holds it once
    expect(new Set(tickers).size).toBe(1);
    expect(runningTickers()).toBe(before + 1);

    const stop = new AbortController();
    const woken = await Promise.all(tickers.map((t) => t.next(stop.signal).then(() => true)));
    expect(woken.every(Boolean)).toBe(true);

    // One engine stops: the others still tick.
    engines[0]!.stopAll();
    expect(runningTickers()).toBe(before + 1);
    await engines[1]!.get(EVERY_SECOND).next(stop.signal);

    for (const t of engines.slice(1)) t.stopAll();
    expect(runningTickers()).toBe(before);
    // A stopped engine's waiter is not woken: its signal ends it.
    const late = tickers[1]!.next(stop.signal);
    stop.abort(new Error('stopped'));
    await expect(late).rejects.toThrow('stopped');
  });
});
