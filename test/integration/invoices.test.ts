/**
 * Invoices of PMS reservations when their answer goes wrong, against the simulator and real
 * PostgreSQL: a page that does not parse is quarantined, its reservation is mirrored anyway
 * and its invoices are read again with its next fetch (as those of a reservation mirrored
 * before invoices were); `quarantine retry` mirrors a quarantined page that parses now.
 * Invoices that are gone, refused or paged in a circle are not read and nothing else stops; a
 * list paged in a circle (companies) fails its property's refresh after two requests.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { pmsCompaniesStream, pmsRoomsStream } from '../../src/sync/streams/pms-refreshes.js';
import { listPageToken } from '../../tools/simulator/pms-http.js';
import { retryQuarantine } from '../../src/replay/quarantine-retry.js';
import { OffsetClock } from '../helpers/fake-clock.js';
import { startHarness, syncOnce, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const P = '500100';
type AnyRecord = Record<string, any>;
const invoicesPath = (number: string) => `/api/pms/v2/properties/${P}/reservations/${number}/invoices`;

describe('PMS invoices', () => {
  it('a page that does not parse is quarantined, the reservation mirrored, and its invoices read again with the next version; quarantine retry mirrors it once it parses', async () => {
    const clock = new OffsetClock();
    h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 20 }], now: () => clock.now() } });
    clock.nextMinute(20_000);
    const ctx = await h.context({ clock });
    const open = h.sim.pmsReservations(P).filter((r) => r.reservationStatus !== 'Cancelled');
    const older = open.find((r) => r.roomStays[0]?.status === 'New' && r.roomStays[0]?.roomId)?.number;
    const broken = open.find((r) => r.number !== older)?.number;
    expect(older && broken).toBeTruthy();
    h.sim.faults.rewriteBody = (path, body) => {
      if (path !== invoicesPath(broken!)) return undefined;
      const page = body as { invoices: AnyRecord[] };
      page.invoices[0]!.items = 'not a list';
      return page;
    };

    expect(await syncOnce(ctx, { streams: 'pms' })).toMatchObject({ failed: [], fatal: undefined });
    const state = (number: string) =>
      h!.sql<AnyRecord>(
        `SELECT r.invoices_read_at IS NOT NULL AS read, (SELECT count(*)::int FROM pms_invoices i WHERE i.property_id = r.property_id AND i.number = r.number) AS invoices
           FROM pms_reservations r WHERE property_id = $1 AND number = $2`,
        [P, number],
      );
    expect(await state(broken!)).toEqual([{ read: false, invoices: 0 }]);
    expect(await h.sql('SELECT stream, entity_key FROM quarantine')).toEqual([{ stream: 'pms_invoices', entity_key: broken }]);
    // Every other reservation has its invoices.
    const others = await h.sql<AnyRecord>(`SELECT count(*)::int AS n FROM pms_reservations WHERE invoices_read_at IS NULL`);
    expect(others).toEqual([{ n: 1 }]);
    // `older` as a reservation mirrored before there were invoices: none read.
    await h.sql(`DELETE FROM pms_invoices WHERE number = $1`, [older]);
    await h.sql(`UPDATE pms_reservations SET invoices_read_at = NULL WHERE number = $1`, [older]);

    // The answers are right again; the quarantined page (a strict reading refused it) parses
    // once its items are a list: a retry mirrors it.
    h.sim.faults.rewriteBody = undefined;
    await h.sql(`UPDATE quarantine SET raw_body = $1 WHERE stream = 'pms_invoices'`, [
      JSON.stringify({ invoices: h.sim.pmsInvoices(P, broken!), hasNextPage: false, nextPageToken: null }),
    ]);
    const retried = await retryQuarantine({ handle: ctx, config: h.config, logger: h.logger });
    expect(retried.byStream['pms_invoices']).toMatchObject({ retried: 1, mirrored: 1 });
    expect(await state(broken!)).toEqual([{ read: true, invoices: h.sim.pmsInvoices(P, broken!)!.length }]);
    expect(await h.sql('SELECT 1 FROM quarantine')).toEqual([]);

    // The next version of the other reservation reads its invoices again.
    clock.moveTo(clock.now() + 2 * 60_000);
    h.sim.pmsCheckIn(P, older!);
    clock.nextMinute(10_000);
    expect(await syncOnce(ctx, { streams: 'pms' })).toMatchObject({ failed: [], fatal: undefined });
    expect(await state(older!)).toEqual([{ read: true, invoices: h.sim.pmsInvoices(P, older!)!.length }]);
  });

  it('invoices that are gone (404), refused (403) or paged in a circle are not read: the reservation is mirrored, nothing else stops, and they are read again with its next version', async () => {
    const clock = new OffsetClock();
    h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 60 }], now: () => clock.now() } });
    clock.nextMinute(20_000);
    const ctx = await h.context({ clock });
    const open = h.sim.pmsReservations(P).filter((r) => r.reservationStatus !== 'Cancelled' && r.roomStays[0]?.status === 'New' && r.roomStays[0]?.roomId);
    expect(open.length).toBeGreaterThanOrEqual(3);
    const [gone, refused, circle] = open.map((r) => r.number);
    h.sim.faults.pathStatus = (path) => (path === invoicesPath(gone!) ? 404 : path === invoicesPath(refused!) ? 403 : undefined);
    // Every page of `circle`'s invoices names the first page as the next.
    const firstPage = listPageToken('invoices', P, circle!, 0);
    h.sim.faults.rewriteBody = (path, body) =>
      path === invoicesPath(circle!) ? { ...(body as AnyRecord), hasNextPage: true, nextPageToken: firstPage } : undefined;
    h.sim.stats.requestLog = [];

    expect(await syncOnce(ctx, { streams: 'pms' })).toMatchObject({ failed: [], fatal: undefined });
    const unread = await h.sql<AnyRecord>(
      `SELECT number, (SELECT count(*)::int FROM pms_invoices i WHERE i.property_id = r.property_id AND i.number = r.number) AS invoices
         FROM pms_reservations r WHERE invoices_read_at IS NULL ORDER BY number`,
    );
    expect(unread).toEqual([gone!, refused!, circle!].sort((a, b) => a.localeCompare(b)).map((number) => ({ number, invoices: 0 })));
    // Each read of the circle asks twice (the first page, then the page it named, which names
    // itself) and stops: the pass after the backfill tries it again a few times, not for ever.
    const circleRequests = h.sim.stats.requestLog.filter((e) => e.path === invoicesPath(circle!));
    expect(circleRequests.length % 2).toBe(0);
    expect(circleRequests.length).toBeGreaterThanOrEqual(2);
    expect(circleRequests.length).toBeLessThanOrEqual(12);
    expect(h.logLines.some((l) => l.includes(`invoices of PMS reservation ${circle}: not read`) && l.includes('a second time'))).toBe(true);
    // A 403 of the invoices alone is not the PMS area refused: the other streams and reservations went on.
    expect(await h.sql(`SELECT count(*)::int AS n FROM sync_cursors WHERE state <> 'active'`)).toEqual([{ n: 0 }]);
    expect(await h.sql(`SELECT count(*)::int AS n FROM quarantine`)).toEqual([{ n: 0 }]);

    // The faults are gone; the next version of each reads its invoices.
    h.sim.faults.pathStatus = undefined;
    h.sim.faults.rewriteBody = undefined;
    clock.moveTo(clock.now() + 2 * 60_000);
    for (const n of [gone, refused, circle]) h.sim.pmsCheckIn(P, n!);
    clock.nextMinute(10_000);
    expect(await syncOnce(ctx, { streams: 'pms' })).toMatchObject({ failed: [], fatal: undefined });
    expect(await h.sql(`SELECT count(*)::int AS n FROM pms_reservations WHERE invoices_read_at IS NULL`)).toEqual([{ n: 0 }]);
    for (const n of [gone, refused, circle])
      expect(await h.sql(`SELECT count(*)::int AS n FROM pms_invoices WHERE number = $1`, [n])).toEqual([{ n: h.sim.pmsInvoices(P, n!)!.length }]);
  });

  it('a companies list paged in a circle fails the refresh of its property with the reason, and writes nothing of it', async () => {
    h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 5 }] } });
    const ctx = await h.context();
    const companiesPath = `/api/pms/v2/properties/${P}/companies`;
    const firstPage = listPageToken('companies', P, null, 0);
    h.sim.faults.rewriteBody = (path, body) => (path === companiesPath ? { ...(body as AnyRecord), hasNextPage: true, nextPageToken: firstPage } : undefined);
    h.sim.stats.requestLog = [];
    const signal = new AbortController().signal;
    await expect(pmsCompaniesStream.run(ctx, signal, [P])).rejects.toThrow(/PMS companies refresh/);
    expect(h.logLines.some((l) => l.includes(`PMS companies refresh of property ${P} failed`) && l.includes('a second time'))).toBe(true);
    expect(await h.sql(`SELECT count(*)::int AS n FROM pms_companies`)).toEqual([{ n: 0 }]);
    expect(h.sim.stats.requestLog.filter((e) => e.path === companiesPath).length).toBe(2);
    // The rooms, a list of their own, are mirrored.
    await pmsRoomsStream.run(ctx, signal, [P]);
    expect((await h.sql<AnyRecord>(`SELECT count(*)::int AS n FROM pms_rooms`))[0]!.n).toBeGreaterThan(0);
  });
});
