/**
 * The reconciliation sweep against real PostgreSQL and the simulator: writes that become
 * visible late (a modification time already behind the booking list's continueToken) are
 * missed by the main stream and found by the next sweep; a sweep over an unchanged mirror costs
 * list calls and no detail call; a pass resumes from its own token; no sweep before the
 * booking list is caught up; `status` shows what the last sweep found.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { upsertSummariesAndEnqueue } from '../../src/store/repositories/booking-summaries.js';
import { resetCursorForRecovery } from '../../src/store/repositories/cursors.js';
import { bookingSweepStream } from '../../src/sync/streams/booking-sweep.js';
import type { SyncContext } from '../../src/sync/runtime/context.js';
import { Engine } from '../../src/sync/runtime/engine.js';
import { registeredStreams } from '../../src/sync/streams/registry.js';
import { type StreamRegistry } from '../../src/sync/streams/types.js';
import { daemonEnv, runCli, waitFor } from '../helpers/cli.js';
import { mirrorSnapshot, simulatorSnapshot, startHarness, syncOnce, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const P = '500100';
const LIST = /\/bookings\/?$/;
/** Far enough back to read every booking of the simulator (the sweep starts at 2009-01-01 then). */
const TWENTY_YEARS = 20 * 365 * 86_400_000;
type AnyRecord = Record<string, any>;

/** The booking list, the booking details, and (with `sweep`) the sweep. */
function bookingStreams(sweep: boolean): StreamRegistry {
  const names = sweep ? ['booking_summaries', 'booking_sweep'] : ['booking_summaries'];
  return {
    property: registeredStreams.property.filter((s) => names.includes(s.name)),
    queues: registeredStreams.queues.filter((q) => q.name === 'booking_details'),
    refreshes: [],
  };
}

const listCalls = (harness: Harness) => harness.sim.stats.accepted.bookingList ?? 0;
const detailCalls = (harness: Harness) => harness.sim.stats.accepted.bookingDetails ?? 0;
const sweepRow = async (harness: Harness, id = P) => (await harness.sql<AnyRecord>('SELECT * FROM booking_sweeps WHERE property_id = $1', [id]))[0];
const sweepCursor = async (harness: Harness, id = P) =>
  (await harness.sql<AnyRecord>("SELECT * FROM sync_cursors WHERE property_id = $1 AND stream = 'booking_sweep'", [id]))[0];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/**
 * Details fetched in the second of their modification are fetched again by the next list that
 * shows them (a second change in that second may be missing from them): tests that count
 * detail fetches let every generated booking be older than a second first.
 */
const settle = () => sleep(1100);
const sweepOnce = (ctx: SyncContext, signal = new AbortController().signal) => bookingSweepStream.catchUp(ctx, P, signal, { mode: 'daemon' });

/** The simulator's modification time of each booking, and the mirror's. */
async function versions(harness: Harness, numbers: readonly string[]) {
  const sim = new Map(harness.sim.bookings(P).map((b) => [b.number, b.modifiedDateTime]));
  const rows = await harness.sql<{ number: string; modified_at: Date }>(
    'SELECT number, modified_at FROM bookings WHERE property_id = $1 AND number = ANY($2)',
    [P, numbers],
  );
  const mirror = new Map(rows.map((r) => [r.number, r.modified_at.toISOString().replace('.000Z', 'Z')]));
  return numbers.map((n) => ({ number: n, sim: sim.get(n), mirror: mirror.get(n) ?? null }));
}

