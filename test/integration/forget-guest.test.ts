/**
 * `forget-guest` (src/privacy/forget-guest.ts), against the simulator and real PostgreSQL: one
 * guest is erased from every table of the mirror, the figures stay, the erasure is logged with
 * a keyed hash and no value, and the provider's next versions of the same booking and
 * reservation do not bring the guest back.
 */
import { createHash, createHmac } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { forgetGuest, parseSelector } from '../../src/privacy/forget-guest.js';
import pg from 'pg';
import { openDatabase } from '../../src/store/database.js';
import { erasedAmong } from '../../src/store/repositories/erasures.js';
import { enqueueDetailFetches } from '../../src/store/repositories/booking-summaries.js';
import { canonicalJson, parseJsonLossless } from '../../src/provider/json.js';
import { rebuild } from '../../src/replay/rebuild.js';
import { retryQuarantine } from '../../src/replay/quarantine-retry.js';
import { retentionPass } from '../../src/privacy/retention.js';
import { insertWebhookEvents } from '../../src/store/repositories/webhook-events.js';
import type { SyncContext } from '../../src/sync/runtime/context.js';
import { daemonEnv, freePort, runCli, startReceivingDaemon, waitFor } from '../helpers/cli.js';
import { startHarness, syncOnce, type Harness } from '../helpers/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const P = '500100';
type AnyRecord = Record<string, any>;

/** The guest the test erases: values found nowhere else, so that a scan for them is exact. */
const GUEST = {
  firstName: 'Zephyrine',
  lastName: 'Quaxley-Forgetme',
  email: 'Zephyrine.Q+stay@Example.org',
  phone: '+41 79 555 01 23',
  birthDate: '1971-07-19',
};
const VALUES = [GUEST.firstName, GUEST.lastName, GUEST.email.toLowerCase(), GUEST.phone, GUEST.birthDate];

/** What the provider serves next, besides the guest (see mirrorWithGuest). */
interface Serving {
  /** Booking numbers whose details fail validation (a currency that is not text). */
  brokenDetails: Set<string>;
  /** Booking numbers whose details the database refuses (a NUL character in a text column). */
  refusedDetails: Set<string>;
  /** PMS reservation numbers that fail validation (room stays that are not a list). */
  brokenReservations: Set<string>;
}

interface GuestMirror {
  number: string;
  /** With `everywhere`: a second booking and PMS reservation of the same PMS person (a past stay). */
  other: string;
  /** The customer's PMS person id. */
  personId: string;
  /** With `everywhere`: the integration-storage booking of `number`, which names the guest too. */
  storageId: string;
  serving: Serving;
}

/**
 * A mirror where GUEST is the customer of one booking and of its PMS reservation (the same
 * number), and a guest of the booking's first room stay; synced with every stream. With
 * `everywhere`, the same PMS person is also the customer of a second reservation and booking
 * (`other`), the booking list names them as the customer of both, and the integration-storage
 * booking of the first names them with their e-mail and phone. `storedEmail`: the e-mail as the
 * PMS holds it (spaces, case: what forget-guest's normalisation must see through).
 */
async function mirrorWithGuest(personalData: boolean, pseudonymKey?: string, opts: { everywhere?: boolean; storedEmail?: string } = {}): Promise<GuestMirror> {
  h = await startHarness({
    sim: { properties: [{ id: P, bookingCount: 12 }] },
    config: { pms: { personalData }, privacy: pseudonymKey ? { pseudonymKey } : {} },
  });
  const sim = h.sim;
  const storageOf = (n: string) => sim.integrationStorageBookings(P).find((s) => s.uniqueIds.some((u) => u.idContext === 'External' && u.id === n));
  const withBooking = sim
    .pmsReservations(P)
    .filter((r) => r.customer?.pmsPersonId && r.reservationStatus !== 'Cancelled' && sim.bookings(P).some((b) => b.number === r.number))
    .sort((a, b) => Number(!storageOf(a.number)) - Number(!storageOf(b.number)));
  expect(withBooking.length).toBeGreaterThan(1);
  const number = withBooking[0]!.number;
  const other = withBooking[1]!.number;
  const personId = withBooking[0]!.customer!.pmsPersonId;
  const storage = storageOf(number);
  expect(storage).toBeDefined();
  const serving: Serving = { brokenDetails: new Set(), refusedDetails: new Set(), brokenReservations: new Set() };
  const named = opts.everywhere ? [number, other] : [number];
  const customer = { firstName: GUEST.firstName, lastName: GUEST.lastName };
  sim.faults.rewriteBody = (path, body) => {
    const details = named.find((n) => path === `/api/read-reservation/v1/properties/${P}/bookings/${n}`);
    if (details) {
      const b = (body as { booking: AnyRecord }).booking;
      b.customer = { ...customer };
      b.roomStays[0].guests = [{ ...customer }, ...(b.roomStays[0].guests ?? []).slice(1)];
      if (serving.brokenDetails.has(details)) b.currencyCode = { broken: true };
      if (serving.refusedDetails.has(details)) b.currencyCode = 'EU\u0000R';
      return body;
    }
    // The guest pays the reservation's invoices (whatever company the simulator made the customer).
    const invoices = named.find((n) => path === `/api/pms/v2/properties/${P}/reservations/${n}/invoices`);
    if (invoices) {
      for (const inv of (body as { invoices: AnyRecord[] }).invoices) inv.payer = { name: `${GUEST.firstName} ${GUEST.lastName}` };
      return body;
    }
    const reservation = named.find((n) => path === `/api/pms/v2/properties/${P}/reservations/${n}`);
    if (reservation) {
      const r = (body as { reservation: AnyRecord }).reservation;
      r.customer = {
        ...r.customer,
        pmsPersonId: personId,
        personName: { firstName: GUEST.firstName, lastName: GUEST.lastName },
        emails: [{ address: opts.storedEmail ?? GUEST.email }],
        phones: [{ phoneNumber: GUEST.phone }],
        birthDate: GUEST.birthDate,
      };
      r.customerComment = `call ${GUEST.firstName} on ${GUEST.phone}`;
      if (serving.brokenReservations.has(reservation)) r.roomStays = 'broken';
      return body;
    }
    if (opts.everywhere && path === `/api/pms-integration-storage/v1/properties/${P}/bookings/${storage!.id}`) {
      const b = (body as { booking: AnyRecord }).booking;
      b.customer = { ...customer, emails: [{ address: GUEST.email }], phones: [{ phoneNumber: GUEST.phone }] };
      return body;
    }
    if (opts.everywhere && path === `/api/read-reservation/v1/properties/${P}/bookings`) {
      for (const s of (body as { bookingSummaries: AnyRecord[] }).bookingSummaries) if (named.includes(s.number)) s.customer = { ...customer };
      return body;
    }
    return undefined;
  };
  const ctx = await h.context();
  if (opts.everywhere) await announce(ctx, storage!.id, 'initial');
  expect(await syncOnce(ctx, { streams: 'all' })).toMatchObject({ failed: [], fatal: undefined });
  await h.release(ctx);
  return { number, other, personId, storageId: storage!.id, serving };
}

