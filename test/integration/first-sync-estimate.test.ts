/**
 * The estimate of a first full sync, with the daemon as deployed (`node dist/cli/main.js run`,
 * real PostgreSQL, the simulator): the booking list gives no total, so the daemon estimates it
 * from the first pages (the bookings listed, over the time from the first modification to the
 * list's position, spread to now). It logs the estimate once per property, not at every page;
 * `status` (text and JSON) shows it while the list reads the history, and drops it once the list
 * has caught up. Every figure is checked against the simulator's own bookings.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { daemonEnv, logRecords, runCli, startCli, waitFor } from '../helpers/cli.js';
import { fastRateLimits, startHarness, type Harness } from '../helpers/harness.js';
import { ESTIMATE_AFTER_PAGES } from '../../src/sync/runtime/progress.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const BIG = '500100';
const SMALL = '500200';
const PAGE = 20;
/** One list page every 250 ms: the big property's 20 pages take about 5 s, long enough to stop the daemon halfway. */
const LIST_WINDOWS = [{ limit: 1, windowMs: 250 }];
const ESTIMATE_LINE = 'first sync: estimate from the first pages (see staysync status as it goes on)';

interface FirstSync {
  found: number;
  estimatedTotal: number | null;
  endsInSeconds: number | null;
  asOf: string;
}
interface StatusJson {
  properties: { propertyId: string; position: string | null; caughtUp: boolean; queuePending: number; firstSync: FirstSync | null }[];
  firstSync: { properties: number; detailsLeft: number; endsInSeconds: number | null };
}

