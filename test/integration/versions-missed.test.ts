/**
 * No version missed (migrations/0014_relisted_versions.sql): the provider's modification times
 * have second precision, so a second change in the same second as the stored details looks like
 * them in the booking list. A caught-up poll lists a booking only when it changed, so a booking
 * it lists again with the stored second is fetched again; details that come back as an older
 * copy (a lagging replica) are asked for again, and believed after a few times (a booking that
 * really changed back). Measured with the simulator over HTTP and real PostgreSQL: the mirror
 * ends equal to the provider, at about one detail call per version outside bursts.
 */
import { keptPayload } from '../../src/mapping/personal-data.js';
import { afterEach, describe, expect, it } from 'vitest';
import { Engine } from '../../src/sync/runtime/engine.js';
import { OLDER_COPY_RETRIES } from '../../src/sync/streams/booking-details.js';
import { waitFor } from '../helpers/cli.js';
import { skippingBackoffs } from '../helpers/skip-backoffs.js';
import { bookingStreams, mirrorSnapshot, simulatorSnapshot, startHarness, syncOnce, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const PROPERTY = '500100';

/**
 * The simulator's clock, which changes can be dated by: `at(ms, change)` makes `change` at `ms`
 * into a second ten seconds ago, while everything else (the limits, the `Date` the details are
 * dated by) keeps the real time. So the details the daemon reads of such a change were read
 * after its second ended, which is what made the old rule skip a second change in that second.
 */
function pastSecondClock() {
  let frozen: number | null = null;
  const second = Math.floor((Date.now() - 10_000) / 1000) * 1000;
  return {
    now: () => frozen ?? Date.now(),
    at(ms: number, change: () => void) {
      frozen = second + ms;
      try {
        change();
      } finally {
        frozen = null;
      }
    },
    second: new Date(second),
  };
}

/** A mirror of one property of ten bookings, caught up, with a simulator on pastSecondClock. */
async function caughtUpMirror() {
  const clock = pastSecondClock();
  h = await startHarness({ sim: { properties: [{ id: PROPERTY, bookingCount: 10 }], now: clock.now } });
  const ctx = await h.context();
  await syncOnce(ctx);
  return { clock, ctx };
}

/** Detail calls the simulator answered for one booking. */
const callsFor = (number: string) => h!.sim.stats.detailCallsByNumber.get(number) ?? 0;

const storedOf = async (number: string): Promise<{ modified_at: Date; raw: { booking: Record<string, unknown> } }> =>
  (
    await h!.sql<{ modified_at: Date; raw: { booking: Record<string, unknown> } }>(
      'SELECT modified_at, raw FROM bookings WHERE property_id = $1 AND number = $2',
      [PROPERTY, number],
    )
  )[0]!;

/** The booking as the provider serves it now, as the mirror keeps it (the personal-data policy, personal data off). */
const served = (number: string) =>
  keptPayload(
    h!.sim.bookings(PROPERTY).find((b) => b.number === number)!,
    false,
  );

describe('no version missed', () => {
  it('fetches again a booking a caught-up poll lists again with the stored modification second, though its details were read after that second', async () => {
    const { clock, ctx } = await caughtUpMirror();
    const number = h!.sim.bookings(PROPERTY)[3]!.number;

    clock.at(200, () => h!.sim.amendBooking(PROPERTY, number, 'reprice'));
    await syncOnce(ctx);
    expect((await storedOf(number)).modified_at).toEqual(clock.second);
    expect(callsFor(number)).toBe(2);

    // A second change in that same second: the list shows the booking again with the same time.
    clock.at(700, () => h!.sim.amendBooking(PROPERTY, number, 'move'));
    await syncOnce(ctx);
    expect(callsFor(number)).toBe(3);
    expect((await storedOf(number)).raw.booking).toEqual(served(number));
    expect(await mirrorSnapshot(h!)).toEqual(simulatorSnapshot(h!.sim));
    // And it is a version of its own in history.
    const versions = await h!.sql<{ changes: string[] }>('SELECT changes FROM booking_versions WHERE property_id = $1 AND number = $2 ORDER BY version', [
      PROPERTY,
      number,
    ]);
    expect(versions.slice(-2).map((v) => v.changes)).toEqual([['price'], ['dates']]);
  });

  it('asks again when a lagging replica serves the version before the listed change, and stores the new one', async () => {
    const { clock, ctx } = await caughtUpMirror();
    const number = h!.sim.bookings(PROPERTY)[5]!.number;
    clock.at(100, () => h!.sim.amendBooking(PROPERTY, number, 'reprice'));
    await syncOnce(ctx);
    const before = await storedOf(number);

    h!.sim.faults.staleDetailReads = 1;
    clock.at(600, () => h!.sim.amendBooking(PROPERTY, number, 'upgrade'));
    const { skipped } = await skippingBackoffs(h!, () => syncOnce(ctx));
    expect(h!.sim.stats.staleServed).toBe(1);
    // The older copy (equal to what was stored) was not believed: asked again, after a backoff
    // (5 s, cut short here).
    expect(callsFor(number)).toBe(4);
    expect(skipped).toHaveLength(1);
    expect(skipped[0]).toBeGreaterThan(3_000);
    const after = await storedOf(number);
    expect(after.raw).not.toEqual(before.raw);
    expect(after.raw.booking).toEqual(served(number));
    expect(await h!.sql('SELECT * FROM booking_detail_queue')).toEqual([]);
  });

  it('asks again when a lagging replica serves, for a cancellation listed once, the version of the same second before it', async () => {
    const { clock, ctx } = await caughtUpMirror();
    const number = h!.sim.bookings(PROPERTY).find((b) => b.status === 'Active')!.number;
    // Two changes in one second, both before the next poll: the list shows the booking once,
    // cancelled, and the replica serves the re-priced version of that same second first.
    clock.at(100, () => h!.sim.amendBooking(PROPERTY, number, 'reprice'));
    clock.at(400, () => h!.sim.amendBooking(PROPERTY, number, 'cancel'));
    h!.sim.faults.staleDetailReads = 1;
    const calls = callsFor(number);
    const { skipped } = await skippingBackoffs(h!, () => syncOnce(ctx));
    expect(h!.sim.stats.staleServed).toBe(1);
    expect(callsFor(number) - calls).toBe(2);
    expect(skipped).toHaveLength(1);
    expect(skipped[0]).toBeGreaterThan(3_000);
    expect((await storedOf(number)).raw.booking).toEqual(served(number));
    expect((await storedOf(number)).raw.booking['status']).toBe('Cancelled');
  });

  it('believes a booking that changed back within one second once it was asked again a few times', async () => {
    const { clock, ctx } = await caughtUpMirror();
    const number = h!.sim.bookings(PROPERTY).find((b) => b.status === 'Active')!.number;
    clock.at(100, () => h!.sim.amendBooking(PROPERTY, number, 'reprice'));
    await syncOnce(ctx);
    const repriced = served(number);
    clock.at(300, () => h!.sim.amendBooking(PROPERTY, number, 'cancel'));
    await syncOnce(ctx);
    expect((await storedOf(number)).raw.booking['status']).toBe('Cancelled');

    // Reinstated in the same second: the same content as two versions ago, the same time.
    clock.at(500, () => h!.sim.amendBooking(PROPERTY, number, 'reinstate'));
    expect(served(number)).toEqual(repriced);
    const calls = callsFor(number);
    const { skipped } = await skippingBackoffs(h!, () => syncOnce(ctx));
    expect(callsFor(number) - calls).toBe(OLDER_COPY_RETRIES + 1);
    // Each time after a backoff (5, 10, 20 s, cut short here), not in a tight loop.
    expect(skipped).toHaveLength(OLDER_COPY_RETRIES);
    for (const [i, ms] of skipped.entries()) expect(ms).toBeGreaterThan(5_000 * 2 ** i - 2_000);
    expect((await storedOf(number)).raw.booking).toEqual(repriced);
    expect(await mirrorSnapshot(h!)).toEqual(simulatorSnapshot(h!.sim));
  });

  it('under 5xx, cut bodies, lagging replicas and bursts of changes inside one second, ends equal to the provider', async () => {
    h = await startHarness({
      sim: {
        // Two properties of 40 and 3 s of churn (some 220 changes, 75 new bookings): every
        // fault and burst is hit many times over (the first sync alone meets every booking's
        // lagging replica), as with 100 each and 6 s, which took three times as long.
        properties: [
          { id: '500100', bookingCount: 40 },
          { id: '500200', bookingCount: 40 },
        ],
      },
      config: { provider: { requestTimeoutMs: 1500 } },
    });
    h.sim.faults.error5xxRate = 0.05;
    h.sim.faults.truncatedBodyRate = 0.05;
    h.sim.faults.replicaLag404s = 1;
    const ctx = await h.context();
    const stop = new AbortController();
    const running = new Engine(ctx, { mode: 'daemon', recovery: { mode: 'none' }, streams: bookingStreams }).run(stop.signal);
    try {
      await waitFor('the first sync', async () => Number((await h!.sql<{ n: string }>('SELECT count(*) AS n FROM bookings'))[0]!.n) === 80, 60_000);
      // A quarter of mutate()'s changes hit a booking already changed in that very second.
      h.sim.startChurn({ intervalMs: 40, perTick: 3, newPerTick: 1 });
      await new Promise((r) => setTimeout(r, 3_000));
      h.sim.stopChurn();
      await waitFor(
        'the mirror equal to the provider',
        async () => JSON.stringify(await mirrorSnapshot(h!)) === JSON.stringify(simulatorSnapshot(h!.sim)),
        90_000,
        500,
      );
    } finally {
      stop.abort();
      await running;
    }
    expect(await mirrorSnapshot(h)).toEqual(simulatorSnapshot(h.sim));
    expect(h.sim.stats.truncated + h.sim.stats.lagged404).toBeGreaterThan(0);
  }, 180_000);

  it('costs one detail call per version when changes come one at a time', async () => {
    h = await startHarness({ sim: { properties: [{ id: PROPERTY, bookingCount: 40 }] } });
    const ctx = await h.context();
    const stop = new AbortController();
    const running = new Engine(ctx, { mode: 'daemon', recovery: { mode: 'none' }, streams: bookingStreams }).run(stop.signal);
    // Six versions each found alone cost six calls; twelve proved no more, and waited twice as long.
    const CHANGES = 6;
    let fetchedBefore = 0;
    try {
      await waitFor('the first sync', async () => Number((await h!.sql<{ n: string }>('SELECT count(*) AS n FROM bookings'))[0]!.n) === 40, 30_000);
      fetchedBefore = ctx.counters.detailsFetched;
      // One change at a time: each fetched (found by a poll of its own) before the next, and
      // never two in one second.
      for (let i = 0; i < CHANGES; i++) {
        const changedAt = Date.now();
        h.sim.mutate({ count: 1 });
        await waitFor('the change fetched', () => ctx.counters.detailsFetched - fetchedBefore > i, 30_000, 50);
        await new Promise((r) => setTimeout(r, Math.max(0, Math.floor(changedAt / 1000) * 1000 + 1_100 - Date.now())));
      }
      await waitFor(
        'the mirror equal to the provider',
        async () => JSON.stringify(await mirrorSnapshot(h!)) === JSON.stringify(simulatorSnapshot(h!.sim)),
        30_000,
        250,
      );
    } finally {
      stop.abort();
      await running;
    }
    const perVersion = (ctx.counters.detailsFetched - fetchedBefore) / CHANGES;
    console.log(`detail calls per version, one change at a time: ${perVersion.toFixed(2)} (${ctx.counters.detailsFetched - fetchedBefore} for ${CHANGES})`);
    expect(perVersion).toBe(1);
  }, 60_000);
});