/** A room's guest who is not the customer and pays their own stay: values found nowhere else. */
const PAYER = { firstName: 'Payina', lastName: 'Ownstay-Forgetme', email: 'payina.ownstay@example.org' };

interface PayerMirror {
  /** The reservation (with its booking) where PAYER is a room's guest and pays their stay's invoice. */
  number: string;
  /** A second reservation where PAYER is a room's guest again and pays, their name written last name first. */
  other: string;
  personId: string;
  /** The payer of every invoice of both, by reservation and position, as served. */
  payers: Map<string, string | null>;
}

/**
 * A mirror where PAYER, a guest of a room of `number` (not its customer), pays their stay: the
 * invoice of their room stay names them as payer. They stay in `other` too, as a room's guest,
 * and pay its first room's invoice ("Ownstay-Forgetme Payina"). The other invoices name the
 * customer or their company, as the simulator makes them. Synced with every stream, personal
 * data on (their profile holds their e-mail).
 */
async function mirrorWithPayingGuest(): Promise<PayerMirror> {
  h = await startHarness({ sim: { properties: [{ id: P, bookingCount: 30 }] }, config: { pms: { personalData: true } } });
  const sim = h.sim;
  // Reservations of two rooms or more, each invoiced apart (no group): the rooms PAYER does not pay for are paid as the simulator says.
  const invoiced = sim
    .pmsReservations(P)
    .filter(
      (r) =>
        r.reservationStatus !== 'Cancelled' &&
        !r.groupName &&
        r.roomStays.length > 1 &&
        r.customer?.pmsPersonId &&
        sim.bookings(P).some((b) => b.number === r.number),
    );
  const withGuest = invoiced.find((r) => r.roomStays.some((s) => s.guestsIds.some((id) => id !== r.customer!.pmsPersonId)));
  expect(withGuest).toBeDefined();
  const number = withGuest!.number;
  const stay = withGuest!.roomStays.find((s) => s.guestsIds.some((id) => id !== withGuest!.customer!.pmsPersonId))!;
  const personId = stay.guestsIds.find((id) => id !== withGuest!.customer!.pmsPersonId)!;
  const other = invoiced.find((r) => r.number !== number)!.number;
  const otherStay = sim.pmsReservation(P, other)!.roomStays[0]!.pmsRoomStayId;
  sim.faults.rewriteBody = (path, body) => {
    if (path === `/api/pms/v2/properties/${P}/guests/${personId}`) {
      const g = (body as { guest: AnyRecord }).guest;
      g.personName = { ...g.personName, firstName: PAYER.firstName, lastName: PAYER.lastName, middleName: null };
      g.emails = [{ address: PAYER.email }];
      return body;
    }
    if (path === `/api/pms/v2/properties/${P}/reservations/${other}`) {
      const stays = (body as { reservation: { roomStays: AnyRecord[] } }).reservation.roomStays;
      stays[0]!.guestsIds = [...stays[0]!.guestsIds, personId];
      return body;
    }
    const paid = [
      { n: number, stayId: stay.pmsRoomStayId, name: `${PAYER.firstName} ${PAYER.lastName}` },
      { n: other, stayId: otherStay, name: `${PAYER.lastName}  ${PAYER.firstName}` },
    ].find((x) => path === `/api/pms/v2/properties/${P}/reservations/${x.n}/invoices`);
    if (paid) {
      for (const inv of (body as { invoices: AnyRecord[] }).invoices) if (inv.pmsRoomStayId === paid.stayId) inv.payer = { name: paid.name };
      return body;
    }
    return undefined;
  };
  const ctx = await h.context();
  expect(await syncOnce(ctx, { streams: 'all' })).toMatchObject({ failed: [], fatal: undefined });
  await h.release(ctx);
  const payers = new Map(
    (await h.sql<AnyRecord>('SELECT number, position, payer_name FROM pms_invoices WHERE number IN ($1, $2)', [number, other])).map((i) => [
      `${i.number}#${i.position}`,
      i.payer_name,
    ]),
  );
  expect([...payers.values()].filter((n) => n?.includes('Ownstay'))).toHaveLength(2);
  // Invoices PAYER does not pay: the customer's (or their company's), which an erasure of PAYER leaves.
  expect([...payers.values()].filter((n) => n !== null && !n.includes('Ownstay')).length).toBeGreaterThan(1);
  return { number, other, personId, payers };
}