describe('the reconciliation sweep', () => {
  it('finds late-visible writes the booking list missed: one sweep later the mirror equals the simulator', async () => {
    h = await startHarness({
      sim: { properties: [{ id: P, bookingCount: 80 }] },
      config: { sync: { sweep: { enabled: true, everyMs: 1000, lookbackMs: 3_600_000 } } },
    });
    const harness = h;
    const late: string[] = [];
    // 1. The booking list alone, caught up and polling.
    let ctx = await h.context();
    let stop = new AbortController();
    let running = new Engine(ctx, { mode: 'daemon', recovery: { mode: 'none' }, streams: bookingStreams(false) }).run(stop.signal);
    try {
      await waitFor('the mirror to catch up', async () => JSON.stringify(await mirrorSnapshot(harness)) === JSON.stringify(simulatorSnapshot(harness.sim)));
      // A change now: the list's continueToken moves to now.
      h.sim.mutate({ count: 2, propertyId: P });
      await waitFor('the change mirrored', async () => JSON.stringify(await mirrorSnapshot(harness)) === JSON.stringify(simulatorSnapshot(harness.sim)));
      // Writes dated a minute ago, visible only now: behind the token.
      late.push(...new Set(h.sim.mutateLate({ propertyId: P, count: 3, newCount: 1, lagMs: 60_000 })));
      expect(late.length).toBeGreaterThanOrEqual(2);
      const polled = listCalls(h);
      await waitFor('three more polls', () => listCalls(harness) >= polled + 3, 10_000, 20);
      await sleep(300);
      expect(await mirrorSnapshot(h), 'the booking list never lists a write dated behind its token').not.toEqual(simulatorSnapshot(h.sim));
      for (const v of await versions(h, late)) expect(v.mirror, v.number).not.toBe(v.sim);
    } finally {
      stop.abort();
      await running;
    }

    // 2. The same with the sweep: the first pass is due everyMs after it sees the list caught up.
    ctx = await h.context();
    stop = new AbortController();
    running = new Engine(ctx, { mode: 'daemon', recovery: { mode: 'none' }, streams: bookingStreams(true) }).run(stop.signal);
    try {
      await waitFor('a sweep pass', async () => Number((await sweepRow(harness))?.passes ?? 0) >= 1, 15_000, 50);
      await waitFor(
        'the mirror to equal the simulator',
        async () => JSON.stringify(await mirrorSnapshot(harness)) === JSON.stringify(simulatorSnapshot(harness.sim)),
        10_000,
        50,
      );
      const row = (await sweepRow(h))!;
      expect(Number(row.late_changes), 'the late changes found').toBe(late.length);
      expect(row.watching_since.getTime()).toBeLessThanOrEqual(row.last_started_at.getTime() - 1000);
      for (const v of await versions(h, late)) expect(v.mirror, v.number).toBe(v.sim);
    } finally {
      stop.abort();
      await running;
    }
    expect(await mirrorSnapshot(h)).toEqual(simulatorSnapshot(h.sim));
  });

  it('costs list calls and no detail call over an unchanged mirror', async () => {
    h = await startHarness({
      sim: { properties: [{ id: P, bookingCount: 150 }] },
      config: { sync: { summariesPageSize: 50, sweep: { enabled: true, everyMs: 1500, lookbackMs: TWENTY_YEARS } } },
    });
    await settle();
    const ctx = await h.context();
    await syncOnce(ctx);
    expect(await mirrorSnapshot(h)).toEqual(simulatorSnapshot(h.sim));
    h.sim.stats.requestLog = [];

    // First sight of the caught-up list: the schedule starts, nothing is read.
    await sweepOnce(ctx);
    expect(h.sim.stats.requestLog).toEqual([]);
    expect((await sweepRow(h))!.last_started_at).toBeNull();
    await sleep(1600);

    const lists = listCalls(h);
    const details = detailCalls(h);
    await sweepOnce(ctx);
    expect(listCalls(h) - lists, '150 summaries in pages of 50').toBe(3);
    expect(detailCalls(h) - details, 'no detail call for what is mirrored').toBe(0);
    const first = h.sim.stats.requestLog.find((e) => LIST.test(e.path))!;
    expect(decodeURIComponent(first.query ?? '')).toContain('lastModification=2009-01-01T00:00:00Z');
    const row = (await sweepRow(h))!;
    expect({ pages: row.last_pages, summaries: row.last_summaries, late: row.last_late, enqueued: row.last_enqueued, inPass: row.pass_started_at }).toEqual({
      pages: 3,
      summaries: 150,
      late: 0,
      enqueued: 0,
      inPass: null,
    });
    expect(await h.sql('SELECT * FROM booking_detail_queue')).toEqual([]);
    expect((await sweepCursor(h))!.cursor, 'a finished pass keeps no token').toBeNull();

    // Not due again before everyMs (1.5 s: a loaded machine took over 0.3 s for the pass and
    // the checks above, which made the sweep due again): nothing is read.
    await sweepOnce(ctx);
    expect(listCalls(h) - lists).toBe(3);
  });

  it('never overwrites a newer summary with the older version a sweep page lists', async () => {
    h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 5 }] } });
    const ctx = await h.context();
    await syncOnce(ctx);
    const [stored] = await h.sql<{ number: string; modified_at: Date; raw: AnyRecord }>('SELECT number, modified_at, raw FROM booking_summaries LIMIT 1');
    const older = new Date(stored!.modified_at.getTime() - 60_000);
    const row = { propertyId: P, number: stored!.number, status: 'Cancelled', createdAt: null, modifiedAt: older, priority: 0, raw: { old: true } };
    await ctx.write((trx) => upsertSummariesAndEnqueue(trx, [row], new Date(), { keepNewer: true }));
    const [after] = await h.sql<{ modified_at: Date; raw: AnyRecord }>('SELECT modified_at, raw FROM booking_summaries WHERE number = $1', [stored!.number]);
    expect(after).toEqual({ modified_at: stored!.modified_at, raw: stored!.raw });
    // Without the guard (the main stream's upsert) the row would have gone back in time.
    await ctx.write((trx) => upsertSummariesAndEnqueue(trx, [row], new Date()));
    const [overwritten] = await h.sql<{ modified_at: Date }>('SELECT modified_at FROM booking_summaries WHERE number = $1', [stored!.number]);
    expect(overwritten!.modified_at).toEqual(older);
  });

  it('resumes an interrupted pass from its own token', async () => {
    h = await startHarness({
      sim: { properties: [{ id: P, bookingCount: 120 }] },
      config: { sync: { summariesPageSize: 40, sweep: { enabled: true, everyMs: 300, lookbackMs: TWENTY_YEARS } } },
    });
    await settle();
    const ctx = await h.context();
    await syncOnce(ctx);
    await sweepOnce(ctx);
    await sleep(350);
    const late = [...new Set(h.sim.mutateLate({ propertyId: P, count: 2, lagMs: 120_000 }))];
    h.sim.stats.requestLog = [];

    // Stop the pass after its first page: the second turn of the list scheduler aborts.
    const stop = new AbortController();
    const turn = ctx.listScheduler.sweepTurn.bind(ctx.listScheduler);
    let turns = 0;
    ctx.listScheduler.sweepTurn = (id, signal) => {
      turns += 1;
      if (turns === 2) stop.abort(new Error('stopped for the test'));
      return turn(id, signal);
    };
    await expect(sweepOnce(ctx, stop.signal)).rejects.toThrow('stopped for the test');
    ctx.listScheduler.sweepTurn = turn;
    expect(h.sim.stats.requestLog.filter((e) => LIST.test(e.path))).toHaveLength(1);
    const cursor = (await sweepCursor(h))!;
    expect(cursor.cursor, 'the pass position committed with its first page').toBeTruthy();
    const inPass = (await sweepRow(h))!;
    expect({ pages: inPass.pass_pages, summaries: inPass.pass_summaries, started: inPass.pass_started_at !== null }).toEqual({
      pages: 1,
      summaries: 40,
      started: true,
    });

    // A new run (as after a restart) goes on from the token: a pass in progress needs no due time.
    h.sim.stats.requestLog = [];
    await sweepOnce(await h.context());
    const lists = h.sim.stats.requestLog.filter((e) => LIST.test(e.path));
    expect(lists).toHaveLength(2);
    const firstQuery = new URLSearchParams(lists[0]!.query ?? '');
    expect(firstQuery.get('continueToken')).toBe(cursor.cursor);
    expect(firstQuery.get('lastModification')).toBeNull();
    const done = (await sweepRow(h))!;
    expect({ pages: done.last_pages, summaries: done.last_summaries, late: done.last_late, inPass: done.pass_started_at }).toEqual({
      pages: 3,
      summaries: 120,
      late: late.length,
      inPass: null,
    });
    // The late changes are queued first in line; a drain mirrors them.
    const queued = await h.sql<{ number: string; priority: number }>('SELECT number, priority FROM booking_detail_queue ORDER BY number');
    expect(queued).toEqual([...late].sort().map((number) => ({ number, priority: 0 })));
    await syncOnce(await h.context());
    expect(await mirrorSnapshot(h)).toEqual(simulatorSnapshot(h.sim));
  });

  it('starts the pass again from its lookback when the provider rejects its token, and loses nothing', async () => {
    h = await startHarness({
      sim: { properties: [{ id: P, bookingCount: 90 }] },
      config: { sync: { summariesPageSize: 40, sweep: { enabled: true, everyMs: 300, lookbackMs: TWENTY_YEARS } } },
    });
    const ctx = await h.context();
    await syncOnce(ctx);
    await sweepOnce(ctx);
    await sleep(350);
    h.sim.stats.requestLog = [];
    const turn = ctx.listScheduler.sweepTurn.bind(ctx.listScheduler);
    let turns = 0;
    ctx.listScheduler.sweepTurn = (id, signal) => {
      turns += 1;
      if (turns === 2) h!.sim.invalidateContinueTokens();
      return turn(id, signal);
    };
    await sweepOnce(ctx);
    const queries = h.sim.stats.requestLog.filter((e) => LIST.test(e.path)).map((e) => new URLSearchParams(e.query ?? ''));
    // Page 1, the rejected page 2, then the whole pass again (3 pages of 40 over 90).
    expect(queries.map((q) => (q.get('lastModification') ? 'from' : 'token'))).toEqual(['from', 'token', 'from', 'token', 'token']);
    expect(h.sim.stats.byStatus[400]).toBe(1);
    const row = (await sweepRow(h))!;
    expect({ restarts: row.last_restarts, pages: row.last_pages, passes: Number(row.passes) }).toEqual({ restarts: 1, pages: 4, passes: 1 });
    expect((await h.sql<{ state: string }>("SELECT state FROM sync_cursors WHERE stream = 'booking_sweep'"))[0]!.state).toBe('active');
  });

  it('never sweeps before the booking list is caught up', async () => {
    h = await startHarness({
      sim: { properties: [{ id: P, bookingCount: 40 }] },
      config: { sync: { sweep: { enabled: true, everyMs: 300, lookbackMs: TWENTY_YEARS } } },
    });
    const ctx = await h.context();
    // Nothing mirrored yet: no read, no schedule.
    await sweepOnce(ctx);
    expect(listCalls(h)).toBe(0);
    expect(await sweepRow(h)).toBeUndefined();
    // A recovery in progress (the list re-reads from a time): not caught up either.
    await syncOnce(ctx);
    await ctx.write((trx) => resetCursorForRecovery(trx, P, 'booking_summaries', new Date()));
    const lists = listCalls(h);
    await sleep(350);
    await sweepOnce(ctx);
    expect(listCalls(h)).toBe(lists);
    expect(await sweepRow(h)).toBeUndefined();
  });

  it('waits in the daemon until the backfill is done, then everyMs more', async () => {
    h = await startHarness({
      sim: { properties: [{ id: P, bookingCount: 500 }] },
      // 12 pages at 5 list requests a second: a backfill of about two seconds.
      config: {
        rateLimits: { bookingList: [{ limit: 5, windowMs: 1000 }] },
        sync: { summariesPageSize: 45, sweep: { enabled: true, everyMs: 500, lookbackMs: 3_600_000 } },
      },
    });
    const harness = h;
    h.sim.stats.requestLog = [];
    const ctx = await h.context();
    const stop = new AbortController();
    const running = new Engine(ctx, { mode: 'daemon', recovery: { mode: 'none' }, streams: bookingStreams(true) }).run(stop.signal);
    try {
      await waitFor('a sweep pass', async () => Number((await sweepRow(harness))?.passes ?? 0) >= 1, 20_000, 50);
    } finally {
      stop.abort();
      await running;
    }
    const lists = h.sim.stats.requestLog.filter((e) => LIST.test(e.path));
    const backfillEnd = lists[11]!.t; // the twelfth page (540 > 500 summaries) said hasMoreData=false
    const sweeps = lists.filter((e) => (e.query ?? '').includes('lastModification='));
    expect(sweeps.length).toBeGreaterThanOrEqual(1);
    expect(lists.slice(0, 12).every((e) => !(e.query ?? '').includes('lastModification='))).toBe(true);
    const row = (await sweepRow(h))!;
    expect(row.watching_since.getTime()).toBeGreaterThanOrEqual(backfillEnd);
    expect(sweeps[0]!.t).toBeGreaterThanOrEqual(row.watching_since.getTime() + 500);
  });

  it('shows in status when each property was last swept and what the sweep found', async () => {
    const OTHER = '500200';
    h = await startHarness({
      sim: {
        properties: [
          { id: P, bookingCount: 60 },
          { id: OTHER, bookingCount: 10 },
        ],
      },
      config: { sync: { sweep: { enabled: true, everyMs: 300, lookbackMs: 3_600_000 } } },
    });
    await settle();
    const ctx = await h.context();
    await syncOnce(ctx);
    await sweepOnce(ctx);
    await sleep(350);
    const late = [...new Set(h.sim.mutateLate({ propertyId: P, count: 2, newCount: 1, lagMs: 90_000 }))];
    await sweepOnce(ctx);

    const sweepConfig = { sync: { sweep: { enabled: true, everyMs: 300, lookbackMs: 3_600_000 } } };
    const text = await runCli(['status'], daemonEnv(h, { config: sweepConfig }));
    expect(text.code, text.stderr).toBe(0);
    const line = text.stdout.split('\n').find((l) => l.startsWith(`property ${P}: sweep`));
    expect(line).toMatch(new RegExp(`^property ${P}: sweep: last swept \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z, found ${late.length} late changes in 1 page `));
    expect(text.stdout).toContain(`property ${OTHER}: sweep: not yet (due sync.sweep.everyMs after the booking list is seen caught up).`);

    const json = await runCli(['status', '--json'], daemonEnv(h, { config: sweepConfig }));
    expect(json.code, json.stderr).toBe(0);
    const report = JSON.parse(json.stdout) as { sweeps: AnyRecord[] };
    const mine = report.sweeps.find((s) => s.propertyId === P)!;
    expect(mine).toMatchObject({
      enabled: true,
      passes: 1,
      lateChangesTotal: late.length,
      inProgress: null,
      last: { pages: 1, lateChanges: late.length, enqueued: late.length },
    });
    expect(Date.parse(mine.nextDueAt)).toBe(Date.parse(mine.last.startedAt) + 300);
    expect(report.sweeps.find((s) => s.propertyId === OTHER)).toMatchObject({ last: null, nextDueAt: null });

    const off = await runCli(['status'], daemonEnv(h, { config: { sync: { sweep: { enabled: false, everyMs: 300, lookbackMs: 3_600_000 } } } }));
    expect(off.stdout).toContain(`property ${P}: sweep disabled (sync.sweep.enabled); last swept `);
  });
});
