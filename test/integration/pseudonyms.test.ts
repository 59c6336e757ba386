/**
 * Guests' pseudonyms (src/mapping/pseudonyms.ts, migrations/0017_pseudonyms.sql) against the
 * simulator and real PostgreSQL: with privacy.pseudonymKey, two reservations whose customers
 * share an e-mail (spelt with other case and spaces) share its pseudonym, which is the
 * HMAC-SHA-256 of the normalised e-mail under the key (computed here with node:crypto), and the
 * reporting view guests_by_pseudonym counts them as one guest, with the stays, nights, revenue
 * and dates computed here from the reservations the simulator serves. With personal data off
 * the e-mail is stored nowhere and the pseudonym is still filled; without the key no pseudonym
 * is. A rebuild derives them again where raw kept the e-mails, and keeps them where it did not.
 */
import { createHmac } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { rebuild } from '../../src/replay/rebuild.js';
import type { SyncContext } from '../../src/sync/runtime/context.js';
import type { PmsReservation } from '../../tools/simulator/index.js';
import { cents, dayNo } from '../helpers/books-model.js';
import { query } from '../helpers/database.js';
import { startHarness, syncOnce, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const P = '500100';
const KEY = 'a-test-pseudonym-key-0123456789abcdef';
const OTHER_KEY = 'another-test-pseudonym-key-fedcba9876543210';
type AnyRecord = Record<string, any>;

const hmac = (key: string, value: string) => createHmac('sha256', key).update(value).digest('hex');

/** One guest's e-mail, as the two reservations' customers give it. */
const EMAIL_AS_SENT = ['  Ada.Lovelace@Example.COM ', 'ada.lovelace@example.com'] as const;
const EMAIL = 'ada.lovelace@example.com';
/** The phone of a customer without e-mail. */
const PHONE_AS_SENT = '+41 79 000 01 23';
const PHONE = '+41790000123';

const liveStays = (r: PmsReservation) => r.roomStays.filter((s) => s.status !== 'Cancelled');

interface Served {
  /** The two reservations of the e-mail, as served. */
  pair: [PmsReservation, PmsReservation];
  /** The reservation whose customer has a phone and no e-mail, as served. */
  phoneOnly: PmsReservation;
}

/**
 * Starts a harness with `config` and syncs the PMS side, with reservations served changed: two
 * customers given one e-mail (spelt differently), the first of them a reservation of several
 * rooms if there is one, with its last room cancelled; a third reservation of that e-mail
 * cancelled; a fourth customer with a phone and no e-mail.
 */
async function syncOneGuestTwice(config: Record<string, unknown>): Promise<{ ctx: SyncContext; served: Served }> {
  h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 30 }] }, config });
  const ctx = await h.context();
  // Reservations that count in the view: not cancelled, a stay that is not, every stay in the reservation's currency.
  const counted = h.sim
    .pmsReservations(P)
    .filter(
      (r) =>
        r.reservationStatus !== 'Cancelled' &&
        r.customer?.pmsPersonId &&
        liveStays(r).length > 0 &&
        r.roomStays.every((s) => (s.totalPrice.amount.currencyCode ?? r.currencyCode) === r.currencyCode),
    );
  const first = counted.find((r) => liveStays(r).length > 1) ?? counted[0]!;
  const second = counted.find((r) => r !== first && r.currencyCode === first.currencyCode);
  const [cancelled, phoneOnly] = counted.filter((r) => r !== first && r !== second);
  expect(second && cancelled && phoneOnly).toBeTruthy();
  const withCustomer = (change: AnyRecord) => (r: AnyRecord) => void (r.customer = { ...r.customer, ...change });
  const changes = new Map<string, (r: AnyRecord) => void>([
    [
      first.number,
      (r) => {
        withCustomer({ emails: [{ address: EMAIL_AS_SENT[0] }] })(r);
        const stays = r.roomStays as AnyRecord[];
        if (stays.filter((x) => x.status !== 'Cancelled').length > 1) stays.at(-1)!.status = 'Cancelled';
      },
    ],
    [second!.number, withCustomer({ emails: [{ address: EMAIL_AS_SENT[1] }] })],
    [
      cancelled!.number,
      (r) => {
        withCustomer({ emails: [{ address: EMAIL }] })(r);
        r.reservationStatus = 'Cancelled';
      },
    ],
    [phoneOnly!.number, withCustomer({ emails: [], phones: [{ phoneNumber: PHONE_AS_SENT }] })],
  ]);
  h.sim.faults.rewriteBody = (path, body) => {
    const m = /\/reservations\/([^/]+)$/.exec(path);
    const change = m ? changes.get(decodeURIComponent(m[1]!)) : undefined;
    if (!change) return undefined;
    change((body as { reservation: AnyRecord }).reservation);
    return body;
  };
  const asServed = (r: PmsReservation): PmsReservation => {
    const copy = structuredClone(r) as AnyRecord;
    changes.get(r.number)!(copy);
    return copy as PmsReservation;
  };
  expect(await syncOnce(ctx, { streams: 'pms' })).toMatchObject({ failed: [], fatal: undefined });
  return { ctx, served: { pair: [asServed(first), asServed(second!)], phoneOnly: asServed(phoneOnly!) } };
}

