import { describe, expect, it } from 'vitest';
import { Budgets, RateBudget, remainingFromHeaders, type Permit } from '../../src/provider/budget.js';
import { FakeClock } from '../helpers/fake-clock.js';

/** Starts an acquire and records when (fake time) and in which order it was granted. */
function track(
  budget: RateBudget,
  clock: FakeClock,
  log: { name: string; at: number; permit: Permit }[],
  name: string,
  signal = new AbortController().signal,
  priority?: number,
) {
  const p = budget.acquire(signal, priority).then((permit) => {
    log.push({ name, at: clock.now(), permit });
    return permit;
  });
  p.catch(() => undefined);
  return p;
}

describe('RateBudget', () => {
  it('never grants more than the limit in any sliding window, counting in-flight permits', async () => {
    const clock = new FakeClock();
    const budget = new RateBudget(
      'test',
      [
        { limit: 3, windowMs: 1000 },
        { limit: 5, windowMs: 10_000 },
      ],
      clock,
    );
    const granted: { name: string; at: number; permit: Permit }[] = [];
    const releases: number[] = [];
    // 12 requests, each takes 300 ms from grant to response.
    for (let i = 0; i < 12; i++) {
      void track(budget, clock, granted, `r${i}`).then(async (permit) => {
        await clock.sleep(300);
        releases.push(clock.now());
        permit.release();
      });
    }
    for (let step = 0; step < 400; step++) await clock.advance(100);
    expect(granted).toHaveLength(12);
    // Check every grant against the windows: in-flight requests + releases inside the window.
    for (const g of granted) {
      for (const [limit, windowMs] of [
        [3, 1000],
        [5, 10_000],
      ] as const) {
        const inFlight = granted.filter((o) => o.at <= g.at && o !== g && o.at + 300 > g.at).length;
        const recent = granted.filter((o) => o.at + 300 <= g.at && o.at + 300 > g.at - windowMs).length;
        expect(inFlight + recent + 1).toBeLessThanOrEqual(limit);
      }
    }
    // 5 per 10 s: the 6th request is granted 10 s after the 1st RELEASE, not the 1st send.
    const t0 = granted[0]!.at;
    expect(granted[5]!.at - t0).toBe(300 + 10_000);
    expect(granted[10]!.at - t0).toBe(2 * (300 + 10_000));
  });

  it('starts the window at release: a slot held in flight is not free one window after send', async () => {
    const clock = new FakeClock();
    const budget = new RateBudget('test', [{ limit: 1, windowMs: 1000 }], clock);
    const granted: { name: string; at: number; permit: Permit }[] = [];
    const first = await budget.acquire(new AbortController().signal);
    const start = clock.now();
    void track(budget, clock, granted, 'second');
    await clock.advance(5000); // response still outstanding: no slot
    expect(granted).toHaveLength(0);
    expect(clock.pendingTimers).toBe(0); // waiting for a release, not polling
    first.release();
    await clock.advance(999);
    expect(granted).toHaveLength(0);
    await clock.advance(1);
    expect(granted).toHaveLength(1);
    expect(granted[0]!.at - start).toBe(6000);
  });

  it('serves waiters by priority, FIFO within a priority', async () => {
    const clock = new FakeClock();
    const budget = new RateBudget('test', [{ limit: 1, windowMs: 100 }], clock);
    const order: { name: string; at: number; permit: Permit }[] = [];
    const holder = await budget.acquire(new AbortController().signal);
    void track(budget, clock, order, 'low-a', undefined, 5);
    void track(budget, clock, order, 'high-a', undefined, 1);
    void track(budget, clock, order, 'low-b', undefined, 5);
    void track(budget, clock, order, 'high-b', undefined, 1);
    void track(budget, clock, order, 'mid', undefined, 3);
    expect(budget.snapshot().waiting).toBe(5);
    holder.release();
    for (let i = 0; i < 10; i++) {
      await clock.advance(100);
      order[order.length - 1]?.permit.release();
    }
    expect(order.map((o) => o.name)).toEqual(['high-a', 'high-b', 'mid', 'low-a', 'low-b']);
  });

  it('observeRemaining adds phantom usage when the provider saw more requests than the ledger', async () => {
    const clock = new FakeClock();
    const budget = new RateBudget(
      'test',
      [
        { limit: 3, windowMs: 1000 },
        { limit: 100, windowMs: 60_000 },
      ],
      clock,
    );
    const p = await budget.acquire(new AbortController().signal);
    // A predecessor process used 40 of the minute: the provider says 59 left after ours.
    p.release({ 'x-ratelimit-remaining-second': '2', 'x-ratelimit-remaining-minute': '59' });
    const snap = budget.snapshot();
    expect(snap.windows.map((w) => w.used)).toEqual([1, 41]);
    // Reporting MORE room never removes entries.
    budget.observeRemaining({ second: 3, minute: 100 });
    expect(budget.snapshot().windows.map((w) => w.used)).toEqual([1, 41]);
    // A full minute window (provider: 0 left) blocks until the phantoms expire.
    budget.observeRemaining({ minute: 0 });
    expect(budget.snapshot().windows[1]!.used).toBe(100);
    const granted: { name: string; at: number; permit: Permit }[] = [];
    void track(budget, clock, granted, 'next');
    await clock.advance(59_999);
    expect(granted).toHaveLength(0);
    await clock.advance(1);
    expect(granted).toHaveLength(1);
  });

  it('reads a header as of its request, so our own expired requests are not taken for a stranger', async () => {
    const clock = new FakeClock();
    const budget = new RateBudget('test', [{ limit: 10, windowMs: 1000 }], clock);
    const first = await budget.acquire(new AbortController().signal);
    await clock.advance(10);
    first.release(); // arrived at the provider at about +5 ms, released at +10 ms
    await clock.advance(995); // +1005: the second request is sent
    const second = await budget.acquire(new AbortController().signal);
    await clock.advance(15); // +1020: its answer, counted by the provider at about +1008,
    // still includes the first request (arrival +5 ms > +1008 - 1000), which our ledger has
    // already let go (released +10 ms <= +1020 - 1000).
    second.release({ 'x-ratelimit-remaining-second': '8' });
    // No phantom: as of the send time (+1005) the ledger held both requests too.
    expect(budget.snapshot().windows[0]!.used).toBe(1);
    // A real stranger still shows: the provider reports 3 more than the ledger knows of.
    const third = await budget.acquire(new AbortController().signal);
    third.release({ 'x-ratelimit-remaining-second': '5' });
    expect(budget.snapshot().windows[0]!.used).toBe(5);
  });

  it('parses remaining headers and ignores junk', () => {
    expect(remainingFromHeaders({ 'x-ratelimit-remaining-second': '4', 'x-ratelimit-remaining-hour': ['7'], 'x-ratelimit-remaining-minute': 'abc' })).toEqual({
      second: 4,
      hour: 7,
    });
  });

  it('pauseFor blocks every acquire until the pause ends', async () => {
    const clock = new FakeClock();
    const budget = new RateBudget('test', [{ limit: 50, windowMs: 1000 }], clock);
    budget.pauseFor(2500);
    expect(budget.snapshot().pausedForMs).toBe(2500);
    const granted: { name: string; at: number; permit: Permit }[] = [];
    void track(budget, clock, granted, 'a');
    void track(budget, clock, granted, 'b');
    await clock.advance(2499);
    expect(granted).toHaveLength(0);
    await clock.advance(1);
    expect(granted.map((g) => g.name)).toEqual(['a', 'b']);
    // A shorter pause never shortens a longer one.
    budget.pauseFor(1000);
    budget.pauseFor(100);
    expect(budget.snapshot().pausedForMs).toBe(1000);
  });

  it('abort rejects a waiting acquire with the reason and lets the next waiter through', async () => {
    const clock = new FakeClock();
    const budget = new RateBudget('test', [{ limit: 1, windowMs: 1000 }], clock);
    const holder = await budget.acquire(new AbortController().signal);
    const ac = new AbortController();
    const waiting = budget.acquire(ac.signal, 0);
    const granted: { name: string; at: number; permit: Permit }[] = [];
    void track(budget, clock, granted, 'later', undefined, 9);
    const reason = new Error('shutdown');
    ac.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    expect(budget.snapshot().waiting).toBe(1);
    holder.release();
    await clock.advance(1000);
    expect(granted.map((g) => g.name)).toEqual(['later']);
    // An already aborted signal rejects at once.
    await expect(budget.acquire(AbortSignal.abort(reason))).rejects.toBe(reason);
  });

  it('snapshot reports in flight, used per window and waiting; release is idempotent', async () => {
    const clock = new FakeClock();
    const budget = new RateBudget(
      'test',
      [
        { limit: 2, windowMs: 1000 },
        { limit: 10, windowMs: 60_000 },
      ],
      clock,
    );
    const a = await budget.acquire(new AbortController().signal);
    const b = await budget.acquire(new AbortController().signal);
    void budget.acquire(new AbortController().signal).catch(() => undefined);
    expect(budget.snapshot()).toMatchObject({ inFlight: 2, waiting: 1, windows: [{ used: 2 }, { used: 2 }] });
    a.release();
    a.release();
    b.release();
    await clock.advance(0);
    expect(budget.snapshot()).toMatchObject({ inFlight: 0, waiting: 1, windows: [{ used: 2 }, { used: 2 }] });
    await clock.advance(1000);
    expect(budget.snapshot()).toMatchObject({ inFlight: 1, waiting: 0, windows: [{ used: 1 }, { used: 3 }] });
  });

  it('keeps about what its windows hold in memory, not the requests that left them', async () => {
    // A busy property of one connection: a list request every 1.2 s, the production windows,
    // for an hour and a half. The windows hold 3,000 + 50 + 1 requests and the entries kept past
    // them (expired retention, 35 s) about 30 each; the dead entries before them must not pile up.
    const clock = new FakeClock();
    const windows = [
      { limit: 3, windowMs: 1_000 },
      { limit: 100, windowMs: 60_000 },
      { limit: 3_000, windowMs: 3_600_000 },
    ];
    const budget = new RateBudget('bookingList', windows, clock, 35_000);
    const signal = new AbortController().signal;
    let most = 0;
    for (let i = 0; i < 4_500; i++) {
      (await budget.acquire(signal)).release();
      await clock.advance(1_200);
      most = Math.max(most, budget.storedTimestamps() - budget.snapshot().windows.reduce((n, w) => n + w.used, 0));
    }
    // Beyond the entries inside the windows: at most about as many again (the dead prefix is
    // dropped once it is half of a queue), never thousands per short window.
    expect(most).toBeLessThan(3_300);
  });

  it('Budgets builds one budget per configured scope', () => {
    const clock = new FakeClock();
    const w = [{ limit: 1, windowMs: 1000 }];
    const budgets = new Budgets({ bookingList: w, bookingDetails: w, standard: w, integrationStorage: w, token: [{ limit: 3, windowMs: 1000 }] }, clock);
    expect(budgets.get('token').snapshot().windows[0]!.limit).toBe(3);
    expect(budgets.snapshot().map((s) => s.scope)).toEqual(['bookingList', 'bookingDetails', 'standard', 'integrationStorage', 'token']);
  });
});

