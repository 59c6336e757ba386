/**
 * A PMS answer that is not clearly complete deletes nothing, against the simulator's error
 * envelopes and real PostgreSQL (issue 36, point 2): a 2xx whose `errors` is not empty is a
 * failed request (retried, counted, its text in the log and `status`), never an empty list, so
 * no room or company is marked removed, no night deleted, no tree wiped, no invoice or card
 * replaced and no search window marked searched; a 404 of a person's loyalty cards deletes none;
 * a page with a token and no `hasNextPage` is read on; when most of a property's invoice or card
 * reads fail, `status` and `/metrics` show that stream failing with the path and the answer;
 * and a mirror synced through error envelopes equals the simulator once they stop.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { OffsetClock } from '../helpers/fake-clock.js';
import { startHarness, syncOnce, type Harness } from '../helpers/harness.js';
import { daemonEnv, freePort, metricValue, opsGet, runCli, startCli, waitFor } from '../helpers/cli.js';
import { dailyOccupancyStream, pmsCompaniesStream, pmsRoomsStream } from '../../src/sync/streams/pms-refreshes.js';
import { accommodationInventoryStream } from '../../src/sync/streams/room-inventory.js';
import { registeredStreams } from '../../src/sync/streams/registry.js';
import { gatherStatus } from '../../src/ops/status.js';
import type { StreamRegistry } from '../../src/sync/streams/types.js';
import type { Simulator } from '../../tools/simulator/index.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const P = '500100';
type AnyRecord = Record<string, any>;
const PMS_REFRESHES = ['content', 'pms_rooms', 'pms_companies', 'accommodation_inventory', 'daily_occupancy'];
/** The PMS side: the search, its queue, the pass after the backfill, and the refreshes of rooms, companies, the tree and the occupancy. */
const pmsSide: StreamRegistry = {
  property: registeredStreams.property.filter((s) => s.name === 'pms_reservations'),
  queues: registeredStreams.queues.filter((q) => q.name === 'pms_reservation_queue' || q.name === 'pms_deferred_reads'),
  refreshes: registeredStreams.refreshes.filter((r) => PMS_REFRESHES.includes(r.name)),
};
const n = async (sql: string, params: unknown[] = []): Promise<number> => (await h!.sql<{ n: number }>(sql, params))[0]!.n;

/** What the refreshes of a property hold: rows present, and those marked removed. */
async function refreshed() {
  return {
    rooms: await n(`SELECT count(*)::int AS n FROM pms_rooms WHERE removed_at IS NULL`),
    companies: await n(`SELECT count(*)::int AS n FROM pms_companies WHERE removed_at IS NULL`),
    removed: await n(
      `SELECT ((SELECT count(*) FROM pms_rooms WHERE removed_at IS NOT NULL) + (SELECT count(*) FROM pms_companies WHERE removed_at IS NOT NULL))::int AS n`,
    ),
    places: await n(`SELECT count(*)::int AS n FROM pms_room_places`),
    nights: await n(`SELECT count(*)::int AS n FROM daily_occupancy`),
  };
}

