/**
 * Personal data under the policy of src/mapping/personal-data.ts, against the simulator and
 * real PostgreSQL: with pms.personalData off, a PMS reservation that fails validation is
 * quarantined without its customer's e-mail, phone, birth date or documents (names stay, as in
 * the mirror); with it on, the body is kept as sent. Guest profiles are fetched again with a
 * newer version of their reservation, so that an erasure made at the provider reaches the
 * mirror; an unchanged reservation costs no guest request.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { rebuild } from '../../src/replay/rebuild.js';
import { streamNames } from '../../src/store/states.js';
import { OffsetClock } from '../helpers/fake-clock.js';
import { startHarness, syncOnce, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const P = '500100';
type AnyRecord = Record<string, any>;

/** What the test puts on the quarantined reservation's customer: each value must not be kept with personal data off. */
const PERSONAL = {
  email: 'ada.erase-me@example.com',
  phone: '+41790000123',
  birthDate: '1970-01-02',
  document: 'X1234567-PASSPORT',
};

/** Syncs the PMS side with one reservation served invalid (its room stays not a list), its customer carrying PERSONAL. */
async function quarantineOne(personalData: boolean): Promise<{ number: string; lastName: string; rows: AnyRecord[] }> {
  h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 12 }] }, config: { pms: { personalData } } });
  const ctx = await h.context();
  const target = h.sim.pmsReservations(P).find((r) => r.customer?.personName?.lastName);
  expect(target).toBeDefined();
  const number = target!.number;
  const lastName = target!.customer!.personName!.lastName!;
  h.sim.faults.rewriteBody = (path, body) => {
    if (path !== `/api/pms/v2/properties/${P}/reservations/${number}`) return undefined;
    const served = body as { reservation: AnyRecord };
    served.reservation.roomStays = 'not a list';
    served.reservation.customer = {
      ...served.reservation.customer,
      emails: [{ address: PERSONAL.email }],
      phones: [{ phoneNumber: PERSONAL.phone }],
      birthDate: PERSONAL.birthDate,
      documents: [{ number: PERSONAL.document }],
    };
    return served;
  };
  expect(await syncOnce(ctx, { streams: 'pms' })).toMatchObject({ failed: [], fatal: undefined });
  const rows = await h.sql<AnyRecord>('SELECT stream, entity_key, reason, raw_body FROM quarantine WHERE entity_key = $1', [number]);
  return { number, lastName, rows };
}

describe('personal data in quarantine', () => {
  it('keeps a quarantined PMS reservation without its customer’s personal data when pms.personalData is off', async () => {
    const { number, lastName, rows } = await quarantineOne(false);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.stream).toBe(streamNames.pmsReservations);
    const body = rows[0]!.raw_body as string;
    for (const value of Object.values(PERSONAL)) expect(body).not.toContain(value);
    // The rest is there to say what failed: the reservation, its number, the customer's name.
    const kept = JSON.parse(body) as { reservation: AnyRecord };
    expect(kept.reservation.number).toBe(number);
    expect(kept.reservation.roomStays).toBe('not a list');
    expect(kept.reservation.customer.personName.lastName).toBe(lastName);
    expect(kept.reservation.customer).not.toHaveProperty('emails');
    expect(kept.reservation.customer).not.toHaveProperty('birthDate');
  });

  it('keeps the body as sent when pms.personalData is on', async () => {
    const { rows } = await quarantineOne(true);
    expect(rows).toHaveLength(1);
    const body = rows[0]!.raw_body as string;
    expect(body).toContain(PERSONAL.email);
    expect(body).toContain(PERSONAL.birthDate);
  });
});