describe('first sync estimate', () => {
  it('logs the estimate once after the first pages, and status shows it as the simulator counts it', async () => {
    h = await startHarness({
      sim: {
        properties: [
          { id: BIG, bookingCount: 400 },
          { id: SMALL, bookingCount: 5 },
        ],
      },
    });
    const env = daemonEnv(h, {
      config: {
        pms: { enabled: false },
        occupancy: { enabled: false },
        rateLimits: { ...fastRateLimits, bookingList: LIST_WINDOWS },
        sync: { summariesPageSize: PAGE },
      },
      env: { STAYSYNC_LOG_LEVEL: 'info' },
    });
    // The simulator's bookings of the big property in list order (modification, then id): what its pages list.
    const modified = h.sim
      .bookings(BIG)
      .map((b) => Date.parse(b.modifiedDateTime))
      .sort((a, b) => a - b);
    const first = modified[0]!;

    const daemon = startCli(['run'], env);
    const pagesOf = async (id: string) =>
      Number((await h!.sql<{ pages: string }>("SELECT pages FROM sync_cursors WHERE stream = 'booking_summaries' AND property_id = $1", [id]))[0]?.pages ?? 0);
    await waitFor('six pages of the big property', async () => (await pagesOf(BIG)) >= 6, 30_000, 50);
    daemon.child.kill('SIGTERM');
    const run = await daemon.done;
    expect(run.code).toBe(0);

    // One line for the big property, after its third page (60 bookings listed), and none for the small one (one page).
    const lines = logRecords(run.stdout).filter((r) => r.msg === ESTIMATE_LINE);
    expect(lines.map((l) => l.propertyId)).toEqual([BIG]);
    const line = lines[0]! as unknown as { found: number; estimatedTotal: number; listedTo: string; time: string };
    expect(line.found).toBe(3 * PAGE);
    expect(Date.parse(line.listedTo)).toBe(modified[3 * PAGE - 1]);
    const lineSpread = (Date.parse(line.time) - first) / (Date.parse(line.listedTo) - first);
    // Made a moment before the line was written: the same up to rounding.
    expect(Math.abs(line.estimatedTotal - 3 * PAGE * lineSpread)).toBeLessThanOrEqual(1);

    const status = JSON.parse((await runCli(['status', '--json'], env)).stdout) as StatusJson;
    const big = status.properties.find((p) => p.propertyId === BIG)!;
    const small = status.properties.find((p) => p.propertyId === SMALL)!;
    expect(big.caughtUp).toBe(false);
    expect(small.caughtUp).toBe(true);
    expect(small.firstSync).toBeNull();
    const f = big.firstSync!;
    const position = Date.parse(big.position!);
    // Bookings listed so far: every full page, and as many as the simulator has up to the list's position.
    expect(f.found).toBe((await pagesOf(BIG)) * PAGE);
    // (A page may end inside a modification second: the rest of that second is on the next page.)
    expect(f.found).toBeGreaterThan(modified.filter((m) => m < position).length);
    expect(f.found).toBeLessThanOrEqual(modified.filter((m) => m <= position).length);
    expect(f.estimatedTotal).toBe(Math.round((f.found * (Date.parse(f.asOf) - first)) / (position - first)));
    // At the budgets: list pages at 4 a second, details at 200 a second; the slower one.
    const listSeconds = Math.ceil((f.estimatedTotal! - f.found) / PAGE) / 4;
    const detailSeconds = (f.estimatedTotal! - f.found + big.queuePending) / 200;
    expect(f.endsInSeconds).toBe(Math.ceil(Math.max(listSeconds, detailSeconds)));
    expect(status.firstSync).toMatchObject({ properties: 1, detailsLeft: f.estimatedTotal! - f.found + big.queuePending, endsInSeconds: f.endsInSeconds });

    const text = (await runCli(['status'], env)).stdout;
    expect(text).toContain(
      `First sync of property ${BIG}: ${f.found} bookings listed so far (modified up to ${big.position}), about ${f.estimatedTotal!.toLocaleString('en')} in all`,
    );
    expect(text).not.toContain(`First sync of property ${SMALL}`);

    // To the end: the list caught up, every booking of the simulator listed, no estimate left.
    expect((await runCli(['sync', '--once'], env)).code).toBe(0);
    const after = JSON.parse((await runCli(['status', '--json'], env)).stdout) as StatusJson;
    expect(after.properties.map((p) => p.firstSync)).toEqual([null, null]);
    expect(after.firstSync).toMatchObject({ properties: 0, detailsLeft: 0 });
    const listed = await h.sql<{ n: string }>('SELECT count(*) AS n FROM booking_summaries WHERE property_id = $1', [BIG]);
    expect(Number(listed[0]!.n)).toBe(modified.length);

    // A burst of changes fills several pages of the caught-up list: no first sync, no estimate.
    h.sim.mutate({ count: 15 * PAGE, propertyId: BIG });
    const burst = await runCli(['sync', '--once'], env);
    expect(burst.code).toBe(0);
    const pages = await pagesOf(BIG);
    expect(pages - modified.length / PAGE).toBeGreaterThan(ESTIMATE_AFTER_PAGES + 1);
    expect(logRecords(burst.stdout).filter((r) => r.msg === ESTIMATE_LINE)).toEqual([]);
  }, 90_000);

  it('once the list has caught up, shows every booking listed and the details still to read, as the simulator and the mirror count them', async () => {
    h = await startHarness({ sim: { properties: [{ id: BIG, bookingCount: 60 }] } });
    const env = daemonEnv(h, {
      config: {
        pms: { enabled: false },
        occupancy: { enabled: false },
        // Ten details a second: the 60 take 6 s, the list one page.
        rateLimits: { ...fastRateLimits, bookingDetails: [{ limit: 1, windowMs: 100 }] },
      },
    });
    const daemon = startCli(['run'], env);
    const fetched = async () => Number((await h!.sql<{ n: string }>('SELECT count(*) AS n FROM bookings'))[0]!.n);
    await waitFor('the list caught up and some details read', async () => (await fetched()) >= 10, 30_000, 50);
    daemon.child.kill('SIGTERM');
    expect((await daemon.done).code).toBe(0);

    const status = JSON.parse((await runCli(['status', '--json'], env)).stdout) as StatusJson;
    const big = status.properties.find((p) => p.propertyId === BIG)!;
    expect(big.caughtUp).toBe(true);
    const left = h.sim.bookings(BIG).length - (await fetched());
    expect(left).toBeGreaterThan(0);
    expect(big.queuePending).toBe(left);
    expect(big.firstSync).toMatchObject({ found: h.sim.bookings(BIG).length, estimatedTotal: h.sim.bookings(BIG).length, endsInSeconds: Math.ceil(left / 10) });
    expect(status.firstSync).toMatchObject({ properties: 1, detailsLeft: left, endsInSeconds: Math.ceil(left / 10) });
    const text = (await runCli(['status'], env)).stdout;
    expect(text).toContain(
      `First sync of property ${BIG}: all 60 bookings listed, the details of ${left} still to read; ends in about ${Math.ceil(left / 10)}s`,
    );
  }, 60_000);
});