describe('a 2xx whose errors is not empty', () => {
  it('refreshes: marks no room or company removed, deletes no night, keeps the tree; retried, counted, the text in the log and status', async () => {
    h = await startHarness({
      sim: { properties: [{ id: P, bookingCount: 30 }] },
      config: { provider: { maxAttempts: 2 }, occupancy: { daysBack: 10, daysAhead: 10 } },
    });
    const ctx = await h.context();
    const signal = new AbortController().signal;
    const refreshes = [pmsRoomsStream, pmsCompaniesStream, accommodationInventoryStream, dailyOccupancyStream];
    for (const r of refreshes) await r.run(ctx, signal, [P]);
    const before = await refreshed();
    expect(before).toMatchObject({ rooms: h.sim.pmsRooms(P).length, companies: h.sim.pmsCompanies(P).length, removed: 0, nights: 21 });
    expect(before.places).toBeGreaterThan(0);

    h.sim.faults.pmsErrorEnvelopeRate = 1;
    const outcomes = [];
    for (const r of refreshes)
      outcomes.push(
        await r.run(ctx, signal, [P]).then(
          () => 'ok',
          (err: Error) => err.message,
        ),
      );
    expect(await refreshed()).toEqual(before);
    // Each refresh failed, as a failure that passes (retrying), with the provider's text and the path.
    for (const o of outcomes) expect(o).toMatch(/refresh/);
    const cursors = await h.sql<AnyRecord>(
      `SELECT stream, state, last_error FROM sync_cursors WHERE property_id = $1 AND stream IN ('pms_rooms', 'pms_companies', 'accommodation_inventory', 'daily_occupancy') ORDER BY stream`,
      [P],
    );
    expect(cursors.map((c) => c.stream)).toEqual(['accommodation_inventory', 'daily_occupancy', 'pms_companies', 'pms_rooms']);
    for (const c of cursors) {
      expect(c.state).toBe('retrying');
      expect(c.last_error).toContain('HTTP 200 with errors: SIM_ERROR: the PMS could not answer this request');
    }
    expect(cursors.find((c) => c.stream === 'pms_rooms')!.last_error).toContain(`/api/pms/v2/properties/${P}/rooms`);
    // Two attempts each (provider.maxAttempts), counted by cause; the text logged once (one kind).
    expect(ctx.client.stats().failures.provider_errors).toBe(2 * refreshes.length);
    expect(h.sim.stats.errorEnvelopes).toBe(2 * refreshes.length);
    expect(h.logLines.filter((l) => l.includes('with errors (SIM_ERROR: the PMS could not answer')).length).toBe(1);
    const status = await gatherStatus(ctx.db, h.config);
    expect(status.pms.find((p) => p.propertyId === P)!.reads['pms_rooms']).toMatchObject({
      state: 'retrying',
      lastError: expect.stringContaining('SIM_ERROR'),
    });

    // The errors stop: the next refresh reads the lists as they are, and the streams are active again.
    h.sim.faults.pmsErrorEnvelopeRate = 0;
    for (const r of refreshes) await r.run(ctx, signal, [P]);
    expect(await refreshed()).toEqual(before);
    expect(await n(`SELECT count(*)::int AS n FROM sync_cursors WHERE state <> 'active'`)).toBe(0);
  });

  it('reservations: no search window is marked searched, and no invoice or loyalty card is replaced', async () => {
    const clock = new OffsetClock();
    h = await startHarness({
      sim: { properties: [{ id: P, bookingCount: 30 }], now: () => clock.now() },
      config: { provider: { maxAttempts: 2, giveUpAfterMs: 1_000 }, pms: { loyaltyCards: true } },
    });
    clock.nextMinute(20_000);
    const ctx = await h.context({ clock });
    expect(await syncOnce(ctx, { streams: 'pms' })).toMatchObject({ failed: [], fatal: undefined });
    const withInvoices = (await h.sql<AnyRecord>(`SELECT DISTINCT number FROM pms_invoices ORDER BY number`)).map((r) => r.number as string);
    const holders = (await h.sql<AnyRecord>(`SELECT DISTINCT pms_person_id FROM pms_guest_loyalty_cards ORDER BY 1`)).map((r) => r.pms_person_id as string);
    expect(withInvoices.length).toBeGreaterThan(2);
    expect(holders.length).toBeGreaterThan(2);
    const invoices = await n(`SELECT count(*)::int AS n FROM pms_invoices`);
    const cards = await n(`SELECT count(*)::int AS n FROM pms_guest_loyalty_cards`);

    // Every PMS answer is an error envelope now. The pass after a backfill reads the invoices
    // and cards again (as it would those of reservations mirrored before 0.2.0).
    h.sim.faults.pmsErrorEnvelopeRate = 1;
    await h.sql(`UPDATE pms_reservations SET invoices_read_at = NULL WHERE number = ANY($1)`, [withInvoices.slice(0, 3)]);
    await h.sql(`UPDATE pms_guests SET loyalty_cards_read_at = NULL WHERE pms_person_id = ANY($1)`, [holders.slice(0, 3)]);
    // A change made while the search answers errors, then two runs: the second would read past it.
    const open = h.sim.pmsReservations(P).find((r) => r.reservationStatus !== 'Cancelled' && r.roomStays[0]?.status === 'New' && r.roomStays[0]?.roomId);
    clock.moveTo(clock.now() + 2 * 60_000);
    h.sim.pmsCheckIn(P, open!.number);
    const changedAt = h.sim.pmsReservation(P, open!.number)!.modifyDateTime;
    const searched = await h.sql<AnyRecord>(`SELECT cursor FROM sync_cursors WHERE property_id = $1 AND stream = 'pms_reservations'`, [P]);
    for (let i = 0; i < 2; i++) {
      clock.nextMinute(10_000);
      await syncOnce(ctx, { streams: 'pms' });
      clock.moveTo(clock.now() + 10 * 60_000);
    }
    expect(await n(`SELECT count(*)::int AS n FROM pms_invoices`)).toBe(invoices);
    expect(await n(`SELECT count(*)::int AS n FROM pms_guest_loyalty_cards`)).toBe(cards);
    expect(await n(`SELECT count(*)::int AS n FROM pms_reservations WHERE invoices_read_at IS NULL`)).toBe(3);
    expect(await n(`SELECT count(*)::int AS n FROM pms_guests WHERE loyalty_cards_read_at IS NULL`)).toBe(3);
    expect(await h.sql(`SELECT cursor FROM sync_cursors WHERE property_id = $1 AND stream = 'pms_reservations'`, [P])).toEqual(searched);

    // The errors stop: the change is found, the invoices and cards read.
    h.sim.faults.pmsErrorEnvelopeRate = 0;
    clock.nextMinute(10_000);
    expect(await syncOnce(ctx, { streams: 'pms' })).toMatchObject({ failed: [], fatal: undefined });
    expect(await h.sql(`SELECT modified_at FROM pms_reservations WHERE number = $1`, [open!.number])).toEqual([{ modified_at: new Date(changedAt) }]);
    expect(await n(`SELECT count(*)::int AS n FROM pms_reservations WHERE invoices_read_at IS NULL`)).toBe(0);
    expect(await n(`SELECT count(*)::int AS n FROM pms_guests WHERE loyalty_cards_read_at IS NULL`)).toBe(0);
    expect(await n(`SELECT count(*)::int AS n FROM pms_invoices`)).toBe(invoices);
    expect(await n(`SELECT count(*)::int AS n FROM pms_guest_loyalty_cards`)).toBe(cards);
  });
});