const reservationsOf = (harness: Harness, numbers: string[]) =>
  harness.sql<AnyRecord>(
    `SELECT number, customer_person_id, customer_email, customer_phone, customer_email_hash, customer_phone_hash
       FROM pms_reservations WHERE property_id = $1 AND number = ANY($2) ORDER BY array_position($2, number)`,
    [P, numbers],
  );

const guestsByPseudonym = (harness: Harness, pseudonym: string) =>
  query<AnyRecord>(harness.dbUrl, `${harness.config.database.reportingSchema},${harness.schema}`, 'SELECT * FROM guests_by_pseudonym WHERE pseudonym = $1', [
    pseudonym,
  ]);

/** The row of guests_by_pseudonym that `reservations` give, by the view's rules, from the reservations as served. */
function expectedRow(pseudonym: string, kind: string, reservations: PmsReservation[]): AnyRecord {
  const stays = reservations.flatMap(liveStays);
  const checkIns = stays.map((s) => s.checkInDateTime.slice(0, 10)).sort();
  return {
    pseudonym,
    pseudonym_kind: kind,
    currency_code: reservations[0]!.currencyCode,
    reservations: reservations.length,
    properties: 1,
    room_nights: stays.reduce((n, s) => n + dayNo(s.checkOutDateTime.slice(0, 10)) - dayNo(s.checkInDateTime.slice(0, 10)), 0),
    revenue_net_cents: stays.reduce((c, s) => c + cents(s.totalPrice.amount.value), 0),
    first_check_in_date: checkIns[0],
    last_check_in_date: checkIns.at(-1),
  };
}

/** A row of the view with its counts as numbers and its revenue in cents. */
const comparable = (row: AnyRecord | undefined) =>
  row && {
    pseudonym: row.pseudonym,
    pseudonym_kind: row.pseudonym_kind,
    currency_code: row.currency_code,
    reservations: Number(row.reservations),
    properties: Number(row.properties),
    room_nights: Number(row.room_nights),
    revenue_net_cents: Math.round(Number(row.revenue_net) * 100),
    first_check_in_date: row.first_check_in_date,
    last_check_in_date: row.last_check_in_date,
  };

const storedPseudonyms = async (harness: Harness) =>
  harness.sql<AnyRecord>(
    `SELECT 'r' || number AS k, customer_email_hash AS e, customer_phone_hash AS p FROM pms_reservations
     UNION ALL SELECT 'g' || pms_person_id, email_hash, phone_hash FROM pms_guests ORDER BY 1`,
  );

