/**
 * The PMS mirror against the simulator and real PostgreSQL, in-process with a clock the test
 * moves (the simulator's data and the engine share it): backfill and changes equal the
 * simulator, minute and page edges lose and duplicate nothing, an unchanged reservation costs
 * no second call, windows stay within the document's limits, occupancy equals the simulator,
 * personal data stays out unless enabled.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RequestLogEntry, Simulator } from '../../tools/simulator/index.js';
import { OffsetClock } from '../helpers/fake-clock.js';
import { reportingSchemaOf } from '../helpers/database.js';
import { startHarness, syncOnce, type Harness } from '../helpers/harness.js';
import { registeredStreams } from '../../src/sync/streams/registry.js';
import { streamNames } from '../../src/store/states.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const MINUTE = 60_000;
type AnyRecord = Record<string, any>;

const num = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));
const local = (v: unknown): string | null =>
  v === null || v === undefined ? null : (v instanceof Date ? v.toISOString() : typeof v === 'string' ? v : JSON.stringify(v)).replace(' ', 'T').slice(0, 16);

/** The simulator's PMS reservations in the mirror's terms. */
function simulatorPms(sim: Simulator, propertyIds: readonly string[]) {
  return propertyIds
    .flatMap((pid) =>
      sim.pmsReservations(pid).map((r) => ({
        key: `${pid}/${r.number}`,
        status: r.reservationStatus,
        modifiedAt: new Date(r.modifyDateTime).toISOString(),
        currency: r.currencyCode,
        customer: [r.customer?.personName?.firstName ?? null, r.customer?.personName?.lastName ?? null],
        stays: r.roomStays.map((s) => ({
          id: s.pmsRoomStayId,
          room: s.roomId,
          roomType: s.roomTypeId,
          status: s.status,
          in: local(s.checkInDateTime),
          out: local(s.checkOutDateTime),
          actualIn: local(s.actualCheckInDateTime),
          actualOut: local(s.actualCheckOutDateTime),
          adults: s.guestCount?.adults ?? null,
          children: s.guestCount?.children ?? null,
          amount: num(s.totalPrice?.amount?.value),
          guests: s.guestsIds ?? [],
        })),
      })),
    )
    .sort((a, b) => a.key.localeCompare(b.key));
}

async function mirrorPms(harness: Harness) {
  const reservations = await harness.sql<AnyRecord>('SELECT * FROM pms_reservations ORDER BY property_id, number');
  const stays = await harness.sql<AnyRecord>('SELECT * FROM pms_room_stays ORDER BY property_id, number, position');
  const byKey = new Map<string, AnyRecord>();
  for (const r of reservations) {
    byKey.set(`${r.property_id}/${r.number}`, {
      key: `${r.property_id}/${r.number}`,
      status: r.reservation_status,
      modifiedAt: (r.modified_at as Date).toISOString(),
      currency: r.currency_code,
      customer: [r.customer_first_name, r.customer_last_name],
      stays: [],
    });
  }
  for (const s of stays) {
    byKey.get(`${s.property_id}/${s.number}`)!.stays.push({
      id: s.pms_room_stay_id,
      room: s.room_id,
      roomType: s.room_type_id,
      status: s.status,
      in: local(s.check_in_at),
      out: local(s.check_out_at),
      actualIn: local(s.actual_check_in_at),
      actualOut: local(s.actual_check_out_at),
      adults: s.adults,
      children: s.children,
      amount: num(s.amount),
      guests: s.guest_person_ids,
    });
  }
  return [...byKey.values()].sort((a, b) => a.key.localeCompare(b.key));
}