/** The payer of every invoice of the reservations given, by reservation and position, in the column and in raw. */
async function invoicePayers(numbers: readonly string[]): Promise<Map<string, { column: string | null; raw: string | null }>> {
  const rows = await h!.sql<AnyRecord>(
    `SELECT number, position, payer_name, raw -> 'payer' ->> 'name' AS raw_name FROM pms_invoices WHERE number = ANY($1::text[])`,
    [numbers],
  );
  return new Map(rows.map((i) => [`${i.number}#${i.position}`, { column: i.payer_name, raw: i.raw_name }]));
}

/** A change event for the integration-storage booking `id` (they arrive only through events), as the receiver stores it. */
async function announce(ctx: SyncContext, id: string, tag: string): Promise<void> {
  await ctx.write((trx) =>
    insertWebhookEvents(trx, [
      {
        eventId: `storage-${id}-${tag}`,
        eventType: 'pms_integration_storage:booking_changed',
        creationTime: null,
        payload: { BookingId: id, PropertyId: P },
        propertyId: P,
        entityKey: id,
      },
    ]),
  );
}

/** Every row of every table of the mirror schema whose text holds one of `values` (case-insensitive): table → count. */
async function traces(values: readonly string[]): Promise<Record<string, number>> {
  const tables = await h!.sql<{ table: string }>(
    `SELECT table_name AS table FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE'`,
    [h!.schema],
  );
  expect(tables.length).toBeGreaterThan(40);
  const found: Record<string, number> = {};
  for (const { table } of tables) {
    const [r] = await h!.sql<{ n: string }>(
      `SELECT count(*) AS n FROM "${table}" t WHERE EXISTS (SELECT 1 FROM unnest($1::text[]) v WHERE strpos(lower(t::text), lower(v)) > 0)`,
      [values],
    );
    if (Number(r!.n) > 0) found[table] = Number(r!.n);
  }
  return found;
}

/** The replay environment of a sync context: its fenced writer and its reads. */
const replayEnv = (ctx: SyncContext) => ({ handle: ctx, config: h!.config, logger: h!.logger });

/** The booking's figures and the property's nightly facts: what an erasure must not change. */
async function figures(number: string): Promise<unknown> {
  return {
    booking: await h!.sql(
      'SELECT status, modified_at, arrival_at, departure_at, price_before_tax, price_after_tax, tax_amount, currency_code, source_code FROM bookings WHERE number = $1',
      [number],
    ),
    nights: await h!.sql('SELECT * FROM booking_daily_rates WHERE number = $1 ORDER BY stay_index, position', [number]),
    stays: await h!.sql('SELECT amount, check_in_at, check_out_at, status FROM pms_room_stays WHERE number = $1 ORDER BY position', [number]),
    facts: await h!.sql('SELECT * FROM nightly_facts ORDER BY 1, 2, 3, 4'),
  };
}

/**
 * Whether a session waits for this mirror's erasure lock (pg_locks: an advisory lock of the two
 * keys, not granted): what a fixed sleep used to give the erasure or the write time to reach.
 */
async function waitingForErasureLock(): Promise<boolean> {
  const rows = await h!.sql(
    `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND classid = hashtext('staysync:erasures')::oid AND objid = hashtext(current_schema())::oid AND objsubid = 2`,
  );
  return rows.length > 0;
}