describe('a budget handed over (ledger and seed)', () => {
  it('counts the requests another process sent: the new holder waits for them to leave the windows; shared scopes stay out', async () => {
    const clock = new FakeClock();
    const windows = [
      { limit: 2, windowMs: 1000 },
      { limit: 3, windowMs: 10_000 },
    ];
    const limits = { bookingList: windows, bookingDetails: windows, standard: windows, integrationStorage: windows, token: windows };
    const first = new Budgets(limits, clock, undefined, { token: new RateBudget('token', windows, clock) });
    const signal = new AbortController().signal;
    for (let i = 0; i < 3; i++) {
      (await first.get('bookingDetails').acquire(signal)).release();
      await clock.advance(600);
    }
    const ledger = first.ledger();
    expect(Object.keys(ledger).sort()).toEqual(['bookingDetails', 'bookingList', 'integrationStorage', 'standard']);
    expect(ledger.bookingDetails).toEqual([1800, 1200, 600]);
    expect(ledger.bookingList).toEqual([]);

    // Taken over 100 ms later: the 10 s window is full until 10 s after the first request.
    await clock.advance(100);
    const second = new Budgets(limits, clock);
    second.seed(ledger, 100);
    const granted: number[] = [];
    void second
      .get('bookingDetails')
      .acquire(signal)
      .then((p) => {
        granted.push(clock.now());
        p.release();
      });
    const start = clock.now();
    for (let i = 0; i < 120; i++) await clock.advance(100);
    expect(granted).toHaveLength(1);
    // The first request was sent 1900 ms before `start`; its 10 s window ends 8100 ms after it.
    expect(granted[0]! - start).toBeGreaterThanOrEqual(8100);
    expect(granted[0]! - start).toBeLessThanOrEqual(8200);
    // A fresh budget without the ledger would have granted at once.
    const fresh = new Budgets(limits, clock);
    const t = clock.now();
    (await fresh.get('bookingDetails').acquire(signal)).release();
    expect(clock.now()).toBe(t);
  });
});