/** The simulator's invoices of every reservation, in the mirror's terms. */
function simulatorInvoices(sim: Simulator, propertyIds: readonly string[]) {
  return propertyIds.flatMap((pid) =>
    sim
      .pmsReservations(pid)
      .flatMap((r) =>
        (sim.pmsInvoices(pid, r.number) ?? []).map((inv, position) => {
          const currencies = new Set(inv.items.map((i) => i.total?.currencyCode ?? r.currencyCode));
          return {
            key: `${pid}/${r.number}/${position}`,
            invoiceNumber: inv.number,
            stay: inv.pmsRoomStayId,
            payer: inv.payer?.name ?? null,
            // Amounts of two currencies are never added.
            total: currencies.size > 1 ? null : Math.round(inv.items.reduce((t, i) => t + (i.total?.value ?? 0), 0) * 100) / 100,
            currency: currencies.size > 1 ? null : [...currencies][0],
            items: inv.items.map((i) => {
              const cents = Math.round((i.total?.value ?? 0) * 100);
              return [
                i.kind,
                i.name,
                i.accountingCode,
                i.quantity?.value ?? null,
                i.quantity?.unit ?? null,
                i.total?.value ?? null,
                i.vat.percent,
                i.total?.currencyCode ?? r.currencyCode,
                // The total is tax included, whatever vat.included says: the net takes the VAT out.
                i.total?.value ?? null,
                i.vat.applicable ? Math.round((cents * 100) / (100 + i.vat.percent)) / 100 : (i.total?.value ?? null),
              ];
            }),
          };
        }),
      )
      .sort((a, b) => a.key.localeCompare(b.key)),
  );
}

async function mirrorInvoices(harness: Harness) {
  const invoices = await harness.sql<AnyRecord>('SELECT * FROM pms_invoices');
  const items = await harness.sql<AnyRecord>('SELECT * FROM pms_invoice_items ORDER BY property_id, number, invoice_position, position');
  return invoices
    .map((i) => ({
      key: `${i.property_id}/${i.number}/${i.position}`,
      invoiceNumber: i.invoice_number,
      stay: i.pms_room_stay_id,
      payer: i.payer_name,
      total: num(i.total),
      currency: i.currency_code,
      items: items
        .filter((x) => x.property_id === i.property_id && x.number === i.number && x.invoice_position === i.position)
        .map((x) => [
          x.kind,
          x.name,
          x.accounting_code,
          num(x.quantity),
          x.unit,
          num(x.total),
          num(x.vat_percent),
          x.currency_code,
          num(x.total_with_tax),
          num(x.total_without_tax),
        ]),
    }))
    .sort((a, b) => a.key.localeCompare(b.key));
}

/** Numbers whose invoices were read (GET .../reservations/{number}/invoices) in a request log. */
function invoiceNumbers(log: readonly RequestLogEntry[]): string[] {
  return log.flatMap((e) => {
    const m = /\/api\/pms\/v2\/properties\/[^/]+\/reservations\/([^/]+)\/invoices$/.exec(e.path);
    return m && e.status === 200 ? [decodeURIComponent(m[1]!)] : [];
  });
}

/** Numbers of the reservation fetches (GET .../reservations/{number}) in a request log. */
function fetchedNumbers(log: readonly RequestLogEntry[]): string[] {
  return log.flatMap((e) => {
    const m = /\/api\/pms\/v2\/properties\/[^/]+\/reservations\/([^/]+)$/.exec(e.path);
    return m && m[1] !== 'search' && e.status === 200 ? [decodeURIComponent(m[1]!)] : [];
  });
}

function modifications(sim: Simulator, propertyIds: readonly string[]): Map<string, string> {
  return new Map(propertyIds.flatMap((pid) => sim.pmsReservations(pid).map((r) => [r.number, r.modifyDateTime] as const)));
}