describe('a 404, 400 or 403 of a read with a mirrored copy', () => {
  it("a person's loyalty cards answered 404 are kept, not replaced with none; read again once they answer", async () => {
    h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 30 }] }, config: { pms: { loyaltyCards: true } } });
    const ctx = await h.context();
    expect(await syncOnce(ctx, { streams: 'pms' })).toMatchObject({ failed: [], fatal: undefined });
    const [holder] = (await h.sql<AnyRecord>(`SELECT pms_person_id FROM pms_guest_loyalty_cards ORDER BY 1 LIMIT 1`)).map((r) => r.pms_person_id as string);
    const cardsOf = () => h!.sql(`SELECT position, program_id FROM pms_guest_loyalty_cards WHERE pms_person_id = $1 ORDER BY position`, [holder]);
    const mirrored = await cardsOf();
    expect(mirrored.length).toBeGreaterThan(0);

    h.sim.faults.pathStatus = (path) => (path === `/api/pms/v2/properties/${P}/guests/${holder}/loyalty-cards` ? 404 : undefined);
    await h.sql(`UPDATE pms_guests SET loyalty_cards_read_at = NULL WHERE pms_person_id = $1`, [holder]);
    expect(await syncOnce(ctx, { streams: 'pms' })).toMatchObject({ failed: [], fatal: undefined });
    expect(await cardsOf()).toEqual(mirrored);
    expect(await h.sql(`SELECT loyalty_cards_read_at IS NULL AS unread FROM pms_guests WHERE pms_person_id = $1`, [holder])).toEqual([{ unread: true }]);

    h.sim.faults.pathStatus = undefined;
    expect(await syncOnce(ctx, { streams: 'pms' })).toMatchObject({ failed: [], fatal: undefined });
    expect(await cardsOf()).toEqual(mirrored);
    expect(await h.sql(`SELECT loyalty_cards_read_at IS NULL AS unread FROM pms_guests WHERE pms_person_id = $1`, [holder])).toEqual([{ unread: false }]);
  });

  it('run: invoices and loyalty cards that fail for most of a property show failing in status and /metrics, with the path and the answer', async () => {
    h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 30 }] } });
    h.sim.faults.pmsErrorEnvelopeRate = 1;
    h.sim.faults.pmsErrorEnvelopeStatuses = [400];
    h.sim.faults.pmsErrorEnvelopePaths = /\/(invoices|loyalty-cards)$/;
    const port = await freePort();
    // Parked reads come back within a second: the test sees the streams heal.
    const env = daemonEnv(h, {
      allStreams: true,
      config: { pms: { loyaltyCards: true }, sync: { refetchParkedAfterMs: 500 } },
      env: { STAYSYNC_OPS_PORT: String(port) },
    });
    const daemon = startCli(['run'], env);
    try {
      /** Until /metrics shows both streams failing (1) or not (0). */
      const bothFailing = (failing: 0 | 1) =>
        waitFor(
          `the invoices and loyalty cards ${failing ? 'failing' : 'active again'} in /metrics`,
          async () => {
            const body = (await opsGet(port, '/metrics')).body;
            const state = (stream: string) => metricValue(body, `staysync_property_state{property_id="${P}",stream="${stream}",state="failing"}`);
            return state('pms_invoices') === failing && state('pms_loyalty_cards') === failing;
          },
          90_000,
        );
      // The reservations are mirrored all the same.
      await waitFor('the reservations', async () => (await n(`SELECT count(*)::int AS n FROM pms_reservations`)) === h!.sim.pmsReservations(P).length, 90_000);
      await bothFailing(1);
      const status = await runCli(['status'], env);
      expect(status.stdout).toContain(`property ${P}: invoices FAILING: `);
      expect(status.stdout).toMatch(
        new RegExp(
          `invoices FAILING: \\d+ of the last \\d+ reservations read failed; the last: standard /api/pms/v2/properties/${P}/reservations/[^/]+/invoices: HTTP 400: .*SIM_ERROR`,
        ),
      );
      expect(status.stdout).toContain(`property ${P}: loyalty cards FAILING: `);
      expect(status.stdout).toMatch(/PMS property 500100 read: .*invoices FAILING/);
      // Nothing was written of them.
      expect(await n(`SELECT count(*)::int AS n FROM pms_invoices`)).toBe(0);
      expect(await n(`SELECT count(*)::int AS n FROM pms_guest_loyalty_cards`)).toBe(0);

      // The provider answers again: the pass reads them on its backoff, and the streams are active.
      h.sim.faults.pmsErrorEnvelopeRate = 0;
      await bothFailing(0);
      await waitFor(
        'every invoice read',
        async () => (await n(`SELECT count(*)::int AS n FROM pms_reservations WHERE invoices_read_at IS NULL`)) === 0,
        60_000,
      );
      expect((await runCli(['status'], env)).stdout).not.toContain('FAILING');
    } finally {
      daemon.child.kill('SIGTERM');
    }
    expect((await daemon.done).code).toBe(0);
  });
});

