/**
 * The poll schedule on a fake clock, hours at a time: polls never exceed any window of the
 * booking list budget, backfill keeps its share, busy properties are polled sooner and quiet
 * ones at their quiet interval, a change event makes a quiet one busy at once, the floor holds,
 * and sweep pages get turns (standing for a quiet property's poll).
 */
import { describe, expect, it } from 'vitest';
import { loadConfig, type RateWindow } from '../../src/config/config.js';
import { ListScheduler, sustainableGapMs } from '../../src/sync/runtime/list-scheduler.js';
import { FakeClock } from '../helpers/fake-clock.js';

const PRODUCTION_LIST_WINDOWS: RateWindow[] = [
  { limit: 3, windowMs: 1_000 },
  { limit: 100, windowMs: 60_000 },
  { limit: 3_000, windowMs: 3_600_000 },
];

function scheduler(clock: FakeClock, sync: Record<string, unknown> = {}): ListScheduler {
  const config = loadConfig({ env: {}, overrides: { rateLimits: { bookingList: PRODUCTION_LIST_WINDOWS }, sync } });
  return new ListScheduler(config, clock);
}

interface Turn {
  kind: 'poll' | 'sweep';
  id: string;
  at: number;
}

/** Property loops that poll whenever given a turn; `changes(id)` says what each poll found. */
function startPolling(s: ListScheduler, clock: FakeClock, ids: string[], turns: Turn[], signal: AbortSignal, changes: (id: string) => number = () => 0): void {
  for (const id of ids) {
    s.polled(id, 0);
    void (async () => {
      for (;;) {
        try {
          await s.pollTurn(id, signal);
        } catch {
          return;
        }
        turns.push({ kind: 'poll', id, at: clock.now() });
        s.polled(id, changes(id));
      }
    })();
  }
}

function startSweeping(s: ListScheduler, clock: FakeClock, id: string, turns: Turn[], signal: AbortSignal): void {
  void (async () => {
    for (;;) {
      try {
        await s.sweepTurn(id, signal);
      } catch {
        return;
      }
      turns.push({ kind: 'sweep', id, at: clock.now() });
    }
  })();
}

/** Most requests in any window of `windowMs` (sliding, over the sorted times). */
function busiestWindow(times: number[], windowMs: number): number {
  let most = 0;
  let start = 0;
  for (let end = 0; end < times.length; end++) {
    while (times[end]! - times[start]! >= windowMs) start++;
    most = Math.max(most, end - start + 1);
  }
  return most;
}

async function runFor(clock: FakeClock, ms: number, step = 1_000): Promise<void> {
  for (let t = 0; t < ms; t += step) await clock.advance(step);
}