describe('PMS mirror', () => {
  it('equals the simulator after the backfill and after changes; only changed reservations are fetched again', async () => {
    const clock = new OffsetClock();
    const props = [
      { id: '500100', bookingCount: 150 },
      { id: '7291', bookingCount: 60 },
    ];
    h = await startHarness({ sim: { properties: props, now: () => clock.now() } });
    const ids = props.map((p) => p.id);
    // Start well after the generated data, so that none of it sits in a recheck window.
    clock.nextMinute(20_000);
    clock.moveTo(clock.now() + 20 * MINUTE);
    const ctx = await h.context({ clock });
    h.sim.stats.requestLog = [];
    const first = await syncOnce(ctx, { streams: 'all' });
    expect(first).toMatchObject({ failed: [], refreshFailures: [], fatal: undefined });
    expect(await mirrorPms(h)).toEqual(simulatorPms(h.sim, ids));
    // Each reservation fetched once by the backfill; no window longer than the document allows.
    const backfill = fetchedNumbers(h.sim.stats.requestLog);
    expect(backfill.length).toBe(new Set(backfill).size);
    expect(new Set(backfill)).toEqual(new Set(ids.flatMap((pid) => h!.sim.pmsReservations(pid).map((r) => r.number))));
    for (const e of h.sim.stats.requestLog.filter((x) => x.path.endsWith('/reservations/search') && x.query?.includes('startModifyDateTime'))) {
      const q = new URLSearchParams(e.query);
      const days = (Date.parse(`${q.get('endModifyDateTime')}Z`) - Date.parse(`${q.get('startModifyDateTime')}Z`)) / 86_400_000;
      expect(days).toBeLessThanOrEqual(365);
    }
    expect(h.sim.stats.byStatus[400]).toBeUndefined();

    // Guests: every person a stay names is mirrored with its name.
    const persons = await h.sql<AnyRecord>('SELECT property_id, pms_person_id, first_name, last_name FROM pms_guests');
    for (const pid of ids) {
      for (const r of h.sim.pmsReservations(pid)) {
        for (const personId of r.roomStays.flatMap((s) => s.guestsIds ?? [])) {
          const p = persons.find((x) => x.property_id === pid && x.pms_person_id === personId);
          const truth = h.sim.pmsGuest(pid, personId)!;
          expect(p, `${pid}/${personId}`).toMatchObject({ first_name: truth.personName?.firstName ?? null, last_name: truth.personName?.lastName ?? null });
        }
      }
    }
    // Rooms, with the names reports show.
    for (const pid of ids) {
      const rooms = await h.sql<AnyRecord>('SELECT room_id, display_name, room_type_id FROM pms_rooms WHERE property_id = $1 ORDER BY room_id', [pid]);
      const truth = h.sim.pmsRooms(pid).map((r) => ({ room_id: r.id, display_name: r.displayName, room_type_id: r.roomTypeId }));
      expect(rooms).toEqual(truth.sort((a, b) => a.room_id.localeCompare(b.room_id)));
    }
    const named = await h.sql<AnyRecord>(
      'SELECT count(*) FILTER (WHERE room_id IS NOT NULL AND room_name IS NULL) AS unnamed, count(*) AS n FROM pms_room_stays_named',
    );
    expect(Number(named[0]!.unnamed)).toBe(0);
    // Invoices: read once with each reservation, equal to the simulator's, items typed.
    expect(await mirrorInvoices(h)).toEqual(simulatorInvoices(h.sim, ids));
    expect((await mirrorInvoices(h)).length).toBeGreaterThan(100);
    const invoicesRead = invoiceNumbers(h.sim.stats.requestLog);
    expect(new Set(invoicesRead)).toEqual(new Set(backfill));
    expect(invoicesRead.length).toBe(backfill.length);
    // Companies: the property's list, with the reservations' customer companies in it.
    for (const pid of ids) {
      const companies = await h.sql<AnyRecord>('SELECT company_id, name, company_type FROM pms_companies WHERE property_id = $1 ORDER BY company_id', [pid]);
      expect(companies).toEqual(h.sim.pmsCompanies(pid).map((c) => ({ company_id: c.id, name: c.name, company_type: c.type })));
    }
    const orphans = await h.sql<AnyRecord>(
      `SELECT r.number FROM pms_reservations r LEFT JOIN pms_companies c ON c.property_id = r.property_id AND c.company_id = r.customer_company_id
        WHERE r.customer_company_id IS NOT NULL AND c.company_id IS NULL`,
    );
    expect(orphans).toEqual([]);

    // Changes of every kind, two minutes later.
    clock.nextMinute(5_000);
    clock.moveTo(clock.now() + MINUTE);
    const before = modifications(h.sim, ids);
    h.sim.mutate({ count: 8, newCount: 3, propertyId: '500100' });
    const reservations = h.sim.pmsReservations('500100');
    const fresh = reservations.find((r) => r.reservationStatus !== 'Cancelled' && r.roomStays[0]?.status === 'New' && r.roomStays[0]?.roomId);
    const staying = reservations.find((r) => r.roomStays[0]?.status === 'CheckedIn');
    if (fresh) h.sim.pmsCheckIn('500100', fresh.number);
    if (staying) h.sim.pmsCheckOut('500100', staying.number);
    const other = reservations.find((r) => r.reservationStatus !== 'Cancelled' && r.number !== fresh?.number && r.number !== staying?.number);
    h.sim.pmsCancel('500100', other!.number);
    clock.nextMinute(10_000);
    const after = modifications(h.sim, ids);
    const changed = new Set([...after].filter(([n, m]) => before.get(n) !== m).map(([n]) => n));
    expect(changed.size).toBeGreaterThan(5);

    h.sim.stats.requestLog = [];
    const second = await syncOnce(ctx, { streams: 'pms' });
    expect(second).toMatchObject({ failed: [], fatal: undefined });
    expect(await mirrorPms(h)).toEqual(simulatorPms(h.sim, ids));
    const again = fetchedNumbers(h.sim.stats.requestLog);
    expect(new Set(again)).toEqual(changed);
    expect(again.length).toBe(changed.size);
    // The invoices of the changed reservations only, read again with them; a cancelled one has none left.
    expect(new Set(invoiceNumbers(h.sim.stats.requestLog))).toEqual(changed);
    expect(await mirrorInvoices(h)).toEqual(simulatorInvoices(h.sim, ids));
    expect(await h.sql('SELECT number FROM pms_invoices WHERE property_id = $1 AND number = $2', ['500100', other!.number])).toEqual([]);

    // History of the room stays: each stay's current version is the stay as mirrored; a
    // check-in and a check-out are versions of their own, from the reservation's modification.
    const stays = await h.sql<AnyRecord>(
      `SELECT s.number, s.status, s.room_id, v.status AS v_status, v.room_id AS v_room_id, v.actual_check_in_at::text AS v_in
         FROM pms_room_stays s LEFT JOIN pms_stay_versions v
           ON v.property_id = s.property_id AND v.number = s.number AND v.stay_key = COALESCE(s.pms_room_stay_id, '#' || s.position) AND v.valid_to IS NULL`,
    );
    expect(stays.length).toBeGreaterThan(0);
    for (const st of stays) expect({ status: st.v_status, room_id: st.v_room_id }, st.number).toEqual({ status: st.status, room_id: st.room_id });
    const historyOf = (number: string) =>
      h!.sql<AnyRecord>(
        `SELECT status, valid_to IS NULL AS current, actual_check_in_at IS NOT NULL AS checked_in, actual_check_out_at IS NOT NULL AS checked_out,
                to_char(valid_from AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS valid_from
           FROM pms_stay_versions WHERE property_id = '500100' AND number = $1 AND stay_key = (
             SELECT COALESCE(pms_room_stay_id, '#' || position) FROM pms_room_stays WHERE property_id = '500100' AND number = $1 AND position = 0)
          ORDER BY valid_from, valid_to NULLS LAST`,
        [number],
      );
    if (fresh) {
      const modified = h.sim.pmsReservation('500100', fresh.number)!.modifyDateTime;
      expect(await historyOf(fresh.number)).toEqual([
        expect.objectContaining({ status: 'New', current: false, checked_in: false }),
        { status: 'CheckedIn', current: true, checked_in: true, checked_out: false, valid_from: modified },
      ]);
    }
    if (staying) {
      expect((await historyOf(staying.number)).map((v) => [v.status, v.current])).toEqual([
        ['CheckedIn', false],
        ['CheckedOut', true],
      ]);
    }
    expect(fresh ?? staying, 'a stay checked in or out').toBeDefined();
  });

  it('loses and duplicates nothing at minute and page edges', async () => {
    const clock = new OffsetClock();
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 40 }], now: () => clock.now() } });
    clock.nextMinute(20_000);
    clock.moveTo(clock.now() + 20 * MINUTE);
    const ctx = await h.context({ clock });
    await syncOnce(ctx, { streams: 'pms' });

    const stays = () =>
      h!.sim.pmsReservations('500100').filter((r) => r.reservationStatus !== 'Cancelled' && r.roomStays[0] && r.roomStays[0].actualCheckInDateTime === null);
    const before = modifications(h.sim, ['500100']);
    const [a, b, c] = stays();
    // A at the very start of a minute, B at its very end, C at the start of the next one.
    clock.nextMinute(50);
    h.sim.pmsCheckIn('500100', a!.number);
    clock.moveTo(Math.floor(clock.now() / MINUTE) * MINUTE + MINUTE - 300);
    h.sim.pmsCheckIn('500100', b!.number);
    clock.nextMinute(50);
    h.sim.pmsCheckIn('500100', c!.number);
    // A page edge: 230 new reservations in one minute, read in pages of 100.
    h.sim.mutate({ count: 0, newCount: 230, propertyId: '500100' });
    clock.moveTo(clock.now() + 500);

    h.sim.stats.requestLog = [];
    await syncOnce(ctx, { streams: 'pms' });
    expect(await mirrorPms(h)).toEqual(simulatorPms(h.sim, ['500100']));
    const fetched = fetchedNumbers(h.sim.stats.requestLog);
    expect(fetched.length).toBe(new Set(fetched).size);
    expect(fetched).toEqual(expect.arrayContaining([a!.number, b!.number, c!.number]));
    // Exactly what changed: the three, the 230 new ones, and whatever the simulator moved meanwhile.
    const changed = [...modifications(h.sim, ['500100'])].filter(([n, m]) => before.get(n) !== m).map(([n]) => n);
    expect(changed.length).toBeGreaterThanOrEqual(233);
    expect(new Set(fetched)).toEqual(new Set(changed));
    const pages = h.sim.stats.requestLog.filter((e) => e.path.endsWith('/reservations/search') && e.query?.includes('pageToken'));
    expect(pages.length).toBeGreaterThanOrEqual(2);

    // A write later in the minute the last run read: the next run's recheck finds it.
    const [d] = stays();
    h.sim.pmsCheckIn('500100', d!.number);
    clock.nextMinute(2_000);
    h.sim.stats.requestLog = [];
    await syncOnce(ctx, { streams: 'pms' });
    expect(await mirrorPms(h)).toEqual(simulatorPms(h.sim, ['500100']));
    expect(fetchedNumbers(h.sim.stats.requestLog)).toContain(d!.number);
  });

  it('mirrors the daily occupancy over several 31-day windows, equal to the simulator', async () => {
    h = await startHarness({
      sim: {
        properties: [
          { id: '500100', bookingCount: 200 },
          { id: '7291', bookingCount: 80 },
        ],
      },
      config: { occupancy: { daysBack: 40, daysAhead: 40 } },
    });
    const ctx = await h.context();
    h.sim.stats.requestLog = [];
    // The occupancy refresh, after the content's (the properties' time zones): the PMS computes
    // the figures from its own reservations, which the mirror need not hold for this.
    const occupancyOnly = {
      property: [],
      queues: [],
      refreshes: registeredStreams.refreshes.filter((s) => s.name === streamNames.content || s.name === streamNames.dailyOccupancy),
    };
    const result = await syncOnce(ctx, { streams: occupancyOnly });
    expect(result).toMatchObject({ failed: [], refreshFailures: [], fatal: undefined });
    for (const pid of ['500100', '7291']) {
      const rows = await h.sql<AnyRecord>('SELECT * FROM daily_occupancy WHERE property_id = $1 ORDER BY stay_date', [pid]);
      expect(rows).toHaveLength(81);
      const first = String(rows[0]!.stay_date);
      const last = String(rows.at(-1)!.stay_date);
      const truth = h.sim.dailyOccupancy(pid, first, last);
      expect(
        rows.map((r) => ({
          date: String(r.stay_date),
          occupancyRate: Number(r.occupancy_rate),
          closedRoomCount: r.closed_room_count,
          occupancyRoomCount: r.occupancy_room_count,
          complimentaryOccupancyRoomCount: r.complimentary_occupancy_room_count,
          roomRevenue: Number(r.room_revenue),
          revenue: Number(r.revenue),
          // Not given is NULL, not 0 (toEqual takes an undefined property as absent).
          mealRevenue: r.meal_revenue === null ? undefined : Number(r.meal_revenue),
          arrivalCount: r.arrival_count,
          guestCount: r.guest_count,
        })),
      ).toEqual(
        truth
          .map((d) => ({ ...d }))
          .map(
            ({
              date,
              occupancyRate,
              closedRoomCount,
              occupancyRoomCount,
              complimentaryOccupancyRoomCount,
              roomRevenue,
              revenue,
              mealRevenue,
              arrivalCount,
              guestCount,
            }) => ({
              date,
              occupancyRate,
              closedRoomCount,
              occupancyRoomCount,
              complimentaryOccupancyRoomCount,
              roomRevenue,
              revenue,
              mealRevenue,
              arrivalCount,
              guestCount,
            }),
          ),
      );
      expect(rows.every((r) => r.property_room_count === h!.sim.pmsRooms(pid).length)).toBe(true);
      // Nights whose answer gives no mealRevenue, and the history and occupancy_as_of agree.
      const unsaid = rows.filter((r) => r.meal_revenue === null).map((r) => String(r.stay_date));
      expect(unsaid.length).toBe(truth.filter((d) => d.mealRevenue === undefined).length);
      expect(unsaid.length).toBeGreaterThan(0);
      const history = await h.sql<{ d: string }>(
        `SELECT stay_date::text AS d FROM daily_occupancy_history WHERE property_id = $1 AND valid_to IS NULL AND meal_revenue IS NULL ORDER BY 1`,
        [pid],
      );
      expect(history.map((x) => x.d)).toEqual(unsaid);
      const asOf = await h.sql<{ d: string }>(
        `SELECT stay_date::text AS d FROM "${reportingSchemaOf(h.schema)}".occupancy_as_of(now()) WHERE property_id = $1 AND meal_revenue IS NULL ORDER BY 1`,
        [pid],
      );
      expect(asOf.map((x) => x.d)).toEqual(unsaid);
    }
    // 81 days in windows of at most 31: 3 requests per property.
    const requests = h.sim.stats.requestLog.filter((e) => e.path.endsWith('/daily-occupancy'));
    expect(requests).toHaveLength(6);
    for (const e of requests) {
      const q = new URLSearchParams(e.query);
      const days = (Date.parse(q.get('endStayDate')!) - Date.parse(q.get('startStayDate')!)) / 86_400_000 + 1;
      expect(days).toBeLessThanOrEqual(31);
    }
  });
});