describe('a property whose reads mostly fail', () => {
  it('is probed a few reads a pass, not asked once per reservation; read whole once the probes succeed', async () => {
    h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 60 }] } });
    h.sim.faults.pmsErrorEnvelopeRate = 1;
    h.sim.faults.pmsErrorEnvelopeStatuses = [400];
    h.sim.faults.pmsErrorEnvelopePaths = /\/invoices$/;
    const ctx = await h.context();
    expect(await syncOnce(ctx, { streams: 'pms' })).toMatchObject({ failed: [], fatal: undefined });
    const unread = await n(`SELECT count(*)::int AS n FROM pms_reservations WHERE invoices_read_at IS NULL`);
    expect(unread).toBe(h.sim.pmsReservations(P).length);
    expect(await h.sql(`SELECT state FROM sync_cursors WHERE stream = 'pms_invoices'`)).toEqual([{ state: 'failing' }]);

    // The pass alone: in sync --once it looks twice, each time at most 5 reservations of the property.
    const passOnly: StreamRegistry = { property: [], queues: registeredStreams.queues.filter((q) => q.name === 'pms_deferred_reads'), refreshes: [] };
    const invoiceReads = () => h!.sim.stats.requestLog!.filter((e) => e.path.endsWith('/invoices')).length;
    h.sim.stats.requestLog = [];
    await syncOnce(ctx, { streams: passOnly });
    expect(invoiceReads()).toBeLessThanOrEqual(10);
    expect(invoiceReads()).toBeGreaterThan(0);

    // The invoices answer again: the probes succeed, the stream is active, and every invoice is read.
    h.sim.faults.pmsErrorEnvelopeRate = 0;
    await syncOnce(ctx, { streams: passOnly });
    expect(await h.sql(`SELECT state FROM sync_cursors WHERE stream = 'pms_invoices'`)).toEqual([{ state: 'active' }]);
    expect(await n(`SELECT count(*)::int AS n FROM pms_reservations WHERE invoices_read_at IS NULL`)).toBe(0);
  });
});