describe('the poll schedule', () => {
  it('spends the list budget at its sustainable rate and never exceeds any window', async () => {
    expect(sustainableGapMs(PRODUCTION_LIST_WINDOWS)).toBe(1_200);
    const clock = new FakeClock();
    // Quiet interval 0: quiet properties are polled as often as busy ones (the schedule as the budget allows).
    const s = scheduler(clock, { pollIntervalMs: { min: 0, quiet: 0, max: 60_000 } });
    const turns: Turn[] = [];
    const stop = new AbortController();
    startPolling(s, clock, ['1', '2', '3', '4', '5'], turns, stop.signal);
    await runFor(clock, 2 * 3_600_000, 5_000);
    stop.abort();
    const times = turns.map((t) => t.at);
    for (const w of PRODUCTION_LIST_WINDOWS) expect(busiestWindow(times, w.windowMs), `window ${w.windowMs} ms`).toBeLessThanOrEqual(w.limit);
    // As often as the budget allows: 2 h at one request per 1.2 s.
    expect(turns.length).toBeGreaterThanOrEqual(5_990);
    // Round robin: each of the 5 is polled about every 6 s.
    const gaps = turns
      .filter((t) => t.id === '3')
      .map((t, i, a) => (i === 0 ? 0 : t.at - a[i - 1]!.at))
      .slice(1);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(6_000 + 1_200);
  });

  it('leaves backfill pages their share: polls take at most sync.pollShareDuringBackfill of the budget meanwhile', async () => {
    const clock = new FakeClock();
    const s = scheduler(clock, { pollShareDuringBackfill: 0.2, pollIntervalMs: { min: 0, quiet: 0, max: 60_000 } });
    const turns: Turn[] = [];
    const stop = new AbortController();
    s.setBackfilling('9', true);
    startPolling(s, clock, ['1', '2'], turns, stop.signal);
    await runFor(clock, 3_600_000, 5_000);
    expect(turns.length).toBeLessThanOrEqual(0.2 * 3_000 + 1);
    expect(turns.length).toBeGreaterThanOrEqual(0.2 * 3_000 - 5);
    // Backfill done: the full rate again.
    s.setBackfilling('9', false);
    const before = turns.length;
    await runFor(clock, 600_000, 5_000);
    stop.abort();
    expect(turns.length - before).toBeGreaterThanOrEqual(495);
  });

  it('polls busy properties sooner than quiet ones, and every quiet one within the ceiling', async () => {
    const clock = new FakeClock();
    const s = scheduler(clock, { pollIntervalMs: { min: 0, quiet: 0, max: 30_000 } });
    const turns: Turn[] = [];
    const stop = new AbortController();
    const ids = Array.from({ length: 12 }, (_, i) => String(i + 1));
    startPolling(s, clock, ids, turns, stop.signal, (id) => (id === '1' ? 1 : 0));
    await runFor(clock, 3_600_000, 1_000);
    stop.abort();
    const count = (id: string) => turns.filter((t) => t.id === id).length;
    expect(count('1')).toBeGreaterThan(1.5 * count('2'));
    for (const id of ids.slice(1)) {
      const at = turns.filter((t) => t.id === id).map((t) => t.at);
      const longest = Math.max(...at.slice(1).map((t, i) => t - at[i]!));
      expect(longest, `property ${id}`).toBeLessThanOrEqual(30_000 + 1_200);
    }
  });

  it('keeps the floor: no property polled more often than sync.pollIntervalMs.min', async () => {
    const clock = new FakeClock();
    const s = scheduler(clock, { pollIntervalMs: { min: 5_000, quiet: 0, max: 60_000 } });
    const turns: Turn[] = [];
    const stop = new AbortController();
    startPolling(s, clock, ['1'], turns, stop.signal);
    await runFor(clock, 600_000, 500);
    stop.abort();
    const gaps = turns.slice(1).map((t, i) => t.at - turns[i]!.at);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(5_000);
    expect(turns.length).toBeGreaterThanOrEqual(115);
  });

  it('gives sweep pages turns after polls, at least one in ten while polls would take them all', async () => {
    const clock = new FakeClock();
    const s = scheduler(clock, { pollIntervalMs: { min: 0, quiet: 0, max: 60_000 } });
    const turns: Turn[] = [];
    const stop = new AbortController();
    startPolling(s, clock, ['1', '2'], turns, stop.signal);
    startSweeping(s, clock, '1', turns, stop.signal);
    await runFor(clock, 600_000, 1_000);
    stop.abort();
    const sweeps = turns.filter((t) => t.kind === 'sweep').length;
    expect(sweeps).toBeGreaterThanOrEqual(Math.floor(turns.length / 10) - 1);
    expect(sweeps).toBeLessThanOrEqual(Math.ceil(turns.length / 10) + 1);
    for (const w of PRODUCTION_LIST_WINDOWS)
      expect(
        busiestWindow(
          turns.map((t) => t.at),
          w.windowMs,
        ),
      ).toBeLessThanOrEqual(w.limit);
  });

  it('polls a quiet property at most every sync.pollIntervalMs.quiet, a busy one at the budget floor, and a quiet one that changed at once', async () => {
    const clock = new FakeClock();
    const s = scheduler(clock, { pollIntervalMs: { min: 0, quiet: 30_000, max: 60_000 }, quietAfterMs: 600_000 });
    const turns: Turn[] = [];
    const stop = new AbortController();
    // '1' changes at every poll (busy), '2' to '5' never (quiet).
    startPolling(s, clock, ['1', '2', '3', '4', '5'], turns, stop.signal, (id) => (id === '1' ? 1 : 0));
    await runFor(clock, 3_600_000, 1_000);
    const count = (id: string) => turns.filter((t) => t.id === id).length;
    // A quiet hotel: at most 120 list requests an hour, and no fewer than the ceiling allows.
    for (const id of ['2', '3', '4', '5']) {
      expect(count(id), `property ${id}`).toBeLessThanOrEqual(120);
      expect(count(id), `property ${id}`).toBeGreaterThanOrEqual(115);
    }
    // The busy one takes the rest of the budget: 3,000 an hour in all.
    expect(count('1')).toBeGreaterThanOrEqual(3_000 - 4 * 120 - 60);
    // A change event names quiet '3': its next poll comes at the floor, not after the rest of its quiet interval.
    const before = count('3');
    const at = clock.now();
    s.changed('3');
    await runFor(clock, 3_000, 100);
    expect(count('3')).toBe(before + 1);
    expect(turns.filter((t) => t.id === '3').at(-1)!.at - at).toBeLessThanOrEqual(1_200);
    stop.abort();
  });

  it('turns a busy property quiet after sync.quietAfterMs without a change', async () => {
    const clock = new FakeClock();
    const s = scheduler(clock, { pollIntervalMs: { min: 0, quiet: 30_000, max: 60_000 }, quietAfterMs: 300_000 });
    const turns: Turn[] = [];
    const stop = new AbortController();
    let changing = true;
    startPolling(s, clock, ['1'], turns, stop.signal, () => (changing ? 1 : 0));
    // Quiet until its first poll finds a change (30 s at most), then busy: every 1.2 s.
    await runFor(clock, 30_000, 500);
    const firstBusy = turns.length;
    await runFor(clock, 60_000, 500);
    expect(turns.length - firstBusy).toBeGreaterThanOrEqual(48);
    const busyPolls = turns.length;
    changing = false;
    // Still busy for quietAfterMs after its last change, then quiet.
    await runFor(clock, 300_000, 500);
    expect(turns.length - busyPolls).toBeGreaterThanOrEqual(240);
    const quietFrom = turns.length;
    await runFor(clock, 600_000, 500);
    expect(turns.length - quietFrom).toBeLessThanOrEqual(21);
    expect(turns.length - quietFrom).toBeGreaterThanOrEqual(19);
    stop.abort();
  });

  it("counts a sweep page as a quiet property's poll: its list requests stay within the quiet interval's", async () => {
    const clock = new FakeClock();
    const s = scheduler(clock, { pollIntervalMs: { min: 0, quiet: 30_000, max: 60_000 } });
    const turns: Turn[] = [];
    const stop = new AbortController();
    startPolling(s, clock, ['1'], turns, stop.signal);
    // A sweep that asks for a page every 10 minutes.
    void (async () => {
      for (;;) {
        await clock.sleep(600_000, stop.signal).catch(() => undefined);
        if (stop.signal.aborted) return;
        await s.sweepTurn('1', stop.signal).catch(() => undefined);
        turns.push({ kind: 'sweep', id: '1', at: clock.now() });
      }
    })();
    await runFor(clock, 3_600_000, 1_000);
    stop.abort();
    expect(turns.filter((t) => t.kind === 'sweep').length).toBeGreaterThanOrEqual(5);
    expect(turns.length).toBeLessThanOrEqual(120);
  });
});