describe('forget-guest', () => {
  it('by e-mail erases the guest from every table, keeps the figures, logs a keyed hash, and a new version does not bring the guest back', async () => {
    const { number } = await mirrorWithGuest(true);
    expect(Object.keys(await traces(VALUES))).toEqual(expect.arrayContaining(['bookings', 'booking_guests', 'pms_reservations', 'pms_guests', 'pms_invoices']));
    const before = await figures(number);
    const invoices = (await h!.sql('SELECT 1 FROM pms_invoices WHERE number = $1', [number])).length;
    expect(invoices).toBeGreaterThan(0);

    const db = await openDatabase(h!.config, h!.logger);
    try {
      // A dry run changes nothing and says what would change.
      const dry = await forgetGuest(db.db, parseSelector('email', GUEST.email.toUpperCase()), { dryRun: true });
      expect(dry).toMatchObject({ dryRun: true, erasureId: null, persons: 1 });
      expect(dry.rowsTouched).toMatchObject({ bookings: 1, booking_guests: 1, pms_reservations: 1, pms_guests: 1, pms_invoices: invoices });
      expect(Object.keys(await traces(VALUES))).toContain('bookings');
      expect(await h!.sql('SELECT 1 FROM erasures')).toEqual([]);

      const done = await forgetGuest(db.db, parseSelector('email', ` ${GUEST.email} `), { dryRun: false });
      expect(done.rowsTouched).toEqual(dry.rowsTouched);
      expect(done.erasureId).toBeGreaterThan(0);
    } finally {
      await db.close();
    }

    expect(await traces(VALUES)).toEqual({});
    expect(await figures(number)).toEqual(before);
    expect(await h!.sql('SELECT customer_first_name, customer_last_name FROM bookings WHERE number = $1', [number])).toEqual([
      { customer_first_name: '(erased)', customer_last_name: '(erased)' },
    ]);
    const [log] = await h!.sql<AnyRecord>('SELECT reason, selector_kind, selector_hash, persons, rows_touched FROM erasures');
    expect(log).toMatchObject({ reason: 'request', selector_kind: 'email', persons: 1 });
    const [erasureKey] = await h!.sql<{ key: string }>('SELECT key FROM erasure_key');
    // The selector as HMAC-SHA-256 of the normalised e-mail under the mirror's key: never the value.
    expect(log!.selector_hash).toBe(createHmac('sha256', erasureKey!.key).update(`email:${GUEST.email.toLowerCase()}`).digest('hex'));
    expect(await h!.sql('SELECT kind FROM erased_identities ORDER BY kind')).toEqual(
      expect.arrayContaining([{ kind: 'booking_person' }, { kind: 'email' }, { kind: 'person' }, { kind: 'phone' }]),
    );

    // The provider changes the booking and the reservation: their new versions come with the guest, and are stored without.
    const [reservationBefore] = await h!.sql<AnyRecord>('SELECT modified_at FROM pms_reservations WHERE number = $1', [number]);
    h!.sim.amendBooking(P, number, 'reprice');
    h!.sim.pmsChangeRoom(P, number, 0);
    const ctx = await h!.context();
    expect(await syncOnce(ctx, { streams: 'all' })).toMatchObject({ failed: [], fatal: undefined });
    const [after] = await h!.sql<AnyRecord>('SELECT customer_first_name, modified_at FROM bookings WHERE number = $1', [number]);
    expect(after!.modified_at).not.toEqual((before as { booking: AnyRecord[] }).booking[0]!.modified_at);
    expect(after!.customer_first_name).toBe('(erased)');
    const [reservationAfter] = await h!.sql<AnyRecord>('SELECT modified_at, customer_last_name FROM pms_reservations WHERE number = $1', [number]);
    expect(reservationAfter!.modified_at).not.toEqual(reservationBefore!.modified_at);
    expect(reservationAfter!.customer_last_name).toBe('(erased)');
    // The invoices read with the new version name the guest as payer: stored erased.
    expect(await h!.sql("SELECT DISTINCT payer_name, raw -> 'payer' ->> 'name' AS raw_name FROM pms_invoices WHERE number = $1", [number])).toEqual([
      { payer_name: '(erased)', raw_name: '(erased)' },
    ]);
    expect(await traces(VALUES)).toEqual({});
  });

  it.each([
    ['person', (m: PayerMirror) => m.personId],
    ['email', () => PAYER.email.toUpperCase()],
    ['booking', (m: PayerMirror) => `${P}/${m.number}`],
  ] as const)(
    'by %s, erases a room guest who paid their own stay as the payer of every invoice of theirs, and so does every later read of those invoices',
    async (kind, value) => {
      const mirror = await mirrorWithPayingGuest();
      const { number, other, payers } = mirror;
      const names = [PAYER.firstName, PAYER.lastName, PAYER.email];
      expect(await traces(names)).toMatchObject({ pms_guests: 1, pms_invoices: 2 });

      const ctx = await h!.context();
      const done = await forgetGuest(ctx.db, parseSelector(kind, value(mirror)), { dryRun: false });
      expect(done.found).toBe(true);
      // Their invoices in both reservations, whoever the customer is; the customer's stay as the
      // customer paid it (a booking selector erases every person of its own booking).
      const erased = (key: string) => (payers.get(key) ?? '').includes('Ownstay') || (kind === 'booking' && key.startsWith(`${number}#`));
      const expected = new Map([...payers].map(([key, name]) => [key, erased(key) ? { column: '(erased)', raw: '(erased)' } : { column: name, raw: name }]));
      expect(await invoicePayers([number, other])).toEqual(expected);
      expect(await traces(names)).toEqual({});

      // The provider's next version of `other` is read with its invoices; `number`'s invoices are
      // read again apart from it (the pass after a backfill): the guest pays, and is stored erased.
      h!.sim.pmsChangeRoom(P, other, 0);
      await h!.sql('DELETE FROM pms_invoice_items WHERE number = $1', [number]);
      await h!.sql('DELETE FROM pms_invoices WHERE number = $1', [number]);
      await h!.sql('UPDATE pms_reservations SET invoices_read_at = NULL WHERE number = $1', [number]);
      expect(await syncOnce(ctx, { streams: 'pms' })).toMatchObject({ failed: [], fatal: undefined });
      expect(await h!.sql('SELECT 1 FROM pms_reservations WHERE number = $1 AND invoices_read_at IS NULL', [number])).toEqual([]);
      expect(await invoicePayers([number, other])).toEqual(expected);
      expect(await traces(names)).toEqual({});
    },
  );

  it('by booking, with personal data off, erases its customer and guests; the command prints the tables and --dry-run changes nothing', async () => {
    const { number } = await mirrorWithGuest(false);
    const names = [GUEST.firstName, GUEST.lastName];
    expect(Object.keys(await traces(names))).toEqual(expect.arrayContaining(['bookings', 'booking_guests', 'pms_reservations']));
    // With personal data off, no e-mail, phone, birth date or comment was stored anywhere.
    expect(await traces([GUEST.email, GUEST.phone, GUEST.birthDate])).toEqual({});

    const env = daemonEnv(h!, { allStreams: true });
    const dry = await runCli(['forget-guest', '--booking', `${P}/${number}`, '--dry-run'], env);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(/^Dry run: nothing was changed\. Erasing the guests of booking .* would change \d+ rows/m);
    expect(dry.stdout).toMatch(/^ {2}bookings +1$/m);
    expect(Object.keys(await traces(names))).toContain('bookings');

    const run = await runCli(['forget-guest', `--booking=${P}/${number}`], env);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Erased the guests of booking .*: \d+ rows changed \(\d+ persons found\), logged as erasure 1:/m);
    expect(run.stdout).toMatch(/^ {2}booking_guests +\d+$/m);
    expect(await traces(names)).toEqual({});
    // Every guest of the booking, not only GUEST.
    expect(await h!.sql(`SELECT 1 FROM booking_guests WHERE number = $1 AND first_name <> '(erased)'`, [number])).toEqual([]);

    // Bad selectors: a usage error with the reason, and nothing erased.
    const bad = await runCli(['forget-guest', '--email', 'not-an-address'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--email "not-an-address" is not an e-mail address');
    const two = await runCli(['forget-guest', '--email', 'a@b.c', '--phone', '+41790000000'], env);
    expect(two.code).toBe(2);
    expect(two.stderr).toContain('forget-guest takes one of --email, --phone, --person, --booking');
    const badBooking = await runCli(['forget-guest', '--booking', 'no-slash'], env);
    expect(badBooking.code).toBe(2);
    expect(badBooking.stderr).toContain('--booking "no-slash" is not <propertyId>/<number>');
    const badPhone = await runCli(['forget-guest', '--phone', '12-3'], env);
    expect(badPhone.code).toBe(2);
    expect(badPhone.stderr).toContain('has fewer than 5 digits');
    expect(await h!.sql('SELECT erasure_id FROM erasures')).toHaveLength(1);

    // A database that does not answer, and a schema not migrated yet: exit 1 and the sentence, nothing erased.
    const down = await runCli(['forget-guest', '--person', '42'], { ...env, DATABASE_URL: `postgres://postgres@127.0.0.1:${await freePort()}/test` });
    expect(down.code).toBe(1);
    expect(down.stdout + down.stderr).toMatch(/the database postgres:\/\/postgres@127\.0\.0\.1:\d+\/test \(DATABASE_URL\) is unreachable/);
    const early = await runCli(['forget-guest', '--person', '42'], { ...env, STAYSYNC_DB_SCHEMA: `${h!.schema}_none` });
    expect(early.code).toBe(1);
    expect(early.stdout + early.stderr).toContain('run `staysync migrate` first');
  });

  it('by e-mail, with personal data off, finds the guest by pseudonym (the e-mail is stored nowhere) and keeps the next versions erased', async () => {
    const pseudonymKey = 'k'.repeat(40);
    const { number } = await mirrorWithGuest(false, pseudonymKey);
    const names = [GUEST.firstName, GUEST.lastName];
    expect(await traces([GUEST.email, GUEST.phone, GUEST.birthDate])).toEqual({});
    expect(Object.keys(await traces(names))).toEqual(expect.arrayContaining(['bookings', 'pms_reservations']));

    const db = await openDatabase(h!.config, h!.logger);
    try {
      // Without the key the e-mail finds nobody: it is stored nowhere.
      expect((await forgetGuest(db.db, parseSelector('email', GUEST.email), { dryRun: true })).persons).toBe(0);
      const done = await forgetGuest(db.db, parseSelector('email', GUEST.email), { dryRun: false, pseudonymKey });
      expect(done.persons).toBe(1);
      expect(done.rowsTouched).toMatchObject({ bookings: 1, pms_reservations: 1 });
    } finally {
      await db.close();
    }
    expect(await traces(names)).toEqual({});
    expect(await h!.sql('SELECT customer_email_hash FROM pms_reservations WHERE number = $1', [number])).toEqual([{ customer_email_hash: null }]);

    h!.sim.amendBooking(P, number, 'reprice');
    h!.sim.pmsChangeRoom(P, number, 0);
    const ctx = await h!.context();
    expect(await syncOnce(ctx, { streams: 'all' })).toMatchObject({ failed: [], fatal: undefined });
    expect(await traces(names)).toEqual({});
    expect(await h!.sql('SELECT customer_last_name, customer_email_hash FROM pms_reservations WHERE number = $1', [number])).toEqual([
      { customer_last_name: '(erased)', customer_email_hash: null },
    ]);
  });

  it('waits for a write of guest data in flight, and a write waits for it: the erasure lock', async () => {
    await mirrorWithGuest(false);
    const writer = new pg.Client({ connectionString: h!.dbUrl, options: `-c search_path=${h!.schema}` });
    await writer.connect();
    const db = await openDatabase(h!.config, h!.logger);
    try {
      // A write of guest data holds the lock shared from before it reads the erasure list until it commits.
      await writer.query('BEGIN');
      await writer.query(`SELECT pg_advisory_xact_lock_shared(hashtext('staysync:erasures'), hashtext(current_schema()))`);
      let settled = false;
      const erasing = forgetGuest(db.db, parseSelector('person', 'no-such-person'), { dryRun: false }).finally(() => (settled = true));
      await waitFor('the erasure waiting for the erasure lock', () => waitingForErasureLock());
      expect(settled).toBe(false);
      await writer.query('COMMIT');
      expect((await erasing).erasureId).toBeGreaterThan(0);

      // And the other way: while an erasure runs, a write waits before it reads the list.
      await writer.query('BEGIN');
      await writer.query(`SELECT pg_advisory_xact_lock(hashtext('staysync:erasures'), hashtext(current_schema()))`);
      let written = false;
      const ctx = await h!.context();
      const write = ctx.write((trx) => erasedAmong(trx, [{ kind: 'person', value: 'x' }])).finally(() => (written = true));
      await waitFor('the write waiting for the erasure lock', () => waitingForErasureLock());
      expect(written).toBe(false);
      await writer.query('COMMIT');
      expect(await write).toEqual([false]);
    } finally {
      await writer.end();
      await db.close();
    }
  });

  it("keeps the provider's next versions of an erased guest out of the quarantine: details the database refuses, a reservation and details that fail validation", async () => {
    const { number, serving } = await mirrorWithGuest(true);
    const db = await openDatabase(h!.config, h!.logger);
    try {
      expect((await forgetGuest(db.db, parseSelector('email', GUEST.email), { dryRun: false })).persons).toBe(1);
    } finally {
      await db.close();
    }
    expect(await traces(VALUES)).toEqual({});

    // The next versions, with the guest in them: details the database refuses, a reservation that fails validation.
    serving.refusedDetails.add(number);
    serving.brokenReservations.add(number);
    h!.sim.amendBooking(P, number, 'reprice');
    h!.sim.pmsChangeRoom(P, number, 0);
    let ctx = await h!.context();
    expect(await syncOnce(ctx, { streams: 'all' })).toMatchObject({ fatal: undefined });
    await h!.release(ctx);
    const quarantined = async () =>
      (await h!.sql<AnyRecord>('SELECT stream, reason FROM quarantine WHERE entity_key = $1 ORDER BY stream, reason', [number])).map(
        (q) => `${q.stream}: ${String(q.reason).startsWith('database write failed') ? 'refused' : 'invalid'}`,
      );
    expect(await quarantined()).toEqual(['booking_details: refused', 'pms_reservations: invalid']);
    expect(await traces(VALUES)).toEqual({});

    // And details that fail validation.
    serving.refusedDetails.delete(number);
    serving.brokenDetails.add(number);
    h!.sim.amendBooking(P, number, 'reprice');
    ctx = await h!.context();
    expect(await syncOnce(ctx, { streams: 'all' })).toMatchObject({ fatal: undefined });
    await h!.release(ctx);
    expect(await quarantined()).toEqual(['booking_details: invalid', 'booking_details: refused', 'pms_reservations: invalid']);
    expect(await traces(VALUES)).toEqual({});
  });

  it('--booking erases the person everywhere the mirror holds them (their other reservation, the booking list, integration storage), and no later version, storage booking or change event brings them back', async () => {
    const { number, other, storageId } = await mirrorWithGuest(true, undefined, { everywhere: true });
    expect(Object.keys(await traces(VALUES))).toEqual(
      expect.arrayContaining(['bookings', 'booking_summaries', 'integration_storage_bookings', 'pms_guests', 'pms_reservations']),
    );
    const env = daemonEnv(h!, { allStreams: true, config: { pms: { personalData: true } } });
    const run = await runCli(['forget-guest', '--booking', `${P}/${number}`], env);
    expect(run.code).toBe(0);
    // The reservation `other` names the same PMS person: a past stay, which never changes again.
    expect(await traces(VALUES)).toEqual({});

    // Their next versions: the bookings, the other reservation, the storage booking, the booking list.
    h!.sim.amendBooking(P, number, 'reprice');
    h!.sim.amendBooking(P, other, 'reprice');
    h!.sim.pmsChangeRoom(P, other, 0);
    h!.sim.touchIntegrationStorageBooking(P, storageId);
    const ctx = await h!.context();
    await announce(ctx, storageId, 'after');
    expect(await syncOnce(ctx, { streams: 'all' })).toMatchObject({ failed: [], fatal: undefined });
    await h!.release(ctx);
    expect(await h!.sql('SELECT customer_last_name FROM pms_reservations WHERE number = $1', [other])).toEqual([{ customer_last_name: '(erased)' }]);
    expect(await traces(VALUES)).toEqual({});

    // Change events received by the daemon: one naming the guest in its payload, and a body that is no event at all.
    const { daemon, hooks } = await startReceivingDaemon(h!, { allStreams: true, config: { pms: { personalData: true } } });
    try {
      const person = {
        personName: { firstName: GUEST.firstName, lastName: GUEST.lastName },
        emails: [{ address: GUEST.email }],
        phones: [{ phoneNumber: GUEST.phone }],
      };
      const res = await fetch(`http://127.0.0.1:${hooks}/webhooks/provider`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify([
          { eventId: 'e-guest', eventType: 'crm:guest_changed', creationTime: new Date().toISOString(), payload: { PropertyId: P, guest: person } },
          { eventType: 'crm:guest_changed', payload: { PropertyId: P, guest: person } },
        ]),
      });
      expect(res.status).toBe(400);
      await waitFor('the event stored', async () => (await h!.sql(`SELECT 1 FROM webhook_events WHERE event_id = 'e-guest'`)).length > 0);
      expect(await h!.sql(`SELECT 1 FROM quarantine WHERE stream = 'webhook_receiver'`)).toHaveLength(1);
    } finally {
      daemon.child.kill('SIGTERM');
      await daemon.done;
    }
    expect(await traces(VALUES)).toEqual({});
  });

  it('keeps the guest erased through a rebuild, a quarantine retry and a retention pass over what an erasure did not reach', async () => {
    const { number, personId } = await mirrorWithGuest(false);
    const db = await openDatabase(h!.config, h!.logger);
    try {
      await forgetGuest(db.db, parseSelector('booking', `${P}/${number}`), { dryRun: false });
    } finally {
      await db.close();
    }
    const names = [GUEST.firstName, GUEST.lastName];
    expect(await traces(names)).toEqual({});

    // What an erasure may not reach (rows of an older staysync, a write that raced it): raw that
    // names the guest, one reservation's no longer valid for today's schemas; bodies in the
    // quarantine, one a storage booking that now passes, one a reservation that still fails.
    const person = { pmsPersonId: personId, personName: { firstName: GUEST.firstName, lastName: GUEST.lastName }, emails: [{ address: GUEST.email }] };
    await h!.sql(`UPDATE bookings SET raw = jsonb_set(raw, '{booking,customer}', $2::jsonb) WHERE number = $1`, [
      number,
      JSON.stringify({ firstName: GUEST.firstName, lastName: GUEST.lastName }),
    ]);
    await h!.sql(
      `UPDATE pms_reservations SET raw = raw || jsonb_build_object('customer', $2::jsonb, 'roomStays', 'broken'),
              customer_first_name = $3, customer_last_name = $4 WHERE number = $1`,
      [number, JSON.stringify(person), GUEST.firstName, GUEST.lastName],
    );
    const storage = h!.sim.integrationStorageBookings(P)[0]!;
    await h!.sql(
      `INSERT INTO quarantine (stream, property_id, entity_key, reason, reason_hash, raw_body) VALUES
         ('webhook_events', $1, $2, 'old', md5('old'), $3), ('pms_reservations', $1, $4, 'old', md5('old'), $5)`,
      [
        P,
        storage.id,
        JSON.stringify({ booking: { ...storage, customer: person } }),
        number,
        JSON.stringify({ reservation: { number, customer: person, roomStays: 'broken' } }),
      ],
    );
    const ctx = await h!.context();
    await rebuild(replayEnv(ctx));
    expect(await h!.sql('SELECT customer_first_name FROM bookings WHERE number = $1', [number])).toEqual([{ customer_first_name: '(erased)' }]);
    // The raw no longer valid was quarantined without the guest (and its row left as it was: a rebuild writes only what it can read).
    const rebuilt = await h!.sql<{ raw_body: string }>(`SELECT raw_body FROM quarantine WHERE stream = 'pms_reservations' AND reason <> 'old'`);
    expect(rebuilt).toHaveLength(1);
    expect([...names, GUEST.email].filter((v) => rebuilt[0]!.raw_body.toLowerCase().includes(v.toLowerCase()))).toEqual([]);
    await retryQuarantine(replayEnv(ctx));
    expect(await traces([...names, GUEST.email])).toEqual({ pms_reservations: 1 });
    // Retention reaches that row when its stay is past (here: all of them, twenty years on).
    await retentionPass((fn) => ctx.write(fn), { propertyIds: [P], days: 1, now: new Date(Date.now() + 20 * 365 * 86_400_000), unrouted: true });
    expect(await traces([...names, GUEST.email])).toEqual({});
  });

  it("after an erasure, the booking's current version has the hash of the erased payload, and fetching that version again records no new one", async () => {
    const { number } = await mirrorWithGuest(false);
    const versions = () =>
      h!.sql<AnyRecord>('SELECT version, content_hash, valid_to FROM booking_versions WHERE number = $1 AND NOT reconstructed ORDER BY version', [number]);
    const before = await versions();
    const db = await openDatabase(h!.config, h!.logger);
    try {
      await forgetGuest(db.db, parseSelector('booking', `${P}/${number}`), { dryRun: false });
    } finally {
      await db.close();
    }
    const [raw] = await h!.sql<{ raw: string }>('SELECT raw::text AS raw FROM bookings WHERE number = $1', [number]);
    const erasedHash = createHash('sha256')
      .update(canonicalJson(parseJsonLossless(raw!.raw)))
      .digest('hex');
    const after = await versions();
    expect(after.length).toBe(before.length);
    expect(after[after.length - 1]!.content_hash).toBe(erasedHash);
    expect(after[after.length - 1]!.content_hash).not.toBe(before[before.length - 1]!.content_hash);
    // No version keeps the hash of a payload that named the guest.
    expect(after.filter((v) => before.some((b) => b.content_hash === v.content_hash))).toEqual([]);

    // The same version fetched again.
    const ctx = await h!.context();
    await ctx.write((trx) => enqueueDetailFetches(trx, [{ propertyId: P, number, modifiedAt: null, priority: 0 }]));
    expect(await syncOnce(ctx)).toMatchObject({ failed: [], fatal: undefined });
    expect(h!.sim.stats.detailCallsByNumber.get(number)).toBeGreaterThan(1);
    expect(await versions()).toEqual(after);
  });

  it('finds an e-mail stored with a tab, a no-break space and capitals outside ASCII, and says with its own exit status that it found nobody', async () => {
    await mirrorWithGuest(true, undefined, { storedEmail: '\tZÉPHYRINE.Q+Stay@EXAMPLE.ORG\u00a0' });
    const env = daemonEnv(h!, { allStreams: true, config: { pms: { personalData: true } } });
    const run = await runCli(['forget-guest', '--email', 'zéphyrine.q+stay@example.org'], env);
    expect(run.stdout).toMatch(/\(1 persons found\)/);
    expect(run.code).toBe(0);
    expect(await traces([GUEST.firstName, GUEST.lastName, 'q+stay@example.org'])).toEqual({});

    const nobody = await runCli(['forget-guest', '--email', 'nobody.here@example.org'], env);
    expect(nobody.code).toBe(4);
    expect(nobody.stdout + nobody.stderr).toContain('found nobody');
    const dry = await runCli(['forget-guest', '--phone', '+1 555 000 9999', '--dry-run'], env);
    expect(dry.code).toBe(4);
  });

  it('holds the erasure lock alone only to list the guest: a dry run never takes it, and writes of guest data go on while it reads the mirror', async () => {
    await mirrorWithGuest(false);
    const other = new pg.Client({ connectionString: h!.dbUrl, options: `-c search_path=${h!.schema}` });
    await other.connect();
    const db = await openDatabase(h!.config, h!.logger);
    const settles = <T>(p: Promise<T>, ms: number) => Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);
    try {
      // A write of guest data in flight: a dry run does not wait for it.
      await other.query('BEGIN');
      await other.query(`SELECT pg_advisory_xact_lock_shared(hashtext('staysync:erasures'), hashtext(current_schema()))`);
      expect(await settles(forgetGuest(db.db, parseSelector('booking', `${P}/x`), { dryRun: true }), 5_000)).toBe(true);
      await other.query('COMMIT');

      // An erasure whose reads are held up (a table locked by someone else): writes of guest data go on meanwhile.
      await other.query('BEGIN');
      await other.query('LOCK TABLE pms_guests IN ACCESS EXCLUSIVE MODE');
      let erased = false;
      const erasing = forgetGuest(db.db, parseSelector('email', GUEST.email), { dryRun: false }).finally(() => (erased = true));
      await waitFor(
        'the erasure waiting for pms_guests',
        async () => (await h!.sql(`SELECT 1 FROM pg_locks WHERE relation = 'pms_guests'::regclass AND NOT granted`)).length > 0,
      );
      const ctx = await h!.context();
      expect(
        await settles(
          ctx.write((trx) => erasedAmong(trx, [{ kind: 'person', value: 'x' }])),
          5_000,
        ),
      ).toBe(true);
      expect(erased).toBe(false);
      await other.query('COMMIT');
      const done = await erasing;
      expect(done.lockHeldMs).toBeGreaterThanOrEqual(0);
      expect(done.lockHeldMs).toBeLessThan(1_000);
    } finally {
      await other.query('ROLLBACK').catch(() => undefined);
      await other.end();
      await db.close();
    }
  });
});