describe('pseudonyms', () => {
  it('with the key and personal data off: two reservations of one e-mail share its pseudonym, and guests_by_pseudonym counts them as one guest', async () => {
    const { ctx, served } = await syncOneGuestTwice({ privacy: { pseudonymKey: KEY } });
    const { pair, phoneOnly } = served;
    const emailPseudonym = hmac(KEY, EMAIL);
    const phonePseudonym = hmac(KEY, PHONE);

    const rows = await reservationsOf(h!, [pair[0].number, pair[1].number, phoneOnly.number]);
    expect(rows).toHaveLength(3);
    // The e-mail and phone are stored nowhere; their pseudonyms are.
    for (const r of rows) expect(r).toMatchObject({ customer_email: null, customer_phone: null });
    expect(rows[0]!.customer_email_hash).toBe(emailPseudonym);
    expect(rows[1]!.customer_email_hash).toBe(emailPseudonym);
    expect(rows[2]).toMatchObject({ customer_email_hash: null, customer_phone_hash: phonePseudonym });
    const raw = await h!.sql<{ raw: string }>('SELECT raw::text AS raw FROM pms_reservations WHERE number = ANY($1)', [rows.map((r) => r.number)]);
    for (const r of raw) expect(r.raw.toLowerCase()).not.toContain('lovelace@example');
    // The customers' person rows carry the same pseudonyms.
    const persons = await h!.sql<AnyRecord>('SELECT pms_person_id, email, email_hash, phone_hash FROM pms_guests WHERE pms_person_id = ANY($1) ORDER BY 1', [
      rows.map((r) => r.customer_person_id),
    ]);
    expect(persons).toHaveLength(3);
    expect(persons.filter((p) => p.email_hash === emailPseudonym)).toHaveLength(2);
    expect(persons.filter((p) => p.phone_hash === phonePseudonym && p.email_hash === null)).toHaveLength(1);
    for (const p of persons) expect(p.email).toBeNull();

    // One guest, with both reservations' stays, nights, revenue and dates.
    const guest = await guestsByPseudonym(h!, emailPseudonym);
    expect(guest).toHaveLength(1);
    expect(comparable(guest[0])).toEqual(expectedRow(emailPseudonym, 'email', pair));
    expect(comparable((await guestsByPseudonym(h!, phonePseudonym))[0])).toEqual(expectedRow(phonePseudonym, 'phone', [phoneOnly]));
    // Every reservation with a pseudonym is some guest's; the cancelled ones are in none.
    const [totals] = await query<AnyRecord>(
      h!.dbUrl,
      `${h!.config.database.reportingSchema},${h!.schema}`,
      `SELECT (SELECT sum(reservations) FROM guests_by_pseudonym)::int AS counted,
              (SELECT count(DISTINCT (r.property_id, r.number)) FROM pms_reservations r JOIN pms_room_stays s USING (property_id, number)
                WHERE COALESCE(r.customer_email_hash, r.customer_phone_hash) IS NOT NULL
                  AND r.reservation_status IS DISTINCT FROM 'Cancelled' AND s.status IS DISTINCT FROM 'Cancelled')::int AS live`,
    );
    expect(totals!.counted).toBe(totals!.live);

    // raw holds no e-mail to derive them from: a rebuild keeps them, under whichever key it runs.
    const before = await storedPseudonyms(h!);
    for (const privacy of [{ pseudonymKey: OTHER_KEY }, {}]) {
      const rebuilt = await rebuild({ handle: ctx, config: { ...h!.config, privacy }, logger: h!.logger });
      expect(rebuilt.sources.pms_reservations!.changed).toBe(0);
      expect(rebuilt.sources.pms_guests!.changed).toBe(0);
      expect(await storedPseudonyms(h!)).toEqual(before);
    }
  });

  it('with the key and personal data on: the same pseudonyms next to the e-mails as sent; a rebuild under another key derives them again', async () => {
    const { ctx, served } = await syncOneGuestTwice({ privacy: { pseudonymKey: KEY }, pms: { personalData: true } });
    const { pair, phoneOnly } = served;
    const rows = await reservationsOf(h!, [pair[0].number, pair[1].number, phoneOnly.number]);
    expect(rows.map((r) => [r.customer_email, r.customer_email_hash])).toEqual([
      [EMAIL_AS_SENT[0], hmac(KEY, EMAIL)],
      [EMAIL_AS_SENT[1], hmac(KEY, EMAIL)],
      [null, null],
    ]);
    expect(rows[2]).toMatchObject({ customer_phone: PHONE_AS_SENT, customer_phone_hash: hmac(KEY, PHONE) });

    // A new key: every pseudonym changes, and raw (which keeps the e-mails) gives the new ones.
    const rotated = await rebuild({ handle: ctx, config: { ...h!.config, privacy: { pseudonymKey: OTHER_KEY } }, logger: h!.logger });
    expect(rotated.sources.pms_reservations!.changed).toBeGreaterThan(0);
    const after = await reservationsOf(h!, [pair[0].number, pair[1].number, phoneOnly.number]);
    expect(after.map((r) => r.customer_email_hash)).toEqual([hmac(OTHER_KEY, EMAIL), hmac(OTHER_KEY, EMAIL), null]);
    expect(after[2]!.customer_phone_hash).toBe(hmac(OTHER_KEY, PHONE));
    expect(await guestsByPseudonym(h!, hmac(KEY, EMAIL))).toEqual([]);
    expect(comparable((await guestsByPseudonym(h!, hmac(OTHER_KEY, EMAIL)))[0])).toEqual(expectedRow(hmac(OTHER_KEY, EMAIL), 'email', pair));

    // A rebuild without the key (a shell without STAYSYNC_PSEUDONYM_KEY) drops none of them.
    const kept = await storedPseudonyms(h!);
    await rebuild({ handle: ctx, config: { ...h!.config, privacy: {} }, logger: h!.logger });
    expect(await storedPseudonyms(h!)).toEqual(kept);
  });

  it('without the key: no pseudonym at all, even with the e-mails mirrored', async () => {
    const { served } = await syncOneGuestTwice({ pms: { personalData: true } });
    const rows = await reservationsOf(h!, [served.pair[0].number, served.pair[1].number]);
    expect(rows.map((r) => r.customer_email)).toEqual([...EMAIL_AS_SENT]);
    const [filled] = await h!.sql<{ n: number; emails: number }>(
      `SELECT (SELECT count(*) FROM pms_reservations WHERE customer_email_hash IS NOT NULL OR customer_phone_hash IS NOT NULL)
            + (SELECT count(*) FROM pms_guests WHERE email_hash IS NOT NULL OR phone_hash IS NOT NULL) AS n,
              (SELECT count(*) FROM pms_guests WHERE email IS NOT NULL) AS emails`,
    );
    expect(Number(filled!.emails)).toBeGreaterThan(2);
    expect(Number(filled!.n)).toBe(0);
    const view = await query(h!.dbUrl, `${h!.config.database.reportingSchema},${h!.schema}`, 'SELECT count(*)::int AS n FROM guests_by_pseudonym');
    expect(view).toEqual([{ n: 0 }]);
  });
});
