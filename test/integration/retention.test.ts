/**
 * Retention (privacy.retainPersonalDataDays; src/privacy/retention.ts), against the simulator
 * and real PostgreSQL: exactly the stays that ended more than N days ago lose their guests'
 * personal data (a booking departing the day before the cutoff does, one departing on it does
 * not), the figures stay, a repeat guest keeps their profile while one stay is recent, and old
 * quarantined bodies and processed change events expire.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { EXPIRED_BODY, retentionPass } from '../../src/privacy/retention.js';
import { quarantinePayload } from '../../src/store/repositories/quarantine.js';
import { streamNames } from '../../src/store/states.js';
import { retentionStream } from '../../src/sync/streams/retention.js';
import { announceStorage, startHarness, syncOnce, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const P = '500100';
const DAYS = 400;
type AnyRecord = Record<string, any>;

const addDays = (date: string, n: number) => new Date(Date.parse(`${date}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);

describe('retention', () => {
  it('erases the personal data of exactly the stays that ended more than N days ago, keeps the figures, and expires old bodies', async () => {
    h = await startHarness({
      sim: { properties: [{ id: P, bookingCount: 40 }] },
      config: { pms: { personalData: true }, privacy: { retainPersonalDataDays: DAYS } },
      // The pass's log line is at info.
      logLevel: 'info',
    });
    // The first day kept, worked out here: a stay that departed before it ended more than DAYS days ago.
    const cutoff = addDays(new Date().toISOString().slice(0, 10), -DAYS);
    // Two bookings on each side of the cutoff: one departing the day before it, one on it.
    const named = h.sim.bookings(P).filter((b) => b.customer !== null && b.roomStays.length === 1);
    const [before, on] = [named[0]!.number, named[1]!.number];
    const departing: Record<string, string> = { [before]: addDays(cutoff, -1), [on]: cutoff };
    h.sim.faults.rewriteBody = (path, body) => {
      const number = Object.keys(departing).find((n) => path === `/api/read-reservation/v1/properties/${P}/bookings/${n}`);
      if (!number) return undefined;
      const stay = (body as { booking: AnyRecord }).booking.roomStays[0];
      stay.stayDates = { arrivalDateTime: `${addDays(departing[number]!, -1)}T14:00`, departureDateTime: `${departing[number]}T12:00` };
      return body;
    };
    const ctx = await h.context();
    // The refresh runs at start, while the mirror fills, and may erase part of it: the pass below does the rest.
    expect(await syncOnce(ctx, { streams: 'all' })).toMatchObject({ failed: [], fatal: undefined });

    // An old and a recent quarantined guest payload, and an old and a recent processed event.
    await ctx.write(async (trx) => {
      for (const key of ['old', 'recent'])
        await quarantinePayload(trx, { stream: streamNames.pmsReservations, propertyId: P, entityKey: key, reason: 'test', rawBody: `{"customer":"${key}"}` });
    });
    await h.sql(`UPDATE quarantine SET last_seen_at = now() - interval '${DAYS + 1} days' WHERE entity_key = 'old'`);
    await h.sql(
      `INSERT INTO webhook_events (event_id, event_type, payload, property_id, state, received_at) VALUES
         ('e-old', 'webpms:check_in', '{"BookingNumber": "x"}', $1, 'processed', now() - interval '${DAYS + 1} days'),
         ('e-recent', 'webpms:check_in', '{"BookingNumber": "y"}', $1, 'processed', now())`,
      [P],
    );
    const figures = () => h!.sql('SELECT number, status, price_after_tax, departure_at FROM bookings ORDER BY number');
    const figuresBefore = await figures();
    const nightsBefore = await h.sql('SELECT * FROM nightly_facts ORDER BY 1, 2, 3, 4');

    await retentionStream.run(ctx, new AbortController().signal, []);
    // Its log line says what it read and changed.
    const passLines = () => h!.logLines.filter((l) => l.includes('whose stays ended more than'));
    expect(passLines().at(-1)).toMatch(/\((\d+) rows read, (\d+) changed\)/);
    const logged = passLines().length;

    // Bookings: erased exactly when they departed before the cutoff.
    const bookings = await h.sql<AnyRecord>(
      `SELECT number, departure_at::date::text < $1 AS past, customer_last_name, raw->'booking'->'customer'->>'lastName' AS raw_last_name,
              (SELECT array_agg(g.last_name) FROM booking_guests g WHERE g.number = b.number) AS guests
         FROM bookings b ORDER BY number`,
      [cutoff],
    );
    expect(bookings.filter((b) => b.past).length).toBeGreaterThan(2);
    expect(bookings.filter((b) => !b.past).length).toBeGreaterThan(2);
    for (const b of bookings) {
      const erased = (v: string | null) => v === null || v === '(erased)';
      if (b.past) {
        expect(erased(b.customer_last_name) && erased(b.raw_last_name), b.number).toBe(true);
        expect((b.guests ?? []).every(erased), b.number).toBe(true);
      } else if (b.customer_last_name !== null) expect(b.customer_last_name, b.number).not.toBe('(erased)');
    }
    expect(bookings.find((b) => b.number === before)).toMatchObject({ past: true, customer_last_name: '(erased)' });
    expect(bookings.find((b) => b.number === on)).toMatchObject({ past: false });
    expect(bookings.find((b) => b.number === on)!.customer_last_name).not.toBe('(erased)');
    expect(await figures()).toEqual(figuresBefore);
    expect(await h.sql('SELECT * FROM nightly_facts ORDER BY 1, 2, 3, 4')).toEqual(nightsBefore);

    // PMS reservations: the customer erased exactly when every stay checked out before the cutoff.
    const reservations = await h.sql<AnyRecord>(
      `SELECT r.number, (SELECT max(s.check_out_at) FROM pms_room_stays s WHERE s.number = r.number)::date::text < $1 AS past,
              r.customer_last_name, r.customer_email, r.customer_birth_date
         FROM pms_reservations r WHERE r.customer_last_name IS NOT NULL`,
      [cutoff],
    );
    expect(reservations.some((r) => r.past) && reservations.some((r) => !r.past)).toBe(true);
    for (const r of reservations) {
      if (r.past) expect([r.customer_last_name, r.customer_email, r.customer_birth_date], r.number).toEqual(['(erased)', null, null]);
      else expect(r.customer_last_name, r.number).not.toBe('(erased)');
    }
    // PMS persons: erased only when their last stay ended before the cutoff.
    const persons = await h.sql<AnyRecord>(
      `SELECT g.pms_person_id, g.last_name, g.email,
              (SELECT max(s.check_out_at) FROM pms_room_stays s JOIN pms_reservations r ON r.property_id = s.property_id AND r.number = s.number
                WHERE g.pms_person_id = ANY(s.guest_person_ids) OR r.customer_person_id = g.pms_person_id)::date::text < $1 AS past
         FROM pms_guests g`,
      [cutoff],
    );
    expect(persons.some((p) => p.past) && persons.some((p) => p.past === false)).toBe(true);
    for (const p of persons) {
      if (p.past) expect([p.last_name === null || p.last_name === '(erased)', p.email], p.pms_person_id).toEqual([true, null]);
      else if (p.past === false && p.last_name !== null) expect(p.last_name, p.pms_person_id).not.toBe('(erased)');
    }

    // Bodies: the old ones expired, the recent ones kept.
    expect(await h.sql('SELECT entity_key, raw_body FROM quarantine WHERE entity_key IN ($1, $2) ORDER BY entity_key', ['old', 'recent'])).toEqual([
      { entity_key: 'old', raw_body: EXPIRED_BODY },
      { entity_key: 'recent', raw_body: '{"customer":"recent"}' },
    ]);
    expect(await h.sql('SELECT event_id, payload FROM webhook_events ORDER BY event_id')).toEqual([
      { event_id: 'e-old', payload: null },
      { event_id: 'e-recent', payload: { BookingNumber: 'y' } },
    ]);
    const logs = await h.sql<AnyRecord>(`SELECT reason, selector_kind, persons, rows_touched FROM erasures ORDER BY erasure_id`);
    expect(logs.every((l) => l.reason === 'retention' && l.selector_kind === null)).toBe(true);
    const total = (table: string) => logs.reduce((n, l) => n + (l.rows_touched[table] ?? 0), 0);
    expect([total('quarantine'), total('webhook_events')]).toEqual([1, 1]);
    expect(total('bookings')).toBeGreaterThanOrEqual(bookings.filter((b) => b.past && b.customer_last_name !== null).length);
    expect(total('bookings')).toBeLessThanOrEqual(bookings.filter((b) => b.past).length);

    // A second pass finds nothing left to do: it reads no row, and logs nothing.
    await retentionStream.run(ctx, new AbortController().signal, []);
    expect(await h.sql('SELECT 1 FROM erasures')).toHaveLength(logs.length);
    expect(passLines()).toHaveLength(logged);
  });

  it('reaches what has no stay end: a profile whose person left the guest list, a reservation with no stays or only open check-outs, a booking with no room stays, an integration-storage booking', async () => {
    h = await startHarness({
      sim: { properties: [{ id: P, bookingCount: 30 }] },
      config: { pms: { personalData: true } },
    });
    const ctx = await h.context();
    await announceStorage(h, ctx, P, { storage: 2, blocks: 0 });
    expect(await syncOnce(ctx, { streams: 'all' })).toMatchObject({ failed: [], fatal: undefined });
    const cutoff = addDays(new Date().toISOString().slice(0, 10), -DAYS);
    const longAgo = `${addDays(cutoff, -30)}T12:00:00Z`;
    const recent = new Date().toISOString();

    // Every stay after the cutoff, so that only what this test makes old is past retention.
    await h.sql(
      `UPDATE pms_room_stays SET check_in_at = now() + interval '1 day', check_out_at = now() + interval '3 days', actual_check_in_at = NULL, actual_check_out_at = NULL`,
    );
    await h.sql(`UPDATE bookings SET departure_at = now() + interval '3 days'`);
    await h.sql(`UPDATE integration_storage_bookings SET departure_at = now() + interval '3 days'`);
    const reservations = await h.sql<{ number: string }>(
      `SELECT number FROM pms_reservations r WHERE customer_last_name IS NOT NULL AND EXISTS (SELECT 1 FROM pms_room_stays s WHERE s.number = r.number) ORDER BY number`,
    );
    const [noStays, openCheckOuts] = [reservations[0]!.number, reservations[1]!.number];
    await h.sql(`DELETE FROM pms_room_stays WHERE number = $1`, [noStays]);
    await h.sql(`UPDATE pms_reservations SET modified_at = $2, fetched_at = $2 WHERE number = $1`, [noStays, longAgo]);
    await h.sql(`UPDATE pms_room_stays SET check_in_at = $2, check_out_at = NULL WHERE number = $1`, [openCheckOuts, longAgo]);

    // Two guests of rooms (not customers) leave their guest lists: one last fetched before the cutoff, one recently.
    const guests = await h.sql<{ id: string }>(
      `SELECT g.pms_person_id AS id FROM pms_guests g
        WHERE g.last_name IS NOT NULL AND NOT EXISTS (SELECT 1 FROM pms_reservations r WHERE r.customer_person_id = g.pms_person_id)
          AND EXISTS (SELECT 1 FROM pms_room_stays s WHERE g.pms_person_id = ANY(s.guest_person_ids)) ORDER BY 1 LIMIT 2`,
    );
    expect(guests).toHaveLength(2);
    const [leftLongAgo, leftRecently] = [guests[0]!.id, guests[1]!.id];
    for (const id of [leftLongAgo, leftRecently]) await h.sql(`UPDATE pms_room_stays SET guest_person_ids = array_remove(guest_person_ids, $1)`, [id]);
    await h.sql(`UPDATE pms_guests SET fetched_at = $2 WHERE pms_person_id = $1`, [leftLongAgo, longAgo]);
    await h.sql(`UPDATE pms_guests SET fetched_at = $2 WHERE pms_person_id = $1`, [leftRecently, recent]);

    // A booking without room stays, last changed long ago.
    const [noRooms] = await h.sql<{ number: string }>(`SELECT number FROM bookings WHERE customer_last_name IS NOT NULL ORDER BY number LIMIT 1`);
    await h.sql(`DELETE FROM booking_room_stays WHERE number = $1`, [noRooms!.number]);
    await h.sql(`UPDATE bookings SET arrival_at = NULL, departure_at = NULL, modified_at = $2 WHERE number = $1`, [noRooms!.number, longAgo]);

    // An integration-storage booking that names its guest, departed long ago.
    const [storage] = await h.sql<{ booking_id: string }>(`SELECT booking_id FROM integration_storage_bookings ORDER BY booking_id LIMIT 1`);
    await h.sql(
      `UPDATE integration_storage_bookings SET departure_at = $2,
              raw = raw || '{"customer": {"firstName": "Orla", "lastName": "Storagefield", "emails": [{"address": "orla@example.org"}]}}'::jsonb
        WHERE booking_id = $1`,
      [storage!.booking_id, longAgo],
    );

    // A pass as the daemon's (retention is not configured here, so that the sync erased nothing first).
    await retentionPass((fn) => ctx.write(fn), { propertyIds: [P], days: DAYS, now: new Date(), unrouted: true });

    const customer = async (number: string) =>
      (await h!.sql<AnyRecord>('SELECT customer_last_name, customer_email FROM pms_reservations WHERE number = $1', [number]))[0];
    expect(await customer(noStays)).toEqual({ customer_last_name: '(erased)', customer_email: null });
    expect(await customer(openCheckOuts)).toEqual({ customer_last_name: '(erased)', customer_email: null });
    expect(await h.sql('SELECT last_name, email FROM pms_guests WHERE pms_person_id = $1', [leftLongAgo])).toEqual([{ last_name: '(erased)', email: null }]);
    const [kept] = await h.sql<AnyRecord>('SELECT last_name FROM pms_guests WHERE pms_person_id = $1', [leftRecently]);
    expect(kept!.last_name).not.toBe('(erased)');
    expect(await h.sql('SELECT customer_last_name FROM bookings WHERE number = $1', [noRooms!.number])).toEqual([{ customer_last_name: '(erased)' }]);
    expect(await h.sql(`SELECT raw->'customer' AS customer FROM integration_storage_bookings WHERE booking_id = $1`, [storage!.booking_id])).toEqual([
      { customer: { firstName: '(erased)', lastName: '(erased)' } },
    ]);
    // Nothing else was past retention.
    expect(await h.sql(`SELECT count(*)::int AS n FROM bookings WHERE customer_last_name = '(erased)'`)).toEqual([{ n: 1 }]);
  });

  it('reads an erased mirror no more: the next pass selects none of the rows the last one erased, and erases what the deferred PMS reads wrote since (payers, card numbers)', async () => {
    h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 30 }] }, config: { pms: { personalData: true } } });
    const ctx = await h.context();
    await announceStorage(h, ctx, P, { storage: 3, blocks: 0 });
    expect(await syncOnce(ctx, { streams: 'all' })).toMatchObject({ failed: [], fatal: undefined });
    // Each storage booking names its channel, as the provider's sample does (a `name` that is no person's); one names its guest too.
    const channel = { code: 'TA001', codeType: 'Pms', name: 'Booking.com', bookingChannelType: 'TravelAgent' };
    const storage = await h.sql<{ booking_id: string }>(
      `UPDATE integration_storage_bookings SET raw = jsonb_set(raw, '{bookingChannels}', $1::jsonb) RETURNING booking_id`,
      [JSON.stringify([channel])],
    );
    expect(storage).toHaveLength(3);
    await h.sql(
      `UPDATE integration_storage_bookings SET raw = raw || '{"customer": {"firstName": "Orla", "lastName": "Storagefield"}}'::jsonb WHERE booking_id = $1`,
      [storage[0]!.booking_id],
    );
    // Bookings whose loyalty cards no customer holds (the simulator's guarantee names cards on bookings without one).
    const cardsWithoutCustomer = await h.sql(
      `SELECT DISTINCT c.number FROM booking_loyalty_cards c JOIN bookings b USING (property_id, number) WHERE c.card_number IS NOT NULL AND b.customer_last_name IS NULL`,
    );
    expect(cardsWithoutCustomer.length).toBeGreaterThan(0);
    // What a backfill leaves to the pass after it: invoices and loyalty cards, read here after the first pass erased their reservations and persons.
    await h.sql(`DELETE FROM pms_invoice_items`);
    await h.sql(`DELETE FROM pms_invoices`);
    await h.sql(`UPDATE pms_reservations SET invoices_read_at = NULL`);
    await h.sql(`DELETE FROM pms_guest_loyalty_cards`);
    await h.sql(`UPDATE pms_guests SET loyalty_cards_read_at = NULL`);

    // Every stay is past retention twenty years on.
    const pass = () => retentionPass((fn) => ctx.write(fn), { propertyIds: [P], days: 1, now: new Date(Date.now() + 20 * 365 * 86_400_000), unrouted: true });
    const first = await pass();
    // Each row read was erased: the storage bookings (one named a guest), the bookings (some only held card numbers).
    expect(first.storageBookings).toBe(1);
    expect(first.rowsTouched.integration_storage_bookings).toBe(1);
    expect(first.rowsTouched.bookings).toBe(first.bookings);
    expect(await h.sql(`SELECT count(*)::int AS n FROM booking_loyalty_cards WHERE card_number IS NOT NULL`)).toEqual([{ n: 0 }]);
    expect(await h.sql(`SELECT count(*)::int AS n FROM bookings WHERE jsonb_path_exists(raw, 'lax $.**.cardNumber ? (@ != null)')`)).toEqual([{ n: 0 }]);
    expect(await h.sql(`SELECT count(*)::int AS n FROM pms_reservations WHERE customer_last_name IS NOT NULL AND customer_last_name <> '(erased)'`)).toEqual([
      { n: 0 },
    ]);

    expect(await syncOnce(ctx, { streams: 'pms' })).toMatchObject({ failed: [], fatal: undefined });
    const payersInClear = () =>
      h!.sql<{ n: number }>(
        `SELECT count(*)::int AS n FROM pms_invoices i JOIN pms_reservations r USING (property_id, number)
          WHERE i.payer_name <> '(erased)' AND i.payer_name IS DISTINCT FROM r.customer_company_name`,
      );
    const cardNumbers = () => h!.sql<{ n: number }>(`SELECT count(*)::int AS n FROM pms_guest_loyalty_cards WHERE card_number IS NOT NULL`);
    // The pass after the backfill wrote them in clear: retention lists nobody as erased.
    expect((await payersInClear())[0]!.n).toBeGreaterThan(0);
    expect((await cardNumbers())[0]!.n).toBeGreaterThan(0);

    const second = await pass();
    expect(await payersInClear()).toEqual([{ n: 0 }]);
    expect(await h.sql(`SELECT count(*)::int AS n FROM pms_invoices WHERE raw -> 'payer' ->> 'name' IS DISTINCT FROM payer_name`)).toEqual([{ n: 0 }]);
    expect(await cardNumbers()).toEqual([{ n: 0 }]);
    // Nothing the first pass erased is read again: no storage booking for its channel's name, no booking for its cards.
    expect(second).toMatchObject({ bookings: 0, reservations: 0, storageBookings: 0 });
    expect(second.invoices).toBeGreaterThan(0);

    // An erased mirror: the next pass reads nothing and changes nothing.
    expect(await pass()).toEqual({ bookings: 0, reservations: 0, invoices: 0, persons: 0, storageBookings: 0, rowsTouched: {} });
  });

  it('is off by default: the refresh is not run', () => {
    expect(retentionStream.enabled({ privacy: {} } as never)).toBe(false);
    expect(retentionStream.enabled({ privacy: { retainPersonalDataDays: 30 } } as never)).toBe(true);
  });
});