describe('guest profiles', () => {
  it('are fetched again with a newer version of their reservation, so an erasure at the provider reaches the mirror', async () => {
    const clock = new OffsetClock();
    h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 40 }], now: () => clock.now() }, config: { pms: { personalData: true } } });
    clock.nextMinute(20_000);
    const ctx = await h.context({ clock });
    expect(await syncOnce(ctx, { streams: 'pms' })).toMatchObject({ failed: [], fatal: undefined });

    // Two reservations with a guest besides the customer, not checked in yet: one changes, one does not.
    const candidates = h.sim
      .pmsReservations(P)
      .filter((r) => r.reservationStatus !== 'Cancelled' && r.roomStays[0]?.status === 'New' && r.roomStays[0]?.roomId)
      .map((r) => ({ number: r.number, guest: r.roomStays.flatMap((s) => s.guestsIds).find((g) => g !== r.customer?.pmsPersonId) }))
      .filter((c): c is { number: string; guest: string } => c.guest !== undefined);
    expect(candidates.length).toBeGreaterThanOrEqual(2);
    const [changed, unchanged] = candidates as [{ number: string; guest: string }, { number: string; guest: string }];
    const before = await h.sql<AnyRecord>('SELECT pms_person_id, last_name FROM pms_guests WHERE pms_person_id = ANY($1) ORDER BY 1', [
      [changed.guest, unchanged.guest],
    ]);
    expect(before).toHaveLength(2);

    // The provider erases both guests' profiles; only the first one's reservation changes.
    const erased = (path: string) => path.endsWith(`/guests/${changed.guest}`) || path.endsWith(`/guests/${unchanged.guest}`);
    h.sim.faults.rewriteBody = (path, body) => {
      if (!erased(path)) return undefined;
      const served = body as { guest: AnyRecord };
      served.guest = { ...served.guest, personName: { lastName: 'Erased', firstName: null, middleName: null }, emails: [], phones: [], birthDate: null };
      return served;
    };
    clock.nextMinute(5_000);
    h.sim.pmsCheckIn(P, changed.number);
    clock.nextMinute(10_000);
    h.sim.stats.requestLog = [];
    expect(await syncOnce(ctx, { streams: 'pms' })).toMatchObject({ failed: [], fatal: undefined });

    const guestRequests = (id: string) => (h!.sim.stats.requestLog ?? []).filter((r) => r.path.endsWith(`/guests/${id}`)).length;
    expect(guestRequests(changed.guest)).toBe(1);
    expect(guestRequests(unchanged.guest)).toBe(0);
    const after = await h.sql<AnyRecord>('SELECT pms_person_id, last_name, email, phone, birth_date FROM pms_guests WHERE pms_person_id = $1', [changed.guest]);
    expect(after).toEqual([{ pms_person_id: changed.guest, last_name: 'Erased', email: null, phone: null, birth_date: null }]);
    // The unchanged reservation's guest keeps what was mirrored until its reservation changes.
    const kept = await h.sql<AnyRecord>('SELECT last_name FROM pms_guests WHERE pms_person_id = $1', [unchanged.guest]);
    expect(kept[0]!.last_name).toBe(before.find((b) => b.pms_person_id === unchanged.guest)!.last_name);
  });
});

describe('the policy applied to what is already stored', () => {
  it('is applied by a rebuild to raw stored under a wider policy: card numbers, comments, e-mails and phones go when personal data is off', async () => {
    h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 30 }] }, config: { pms: { personalData: true } } });
    const ctx = await h.context();
    expect(await syncOnce(ctx, { streams: 'all' })).toMatchObject({ failed: [], fatal: undefined });
    const held = async () =>
      (
        await h!.sql<AnyRecord>(`SELECT
           (SELECT count(*) FROM bookings WHERE raw::text LIKE '%"cardNumber"%')::int AS raw_cards,
           (SELECT count(*) FROM booking_loyalty_cards WHERE card_number IS NOT NULL)::int AS cards,
           (SELECT count(*) FROM pms_reservations WHERE raw ? 'customerComment' OR raw->'customer' ? 'emails')::int AS raw_pms,
           (SELECT count(*) FROM pms_reservations WHERE customer_email IS NOT NULL OR customer_comment IS NOT NULL)::int AS pms,
           (SELECT count(*) FROM pms_guests WHERE raw ? 'emails' OR raw ? 'phones' OR email IS NOT NULL)::int AS guests`)
      )[0]!;
    const before = await held();
    for (const [what, n] of Object.entries(before)) expect(n, what).toBeGreaterThan(0);

    // The same mirror rebuilt by a staysync with personal data off (as the upgrade to this policy does).
    const off = { ...h.config, pms: { ...h.config.pms, personalData: false } };
    await rebuild({ handle: ctx, config: off, logger: h.logger });
    expect(await held()).toEqual({ raw_cards: 0, cards: 0, raw_pms: 0, pms: 0, guests: 0 });
    // The names stay.
    expect((await h.sql(`SELECT 1 FROM bookings WHERE customer_last_name IS NOT NULL`)).length).toBeGreaterThan(0);
  });
});
