/**
 * PMS reservations the document allows but a strict reading refused, against the simulator
 * and real PostgreSQL: one served with a null number and one whose modifyDateTime is not an
 * instant are mirrored under the number they were fetched by, raw as sent, nothing
 * quarantined; `rebuild` keeps them under that number; later readable versions replace them.
 * And the version guard's rule when a modification time is missing, at the store.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseReservationResponse } from '../../src/provider/schemas/pms.js';
import { reservationRows } from '../../src/mapping/pms.js';
import { rebuild } from '../../src/replay/rebuild.js';
import { savePmsReservation } from '../../src/store/repositories/pms.js';
import type { SyncContext } from '../../src/sync/runtime/context.js';
import { OffsetClock } from '../helpers/fake-clock.js';
import { startHarness, syncOnce, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const P = '500100';
const UNREADABLE = 'last Tuesday, around noon';
type AnyRecord = Record<string, any>;

const reservationPath = (number: string) => `/api/pms/v2/properties/${P}/reservations/${number}`;

async function mirrored(harness: Harness, number: string): Promise<AnyRecord | undefined> {
  const rows = await harness.sql<AnyRecord>(
    `SELECT number, modified_at, room_stay_count, raw, (SELECT count(*)::int FROM pms_room_stays s WHERE s.property_id = r.property_id AND s.number = r.number) AS stays
       FROM pms_reservations r WHERE property_id = $1 AND number = $2`,
    [P, number],
  );
  return rows[0];
}

describe('PMS reservations the document allows', () => {
  it('a null number and an unreadable modifyDateTime are mirrored under the fetched number, rebuilt in place, and replaced by later readable versions', async () => {
    const clock = new OffsetClock();
    // Raw as sent: with personal data off, the customer's contact data would be stripped from it.
    h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 30 }], now: () => clock.now() }, config: { pms: { personalData: true } } });
    clock.nextMinute(20_000);
    const ctx = await h.context({ clock });
    const [nullNumber, unreadable] = h.sim
      .pmsReservations(P)
      .filter((r) => r.reservationStatus !== 'Cancelled')
      .map((r) => r.number);
    expect(nullNumber && unreadable).toBeTruthy();
    h.sim.faults.rewriteBody = (path, body) => {
      const served = body as { reservation: AnyRecord };
      if (path === reservationPath(nullNumber!)) served.reservation.number = null;
      else if (path === reservationPath(unreadable!)) served.reservation.modifyDateTime = UNREADABLE;
      else return undefined;
      return served;
    };
    const servedAs = (number: string, change: AnyRecord) => JSON.stringify({ ...h!.sim.pmsReservation(P, number), ...change });

    expect(await syncOnce(ctx, { streams: 'pms' })).toMatchObject({ failed: [], fatal: undefined });
    expect(await h.sql('SELECT stream, entity_key, reason FROM quarantine')).toEqual([]);
    expect(await h.sql('SELECT number, state FROM pms_reservation_queue')).toEqual([]);

    const a = await mirrored(h, nullNumber!);
    expect(a).toMatchObject({ number: nullNumber, modified_at: new Date(h.sim.pmsReservation(P, nullNumber!)!.modifyDateTime) });
    expect(a!.raw).toEqual(JSON.parse(servedAs(nullNumber!, { number: null })));
    const b = await mirrored(h, unreadable!);
    expect(b).toMatchObject({ number: unreadable, modified_at: null });
    expect(b!.raw).toEqual(JSON.parse(servedAs(unreadable!, { modifyDateTime: UNREADABLE })));
    for (const r of [a!, b!]) expect(r.stays).toBe(r.room_stay_count);

    // The rebuild derives both again from raw, under their numbers: a typed column set wrong is restored.
    await h.sql('UPDATE pms_reservations SET room_stay_count = 99 WHERE property_id = $1 AND number IN ($2, $3)', [P, nullNumber, unreadable]);
    const rebuilt = await rebuild({ handle: ctx, config: h.config, logger: h.logger });
    expect(rebuilt.sources.pms_reservations).toMatchObject({ changed: 2, quarantined: 0, left: 0 });
    expect(await h.sql('SELECT count(*)::int AS n FROM quarantine')).toEqual([{ n: 0 }]);
    expect(await mirrored(h, nullNumber!)).toEqual(a);
    expect(await mirrored(h, unreadable!)).toEqual(b);

    // Later readable versions (each cancelled) replace them.
    h.sim.faults.rewriteBody = undefined;
    clock.nextMinute(5_000);
    h.sim.pmsCancel(P, nullNumber!);
    h.sim.pmsCancel(P, unreadable!);
    clock.nextMinute(10_000);
    expect(await syncOnce(ctx, { streams: 'pms' })).toMatchObject({ failed: [], fatal: undefined });
    for (const number of [nullNumber!, unreadable!]) {
      const now = h.sim.pmsReservation(P, number)!;
      const row = await mirrored(h, number);
      expect(row).toMatchObject({ number, modified_at: new Date(now.modifyDateTime) });
      expect(row!.raw).toEqual(JSON.parse(JSON.stringify(now)));
      expect(row!.raw.reservationStatus).toBe('Cancelled');
    }
    expect(await h.sql('SELECT count(*)::int AS n FROM quarantine')).toEqual([{ n: 0 }]);
  });
});

describe('the PMS version guard when a modification time is missing', () => {
  /** Writes a version of reservation G-1 (modifyDateTime as given, read at `fetchedAt`); returns whether the guard let it in. */
  async function write(ctx: SyncContext, modifyDateTime: string | null, fetchedAt: string, status: string): Promise<boolean> {
    const parsed = parseReservationResponse({ reservation: { number: null, modifyDateTime, reservationStatus: status, roomStays: [] } }, 'G-1');
    if (!parsed.ok) throw new Error(parsed.reason);
    const { rows } = reservationRows(
      P,
      parsed.value,
      { modifyDateTime, reservationStatus: status },
      { personalData: false, pseudonymKey: undefined },
      new Date(fetchedAt),
    );
    return ctx.write((trx) => savePmsReservation(trx, rows));
  }
  const stored = async () => (await h!.sql<AnyRecord>('SELECT reservation_status, modified_at FROM pms_reservations WHERE number = $1', ['G-1']))[0];

  it('orders by modification when both have one, by the read otherwise: a version without one neither blocks a later read nor overwrites one read after it', async () => {
    h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 0 }] } });
    const ctx = await h.context();

    expect(await write(ctx, '2025-01-01T10:00:00Z', '2025-01-01T10:05:00Z', 'v1 readable')).toBe(true);
    // Both readable: the modification decides, even against a later read.
    expect(await write(ctx, '2025-01-01T09:00:00Z', '2025-01-01T10:06:00Z', 'older modification read later')).toBe(false);
    // Unreadable, read before the stored version (an answer written late): refused.
    expect(await write(ctx, 'not a time', '2025-01-01T10:04:00Z', 'unreadable read earlier')).toBe(false);
    expect(await stored()).toEqual({ reservation_status: 'v1 readable', modified_at: new Date('2025-01-01T10:00:00Z') });
    // Unreadable, read after it: it is the newer answer.
    expect(await write(ctx, 'not a time', '2025-01-01T11:00:00Z', 'v2 unreadable')).toBe(true);
    expect(await stored()).toEqual({ reservation_status: 'v2 unreadable', modified_at: null });
    // Readable, but read before the unreadable one: refused, whatever its modification says.
    expect(await write(ctx, '2025-01-01T10:30:00Z', '2025-01-01T10:45:00Z', 'readable read earlier')).toBe(false);
    // Readable and read later: replaces it.
    expect(await write(ctx, '2025-01-01T11:30:00Z', '2025-01-01T11:35:00Z', 'v3 readable')).toBe(true);
    expect(await stored()).toEqual({ reservation_status: 'v3 readable', modified_at: new Date('2025-01-01T11:30:00Z') });
  });
});