describe('a page with a token and no hasNextPage', () => {
  it('is read on: every reservation of a search window is found, and no room or company is marked removed', async () => {
    h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 30 }] } });
    // Pages of 5 (the document gives only their upper bound), without hasNextPage.
    h.sim.faults.pmsPagesWithoutHasNextPage = true;
    h.sim.faults.pmsMaxPageItems = 5;
    h.sim.stats.requestLog = [];
    const ctx = await h.context();
    const signal = new AbortController().signal;
    const searchOnly: StreamRegistry = { property: pmsSide.property, queues: [], refreshes: [] };
    expect(await syncOnce(ctx, { streams: searchOnly })).toMatchObject({ failed: [], fatal: undefined });
    const pages = h.sim.stats.requestLog.filter((e) => e.path.endsWith('/reservations/search') && e.query?.includes('pageToken'));
    expect(pages.length).toBeGreaterThan(0);
    expect(await n(`SELECT count(DISTINCT number)::int AS n FROM pms_reservation_queue`)).toBe(h.sim.pmsReservations(P).length);
    for (const r of [pmsRoomsStream, pmsCompaniesStream]) await r.run(ctx, signal, [P]);
    expect(await refreshed()).toMatchObject({ rooms: h.sim.pmsRooms(P).length, companies: h.sim.pmsCompanies(P).length, removed: 0 });
  });
});

/** The PMS side of the simulator and of the mirror, in the same terms. */
async function pmsMirror() {
  const rows = async (sql: string) =>
    (await h!.sql<AnyRecord>(sql)).map((r) =>
      Object.values(r)
        .map((v) => (v instanceof Date ? v.toISOString() : v))
        .join(' '),
    );
  return {
    reservations: await rows(
      `SELECT number, modified_at, (SELECT count(*) FROM pms_room_stays s WHERE s.number = r.number) FROM pms_reservations r ORDER BY number`,
    ),
    guests: await rows(`SELECT pms_person_id FROM pms_guests ORDER BY 1`),
    invoices: await rows(`SELECT number, position, invoice_number FROM pms_invoices ORDER BY number, position`),
    cards: await rows(`SELECT pms_person_id, position, program_id FROM pms_guest_loyalty_cards ORDER BY 1, 2`),
    rooms: await rows(`SELECT room_id FROM pms_rooms WHERE removed_at IS NULL ORDER BY 1`),
    companies: await rows(`SELECT company_id FROM pms_companies WHERE removed_at IS NULL ORDER BY 1`),
    places: await rows(`SELECT room_id FROM pms_room_places ORDER BY 1`),
    nights: await rows(`SELECT stay_date::text, occupancy_room_count, arrival_count FROM daily_occupancy ORDER BY 1`),
  };
}