describe('personal data', () => {
  const personalOf = (sim: Simulator, pid: string) =>
    sim
      .pmsReservations(pid)
      .flatMap((r) => [r.customer, ...r.roomStays.flatMap((s) => (s.guestsIds ?? []).map((g) => sim.pmsGuest(pid, g)))])
      .filter((p) => !!p);

  it('stays out of every column and raw when disabled, and is kept when enabled', async () => {
    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 40 }] } });
    await syncOnce(await h.context(), { streams: 'pms' });
    const persons = personalOf(h.sim, '500100');
    const emails = persons.flatMap((p) => (p.emails ?? []).map((e) => e.address)).filter((e): e is string => !!e);
    const phones = persons.flatMap((p) => (p.phones ?? []).map((e) => e.phoneNumber)).filter((e): e is string => !!e);
    expect(emails.length).toBeGreaterThan(10);
    expect(phones.length).toBeGreaterThan(10);
    const everything = JSON.stringify([
      await h.sql('SELECT * FROM pms_reservations'),
      await h.sql('SELECT * FROM pms_guests'),
      await h.sql('SELECT * FROM pms_room_stays'),
    ]);
    for (const v of [...emails, ...phones]) expect(everything).not.toContain(v);
    const raws = JSON.stringify([await h.sql('SELECT raw FROM pms_reservations'), await h.sql('SELECT raw FROM pms_guests')]);
    expect(raws).not.toMatch(/"(birthDate|citizenship|emails|phones)"/);
    const personal = await h.sql<{ n: string }>(
      `SELECT (SELECT count(*) FROM pms_reservations WHERE customer_email IS NOT NULL OR customer_phone IS NOT NULL OR customer_birth_date IS NOT NULL OR customer_citizenship IS NOT NULL)
            + (SELECT count(*) FROM pms_guests WHERE email IS NOT NULL OR phone IS NOT NULL OR birth_date IS NOT NULL OR citizenship IS NOT NULL) AS n`,
    );
    expect(Number(personal[0]!.n)).toBe(0);
    // Names are there.
    const names = await h.sql<{ n: string }>('SELECT count(*) AS n FROM pms_guests WHERE last_name IS NOT NULL');
    expect(Number(names[0]!.n)).toBeGreaterThan(10);
    await h.close();

    h = await startHarness({ sim: { properties: [{ id: '500100', bookingCount: 40 }] }, config: { pms: { personalData: true } } });
    await syncOnce(await h.context(), { streams: 'pms' });
    const kept = JSON.stringify(await h.sql('SELECT raw FROM pms_reservations'));
    expect(kept).toContain(h.sim.pmsReservations('500100').find((r) => r.customer?.emails?.length)!.customer!.emails![0]!.address!);
    const filled = await h.sql<{ n: string }>('SELECT count(*) AS n FROM pms_reservations WHERE customer_email IS NOT NULL');
    expect(Number(filled[0]!.n)).toBeGreaterThan(10);
  });
});