function simulatorPms(sim: Simulator, nights: { first: string; last: string }) {
  const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  const reservations = sim.pmsReservations(P);
  const persons = new Set(
    reservations.flatMap((r) => [r.customer?.pmsPersonId, ...r.roomStays.flatMap((s) => s.guestsIds ?? [])]).filter((x): x is string => !!x),
  );
  return {
    reservations: reservations.map((r) => `${r.number} ${new Date(r.modifyDateTime).toISOString()} ${r.roomStays.length}`).sort(byText),
    guests: [...persons].sort(byText),
    invoices: reservations.flatMap((r) => (sim.pmsInvoices(P, r.number) ?? []).map((inv, i) => `${r.number} ${i} ${inv.number}`)).sort(byText),
    cards: [...persons].flatMap((id) => (sim.pmsLoyaltyCards(P, id) ?? []).map((c, i) => `${id} ${i} ${c.programId}`)).sort(byText),
    rooms: sim
      .pmsRooms(P)
      .map((r) => r.id)
      .sort(byText),
    companies: sim
      .pmsCompanies(P)
      .map((c) => String(c.id))
      .sort(byText),
    places: sim
      .accommodationInventory(P)
      .buildings.flatMap((b) => b.floors.flatMap((f) => f.rooms.map((r) => r.id)))
      .sort(byText),
    nights: sim.dailyOccupancy(P, nights.first, nights.last).map((d) => `${d.date} ${d.occupancyRoomCount} ${d.arrivalCount}`),
  };
}

describe('a mirror synced through error envelopes', () => {
  it('equals the simulator once they stop: nothing deleted, skipped or covered on the way', async () => {
    h = await startHarness({
      sim: { properties: [{ id: P, bookingCount: 40 }] },
      config: {
        provider: { maxAttempts: 3, giveUpAfterMs: 2_000 },
        pms: { loyaltyCards: true },
        occupancy: { daysBack: 20, daysAhead: 20 },
        sync: { refetchParkedAfterMs: 1 },
      },
    });
    const ctx = await h.context();
    h.sim.faults.pmsErrorEnvelopeRate = 0.3;
    h.sim.faults.pmsErrorEnvelopeStatuses = [200, 200, 400, 404];
    h.sim.faults.pmsWarningRate = 0.2;
    // A 400 or 404 of the search fails the property's run (its window is searched again by the
    // next): a few runs go as far as the errors let them.
    for (let run = 0; run < 6 && h.sim.stats.errorEnvelopes < 60; run++) await syncOnce(ctx, { streams: pmsSide });
    const faulted = h.sim.stats.errorEnvelopes;
    expect(faulted).toBeGreaterThan(30);
    const stats = ctx.client.stats();

    h.sim.faults.pmsErrorEnvelopeRate = 0;
    h.sim.faults.pmsWarningRate = 0;
    expect(await syncOnce(ctx, { streams: pmsSide })).toMatchObject({ failed: [], refreshFailures: [], fatal: undefined });
    expect(h.sim.stats.errorEnvelopes).toBe(faulted);
    const nights = (await h.sql<AnyRecord>(`SELECT min(stay_date)::text AS first, max(stay_date)::text AS last FROM daily_occupancy`))[0]!;
    expect(await pmsMirror()).toEqual(simulatorPms(h.sim, { first: nights.first, last: nights.last }));
    expect(await n(`SELECT count(*)::int AS n FROM daily_occupancy`)).toBe(41);
    expect(await n(`SELECT count(*)::int AS n FROM pms_reservation_queue`)).toBe(0);
    // The 200s with errors were retried and counted, and so were the warnings.
    expect(stats.failures.provider_errors).toBeGreaterThan(0);
    expect(stats.warnings).toBeGreaterThan(0);
  });
});
